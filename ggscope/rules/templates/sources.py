"""Where a file keeps what a runtime executes or shows: templates, special tokens, prose.

Why: every template rule needs the same three things - the templates with the bytes of
their keys, the texts of the special tokens, and the prose keys - and the same parse
and render of each template.  They are gathered here once.  ``study`` parses a template
once (its issues, the text it can write, and - when the analysis passed it - the template
compiled for ``budget``), cached by the text; a render is cached by the text and the
special tokens.  So the rules of the family share one parse and one render per template,
and the files of one model (a folder of its quantizations) share them too.  The render
runs in this process under ``budget`` when the study compiled it, else - or when that
budget trips - in ``sandbox``'s forked, rlimit-capped child, whose verdict stands.

Contract: Jinja2 is imported only when a file has a template; nothing here reads more
than the metadata already parsed; vocabulary look-ups compare bytes with the tokens of
the same length (``vocab_bytes.is_token``, only when a template emits special-token
text); string arrays are read up to ``MAX_ITEMS`` entries.
"""
from __future__ import annotations

import codecs
from functools import lru_cache
from typing import TYPE_CHECKING

from ggscope.facts import upstream
from ggscope.ksy.strings import StringArray
from ggscope.rules import vocab_bytes
from ggscope.rules.common import chat_templates_of, per_file
from ggscope.rules.templates import kept
from ggscope.rules.templates.context import SPECIAL_TOKEN_NAMES, TEMPLATE_KEY, is_free_text_key

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile
    from ggscope.rules.base import CheckContext
    from ggscope.rules.templates.issue import Issue
    from ggscope.rules.templates.records import Study, Template
    from ggscope.rules.templates.sandbox import Render

__all__ = ["Template", "Study", "study", "templates", "issues_of", "literals_of", "renders_of", "clear_caches",
           "special_texts", "in_vocabulary", "prose", "special_tokens", "special_text", "node_of", "MAX_ITEMS"]

MAX_ITEMS = 1000
_TOKENS = "tokenizer.ggml.tokens"
_CONTROL, _USER_DEFINED = 3, 4         # llama_token_type (gguf-py TokenType)


