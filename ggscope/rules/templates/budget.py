"""Rendering a chat template in this process, under a budget the sandbox itself enforces.

Why: the forked, rlimit-capped render (``sandbox.render_all``) is the authority on what a
template does, but a fork costs more than everything else ``validate`` does on a small
file.  A template the syntax-tree analysis passed (no escape step, nothing unbounded, no
computed attribute or engine internal) and that is not large is first rendered here, in
the same ``ImmutableSandboxedEnvironment``, with every way it could spin or grow passing
through a check:

- every loop iteration (each ``{% for %}``'s iterable is wrapped: ``_ITER``), every call
  (macros, ``loop()``, methods, globals: ``environment.call``), filter, attribute and item
  access, and arithmetic operator (``intercepted_binops``) counts a step; past
  ``MAX_STEPS`` steps, ``MAX_SECONDS`` of wall time or ``MAX_DEPTH`` nested calls the
  attempt is abandoned;
- no value grows past ``MAX_UNITS`` (characters, items, counted with multiplicity, so a
  list holding itself twice per step is caught at its first doubling): the results of
  filters, calls, operators, ``~`` (``_CONCAT``), list/tuple/dict literals (``_CHECK``)
  and every ``{{ }}`` output (``finalize``) are measured, and operations whose result
  could be far larger than their arguments (``*``, ``**``, ``%``, ``replace``, ``join``,
  ``indent``, ``tojson(indent=)``, widths, ``expandtabs``, ``format``) are checked from
  their arguments *before* they run, so nothing large is ever allocated;
- a callable, filter or method not in ``sizes``' tables is not run here at all; the
  render's total output and everything it made stay within ``MAX_MADE`` (each pass over
  a loop, macro or call-block body is charged for the text it writes).

Contract: ``eligible(text, issues)`` says whether to try; ``compile_bounded(env, tree)``
compiles a syntax tree the analysis passed (the tree is rewritten: pass a tree nobody
else uses) or returns None; ``render_bounded(template, special, convs, render_rows)``
returns the rows ``sandbox.render_rows`` returns, or None when the
budget tripped or the render hit Python's own limits.  A trip is never a finding: the
caller renders again in the forked child, whose verdict stands.  The budget is per thread
(``threading.local``); with no budget active the hooks only pass values through, so the
forked child renders with the same environment.
"""
from __future__ import annotations

import threading
import time
from functools import wraps

import jinja2
import jinja2.ext
import jinja2.nodes as n
from jinja2.runtime import LoopContext, Macro, Undefined
from jinja2.visitor import NodeTransformer

from ggscope.rules.templates.sizes import (FILTER_BOUNDS, LINEAR_FILTERS, LINEAR_METHODS, MAX_BITS, MAX_UNITS,
                                           METHOD_BOUNDS, Tripped, format_bound, need, small, units, within)

__all__ = ["Tripped", "eligible", "compile_bounded", "render_bounded", "guard_filters", "finalize", "binop", "call",
           "step", "MAX_UNITS", "MAX_STEPS", "MAX_MADE"]

MAX_MADE = 1 << 21           # characters / items all values and outputs of one render may add up to
MAX_STEPS = 1 << 18          # loop iterations, calls, filters, accesses of one render
MAX_SECONDS = 0.5            # wall time of one attempt (a trip only means "render in the child")
MAX_DEPTH = 64               # nested calls (macros calling macros)
MAX_TEXT = 1 << 16           # characters of a template rendered here (larger: the child)
_CLOCK_EVERY = 64

_ITER, _WRITE = "ggscope_budget_iter", "ggscope_budget_write"
_CONCAT, _CHECK = "ggscope_budget_concat", "ggscope_budget_check"
_state = threading.local()
# Jinja2 before 3.1.6 let ``|attr('format')`` out of its sandbox (CVE-2025-27516): with
# such a Jinja2 (pyproject asks for 3.1.6, an environment may hold another) nothing
# renders in this process
_SANDBOX_FIXED = tuple(int(x) for x in jinja2.__version__.split(".")[:3] if x.isdigit()) >= (3, 1, 6)


class _Budget:
    __slots__ = ("steps", "clock_at", "deadline", "depth", "total")

    def __init__(self) -> None:
        self.steps, self.clock_at, self.depth, self.total = 0, _CLOCK_EVERY, 0, 0
        self.deadline = time.monotonic() + MAX_SECONDS

    def step(self) -> None:
        self.steps += 1
        if self.steps >= self.clock_at:
            if self.steps > MAX_STEPS or time.monotonic() > self.deadline:
                raise Tripped
            self.clock_at = self.steps + _CLOCK_EVERY

    def write(self, size: int) -> None:
        self.total += size
        if self.total > MAX_MADE:
            raise Tripped

    def made(self, value):
        """``value`` is within ``MAX_UNITS`` and what the render made stays within ``MAX_MADE``."""
        size = units(value)
        if size > MAX_UNITS:
            raise Tripped
        self.write(size)
        return value


