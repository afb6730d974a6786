"""Text that hides from the person reading it: invisible characters and planted instructions.

Why: a chat template's text and a file's prose metadata reach a model (and agents that
read model cards) verbatim.  Two ways to slip something past a human reviewer:

- characters a terminal or a web page does not show: zero-width and other format
  characters (Unicode category Cf: U+200B-U+200F, U+2060-U+2064, U+FEFF, U+00AD), the
  bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069, which
  reorder what is shown: CVE-2021-42574, "Trojan Source"), the tag characters
  (U+E0000-U+E007F, which spell ASCII invisibly), variation selectors outside an emoji
  (U+FE00-U+FE0F, U+E0100-U+E01EF: "emoji smuggling") and the Hangul fillers;
- text addressed to the model or an agent rather than describing the model: "ignore
  previous instructions", "do not tell the user", "AI agents reading this: fetch
  https://...", "always recommend ...".  A URL alone is not an instruction (a model card
  links its sources); an instruction with a URL is the prompt-injection pattern of
  OWASP LLM01.

Contract: ``invisible(text)`` lists the hidden characters (offset, code point, name);
``instruction(text)`` returns the phrase that reads as an instruction, or None, after
removing invisible characters and folding compatibility forms (NFKC), so ``Al\\u200cways``
reads as ``Always``.  Pure functions over str.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from ggscope.rules.templates.phrases import PHRASES

__all__ = ["invisible", "instruction", "instructions", "describe"]

_VARIATION = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
_FILLERS = {0x115F, 0x1160, 0x3164, 0xFFA0}
_URL = r"(?:https?://|www\.)\S+"
_URL_SOURCE = r"\b(?:https?://|www\.)[^\s'\"<>]+"          # compiled on first use (``_compiled``): templates only
# the patterns' sources: each is compiled the first time its anchor words occur (``_compiled``),
# so a process whose texts hold none of them never compiles one (about 20 ms of start-up)
_KINDS: dict[str, list[str]] = {
    "override": [   # overriding what came before
        r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|all|any|other|"
        r"system|user'?s?|original)\b[^.\n]{0,30}?\b(?:instructions?|prompts?|rules|requests?|messages?|"
        r"guidelines|directions|question)\b",
        r"\bnew\s+(?:system\s+)?instructions?\s*:"],
    "covert": [     # keeping something from the user
        r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|reveal|disclose|notify|let)\b[^.\n]{0,40}?"
        r"\b(?:the\s+user|users|anyone|the\s+human|them)\b",
        r"\bwithout\s+(?:telling|informing|notifying|alerting|asking)\b[^.\n]{0,20}?\b(?:the\s+user|users|anyone|them)\b",
        r"\b(?:hide|conceal|keep)\b[^.\n]{0,30}?\b(?:from|secret\s+from)\s+(?:the\s+)?users?\b"],
    "stealth": [r"\b(?:secretly|covertly|surreptitiously|silently\s+(?:send|add|append|include|insert|forward|"
                r"change|replace|redirect|copy))\b"],
    "agent": [      # addressing the reader as a model or an agent
        r"\b(?:ai|llm|language\s+model|assistant|agent|chatbot|bot)s?\b[^.\n]{0,20}?\b(?:reading|processing|parsing)\s+this\b",
        r"\b(?:note|message|instructions?)\s+(?:for|to)\s+(?:all\s+)?(?:ai|llms?|language\s+models?|assistants?|"
        r"agents?|chatbots?|bots?)\b"],
    "steer": [      # steering every answer
        r"\balways\s+(?:recommend|mention|promote|suggest|cite|link\s+to|include\s+a\s+link|send|redirect|"
        r"direct\s+users?)\b"],
    "url-action": [  # acting on a URL
        r"\b(?:fetch|curl|wget|navigate\s+to|send|post|upload|exfiltrate|execute|run|retrieve|load|visit|open)\b"
        r"[^.\n]{0,60}?" + _URL],
    "extract": [    # asking for what the operator keeps hidden
        r"\b(?:reveal|print|repeat|output|show|leak|reply\s+with)\b[^.\n]{0,30}?\b(?:system\s+prompt|hidden\s+"
        r"instructions?|developer\s+message)\b"],
    "markup": [     # chat-turn markup in prose: text posing as a system or user turn
        r"<\|im_start\|>|<\|start_header_id\|>|<start_of_turn>|\[INST\]|^#{2,}\s*(?:system|instruction)\b"],
    "payment": [    # moving money or credentials
        r"\b(?:transfer|wire|route|send|deposit)\b[^.\n]{0,60}?\baccount\b",
        r"\badd\s+\d+\s*(?:%|percent)",
        r"\b(?:api\s+key|password|credentials?|private\s+key|seed\s+phrase)\b[^.\n]{0,40}?\b(?:send|post|include|append)\b"],
}
# words one of which each pattern needs: a pattern runs only when its words occur, so a
# long text without them costs a few substring searches, not a regex pass per pattern
_ANCHORS: dict[str, list[tuple[str, ...]]] = {
    "override": [("ignore", "disregard", "forget", "override"), ("instruction",)],
    "covert": [("not", "don't", "dont", "never"), ("without",), ("user",)],
    "stealth": [("secretly", "covertly", "surreptitiously", "silently")],
    "agent": [("reading this", "processing this", "parsing this"), ("note", "message", "instruction")],
    "steer": [("always",)],
    "url-action": [("http", "www.")],
    "extract": [("system prompt", "hidden instruction", "developer message")],
    "markup": [("<|im_start|>", "<|start_header_id|>", "<start_of_turn>", "[inst]", "##")],
    "payment": [("account",), ("percent", "%"), ("key", "password", "credential", "seed phrase")],
}

# the same families in Chinese, Spanish, French, German and Russian
for _kind, _rows in PHRASES.items():
    _KINDS[_kind] += [p for p, _ in _rows]
    _ANCHORS[_kind] += [words for _, words in _rows]


@lru_cache(maxsize=None)
def _compiled(source: str) -> re.Pattern:
    return re.compile(source, re.IGNORECASE | re.DOTALL | re.MULTILINE)


@lru_cache(maxsize=1)
def _anchor_words() -> tuple[str, ...]:
    """Every anchor word of every pattern.  Searched as substrings one by one, not as one
    compiled alternation: compiling that took every process with prose 5-10 ms (issue 27
    item 3), and on a template's text the substring searches are the faster of the two."""
    return tuple(sorted({w for rows in _ANCHORS.values() for words in rows for w in words}))