def __getattr__(name: str):
    """``Template`` and ``Study`` live in ``records`` (start-up: a file without a template
    creates neither class); named here as before."""
    if name in ("Template", "Study"):
        from ggscope.rules.templates import records   # start-up: created only for a file with a template
        return getattr(records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def templates(mf: "ModelFile") -> list[Template]:
    """The file's templates (cached in ``mf.extra``: six rules ask)."""
    return per_file(mf, "templates", lambda: _templates(mf))


def _templates(mf: "ModelFile") -> list[Template]:
    keys = [k for _, k in chat_templates_of(mf)]       # context.template_keys, as the precondition read them
    if not keys:
        return []
    from ggscope.rules.templates.records import Template   # start-up: the record only for a file with a template
    return [Template(k, mf.metadata[k], mf.metadata_nodes.get(k, "")) for k in keys]


@lru_cache(maxsize=16)         # keyed by the text: the files of one model share one template
def study(text: str) -> Study:
    from ggscope.rules.templates import budget                 # Jinja2 only when a file has a template
    from ggscope.rules.templates.analysis import analyse, literals, parse  # Jinja2 only when a file has a template
    from ggscope.rules.templates.engine import environment  # Jinja2 only when a file has a template
    tree = parse(text)
    issues = tuple(analyse(text, tree))
    lit = literals(text, tree)
    ok = budget.eligible(text, issues)
    from ggscope.rules.templates.records import Study   # start-up: the record only for a file with a template
    return Study(issues, lit, budget.compile_bounded(environment(), tree) if ok else None)


@lru_cache(maxsize=16)
def _static(text: str) -> "tuple[tuple[Issue, ...], str]":
    """The study's issues and literal text: kept from an earlier process (``kept``) when
    there is such a record, else studied (and kept)."""
    from ggscope.rules.templates.issue import Issue    # start-up: the record only for a file with a template
    got = kept.get("study", text)
    try:
        if got is not None:
            return tuple(Issue(str(k), int(li), int(c), str(m), bool(f)) for k, li, c, m, f in got["issues"]), \
                str(got["literals"])
    except (TypeError, ValueError, KeyError):
        pass
    st = study(text)
    kept.put("study", text, {"issues": [[i.kind, i.line, i.col, i.message, i.fatal] for i in st.issues],
                             "literals": st.literals})
    return st.issues, st.literals


def issues_of(text: str) -> "tuple[Issue, ...]":
    return _static(text)[0]


def literals_of(text: str) -> str:
    return _static(text)[1]


def special_texts(mf: "ModelFile") -> dict[str, str]:
    """bos_token, eos_token, ... as a runtime passes them: the text of the token the
    matching gguf-py key (``Keys.Tokenizer.BOS_ID``: ``tokenizer.ggml.bos_token_id``,
    ...) names; empty when absent or out of range.  Once per file (``per_file``: three
    rules ask; a copy each), from the special tokens' one read (``_special_raws``: it
    holds every token such a key names), not one offset sum per token."""
    return dict(per_file(mf, "special_texts", lambda: _find_special_texts(mf)))


def _find_special_texts(mf: "ModelFile") -> dict[str, str]:
    k = upstream.tokenizer_keys()      # gguf-py's Keys.Tokenizer, without importing gguf-py each run
    id_keys = {"bos_token": k["BOS_ID"], "eos_token": k["EOS_ID"], "unk_token": k["UNK_ID"], "sep_token": k["SEP_ID"],
               "pad_token": k["PAD_ID"], "mask_token": k["MASK_ID"]}
    tokens = mf.metadata.get(_TOKENS)
    named = {}
    for name in SPECIAL_TOKEN_NAMES:
        tid = mf.metadata.get(id_keys.get(name, ""))
        if tokens is not None and isinstance(tid, int) and not isinstance(tid, bool) and 0 <= tid < len(tokens):
            named[name] = tid
    order = _special_id_array(mf) if named else []      # every id a *_token_id key names is one of them
    raws = _special_raws(mf) if named else []      # their texts, in that order: no dict of them all
    out = {}
    for name in SPECIAL_TOKEN_NAMES:
        t = ""
        if name in named:
            at = int(order.searchsorted(named[name]))
            t = raws[at] if at < len(order) and order[at] == named[name] else \
                vocab_bytes.texts(tokens, [named[name]])[0]
        out[name] = t if isinstance(t, str) else bytes(t).decode("utf-8", "replace")
    return out


@lru_cache(maxsize=16)         # keyed by the text and the special tokens: shared by a model's files
def _renders(text: str, special: tuple) -> "tuple[Render, ...]":
    """In this process under the budget when the study compiled the template for it, else
    (or when the budget trips) in the forked, rlimit-capped child, whose verdict stands."""
    from ggscope.rules.templates import sandbox  # the Render record: no Jinja2 at import
    key = "\0".join([text, *(f"{k}={v}" for k, v in special)])
    got = kept.get("renders", key)
    try:
        if got is not None:
            return tuple(sandbox.Render(str(c), bool(g), str(o), str(out), str(e)) for c, g, o, out, e in got)
    except (TypeError, ValueError):
        pass
    out = _render(text, special)
    kept.put("renders", key, [[r.conversation, r.add_generation_prompt, r.outcome, r.output, r.error] for r in out])
    return out


def _render(text: str, special: tuple) -> "tuple[Render, ...]":
    from ggscope.rules.templates import budget, sandbox  # Jinja2 and the sandbox: only for a file with a template
    bounded = study(text).bounded
    if bounded is not None:
        rows = budget.render_bounded(bounded, dict(special), sandbox.conversations(text), sandbox.render_rows)
        if rows is not None:
            return tuple(sandbox.rows_to_renders(rows))
    return tuple(sandbox.render_all(text, dict(special)))


# the cache_clear of every other cache kept by a template's text (the rules' own: template_text)
CLEARERS: list = []


def clear_caches() -> None:
    """Forget every study and render, and what the rules keep by a template's text
    (benchmarks measure a first look)."""
    study.cache_clear()
    _static.cache_clear()
    _renders.cache_clear()
    for clear in CLEARERS:
        clear()


def renders_of(mf: "ModelFile", t: Template) -> "tuple[Render, ...]":
    return _renders(t.text, tuple(sorted(special_texts(mf).items())))


def in_vocabulary(mf: "ModelFile", texts: list[str]) -> dict[str, bool]:
    """Whether each text is one whole token of the vocabulary (None-safe: no vocabulary
    means every answer is True, nothing to report)."""
    tokens = mf.metadata.get(_TOKENS)
    if tokens is None or not texts:
        return {t: True for t in texts}
    if hasattr(tokens, "joined"):             # a StringArray: compared on its bytes
        out = dict.fromkeys(texts, True)
        special = _special_strs(mf)           # a template's markers are nearly always special tokens
        rest = [t for t in out if t not in special]
        found = vocab_bytes.is_token(tokens, [t.encode("utf-8", "surrogateescape") for t in rest]) if rest else []
        out.update(zip(rest, found))
        return out
    have = set(tokens)
    return {t: t in have for t in texts}


def _special_ids(mf: "ModelFile") -> list[int]:
    """``_special_id_array`` as a list of ints, once per file (``per_file``): only what
    needs the ids one by one (a finding per token, the read by id) asks for it."""
    return per_file(mf, "special_ids", lambda: _special_id_array(mf).tolist())


def _special_id_array(mf: "ModelFile"):
    """``_find_special_ids``, once per file (``per_file``): GG1308, GG1310 and the
    special tokens' texts below all start from it."""
    return per_file(mf, "special_id_array", lambda: _find_special_ids(mf))


def _find_special_ids(mf: "ModelFile"):
    """The ids of the control and user-defined tokens and of every token a ``*_token_id``
    key names, ascending and distinct, as an int64 array: at most ``MAX_ITEMS * 100`` of
    the former.

    The token types are read in one comparison over the whole array (``> 2``: CONTROL
    and USER_DEFINED are among the few largest types, after NORMAL, UNKNOWN), and the
    exact test runs on the few ids it keeps; the ids stay an array (a list of thousands
    of ints, made and turned back into an array for the gather, cost more than the scan).
    A token type array longer than the tokens is read up to their count, a shorter one
    as far as it goes, nested arrays flattened in order."""
    import numpy as np
    tokens = mf.metadata.get(_TOKENS)
    try:
        n = len(tokens)
    except TypeError:              # no vocabulary, or a scalar in its place: no token to name
        return np.zeros(0, np.int64)
    found = np.zeros(0, np.int64)
    flat = None
    types = mf.metadata.get("tokenizer.ggml.token_type")
    if types is not None and not isinstance(types, (str, bytes)):
        try:
            flat = np.asarray(types)[:n].ravel()
            if flat.dtype.kind in "iu":              # integers: the few above 2, of which 3 and 4
                above = np.flatnonzero(flat > 2)
                typed = above[flat[above] < 5]
            elif flat.dtype.kind in "bf":            # the same, the exact test on the few kept
                above = np.flatnonzero(flat > 2)
                kept = flat[above]
                typed = above[(kept == _CONTROL) | (kept == _USER_DEFINED)]
            else:                                    # anything else is compared for equality alone
                typed = np.flatnonzero((flat == _CONTROL) | (flat == _USER_DEFINED))
            found = typed[: MAX_ITEMS * 100].astype(np.int64)
            if len(found) < len(typed):
                flat = None                          # cut short: an id's type no longer says it is there
        except (TypeError, ValueError, IndexError):      # no array of types (a scalar, ragged arrays)
            flat = None
    named = {v for k, v in mf.metadata.items()
             if k.startswith("tokenizer.ggml.") and k.endswith("_token_id") and isinstance(v, int)
             and not isinstance(v, bool) and 0 <= v < n}
    if named:           # the few ids the keys name, put in place where they are not there yet
        if flat is not None:                    # there when its type put it there
            missing = [v for v in named if not (v < len(flat) and (flat[v] == _CONTROL or flat[v] == _USER_DEFINED))]
        else:
            missing = [v for v in named if not (found == v).any()]
        if missing:                       # distinct, none in found (not np.union1d: its first call imports numpy.ma)
            found = np.sort(np.concatenate((found, np.asarray(missing, dtype=np.int64))))
    return found


def _is_utf8(encoding: str | None) -> bool:
    try:
        return encoding is None or codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def _special_strs(mf: "ModelFile") -> frozenset[str]:
    """The special tokens' texts that are whole UTF-8 strings, once per file: a text found
    here is one token (its bytes are the text's UTF-8), so ``in_vocabulary`` compares only
    the other texts with the vocabulary's strings of their length."""
    def make() -> frozenset[str]:
        raws = _special_raws(mf) if _is_utf8(getattr(mf.metadata.get(_TOKENS), "encoding", None)) else []
        return frozenset(t for t in raws if isinstance(t, str))
    return per_file(mf, "special_strs", make)


def _special_raws(mf: "ModelFile") -> list:
    """``vocab_bytes.texts`` of the special tokens (``_special_ids``), once per file: split
    from ``special_text`` when the strings are UTF-8 text and none holds a newline (each
    decodes alone, as in ``vocab_bytes.joined_texts``: one gather of their bytes serves
    GG1308, GG1310 and the per-token check), else taken by id."""
    def make() -> list:
        n = len(_special_id_array(mf))
        tokens = mf.metadata.get(_TOKENS)
        if n and getattr(tokens, "encoding", None) and _is_utf8(tokens.encoding) \
                and isinstance(tokens, StringArray):
            text = special_text(mf)
            if text.count("\n") == n - 1:
                return text.split("\n")
        return vocab_bytes.texts(tokens, _special_ids(mf)) if n else []
    return per_file(mf, "special_raws", make)


def special_tokens(mf: "ModelFile") -> tuple[list[int], list[str]]:
    """The ids and texts of the special tokens (``_special_ids``): two lists, not a list of
    pairs - thousands of new tuples set off a full garbage collection of ggscope's heap,
    which costs more than the check (a 262,144-token vocabulary holds 6,414 of them)."""
    if not len(_special_id_array(mf)):
        return [], []
    order = _special_ids(mf)
    texts = _special_raws(mf)                                       # the positions' texts in one pass
    return order, [t if isinstance(t, str) else bytes(t).decode("utf-8", "replace") for t in texts]


def special_text(mf: "ModelFile") -> str:
    """``"\n".join`` of ``special_tokens``' texts, made from the tokens' bytes in one
    decode (once per file): what a check over all of them reads before it needs any one
    of them."""
    def make() -> str:
        order = _special_id_array(mf)
        return vocab_bytes.joined_texts(mf.metadata[_TOKENS], order, ascending=True) if len(order) else ""
    return per_file(mf, "special_text", make)


def prose(mf: "ModelFile") -> list[tuple[str, str]]:
    """(key, text) of every free-text string: string values and the first ``MAX_ITEMS``
    strings of string arrays, in keys a reader takes as prose (``context.is_free_text_key``),
    and a locator's value when it holds more than one word (a URL is one word).  Cached in
    ``mf.extra``: two rules read it (GG1310, GG1311)."""
    return per_file(mf, "prose", lambda: _find_prose(mf))


def _find_prose(mf: "ModelFile") -> list[tuple[str, str]]:
    out = []
    templated = {t.key for t in templates(mf)}
    for k, v in mf.metadata.items():
        if not isinstance(k, str) or k.startswith("tokenizer.") or k in templated:
            continue
        if isinstance(v, (int, float)) or (not isinstance(v, str) and not getattr(v, "encoding", None)):
            continue                      # a number, a bool, an array of them: no text (a key's kind aside)
        if not is_free_text_key(k):       # a locator: only text beside the URL is prose
            if isinstance(v, str) and len(v.split()) > 1:
                out.append((k, v))
            continue
        if isinstance(v, str):
            out.append((k, v))
        elif hasattr(v, "__len__") and not isinstance(v, (bytes, bytearray)) and hasattr(v, "encoding") \
                and getattr(v, "encoding", None):
            for i in range(min(len(v), MAX_ITEMS)):
                s = v[i]
                if isinstance(s, str):
                    out.append((f"{k}[{i}]", s))
    return out


def node_of(ctx: "CheckContext", key: str):
    p = ctx.mf.metadata_nodes.get(key.split("[", 1)[0])
    return ctx.node(p) if p else None