def active() -> _Budget | None:
    return getattr(_state, "budget", None)


def _pass_args(f) -> int:
    """How many leading arguments Jinja2 itself passes (context, eval context, environment)."""
    return 1 if getattr(f, "jinja_pass_arg", None) is not None else 0


def _guard_filter(name: str, f):
    skip = _pass_args(f)
    bound = FILTER_BOUNDS.get(name)
    known = bound is not None or name in LINEAR_FILTERS

    @wraps(f)
    def guarded(*args, **kwargs):
        b = active()
        if b is None:
            return f(*args, **kwargs)
        b.step()
        need(known)
        if name == "join" and len(args) > skip and not hasattr(args[skip], "__len__"):
            args = (*args[:skip], _listed(args[skip], b), *args[skip + 1:])
        own = args[skip:]
        small(*own, *kwargs.values())
        if bound is not None:
            within(bound, *own, **kwargs)
        return b.made(f(*args, **kwargs))
    return guarded


def guard_filters(filters: dict) -> dict:
    """The filters, each checked against the active budget (a pass-through without one),
    plus the budget's own."""
    return {**{name: _guard_filter(name, f) for name, f in filters.items()}, **_OWN_FILTERS}


def _listed(iterable, b: _Budget) -> list:
    """An iterator (``|map`` and ``|select`` give one) as a list, within ``MAX_UNITS``."""
    out, size = [], 0
    for x in iterable:
        b.step()
        size += units(x)
        need(size <= MAX_UNITS)
        out.append(x)
    return out


def _ticking(iterable, b: _Budget):
    for x in iterable:
        b.step()
        yield x


@jinja2.pass_context
def _iter(context, value):
    b = active()
    return value if b is None or isinstance(value, Undefined) else _ticking(value, b)


@jinja2.pass_context
def _write(context, written):
    b = active()
    if b is not None:
        b.write(written)
    return ""


@jinja2.pass_context
def _concat(context, parts):
    b = active()
    if b is None:
        return "".join(map(str, parts))
    b.step()
    out, total = [], 0
    for p in parts:
        need(units(p) <= MAX_UNITS)
        s = str(p)
        total += len(s)
        need(total <= MAX_UNITS)
        out.append(s)
    return b.made("".join(out))


@jinja2.pass_context
def _check(context, value):
    b = active()
    return value if b is None else b.made(value)


_OWN_FILTERS = {_ITER: _iter, _WRITE: _write, _CONCAT: _concat, _CHECK: _check}


def step() -> None:
    """An attribute or item access: one step."""
    b = active()
    if b is not None:
        b.step()


def finalize(value):
    """Every ``{{ }}`` output passes here before it becomes text."""
    b = active()
    if b is not None:
        b.step()
        b.made(value)
    return value


def binop(env, operator: str, left, right):
    """An intercepted operator: refused (a trip) when its result could exceed the budget,
    before it runs."""
    b = active()
    if b is None:
        return env.binop_table[operator](left, right)
    b.step()
    ints = [x for x in (left, right) if isinstance(x, int) and not isinstance(x, bool)]
    seqs = [x for x in (left, right) if isinstance(x, (str, list, tuple))]
    if operator == "*":
        if seqs and ints:
            need(units(seqs[0]) * max(ints[0], 0) <= MAX_UNITS)
        elif len(ints) == 2:
            need(left.bit_length() + right.bit_length() <= MAX_BITS)
    elif operator == "**" and len(ints) == 2 and abs(left) > 1 and right > 0:
        need(right * left.bit_length() <= MAX_BITS)
    elif operator == "+" and len(seqs) == 2:
        need(units(left) + units(right) <= MAX_UNITS)
    elif operator == "%" and isinstance(left, str):
        within(format_bound, left, right if isinstance(right, (tuple, list)) else [right])
    return b.made(env.binop_table[operator](left, right))


_INTERNAL_KWARGS = ("caller", "_loop_vars", "_block_vars")
_GLOBALS = ("namespace", "dict", "raise_exception", "strftime_now", "range")


