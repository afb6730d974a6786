"""C++ source as data for tools/gen_llama_arch.py: comments, brackets, call sites and
expressions of llama.cpp's loader code, turned into Python.

Why: the generator reads llama.cpp's model classes; what it needs from C++ - a function
body, each call with the loop over layers and the ``if``/``else`` conditions around it, a
shape or condition expression as Python - is a small, testable scanner kept apart from
what the generator makes of it.

Contract: ``walk(body)`` yields ``(call, args, loop, conds)`` for the calls named in
``_CALL``; ``py_expr`` / ``py_bool`` / ``py_cond`` return Python text or None when the C
is not plain arithmetic or logic (a member access, a string, a pointer test other than
``ml.get_weight("name") == nullptr``); ``checks(body)`` lists GGML_ASSERTs and throws.
"""
from __future__ import annotations

import re

__all__ = ["strip_comments", "match_close", "split_args", "cmap", "function_body", "walk", "py_expr", "py_bool",
           "py_cond", "hparam_defaults", "checks", "literal"]

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def strip_comments(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = len(text) if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = len(text) if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def match_close(text: str, i: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at ``i`` (strings skipped)."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced")


def split_args(text: str) -> list[str]:
    out, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c in "({[<" and not (c == "<" and depth == 0 and not re.match(r"<\w", text[i:])):
            depth += 1
        elif c in ")}]>" and not (c == ">" and depth == 0):
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def cmap(text: str, name: str) -> dict[str, str]:
    start = text.index(name + " = {")
    body = text[start:match_close(text, text.index("{", start), "{", "}")]
    return dict(re.findall(r"\{\s*(\w+)\s*,\s*\"([^\"]*)\"\s*\}", body))


def function_body(text: str, signature: str) -> str | None:
    m = re.search(signature, text)
    if not m:
        return None
    b = text.index("{", m.end() - 1)
    return text[b + 1:match_close(text, b, "{", "}")]


# --- walking a function body: every call with the loop and conditions around it --------
_CTRL = re.compile(r"\b(if|for|while|switch)\s*\(")
_CALL = re.compile(r"\b(create_tensor_qkv|create_tensor_gate_up_exps|create_tensor|ml\.get_key_or_arr|ml\.get_key|"
                   r"ml\.get_arr_n|ml\.get_arr|load_swa_pattern|GGML_ASSERT|throw std::runtime_error|"
                   r"throw std::invalid_argument)\s*\(")
_LAYER_LOOP = re.compile(r"^\s*int\s+(\w+)\s*=\s*0\s*;\s*\1\s*<\s*(n_layer_all|n_layer|hparams\.n_layer\(\))\s*;")


def walk(body: str):
    """Yield ``(call, args, loop, conds)``; ``loop`` is None, ``"n_layer"`` or ``"n_layer_all"``
    (the innermost loop over layers), ``conds`` the headers of the enclosing ifs/else/other loops."""
    stack: list[list] = []   # [kind, header, closing, depth, if-chain]
    depth, i = 0, 0
    last_chain: dict[int, list[str]] = {}     # the if/else-if conditions that just closed, per depth
    else_chain: list[str] = []

    def close(frame):
        if frame[4] is not None:
            last_chain[frame[3]] = frame[4]

    def ctx():
        loop, conds = None, []
        for kind, header, _c, _d, _ch in stack:
            if kind == "layer":
                loop = header
            elif kind == "cond":
                conds.append(header)
        return loop, tuple(conds)

    def calls_in(text):
        for m in _CALL.finditer(text):
            e = match_close(text, m.end() - 1, "(", ")")
            yield m.group(1), split_args(text[m.end():e])

    while i < len(body):
        c = body[i]
        if c == '"':
            i = match_close(body, i, '"', '"') + 1 if False else _skip_string(body, i)
            continue
        m = _CTRL.match(body, i)
        if m and (i == 0 or not (body[i - 1].isalnum() or body[i - 1] == "_")):
            e = match_close(body, m.end() - 1, "(", ")")
            header = " ".join(body[m.end():e].split())
            loop, conds = ctx()
            for call, args in calls_in(body[m.end():e]):
                yield call, args, loop, conds
            lm = _LAYER_LOOP.match(header) if m.group(1) == "for" else None
            kind, head = ("layer", lm.group(2).replace("hparams.n_layer()", "n_layer")) if lm else \
                ("cond", f"{m.group(1)} ({header})")
            chain = (else_chain + [header]) if m.group(1) == "if" else None
            else_chain = []
            i = e + 1
            while body[i].isspace():
                i += 1
            if body[i] == "{":
                stack.append([kind, head, "}", depth, chain])
                depth += 1
                i += 1
            else:
                stack.append([kind, head, ";", depth, chain])
            continue
        if body.startswith("else", i) and not (body[i - 1].isalnum() or body[i - 1] == "_") \
                and not (body[i + 4].isalnum() or body[i + 4] == "_"):
            i += 4
            while body[i].isspace():
                i += 1
            chain = last_chain.get(depth, [])
            head = "else of " + " ".join(f"({c})" for c in chain)
            if body.startswith("if", i):
                # "else if (...)": not the earlier conditions, then a condition of its own
                stack.append(["cond", head, ";", depth, None])
                else_chain = list(chain)
                continue
            if body[i] == "{":
                stack.append(["cond", head, "}", depth, None])
                depth += 1
                i += 1
            else:
                stack.append(["cond", head, ";", depth, None])
            continue
        m = _CALL.match(body, i)
        if m and (i == 0 or not (body[i - 1].isalnum() or body[i - 1] in "_.")) or \
                (m and body[i - 1] == "." and body[i - 3:i] == "ml."):
            e = match_close(body, m.end() - 1, "(", ")")
            loop, conds = ctx()
            yield m.group(1), split_args(body[m.end():e]), loop, conds
            for call, args in calls_in(body[m.end():e]):
                yield call, args, loop, conds
            i = e + 1
            continue
        if c == "{":
            stack.append(["plain", None, "}", depth, None])
            depth += 1
        elif c == "}":
            depth -= 1
            while stack and stack[-1][2] == ";":
                close(stack.pop())
            if stack:
                close(stack.pop())
            while stack and stack[-1][2] == ";" and stack[-1][3] == depth:
                close(stack.pop())
        elif c == ";":
            while stack and stack[-1][2] == ";" and stack[-1][3] == depth:
                close(stack.pop())
        i += 1


def _skip_string(text: str, i: int) -> int:
    j = i + 1
    while text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j + 1


# --- C expressions -> Python over the loader's variables ------------------------------
_CAST = re.compile(r"\(\s*(?:int64_t|int32_t|uint32_t|int|size_t|int64_t)\s*\)|static_cast<\w+>|int64_t\s*\(")


def py_expr(c: str) -> str | None:
    """A shape or size expression in Python, or None when it is not plain arithmetic."""
    s = " ".join(c.split())
    s = re.sub(r"\bhparams\.(\w+)\s*\(\s*(?:i|il|0)?\s*\)", r"\1", s)
    s = re.sub(r"\bhparams\.", "", s)
    s = re.sub(r"\b(\w+)\.(size|n_tokens)\(\)", r"\1_\2", s)
    s = _CAST.sub("", s)
    s = s.replace("std::max", "max").replace("std::min", "min")
    if re.search(r"[?:\[\]\"'{}&|]|!(?!=)|->|\.", s) or re.search(r"\b(?:true|false|nullptr|NULL)\b", s):
        return None
    s = re.sub(r"(?<![/])/(?![/])", "//", s)
    s = re.sub(r"(\d+)[uUlLfF]+\b", r"\1", s)
    try:
        compile(s, "<expr>", "eval")
    except SyntaxError:
        return None
    return s


def py_bool(c: str, arch_enums: dict[str, str]) -> str | None:
    """A C condition in Python (``&&``, ``||``, ``!``, comparisons, ``arch == LLM_ARCH_X``)."""
    s = " ".join(c.split())
    names: list[str] = []

    def hold(m):
        names.append(repr(arch_enums.get(m.group(0), "?")))
        return f"ARCHNAME{len(names) - 1}"
    s = re.sub(r"\bLLM_ARCH_\w+\b", hold, s)
    s = s.replace("&&", " and ").replace("||", " or ")
    s = re.sub(r"!(?!=)", " not ", s)
    s = re.sub(r"\bml\.get_arch\(\)|\bhparams\.arch\b", "arch", s)
    weights: list[str] = []

    def weight(m, neg):
        weights.append(m.group(1))
        return f"{'not ' if neg else ''}HASWEIGHT{len(weights) - 1}"
    s = re.sub(r'\bml\.get_weight\(\s*"([\w.]+)"\s*\)\s*==\s*nullptr', lambda m: weight(m, True), s)
    s = re.sub(r'\bml\.get_weight\(\s*"([\w.]+)"\s*\)\s*!=\s*nullptr', lambda m: weight(m, False), s)
    s = re.sub(r"\bml\.load_mtp\b", "load_mtp", s)
    e = py_expr(s)
    if e is None:
        return None
    e = re.sub(r"HASWEIGHT(\d+)", lambda m: f"has({weights[int(m.group(1))]!r})", e)
    return re.sub(r"ARCHNAME(\d+)", lambda m: names[int(m.group(1))], e)


def py_cond(cond: str, arch_enums: dict[str, str]) -> str | None:
    if cond.startswith("if (") and cond.endswith(")"):
        return py_bool(cond[4:-1], arch_enums)
    if cond.startswith("else of "):
        parts = re.findall(r"\((.*?)\)(?= \(|$)", cond[len("else of "):])
        got = [py_bool(p, arch_enums) for p in parts]
        return None if not parts or None in got else " and ".join(f"not ({g})" for g in got)
    return None


def literal(v: str):
    if v in ("true", "false"):
        return v == "true"
    return float(v.rstrip("f")) if ("." in v or "e" in v) else int(v)


def hparam_defaults(hparams_h: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for ctype, name, val in re.findall(
            r"^\s*(uint32_t|int32_t|float|bool|uint64_t)\s+(\w+)\s*=\s*([-+]?[\d.]+(?:e[-+]?\d+)?f?|true|false)\s*;",
            hparams_h, re.M):
        if val in ("true", "false"):
            out[name] = val == "true"
        elif ctype == "float":
            out[name] = float(val.rstrip("f"))
        else:
            out[name] = int(val)
    return out


def checks(body: str, arch_enums: dict[str, str]):
    """GGML_ASSERTs and throws: (kind, Python condition or None, C text, when)."""
    out = []
    for call, args, _loop, conds in walk(body):
        when = tuple(py_cond(c, arch_enums) for c in conds)
        if None in when or any("i" in re.findall(r"\w+", w) for w in when):
            continue
        if call == "GGML_ASSERT" and args:
            text = " ".join(args[0].split())
            cond = re.sub(r'\s*&&\s*"[^"]*"', "", text)
            out.append(("assert", py_bool(cond, arch_enums), text, when))
        elif call.startswith("throw") and args:
            m = re.match(r'^(arch_name\(\)\s*\+\s*)?(?:format\()?\s*"((?:[^"\\]|\\.)*)"', args[0])
            if m:
                out.append(("throw", None, ("{arch}" if m.group(1) else "") + m.group(2), when))
    return [c for c in out if c[0] == "throw" or c[1] is not None]


