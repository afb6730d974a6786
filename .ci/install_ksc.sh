#!/usr/bin/env bash
# Install the official Kaitai Struct compiler (npm build) for the differential tests.
#
# Puts kaitai-struct-compiler 0.11 and js-yaml into <repo>/.cache/ksc/node_modules,
# where tests/kaitai_oracle.py looks first.  Idempotent: does nothing when both are
# already there.  Without npm it warns and exits 0 (the differential tests then skip).
set -euo pipefail

here="${BASH_SOURCE[0]%/*}"; [ "$here" = "${BASH_SOURCE[0]}" ] && here=.
repo="$(cd "$here/.." && pwd)"
dest="$repo/.cache/ksc"
ksc_version="0.11.0"
yaml_spec="js-yaml@4"

installed_version() {
    local pkg="$dest/node_modules/kaitai-struct-compiler/package.json"
    [ -f "$pkg" ] || return 0
    sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg" | head -n 1
}

if [ "$(installed_version)" = "$ksc_version" ] && [ -d "$dest/node_modules/js-yaml" ]; then
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "install_ksc.sh: warning: npm not found; Kaitai differential tests will be skipped" >&2
    exit 0
fi

mkdir -p "$dest"
[ -f "$dest/package.json" ] || echo '{"name": "ggscope-ksc", "private": true}' > "$dest/package.json"
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error \
    "kaitai-struct-compiler@$ksc_version" "$yaml_spec" >&2
echo "install_ksc.sh: kaitai-struct-compiler $(installed_version) installed in $dest" >&2
