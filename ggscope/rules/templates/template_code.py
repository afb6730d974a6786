"""The template rules GG1301-GG1307: what a file's chat templates execute or refuse.

Why: a GGUF file carries code - its Jinja2 chat templates - that every chat runtime
executes on every request, and prose that people and agents read.  These rules report,
with the template's line and column and the key's byte range:

- errors: what a runtime would execute or refuse - a syntax error, an attribute the
  sandbox refuses (the sandbox-escape gadgets), an attribute chosen at render time,
  unbounded work, and a sandboxed render that is refused or blows its budget;
- a warning for engine internals a template names; info for variables only some
  callers pass and renders that refuse a conversation on purpose.

What a file relies on and what hides (GG1308-GG1311) is in ``template_text``.

Contract: every rule reads ``sources`` (one parse and one bounded render per template,
shared); none renders outside ``sandbox``.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted
from ggscope.rules.templates import sources as src
from ggscope.rules.templates.context import MAX_TEMPLATE

__all__ = ["RULES", "issues"]

_FAMILY = "templates"


def issues(ctx: CheckContext, kind: str) -> Iterator[Finding]:
    for t in src.templates(ctx.mf):
        node = ctx.node(t.node_path) if t.node_path else None
        for i in src.issues_of(t.text):
            if i.kind == kind:
                sev = None if i.fatal else (Severity.WARNING if ctx.rule.severity == Severity.ERROR else None)
                yield ctx.at(node, f"{t.where(i.line, i.col)}: {i.message}", severity=sev)


class TemplateSyntaxError(Rule):
    """What it checks: every chat template (``tokenizer.chat_template`` and each
    ``tokenizer.chat_template.<name>``) parses with Jinja2's own parser, in the
    environment transformers renders it in (``trim_blocks``, ``lstrip_blocks``,
    ``loopcontrols``, the ``generation`` tag).

    Why it matters: a runtime that cannot parse the template refuses the chat request
    (transformers raises; llama.cpp falls back to a built-in guess or fails).

    Example: ``{% for message in messages %}{{ message.content }}`` (no ``endfor``).

    Reference: Jinja2's ``Environment.parse``; transformers ``utils/chat_template_utils.py``
    (``_cached_compile_jinja_template``).
    """
    code, name, severity, family = "GG1301", "template-syntax-error", Severity.ERROR, _FAMILY
    only_if = "template"
    summary = "A chat template does not parse."
    source = "Jinja2's parser in transformers' chat-template environment; llama.cpp as vendored in llama-cpp-python 0.3.36, common/jinja/parser.cpp"

    def check(self, ctx):
        yield from issues(ctx, "syntax")


class TemplateUnsafeAttribute(Rule):
    """What it checks: no template reaches an attribute Jinja2's sandbox refuses -
    a dunder (``__class__``, ``__globals__``, ``__subclasses__``...), a name in
    ``jinja2.sandbox``'s UNSAFE sets (``func_globals``, ``gi_frame``, ``mro``...) or
    another underscore name (a warning) - whether written out (``.x``, ``['x']``,
    ``'{0.x}'.format``, ``\\x5f`` escapes) or built at render time from pieces (``~``,
    ``+``, ``|join``, ``|format``, ``|replace``, ``|reverse``, ``dict(x=1)|first``,
    ``{% set %}`` chains) and passed to ``|attr``, ``attribute=`` or ``[...]``.

    Why it matters: these are the steps of a server-side template injection: from any
    object to ``object.__subclasses__()`` or a function's ``__globals__``, then to
    ``os.system``.  A runtime that renders outside a sandbox executes it
    (CVE-2024-34359, llama-cpp-python); ``|attr`` escaped Jinja2's own sandbox before
    3.1.6 (CVE-2025-27516).  No chat template needs them.

    Example: ``{{ ().__class__.__base__.__subclasses__() }}``;
    ``{% set g = '%s%s%s'|format('__','globals','__') %}{{ lipsum|attr(g) }}``.

    Reference: jinja2.sandbox (``is_safe_attribute``, ``UNSAFE_*``); CVE-2024-34359;
    CVE-2025-27516.
    """
    code, name, severity, family = "GG1302", "template-unsafe-attribute", Severity.ERROR, _FAMILY
    only_if = "template"
    summary = "A chat template reaches an attribute the Jinja2 sandbox refuses (a sandbox-escape step)."
    source = "jinja2.sandbox is_safe_attribute; CVE-2024-34359 (llama-cpp-python, llama.cpp's binding); CVE-2025-27516"

    def check(self, ctx):
        yield from issues(ctx, "unsafe-attribute")


class TemplateComputedAttribute(Rule):
    """What it checks: ``|attr(name)`` and the ``attribute=`` of map, selectattr,
    rejectattr, sort, groupby, sum, unique, min and max get a name the template text
    determines.

    Why it matters: an attribute name computed at render time (from a variable, a
    message, a loop) hides which attribute is read; it is how obfuscated payloads pass
    scanners that look for ``__`` in the text.  Chat templates read fixed fields.

    Example: ``{{ x|attr(messages[0].content) }}``.

    Reference: Jinja2 builtin filters ``attr`` and ``map``; CVE-2025-27516.
    """
    code, name, severity, family = "GG1303", "template-computed-attribute", Severity.ERROR, _FAMILY
    only_if = "template"
    summary = "A chat template reads an attribute whose name is computed at render time."
    source = "Jinja2 attr/map filters under jinja2.sandbox; CVE-2025-27516; CVE-2024-34359 (llama-cpp-python, llama.cpp's binding)"

    def check(self, ctx):
        yield from issues(ctx, "computed-attribute")


class TemplateEngineInternal(Rule):
    """What it checks: a template names none of the engine's internals that no chat
    runtime provides: ``self``, ``lipsum``, ``cycler``, ``joiner`` (Jinja2 only), Flask's
    ``config``/``request``, or Python names such as ``os`` and ``__builtins__``.

    Why it matters: transformers' context and llama.cpp's engine define messages,
    tools, the special tokens, raise_exception, strftime_now, namespace, range and
    dict; the names above exist only in some engines, and a template uses them to
    reach ``__globals__``.  llama.cpp's engine does not define them, so the template
    also renders differently there.

    Example: ``{% set mods = lipsum|attr(g) %}``.

    Reference: transformers ``utils/chat_template_utils.py``; llama.cpp as vendored in
    llama-cpp-python 0.3.36, ``common/jinja/value.cpp`` (``global_builtins``) and
    ``common/chat.cpp``.
    """
    code, name, severity, family = "GG1304", "template-engine-internal", Severity.WARNING, _FAMILY
    only_if = "template"
    summary = "A chat template names an engine internal no chat runtime provides."
    source = "transformers chat_template_utils.py globals; llama.cpp as vendored in llama-cpp-python 0.3.36, common/jinja/value.cpp (global_builtins)"

    def check(self, ctx):
        yield from issues(ctx, "gadget-name")


class TemplateUndocumentedVariable(Rule):
    """What it checks: the variables a template reads that it never defines and that
    no runtime documents (listed once per template).

    Why it matters: advice.  Runtimes pass such extras only when asked
    (``apply_chat_template(..., custom_tools=...)``, llama.cpp's
    ``chat_template_kwargs``); otherwise they render as undefined, which is often the
    intent (``{% if enable_citations %}``).

    Example: Llama 3.1's template reads ``builtin_tools`` and ``custom_tools``.

    Reference: transformers ``tokenization_utils_base.py`` (``apply_chat_template``);
    llama.cpp as vendored in llama-cpp-python 0.3.36, ``common/chat.cpp``.
    """
    code, name, severity, family = "GG1305", "template-undocumented-variable", Severity.INFO, _FAMILY
    only_if = "template"
    summary = "A chat template reads variables that only some callers pass."
    source = "transformers apply_chat_template; llama.cpp as vendored in llama-cpp-python 0.3.36, common/chat.cpp"

    def check(self, ctx):
        yield from issues(ctx, "extra-name")


class TemplateUnboundedWork(Rule):
    """What it checks: the work a template asks for is bounded by its input: no
    ``range`` longer than the sandbox's MAX_RANGE (100000), no nested constant loops
    past ten million steps, no string or list repeated, padded or indented past 100000
    characters (``'x' * 10**9``, ``tojson(indent=10**9)``, ``|indent``, ``|center``,
    ``.ljust``, ``'%999999999s'``), no power with thousands of digits, no value that
    doubles itself inside a loop, no macro that calls itself (directly, through other
    macros or call blocks) without descending into its argument or a guard on it.

    Why it matters: the template is rendered on every request; such a template hangs
    the server or exhausts its memory (a denial of service), and llama.cpp's C++
    engine overflows its stack on unbounded recursion.

    Example: ``{{ messages|tojson(indent=10**9) }}``.

    Reference: jinja2.sandbox (``MAX_RANGE``); Jinja2 builtin filters.
    """
    code, name, severity, family = "GG1306", "template-unbounded-work", Severity.ERROR, _FAMILY
    only_if = "template"
    summary = "A chat template asks for work or memory its input does not bound."
    source = "jinja2.sandbox MAX_RANGE; llama.cpp as vendored in llama-cpp-python 0.3.36, common/jinja/runtime.cpp (a recursive evaluator)"

    def check(self, ctx):
        yield from issues(ctx, "unbounded")


_ATTR_IN_ERROR = r"access to attribute '([^']*)'"      # searched only in a refused render's error


class TemplateRenderRefused(Rule):
    """What it checks: each template renders in transformers' sandboxed environment
    (``ImmutableSandboxedEnvironment`` with raise_exception, strftime_now, dict,
    namespace, tojson), in a child process capped at 512 MiB more memory, 5 s of CPU
    and 10 s of wall time, for the standard conversations: system + user; user,
    assistant, user; a tool call and its result when the template mentions tools; each
    with ``add_generation_prompt`` false and true.

    Why it matters: an error when the sandbox refuses an attribute (a sandbox-escape
    attempt) or the budget is blown (the template hangs or exhausts a server).  Info
    when the template refuses a conversation on purpose (``raise_exception``), when
    only the immutable sandbox refuses a list or dict mutation (llama.cpp's engine
    allows ``append``), or when it fails on one of the standard conversations.

    Example: ``{{ ().__class__ }}`` (SecurityError); ``{{ messages|tojson(indent=10**9) }}``
    (memory).

    Reference: transformers ``utils/chat_template_utils.py``; jinja2.sandbox.
    """
    code, name, severity, family = "GG1307", "template-render-refused", Severity.ERROR, _FAMILY
    only_if = "template"
    summary = "A sandboxed render of a chat template is refused or exceeds its budget."
    source = "transformers' ImmutableSandboxedEnvironment render; llama.cpp as vendored in llama-cpp-python 0.3.36, common/chat.cpp"

    def check(self, ctx):
        for t in src.templates(ctx.mf):
            if len(t.text) > MAX_TEMPLATE or any(i.kind == "syntax" for i in src.issues_of(t.text)):
                continue          # reported by GG1306 / GG1301; nothing to render
            node = ctx.node(t.node_path) if t.node_path else None
            seen = set()
            for r in src.renders_of(ctx.mf, t):
                if r.outcome == "ok":
                    continue
                sev, what = Severity.INFO, r.error
                if r.outcome == "budget":
                    sev, what = Severity.ERROR, f"the render exceeded its budget ({r.error})"
                elif r.outcome == "security":
                    from ggscope.rules.templates.analysis import unsafe_reason  # Jinja2: only for a file with a template
                    m = re.search(_ATTR_IN_ERROR, r.error)
                    escape = m is None or unsafe_reason(m.group(1)) is not None
                    sev = Severity.ERROR if escape else Severity.INFO
                    what = (f"the sandbox refused a sandbox-escape step ({r.error})" if escape else
                            f"transformers' immutable sandbox refuses a mutation ({r.error}); llama.cpp allows it")
                elif r.outcome == "raised":
                    what = f"the template refuses this conversation: {r.error}"
                elif r.outcome == "unavailable":
                    what = r.error
                else:
                    what = f"the render failed: {r.error}"
                if (sev, what) in seen:
                    continue
                seen.add((sev, what))
                conv = f"{r.conversation}, add_generation_prompt={str(r.add_generation_prompt).lower()}"
                yield ctx.at(node, f"{t.key} ({conv}): {quoted(what)[1:-1]}", severity=sev)


RULES = [TemplateSyntaxError, TemplateUnsafeAttribute, TemplateComputedAttribute, TemplateEngineInternal,
         TemplateUndocumentedVariable, TemplateUnboundedWork, TemplateRenderRefused]
