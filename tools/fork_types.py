"""Read the ggml type ids llama.cpp forks define, with their sizes, from the forks' git history.

Why: a GGUF tensor's type id is only an integer; forks of llama.cpp assign ids mainline
either never used or used for something else (ik_llama.cpp's IQ*_K / IQ*_KS / *_R4 family,
Microsoft BitNet's I2_S / I8_S / TL1 / TL2).  A file written by a fork is refused by
mainline, or worse read with another block layout.  ``gen_llama_history record-forks``
walks each fork's commits that touch ``enum ggml_type`` and records, per (id, name) the fork
ever had, where it is defined (commit, date, line) and how many bytes a tensor of it
takes (``type_traits`` ``blck_size`` / ``type_size`` as ggml-common.h's static_asserts size
the block structs, and the special cases ``ggml_nbytes`` makes).

Contract: ``fork_history(git_dir, ref, repo)`` returns a list of dicts
``{id, name, fork, first_commit, first_date, last_commit, current, path, line, blck, bytes,
nbytes}``; ``nbytes`` names a special size rule (``"n/4+32"``, ``"tl2"``) or is None when the
size is whole blocks (``ceil(n / blck) * bytes``); ``py_sizes`` is ``(blck, bytes)`` as the
fork's own gguf-py ``GGML_QUANT_SIZES`` writes them (a second, hand-kept source; None where
absent).  A block whose size the source does not state makes ``blck``/``bytes`` None, never
a guess.  ``fork_archs`` lists the architecture names a fork knows and mainline does not.
"""
from __future__ import annotations

import re
import subprocess

_SIZEOF = {"ggml_half": 2, "ggml_bf16_t": 2, "ggml_half2": 4, "uint16_t": 2, "int16_t": 2, "uint32_t": 4,
           "int32_t": 4, "float": 4, "int8_t": 1, "uint8_t": 1, "double": 8, "int64_t": 8, "uint64_t": 8}
_HEADERS = ("ggml/include/ggml.h", "ggml.h")
_TRAITS = ("ggml/src/ggml.c", "ggml.c")
_COMMON = ("ggml/src/ggml-common.h", "ggml-common.h")


def _git(git_dir: str, *args: str) -> str | None:
    r = subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True)
    return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None


def _show(git_dir: str, commit: str, paths) -> tuple[str, str] | tuple[None, None]:
    for p in paths:
        text = _git(git_dir, "show", f"{commit}:{p}")
        if text is not None:
            return p, text
    return None, None


def enum_lines(text: str) -> dict[int, tuple[str, int]]:
    """``{id: (NAME, line)}`` of the active members of ``enum ggml_type``."""
    m = re.search(r"enum\s+ggml_type\s*\{", text)
    if not m:
        return {}
    end = text.index("}", m.end())
    out: dict[int, tuple[str, int]] = {}
    line0 = text.count("\n", 0, m.end()) + 1
    for i, ln in enumerate(text[m.end():end].split("\n")):
        code = ln.split("//")[0]
        mm = re.search(r"GGML_TYPE_(\w+)\s*=\s*(\d+)", code)
        if mm and mm.group(1) != "COUNT":
            out.setdefault(int(mm.group(2)), (mm.group(1), line0 + i))
    return out


class _Sizes:
    """Evaluate ``sizeof(block_x)`` and macro expressions as one commit's ggml-common.h states them."""

    def __init__(self, common: str):
        self.defines: dict[str, str] = {}
        for name, expr in re.findall(r"^[ \t]*#define[ \t]+(\w+)[ \t]+([^\n]+)", common, re.M):
            expr = re.sub(r"/\*.*?\*/|//.*", "", expr).strip()
            if expr:
                self.defines.setdefault(name, expr)
        self.asserts = dict(re.findall(r"static_assert\(\s*sizeof\((block_\w+)\)\s*==\s*([^\"]+?),\s*\"", common))

    def eval(self, expr: str, depth: int = 0) -> int | None:
        if depth > 12:
            return None

        def sub_sizeof(m):
            t = m.group(1).strip()
            if t in _SIZEOF:
                return str(_SIZEOF[t])
            if t in self.asserts:
                v = self.eval(self.asserts[t], depth + 1)
                if v is not None:
                    return str(v)
            raise KeyError(t)
        try:
            e = re.sub(r"sizeof\(\s*([\w ]+?)\s*\)", sub_sizeof, expr)
            for _ in range(8):
                e2 = re.sub(r"\b([A-Za-z_]\w*)\b", lambda m: f"({self.defines[m.group(1)]})"
                            if m.group(1) in self.defines else m.group(1), e)
                if e2 == e:
                    break
                e = e2
            if not re.fullmatch(r"[\d\s()+\-*/]+", e):
                return None
            return int(eval(e.replace("/", "//"), {"__builtins__": {}}))   # digits and operators only
        except (KeyError, SyntaxError, ZeroDivisionError):
            return None


