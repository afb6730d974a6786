"""``ggscope validate FILE...``: run the rule catalogue; a CI gate.

Exit status: 0 no error-level finding, 1 at least one, 2 usage error, a bad
``[tool.ggscope]`` config, or a path that cannot be read or opened.  Findings go to
stdout; the summary and problems to stderr.  With ``--jobs N`` files are checked in N
worker processes; findings still come out in the order the files were given.  Ctrl-C
ends the run within a second, exit status 130: the workers ignore SIGINT and the
parent terminates them instead of waiting for the files they are checking.
"""
from __future__ import annotations

import argparse
import os
import sys

from ggscope.validate.config import FORMATS, ConfigError, load
from ggscope.core.errors import GGScopeError
from ggscope.commands.common import add_color_argument, error, expand_files, open_or_report
from ggscope.core.escape import escape_text
from ggscope.core import progress

HELP = "check files against the rule catalogue (exit 1 on error-level findings)"
DESCRIPTION = """\
Check model files against ggscope's rules: what ggml's reader refuses (GG1xx), what
the spec forbids (GG2xx), alignment (GG3xx), key naming (GG4xx), tensors (GG5xx) and
more; `ggscope rules` lists them, `ggscope explain CODE` explains one."""
EPILOG = """\
examples:
  ggscope validate models/*.gguf
  ggscope validate --select GG1 model.gguf          only ggml's reader rules
  ggscope validate --ignore GG801,key-not-namespaced 'models/**/*.gguf'
  ggscope validate --json model.gguf | jq '.[] | select(.severity == "error")'
  ggscope validate --format sarif models/*.gguf > ggscope.sarif     for code scanning
  ggscope validate --jobs 4 'models/**/*.gguf'
  ggscope validate --manifest model.manifest model.gguf   tensor data against a hash manifest
  ggscope validate --base model.gguf lora-adapter.gguf      an adapter against its base model
  ggscope validate https://host/model.gguf hf://OWNER/REPO/model-Q4_K_M.gguf@main
  ggscope validate --scheduler local --jobs 8 --from-list urls.txt      Dask LocalCluster
  ggscope validate --scheduler tcp://scheduler:8786 --from-list urls.txt

text: one line per finding, `file:start: severity CODE [name] message (path)`.
json: one array of {"code", "severity", "file", "message", "path", "start", "end"}.
sarif: SARIF 2.1.0 (upload with github/codeql-action/upload-sarif).
github: workflow commands `::error file=F,title=CODE name::message`; chosen by itself
when GITHUB_ACTIONS=true and no format is given.
defaults: [tool.ggscope] in the nearest pyproject.toml (select, ignore, deep, format,
jobs); flags override it.
exit status: 0 no error-level finding, 1 some, 2 usage or config error, unreadable path."""


def _positive(s: str) -> int:
    try:
        n = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return n


def add_arguments(p) -> None:
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="model files, glob patterns (** recurses), http(s):// or hf:// URLs")
    p.add_argument("--from-list", metavar="LIST", default=None,
                   help="also check the paths or URLs in LIST, one a line ('#' comments; - reads stdin)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="check on a Dask distributed cluster at ADDRESS, or 'local' for a LocalCluster of "
                        "--jobs workers (needs ggscope[dask])")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="output format (default text; github inside GitHub Actions)")
    p.add_argument("--json", dest="format", action="store_const", const="json",
                   help="print one JSON array of findings (as --format json, the flag every command has)")
    p.add_argument("--select", default=None, help="comma-separated codes, code prefixes, names or families to run")
    p.add_argument("--ignore", default=None, help="comma-separated codes, code prefixes, names or families to skip")
    p.add_argument("--manifest", metavar="MANIFEST", default=None,
                   help="also check tensor data against a llama-gguf-hash / ggscope hash manifest (rules GG12xx)")
    p.add_argument("--base", metavar="MODEL", default=None,
                   help="the model a LoRA adapter belongs to: check the adapter's tensors against it")
    p.add_argument("--deep", action=argparse.BooleanOptionalAction, default=None,
                   help="also run rules that read tensor data (--no-deep overrides a config default)")
    p.add_argument("--jobs", "-j", type=_positive, default=None, metavar="N",
                   help="check files in N worker processes (default 1)")
    add_color_argument(p)