def call(env, call_next, context, obj, args, kwargs):
    """A call from the template: refused (a trip) when this budget cannot bound it -
    anything but macros, ``loop()``, the runtime's globals and the listed methods of
    str, list and dict; counted against ``MAX_DEPTH``; its result measured."""
    b = active()
    if b is None:
        return call_next(context, obj, *args, **kwargs)
    b.step()
    own_kwargs = {k: v for k, v in kwargs.items() if k not in _INTERNAL_KWARGS}
    small(*args, *own_kwargs.values())
    # the sandbox hands out str.format wrapped (``wrap_str_format``): the string is the wrapped method's
    holder = getattr(obj, "__self__", None)
    if holder is None:
        holder = getattr(getattr(obj, "__wrapped__", None), "__self__", None)
    name = getattr(obj, "__name__", "")
    if name == "join" and args and not hasattr(args[0], "__len__"):
        args = (_listed(args[0], b), *args[1:])
    if isinstance(obj, LoopContext):            # loop(children): its items count like a loop's
        args = (_ticking(args[0], b), *args[1:]) if args else args
    elif isinstance(obj, Undefined):             # calling it raises UndefinedError, as in the child
        pass
    elif isinstance(holder, (str, list, tuple, dict)):
        small(holder)
        if name in METHOD_BOUNDS:
            within(METHOD_BOUNDS[name], holder, *args, **own_kwargs)
        else:
            need(name in LINEAR_METHODS)
    elif not isinstance(obj, Macro) and not isinstance(holder, jinja2.ext.Extension) and not (
            name == "fromkeys" or any(obj is env.globals.get(g) for g in _GLOBALS)):
        raise Tripped
    b.depth += 1
    try:
        need(b.depth <= MAX_DEPTH)
        return b.made(call_next(context, obj, *args, **kwargs))
    finally:
        b.depth -= 1


def _literal_chars(body: list) -> int:
    """Characters of template text and string constants one pass over a body writes at
    most besides its ``{{ }}`` values (which ``finalize`` counts).  A nested loop's,
    macro's or call block's body is not counted here: it is charged on each of its own
    passes (one walk of the tree in all, not one per enclosing body)."""
    total, todo = 0, list(body)
    while todo:
        x = todo.pop()
        if isinstance(x, n.TemplateData):
            total += len(x.data)
        elif isinstance(x, n.Const):
            total += len(x.value) if isinstance(x.value, str) else 0
        elif isinstance(x, n.For):
            todo += [x.iter, *([x.test] if x.test else []), *x.else_]
        elif isinstance(x, n.CallBlock):
            todo.append(x.call)
        elif not isinstance(x, n.Macro):
            todo.extend(x.iter_child_nodes())
    return total


class _Rewrite(NodeTransformer):
    """Route every loop's iterable, ``~`` and container literal through the budget, and
    charge each pass over a loop, macro or call-block body for the text it writes."""

    def _wrap(self, node: n.Expr, name: str, *args: n.Expr) -> n.Filter:
        return n.Filter(node, name, list(args), [], None, None, lineno=node.lineno)

    def visit_For(self, node: n.For) -> n.For:
        written = _literal_chars(node.body)
        self.generic_visit(node)
        node.iter = self._wrap(node.iter, _ITER)
        node.body.insert(0, n.Output([self._wrap(n.Const(written, lineno=node.lineno), _WRITE)], lineno=node.lineno))
        return node

    def _charged(self, node):
        written = _literal_chars(node.body)
        self.generic_visit(node)
        node.body.insert(0, n.Output([self._wrap(n.Const(written, lineno=node.lineno), _WRITE)], lineno=node.lineno))
        return node

    visit_Macro = visit_CallBlock = _charged

    def visit_Concat(self, node: n.Concat) -> n.Filter:
        self.generic_visit(node)
        return self._wrap(n.List(node.nodes, lineno=node.lineno), _CONCAT)

    def _container(self, node):
        self.generic_visit(node)
        return self._wrap(node, _CHECK) if getattr(node, "ctx", "load") == "load" else node

    visit_List = visit_Tuple = visit_Dict = _container


def eligible(text: str, issues) -> bool:
    """A template rendered here first: not large, and the analysis found nothing but
    undocumented variables (an escape step, a computed attribute, an engine internal or
    unbounded work sends it straight to the child)."""
    return _SANDBOX_FIXED and len(text) <= MAX_TEXT and all(i.kind == "extra-name" for i in issues)


def compile_bounded(env, tree: n.Template):
    """The template compiled with the budget's hooks, or None when Jinja2 refuses it
    (the child reports why)."""
    try:
        tree = _Rewrite().visit(tree)
        return env.template_class.from_code(env, env.compile(tree), env.make_globals(None), None)
    except Exception:  # noqa: BLE001 - not compilable here: the forked child says why
        return None


def render_bounded(template, special: dict, convs, render_rows) -> list[dict] | None:
    """``render_rows`` is ``sandbox.render_rows``: the same outcomes as the child's."""
    budget = _state.budget = _Budget()
    try:
        rows = render_rows(template, special, convs, lambda t, **ctx: _render(t, budget, ctx))
    except (Tripped, RecursionError, MemoryError):
        return None
    finally:
        _state.budget = None
    return None if any(r["outcome"] == "budget" for r in rows) else rows


def _render(template, budget: _Budget, context: dict) -> str:
    out = []
    for chunk in template.generate(**context):
        budget.write(len(chunk))
        out.append(chunk)
    return "".join(out)