def traits(ggml_c: str, common: str) -> dict[str, tuple[int | None, int | None]]:
    """``{NAME: (blck_size, type_size)}`` from ``type_traits``."""
    sizes = _Sizes(common + "\n" + ggml_c)
    out: dict[str, tuple[int | None, int | None]] = {}
    for name, body in re.findall(r"\[GGML_TYPE_(\w+)\]\s*=\s*\{((?:(?!\[GGML_TYPE_).)*?)\n\s*\}", ggml_c, re.S):
        b = re.search(r"\.blck_size\s*=\s*([^,\n]+)", body)
        t = re.search(r"\.type_size\s*=\s*([^,\n]+)", body)
        if b and t:
            out.setdefault(name, (sizes.eval(b.group(1)), sizes.eval(t.group(1))))
    return out


def nbytes_special(ggml_c: str) -> dict[str, str]:
    """The types ``ggml_nbytes`` sizes by a rule of its own, as the rule's name."""
    m = re.search(r"size_t\s+ggml_nbytes\s*\(.*?\n\}", ggml_c, re.S)
    out: dict[str, str] = {}
    if not m:
        return out
    for cond, body in re.findall(r"if\s*\(([^{}]*GGML_TYPE_\w+[^{}]*)\)\s*\{([^{}]*)\}", m.group(0)):
        rule = ("n/4+32" if re.search(r"nbytes\s*=\s*nbytes\s*/\s*4\s*\+\s*32", body) else
                "tl2" if "/ 3 * 5 / 8" in body else None)
        if rule is None:
            raise ValueError(f"unrecognised ggml_nbytes special case: {body.strip()[:80]}")
        for t in re.findall(r"GGML_TYPE_(\w+)", cond):
            out[t] = rule
    return out


def py_sizes(git_dir: str, ref: str) -> dict[str, tuple[int, int]]:
    """The fork's own gguf-py ``GGML_QUANT_SIZES`` (numbers written by hand): a second source of the sizes."""
    text = _git(git_dir, "show", f"{ref}:gguf-py/gguf/constants.py") or ""
    return {n: (int(b), int(t)) for n, b, t in
            re.findall(r"GGMLQuantizationType\.(\w+)\s*:\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)", text)}


def fork_history(git_dir: str, ref: str, repo: str) -> list[dict]:
    commits = (_git(git_dir, "log", "--reverse", "--format=%H %cs", ref, "--", *_HEADERS) or "").split()
    pairs = list(zip(commits[::2], commits[1::2]))
    seen: dict[tuple[int, str], dict] = {}
    last_ids: set[tuple[int, str]] = set()
    for commit, date in pairs:
        path, text = _show(git_dir, commit, _HEADERS)
        if text is None:
            continue
        ids = enum_lines(text)
        cur = {(i, n) for i, (n, _) in ids.items()}
        for key in cur - set(seen):
            seen[key] = {"id": key[0], "name": key[1], "fork": repo, "first_commit": commit, "first_date": date,
                         "path": path, "line": ids[key[0]][1]}
        for key in cur:
            seen[key]["last_commit"] = commit
        last_ids = cur
    for key, row in seen.items():
        row["current"] = key in last_ids
        at = _git(git_dir, "rev-parse", ref).strip() if row["current"] else row["last_commit"]
        _, ggml_c = _show(git_dir, at, _TRAITS)
        _, common = _show(git_dir, at, _COMMON)
        tr = traits(ggml_c or "", common or "")
        row["blck"], row["bytes"] = tr.get(key[1], (None, None))
        row["nbytes"] = nbytes_special(ggml_c or "").get(key[1])
        row["size_commit"] = at
    py = py_sizes(git_dir, ref)
    for key, row in seen.items():
        row["py_sizes"] = list(py[key[1]]) if row["current"] and key[1] in py else None
    return sorted(seen.values(), key=lambda r: (r["id"], r["first_date"], r["name"]))


def fork_archs(git_dir: str, ref: str, repo: str, known: set[str]) -> list[dict]:
    """Architecture names the fork's newest ``LLM_ARCH_NAMES`` has and ``known`` (mainline's) lacks,
    with the commit that first wrote each name (git's pickaxe) and its line in the newest file."""
    out = []
    for path in ("src/llama-arch.cpp", "src/llama.cpp"):
        text = _git(git_dir, "show", f"{ref}:{path}")
        if text and "LLM_ARCH_NAMES" in text:
            break
    else:
        return out
    m = re.search(r"LLM_ARCH_NAMES\s*=\s*\{", text)
    end = text.index("};", m.end())
    line0 = text.count("\n", 0, m.end()) + 1
    for i, ln in enumerate(text[m.end():end].split("\n")):
        mm = re.search(r"\{\s*LLM_ARCH_(\w+)\s*,\s*\"([^\"]*)\"\s*\}", ln.split("//")[0])
        if not mm or mm.group(1) == "UNKNOWN" or mm.group(2) in known:
            continue
        name = mm.group(2)
        first = (_git(git_dir, "log", "--reverse", "--format=%H %cs", f"-S\"{name}\"", ref, "--",
                      "src/llama-arch.cpp", "src/llama.cpp", "llama.cpp") or "").split("\n")[0].split()
        out.append({"name": name, "fork": repo, "first_commit": first[0] if first else None,
                    "first_date": first[1] if first else None, "path": path, "line": line0 + i})
    return sorted(out, key=lambda r: r["name"])
