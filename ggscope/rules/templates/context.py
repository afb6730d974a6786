"""What a chat template may name, and which metadata keys carry templates or free text.

Why: a template is code that a runtime executes with a fixed set of variables.  A name
outside that set is either an extra the caller must pass (harmless: it renders as
undefined) or a handle into the engine itself (``self``, ``lipsum``, ``cycler``,
``joiner``: the usual roots of a sandbox escape, since their ``__globals__`` reach
Python's modules).  The sets below are read off the two runtimes that render GGUF
templates; each entry cites its source.

Contract: plain tables, no logic beyond ``template_keys``.

Sources:
- transformers (installed), ``utils/chat_template_utils.py``: ``render_jinja_template``
  passes ``messages``, ``tools``, ``documents``, ``add_generation_prompt`` and the
  template kwargs, which ``tokenization_utils_base.py`` fills with the tokenizer's
  ``special_tokens_map`` (``SPECIAL_TOKENS_ATTRIBUTES``: bos/eos/unk/sep/pad/cls/mask
  tokens); ``_cached_compile_jinja_template`` adds the globals ``raise_exception``,
  ``strftime_now``, ``dict``, ``namespace`` to Jinja2's defaults (``range``, ``lipsum``,
  ``cycler``, ``joiner``, ``namespace``, ``dict``).
- llama.cpp as vendored in llama-cpp-python 0.3.36, ``common/chat.cpp``
  (``common_chat_template_direct_apply_impl``: ``messages``, ``bos_token``,
  ``eos_token``, ``enable_thinking``, ``tools``, ``add_generation_prompt`` and the
  caller's extra context), ``common/jinja/caps.cpp`` (``preserve_thinking``,
  ``clear_thinking``, ``truncate_history_thinking``, ``drop_thinking``,
  ``reasoning_effort``, ``reasoning_strength``) and ``common/jinja/value.cpp``
  (``global_builtins``: ``raise_exception``, ``dict``, ``namespace``, ``strftime_now``,
  ``range``, ``tojson``).  llama.cpp's engine has no ``lipsum``, ``cycler``, ``joiner``
  or ``self``.
"""
from __future__ import annotations

import re

from ggscope.model.summary import CHAT_TEMPLATE_KEY, chat_templates

__all__ = ["MAX_TEMPLATE", "CONTEXT_NAMES", "ENGINE_GLOBALS", "GADGET_ROOTS", "TEMPLATE_KEY", "TEMPLATE_LIST_KEY",
           "template_keys", "is_free_text_key", "SPECIAL_TOKEN_NAMES"]

# characters of a template ggscope parses; a longer one is reported unchecked (the longest
# of llama.cpp's models/templates is under 30,000 characters)
MAX_TEMPLATE = 4 << 20

# variables the runtimes pass to every render
CONTEXT_NAMES: frozenset[str] = frozenset({
    "messages", "tools", "documents", "add_generation_prompt",                  # transformers
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
    "additional_special_tokens",                                                 # special_tokens_map
    "enable_thinking",                                                           # llama.cpp chat.cpp
    "preserve_thinking", "clear_thinking", "truncate_history_thinking", "drop_thinking",
    "reasoning_effort", "reasoning_strength",                                    # llama.cpp caps.cpp
})
# globals both engines define (transformers' sandbox and llama.cpp's global_builtins)
ENGINE_GLOBALS: frozenset[str] = frozenset({
    "raise_exception", "strftime_now", "namespace", "range", "dict",
    "true", "false", "none", "True", "False", "None",          # Jinja2 literals parse as Const, kept for safety
    "loop", "caller", "varargs", "kwargs",                    # names Jinja2 defines inside loops and macros
})
# names that exist only as engine internals or framework objects: nothing a chat template
# needs, and the usual first step of a sandbox escape (lipsum.__globals__, self.__init__, ...)
GADGET_ROOTS: frozenset[str] = frozenset({
    "self", "lipsum", "cycler", "joiner",                     # Jinja2's TemplateReference and default globals
    "config", "request", "session", "g", "url_for", "get_flashed_messages",   # Flask's template context
    "__builtins__", "__import__", "os", "sys", "subprocess", "builtins", "globals", "locals",
    "eval", "exec", "open", "getattr", "setattr", "compile", "importlib",
})
# special token names a template may print, after transformers' SPECIAL_TOKENS_ATTRIBUTES
# (cls_token has no GGUF key: llama.cpp's vocabulary has no CLS id)
SPECIAL_TOKEN_NAMES: tuple[str, ...] = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                                        "mask_token")

# gguf-py's Keys.Tokenizer: CHAT_TEMPLATE, CHAT_TEMPLATE_N and CHAT_TEMPLATES (the list of
# names); which keys are templates is decided once, in ggscope.model.summary.chat_templates
TEMPLATE_KEY = CHAT_TEMPLATE_KEY
TEMPLATE_LIST_KEY = "tokenizer.chat_templates"


def template_keys(metadata) -> list[str]:
    """Every metadata key a runtime may render as a template, in file order."""
    return [k for _, k in chat_templates(metadata)]


# keys whose value is a locator: a URL there is what belongs there, never a finding
_LOCATOR = re.compile(r"(^|\.)(url|urls|link|links|repo_url|doi|uuid|repo|source|homepage)$")
# keys whose value is machine-read data, not prose (checked by their own rules)
_NOT_PROSE = ("tokenizer.",)


def is_free_text_key(key: str) -> bool:
    """A string key a person (or an agent) reads as prose: ``general.name``,
    ``general.description``, ``general.author``, ``general.tags``, ...; not a locator
    (``general.source.url``, ``general.license.link``, ``general.base_model.0.repo_url``)
    and not the tokenizer's data."""
    return not key.startswith(_NOT_PROSE) and not _LOCATOR.search(key)