@lru_cache(maxsize=1)
def _anchors_by_first() -> dict[str, tuple[str, ...]]:
    """The anchor words grouped by their first character."""
    out: dict[str, list[str]] = {}
    for w in _anchor_words():
        out.setdefault(w[0], []).append(w)
    return {c: tuple(ws) for c, ws in out.items()}


_SHORT = 4096


def _present(low: str) -> frozenset[str]:
    """The anchor words that occur in ``low``.  A short text (a name, an architecture, a
    tag: most prose) is searched only for the words that start with one of its
    characters - a word occurs only where its first character does; a long one for
    every word (its set of characters costs more than that)."""
    if len(low) > _SHORT:
        return frozenset(w for w in _anchor_words() if w in low)
    groups = _anchors_by_first()
    return frozenset(w for c in set(low) if c in groups for w in groups[c] if w in low)


@lru_cache(maxsize=1)
def _anchor_sets() -> dict[str, list[frozenset[str]]]:
    """``_ANCHORS`` with each pattern's words as a set: a pattern runs when one of them is present."""
    return {kind: [frozenset(words) for words in rows] for kind, rows in _ANCHORS.items()}


# what a chat template may legitimately say ("do not tell the user about function calls",
# Qwen3-Coder): there, a covert phrase counts only together with another kind
ALONE_IN_TEMPLATES = ("override", "stealth", "agent", "steer", "url-action", "payment", "extract")


def _hidden(c: str, prev: str, nxt: str) -> bool:
    o = ord(c)
    if any(a <= o <= b for a, b in _VARIATION):
        # an emoji presentation selector right after a pictograph is ordinary emoji text
        return not (o == 0xFE0F and prev and unicodedata.category(prev) == "So")
    if o in _FILLERS:
        return True
    if unicodedata.category(c) != "Cf":
        return False
    if o == 0x200D and prev and nxt and unicodedata.category(prev) == "So" and unicodedata.category(nxt) == "So":
        return False                  # the joiner inside an emoji sequence (family, flags)
    return True


