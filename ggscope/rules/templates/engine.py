"""The Jinja2 environment a chat template is parsed and rendered in: transformers' own.

Why: the same template means different things in different environments - an extension
tag (``{% generation %}``), ``break``/``continue`` or ``trim_blocks`` change what parses
and what renders.  transformers' ``_cached_compile_jinja_template``
(``utils/chat_template_utils.py``) is the reference runtime for chat templates and the
one llama.cpp's engine (common/jinja/, as vendored in llama-cpp-python 0.3.36) imitates,
so ggscope parses and renders in a copy of it: an ``ImmutableSandboxedEnvironment`` with
``trim_blocks``, ``lstrip_blocks``, ``loopcontrols``, a ``generation`` block tag, and the
globals ``raise_exception``, ``strftime_now``, ``dict``, ``namespace`` plus its
``tojson`` filter.  Built here once, without importing transformers (seconds of import
for four small functions).

The environment carries the hooks of ``budget`` (calls, operators, attribute and item
access, filters, output): pass-throughs unless a budgeted render is active.

Contract: ``environment()`` is cached; parsing never renders; rendering is done only by
``ggscope.rules.templates.sandbox`` (in a child process under resource limits) and
``budget`` (in this process, under a budget, for templates the analysis passed).
"""
from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ggscope.core.escape import quoted
from ggscope.rules.templates import budget

__all__ = ["environment", "TemplateRaised"]


class TemplateRaised(jinja2.exceptions.TemplateError):
    """The template called ``raise_exception``: it refuses the conversation on purpose."""


class _Generation(jinja2.ext.Extension):
    """transformers' AssistantTracker tag: ``{% generation %}...{% endgeneration %}``
    marks assistant text; for rendering it is a plain block."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def _raise_exception(message):
    raise TemplateRaised(str(message))


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt):
    return datetime.now().strftime(fmt)


class _TemplateDict:
    """transformers' TemplateDict: ``dict(...)`` without the dict type's attributes."""
    def __call__(self, *args, **kwargs):
        return dict(*args, **kwargs)

    def fromkeys(self, *args, **kwargs):
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(jinja2.utils.Namespace):
    """transformers' TemplateNamespace: no underscore-prefixed attribute may be stored."""
    def __init__(*args, **kwargs):
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _TemplateNamespace._check(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name, value):
        _TemplateNamespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name):
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"namespace attribute {quoted(name)} starts with an underscore")


class _Budgeted(ImmutableSandboxedEnvironment):
    """transformers' environment with the hooks ``budget`` checks a render against
    (each a pass-through when no budget is active: the forked child renders with it too)."""
    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - Jinja2's own signature
        return budget.call(__self, __self._sandboxed_call, __context, __obj, args, kwargs)

    def _sandboxed_call(self, context, obj, *args, **kwargs):
        return ImmutableSandboxedEnvironment.call(self, context, obj, *args, **kwargs)

    def call_binop(self, context, operator, left, right):
        return budget.binop(self, operator, left, right)

    def getattr(self, obj, attribute):
        budget.step()
        return super().getattr(obj, attribute)

    def getitem(self, obj, argument):
        budget.step()
        return super().getitem(obj, argument)


@lru_cache(maxsize=1)
def environment() -> ImmutableSandboxedEnvironment:
    # optimized=False: Jinja2's optimizer runs filters on constants while compiling - a
    # ``replace`` of long literals by long literals would be computed then, outside any
    # budget or rlimit; without it the output is the same (checked on llama.cpp's
    # templates) and compiling is about a fifth cheaper
    env = _Budgeted(trim_blocks=True, lstrip_blocks=True, finalize=budget.finalize, optimized=False,
                    extensions=[_Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = _TemplateNamespace
    env.filters = budget.guard_filters(env.filters)
    return env