def _one_per_model(files: list[str]) -> list[str]:
    """The paths in order, a split model's shards after the first given left out: any
    shard checks the whole set (``validate.runner.validate_set``)."""
    from ggscope.validate.runner import set_key  # start-up: one-shot commands load only what they use
    seen: set[tuple[str, ...]] = set()
    out = []
    for f in files:
        key = set_key(f)
        if len(key) == 1:                  # not a shard: every path given is checked, as given
            out.append(f)
        elif key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _split(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _check_one(path: str, select: tuple[str, ...], ignore: tuple[str, ...], deep: bool,
               manifest: str | None = None, base: str | None = None):
    """Findings of one file, or the reason it could not be checked (picklable both ways)."""
    from ggscope.source.local import is_remote  # start-up: the network module only for a URL
    from ggscope.source.mapped import check_regular_file  # start-up: numpy only when this command needs it
    from ggscope.validate.runner import validate_file  # start-up: numpy, asyncio only when this command needs it
    if not is_remote(path):
        try:
            check_regular_file(path)        # a FIFO or device must not block the gate
        except GGScopeError as exc:
            hint = (f" (to check the files in it, give a glob: '{os.path.join(path, '**', '*.gguf')}')"
                    if os.path.isdir(path) else "")
            return None, f"cannot read {exc}{hint}"
    try:
        options = {k: v for k, v in (("manifest", manifest), ("base", base)) if v}
        return validate_file(path, select=select, ignore=ignore, deep=deep, options=options or None), None
    except (GGScopeError, OSError) as exc:
        return None, str(exc)


def _read_list(name: str) -> list[str]:
    if name == "-":
        lines = sys.stdin.read().splitlines()
    else:
        with open(name, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    return [s for s in (line.strip() for line in lines) if s and not s.startswith("#")]


def _check_all(files: list[str], select, ignore, deep: bool, jobs: int, scheduler: str | None = None,
               manifest: str | None = None, base: str | None = None):
    if scheduler and not base:
        from ggscope.validate.cluster import check_on_cluster  # start-up: one-shot commands load only what they use
        with progress.task("files checked", len(files)) as bar:
            return check_on_cluster(_check_one, files, (select, ignore, deep, manifest), scheduler=scheduler,
                                    jobs=max(jobs, 1), progress=bar.update)
    if jobs <= 1 or len(files) <= 1 or base:
        return [_check_one(f, select, ignore, deep, manifest, base) for f in files]
    from concurrent.futures import ProcessPoolExecutor
    # The first file is checked here: it imports the rules and compiles the format's
    # spec once, and forked workers inherit both instead of repeating the work.
    first = _check_one(files[0], select, ignore, deep, manifest)
    rest = files[1:]
    n = len(rest)
    pool = ProcessPoolExecutor(max_workers=min(jobs, n), initializer=_worker_ignores_sigint)
    try:
        results = [first, *pool.map(_check_one, rest, [select] * n, [ignore] * n, [deep] * n, [manifest] * n,
                                    chunksize=max(1, n // (jobs * 4)))]
    except BaseException as exc:   # Ctrl-C (or a broken pool): end the workers now, not after their files
        _terminate(pool)
        from concurrent.futures.process import BrokenProcessPool
        if isinstance(exc, BrokenProcessPool):
            raise GGScopeError("a --jobs worker process died (killed, or out of memory) while checking files; "
                               "rerun without --jobs to find the file") from None
        raise
    pool.shutdown()
    return results


def _worker_ignores_sigint() -> None:
    """A worker leaves Ctrl-C to the parent, which terminates it (``_terminate``): a
    terminal sends SIGINT to the whole process group, and a worker raising
    KeyboardInterrupt mid-file only slows the shutdown and prints its traceback."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _terminate(pool) -> None:
    """Stop ``pool`` at once: cancel queued files and SIGTERM its worker processes
    (``shutdown`` alone waits for the files in flight - seconds on a large model)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())   # CPython's executor keeps them there
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(1)
    # The executor's exit hook would wake its manager thread through a pipe the dead
    # workers' side may have closed, printing "Exception ignored ... BrokenPipeError" after
    # our one line; the pool is finished, so it leaves that hook (CPython's registry).
    import concurrent.futures.process as cfp  # start-up: only after Ctrl-C in a --jobs run
    thread = getattr(pool, "_executor_manager_thread", None)
    registry = getattr(cfp, "_threads_wakeups", None)
    if thread is not None and registry is not None:
        registry.pop(thread, None)


def _choose_format(cli: str | None, configured: str | None) -> str:
    if cli:
        return cli
    if configured:
        return configured
    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"


def run(args) -> int:
    from ggscope.report import findings_json  # start-up: numpy, asyncio only when this command needs it
    from ggscope.report import findings_text  # start-up: numpy, asyncio only when this command needs it
    try:
        cfg = load()
    except ConfigError as exc:
        error(str(exc))
        return 2
    select = tuple(_split(args.select)) if args.select is not None else cfg.select
    ignore = tuple(_split(args.ignore)) if args.ignore is not None else cfg.ignore
    deep = cfg.deep if args.deep is None else args.deep
    jobs = args.jobs or cfg.jobs
    fmt = _choose_format(args.format, cfg.format)
    from ggscope.validate.runner import UnknownSelector, check_selectors  # start-up: numpy, asyncio only when this command needs it
    try:
        check_selectors(select, "--select" if args.select is not None else f"{cfg.source}: select")
        check_selectors(ignore, "--ignore" if args.ignore is not None else f"{cfg.source}: ignore")
    except UnknownSelector as exc:
        error(str(exc))
        return 2

    if args.manifest is not None:         # a manifest that cannot be read is a usage error, before any file
        from ggscope.hash.manifest import Manifest, ManifestError  # start-up: xxhash only when this command needs it
        try:
            Manifest.read(args.manifest)
        except ManifestError as exc:
            error(f"--manifest: {escape_text(str(exc))}")
            return 2

    listed = []
    if args.from_list:
        try:
            listed = _read_list(args.from_list)
        except (OSError, UnicodeDecodeError) as exc:
            error(f"cannot read the list {args.from_list}: {exc}")
            return 2
    if not args.files and not listed:
        error("no files to check: give FILE arguments or --from-list")
        return 2
    if args.base and not os.path.isfile(args.base):
        error(f"--base {args.base}: no such file")
        return 2
    if args.base:                    # a damaged base judges nothing: say so once, not per file
        base = open_or_report(args.base)
        if base is None:
            return 2
        base.close()
    files, missing = expand_files(args.files)
    files = _one_per_model(files + listed)
    status = 0
    for pat in missing:
        error(f"no file matches {pat}")
        status = 2
    findings = []
    checked = 0
    try:
        results = _check_all(files, select, ignore, deep, jobs, args.scheduler,      # progress: core.progress
                             args.manifest, args.base)
    except GGScopeError as exc:
        error(str(exc))
        return 2
    unreadable: list[tuple[str, str]] = []
    for path, (found, problem) in zip(files, results):
        if problem is not None:
            error(problem)
            unreadable.append((path, problem))
            status = 2
        else:
            checked += 1
            findings.extend(found)

    if fmt == "json":
        sys.stdout.write(findings_json.render(findings) + "\n")
    elif fmt == "sarif":
        from ggscope.report import sarif  # start-up: one-shot commands load only what they use
        sys.stdout.write(sarif.render(findings, unreadable) + "\n")
    elif fmt == "github":
        from ggscope.report import github  # start-up: numpy, asyncio only when this command needs it
        sys.stdout.write(github.render(findings))
        print(findings_text.summary(findings, checked, len(unreadable)), file=sys.stderr)
    else:
        colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty()
                                            and not os.environ.get("NO_COLOR"))
        sys.stdout.write(findings_text.render(findings, colour))
        print(findings_text.summary(findings, checked, len(unreadable)), file=sys.stderr)
    if status:
        return status
    return 1 if any(f.severity.value == "error" for f in findings) else 0