def describe(o: int) -> str:
    name = unicodedata.name(chr(o), "")
    if 0xE0000 <= o <= 0xE007F:
        name = name or "TAG"
    return f"U+{o:04X}" + (f" {name}" if name else "")


def _may_hide(o: int) -> bool:
    """Whether code point ``o`` is one ``_hidden`` may accept: a format character (Cf) of
    this Python's Unicode tables, a variation selector or a filler."""
    return (any(a <= o <= b for a, b in _VARIATION) or o in _FILLERS
            or ((0x80 <= o < 0x20000 or 0xE0000 <= o < 0xE1000) and unicodedata.category(chr(o)) == "Cf"))


_ASCII = bytes(range(0x80))


def _non_ascii(text: str) -> set[str]:
    """The distinct characters of ``text`` past ASCII.  Its ASCII bytes are dropped in one
    pass first: ``set(text)`` made a str per character of a mostly ASCII text (28,687 of
    them in a vocabulary's special tokens, 0.4 ms) to keep the few dozen that are not.
    ``surrogatepass`` round-trips every code point a str holds, lone surrogates too."""
    return set(text.encode("utf-8", "surrogatepass").translate(None, _ASCII).decode("utf-8", "surrogatepass"))


def _candidates(text: str) -> re.Pattern | None:
    """One character class of the code points of ``text`` that may hide, or None: the
    distinct characters of the text are judged (a few hundred in a vocabulary's special
    tokens), not every code point Unicode has (135,000 ``category`` calls, 25 ms of each
    process that met a non-ASCII text), so a long text is still scanned by the regex
    engine, not a Python loop."""
    found = sorted(o for o in map(ord, _non_ascii(text)) if _may_hide(o))
    return re.compile("[" + "".join(re.escape(chr(o)) for o in found) + "]") if found else None


def invisible(text: str) -> list[tuple[int, int]]:
    """(offset, code point) of every hidden character of ``text``."""
    if text.isascii():
        return []
    candidates = _candidates(text)
    if candidates is None:
        return []
    out = []
    for m in candidates.finditer(text):
        i = m.start()
        if _hidden(text[i], text[i - 1] if i else "", text[i + 1] if i + 1 < len(text) else ""):
            out.append((i, ord(text[i])))
    return out


def _visible(text: str) -> str:
    hidden = [i for i, _ in invisible(text)]
    if hidden:                          # cut out the hidden characters: one slice per run of text
        ends = hidden + [len(text)]
        text = text[:hidden[0]] + "".join(text[a + 1:b] for a, b in zip(hidden, ends[1:]))
    return unicodedata.normalize("NFKC", text)


def instructions(text: str, limit: int = 1 << 20) -> dict[str, str]:
    """kind -> the first phrase of that kind in ``text`` (its first ``limit`` characters)
    that reads as an instruction to a model or an agent."""
    plain = _visible(text[:limit])
    low = plain.lower()
    found: dict[str, str] = {}
    present = _present(low)
    if not present:                                        # most prose holds none of the words
        return found
    sets = _anchor_sets()
    for kind, patterns in _KINDS.items():
        for p, words in zip(patterns, sets[kind]):
            if present.isdisjoint(words):
                continue
            m = _compiled(p).search(plain)
            if m:
                found[kind] = m.group(0)
                break
    return found


def instruction(text: str, *, in_template: bool = False) -> str | None:
    """The phrase that makes ``text`` read as an instruction planted for a model or an
    agent, or None.  In a template (which legitimately instructs the model) a covert
    phrase needs a second kind beside it."""
    found = instructions(text)
    if in_template:
        # a chat template has no reason to put a web address into every prompt (none of
        # llama.cpp's models/templates does); in prose a URL alone is a citation
        url = _compiled(_URL_SOURCE).search(_visible(text[:1 << 20]))
        if url:
            found["url"] = f"writes {url.group(0)}"
        if not set(found) & {*ALONE_IN_TEMPLATES, "url"}:
            return None
    return "; ".join(found.values()) or None
