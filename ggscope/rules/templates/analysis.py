"""Reading a chat template's syntax tree: what it reaches for and how much work it asks.

Why: deciding safety by rendering is a bet that the harmful branch runs for the inputs
tried; the syntax tree holds every branch.  The template is parsed with Jinja2's own
parser in transformers' environment (``engine.environment``) and walked once, in
document order, with ``fold.Folder`` tracking the strings ``{% set %}`` builds.

What is reported (``Issue.kind``):

- ``syntax``: the parser refuses the template (every runtime does too).
- ``unsafe-attribute``: an attribute Jinja2's sandbox refuses (``jinja2.sandbox``'s
  ``is_safe_attribute``: a leading underscore, the UNSAFE_* sets, ``mro``), reached by
  ``.name``, ``['name']``, ``|attr``, ``attribute=`` of map/selectattr/sort/...,
  ``map('attr', ...)`` or a ``str.format`` field (``'{0.__class__}'``) - literal or built
  at render time and folded back.  A dunder or an UNSAFE_* name is a code-execution
  gadget outside a sandbox.
- ``computed-attribute``: ``|attr`` or ``attribute=`` given a name the text does not
  determine: the template chooses which attribute to read at render time.
- ``gadget-name``: a name neither runtime provides that only serves to reach the
  engine (``context.GADGET_ROOTS``).
- ``extra-name``: a name no runtime documents and the template never defines; it
  renders as undefined unless the caller passes it.
- ``unbounded``: work the input does not bound: ``range`` past the sandbox's
  ``MAX_RANGE``, nested constant loops past ``MAX_STEPS``, a string or list repeated,
  padded or indented past ``MAX_SIZE`` (``*``, ``tojson(indent=)``, ``indent``,
  ``center``, ``ljust``, ``'%999999s'``), a power past ``MAX_DIGITS`` digits, a value
  that doubles itself inside a loop, and recursion through macros or call blocks that
  does not descend into its argument.

Contract: ``parse(text)`` gives the tree or the issue that stops it; ``analyse(text,
tree)`` never renders, never raises; issues carry 1-based line, column.
"""
from __future__ import annotations

import math
import re
import string

import jinja2
import jinja2.nodes as n
from jinja2 import sandbox

from ggscope.core.escape import quoted
from ggscope.rules.templates.context import CONTEXT_NAMES, ENGINE_GLOBALS, GADGET_ROOTS, MAX_TEMPLATE
from ggscope.rules.templates.engine import environment
from ggscope.rules.templates.fold import UNKNOWN, Folder
from ggscope.rules.templates.issue import Issue
from ggscope.rules.templates.macros import loop_calls_that_restart, param_values, unbounded_recursion

__all__ = ["Issue", "parse", "analyse", "literals", "unsafe_reason", "MAX_SIZE", "MAX_STEPS"]

MAX_RANGE = sandbox.MAX_RANGE        # the sandbox refuses range() longer than this (100000)
MAX_SIZE = 100_000                   # characters one constant repetition/padding may produce
MAX_STEPS = 10_000_000               # iterations of nested constant loops
MAX_POWER_DIGITS = 10_000
_UNSAFE_SETS = (sandbox.UNSAFE_FUNCTION_ATTRIBUTES | sandbox.UNSAFE_METHOD_ATTRIBUTES
                | sandbox.UNSAFE_GENERATOR_ATTRIBUTES | sandbox.UNSAFE_COROUTINE_ATTRIBUTES
                | sandbox.UNSAFE_ASYNC_GENERATOR_ATTRIBUTES | {"mro"})
# CPython's handles on functions, frames, tracebacks and code (and their Python 2 names,
# which old payloads still try): nothing a template reads, everything an escape wants
_INTERNALS = frozenset({"func_globals", "func_code", "func_closure", "func_defaults", "im_func", "im_self",
                        "im_class", "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "tb_frame",
                        "tb_next", "co_code", "co_consts", "gi_frame", "gi_code", "cr_frame", "cr_code",
                        "ag_frame", "ag_code", "mro"})
_ATTR_FILTERS = {"map", "selectattr", "rejectattr", "sort", "groupby", "sum", "unique", "min", "max", "join"}
_SIZE_ARGS = {"indent": ("width", 0), "center": ("width", 0), "wordwrap": ("width", 0),
              "batch": ("linecount", 0), "slice": ("slices", 0),
              "truncate": ("length", 0), "tojson": ("indent", None), "ljust": (None, 0), "rjust": (None, 0),
              "zfill": (None, 0), "expandtabs": (None, 0)}
_WIDTH = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\d*)(?:\.(\d+))?")           # %-format width, precision
_BRACE_WIDTH = re.compile(r"\{[^{}:]*:[^{}]*?(\d+)(?:\.(\d+))?[^{}]*\}")      # str.format width, precision




def unsafe_reason(name: str) -> str | None:
    """Why Jinja2's sandbox refuses attribute ``name``, or None when it allows it."""
    if name.startswith("__") and name.endswith("__"):
        return "a dunder attribute (Python internals: the first step of a sandbox escape)"
    if name in _UNSAFE_SETS:
        return "an attribute jinja2.sandbox lists as unsafe"
    if name in _INTERNALS:
        return "a handle on Python functions, frames or code (a sandbox-escape step)"
    if name.startswith("_"):
        return "a private attribute (jinja2.sandbox refuses names starting with an underscore)"
    return None


def parse(text: str) -> "n.Template | Issue":
    """The syntax tree in transformers' environment, or the issue that stops it."""
    if len(text) > MAX_TEMPLATE:
        return Issue("unbounded", 1, 1, f"a template of {len(text):,} characters (ggscope analyses up to "
                     f"{MAX_TEMPLATE:,}; real chat templates are under 100,000): not checked, not trusted")
    try:
        return environment().parse(text)
    except jinja2.TemplateSyntaxError as exc:
        return Issue("syntax", exc.lineno or 1, 1, f"syntax error: {exc.message}")
    except (RecursionError, MemoryError):
        return Issue("syntax", 1, 1, "the template nests too deeply for Jinja2's parser")


def analyse(text: str, tree: "n.Template | Issue | None" = None) -> list[Issue]:
    """The issues of ``text`` (``tree``: its ``parse``, when already made)."""
    if isinstance(tree := parse(text) if tree is None else tree, Issue):
        return [tree]
    walker = _Walker(text)
    try:
        walker.visit(tree, 1)
        walker.finish()
    except RecursionError:
        walker.add("unbounded", 1, "", "the syntax tree nests too deeply to follow")
    return walker.issues


def literals(text: str, tree: "n.Template | Issue | None" = None) -> str:
    """The text a template can write: its template data and string constants, escapes
    decoded (``'\\n'`` is a newline), one per line; the raw text when it does not parse."""
    if isinstance(tree := parse(text) if tree is None else tree, Issue):
        return text[:MAX_TEMPLATE]
    return "\n".join([*(x.data for x in tree.find_all(n.TemplateData)),
                      *(x.value for x in tree.find_all(n.Const) if isinstance(x.value, str))])


class _Walker:
    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.fold = Folder()
        self.issues: list[Issue] = []
        self.defined: set[str] = set()
        self.loads: dict[str, n.Node] = {}
        self.macros: dict[str, n.Macro] = {}
        self.calls: dict[str, list[tuple[n.Call, list[n.Node]]]] = {}   # macro -> its calls, with enclosing ifs
        self.macro_stack: list[str] = []
        self.if_stack: list[n.Node] = []
        self.deferred: list[tuple[n.Macro, str, n.Node, str]] = []   # (macro, param, node, how)

    # ---- reporting ------------------------------------------------------------------
    def add(self, kind: str, line: int, needle: str, message: str, fatal: bool = True) -> None:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        col = text.find(needle) + 1 if needle and needle in text else 1
        issue = Issue(kind, line, col, message, fatal)
        if issue not in self.issues:
            self.issues.append(issue)

    def attribute(self, name, node: n.Node, how: str, needle: str = "") -> None:
        for part in str(name).split(".") if how == "attribute=" else [str(name)]:
            reason = unsafe_reason(part)
            if reason:
                shown = part.encode("unicode_escape").decode("ascii")
                line = self.lines[node.lineno - 1] if 0 < node.lineno <= len(self.lines) else ""
                self.add("unsafe-attribute", node.lineno, part if part in line else needle,
                         f"{how} reaches {quoted(shown)}: {reason}")

    # ---- the walk ---------------------------------------------------------------------
    def visit(self, node: n.Node, steps: int) -> None:
        if isinstance(node, n.Assign):
            self.visit(node.node, steps)
            self._assign(node.target, node.node)
            self._growth(node, steps)
            return
        if isinstance(node, n.AssignBlock):
            body = node.body
            text = "".join(x.data for b in body if isinstance(b, n.Output) for x in b.nodes
                           if isinstance(x, n.TemplateData)) if all(
                isinstance(b, n.Output) and all(isinstance(x, n.TemplateData) for x in b.nodes) for b in body) else UNKNOWN
            self.fold.bind(node.target, text)
        elif isinstance(node, n.With):
            for target, value in zip(node.targets, node.values):
                self.visit(value, steps)
                self._assign(target, value)
            for child in node.body:
                self.visit(child, steps)
            return
        if isinstance(node, n.Name):
            (self.defined.add if node.ctx in ("store", "param") else
             lambda name: self.loads.setdefault(name, node))(node.name)
        elif isinstance(node, n.NSRef):
            self.loads.setdefault(node.name, node)
        elif isinstance(node, n.Macro):
            self.defined.add(node.name)
            self.macros[node.name] = node
            self.macro_stack.append(node.name)
            for child in node.iter_child_nodes():
                self.visit(child, steps)
            self.macro_stack.pop()
            return
        elif isinstance(node, (n.Import, n.FromImport, n.Include, n.Extends)):
            word = {n.Import: "import", n.FromImport: "from", n.Include: "include", n.Extends: "extends"}[type(node)]
            self.add("unsafe-attribute", node.lineno, word,
                     f"{{% {word} %}} loads another template: chat runtimes give templates no loader and refuse "
                     "it; an engine with a file-system loader would read files")
        elif isinstance(node, n.Getattr):
            self.attribute(node.attr, node, f".{node.attr}" if node.attr.isidentifier() else "attribute")
        elif isinstance(node, n.Getitem) and not isinstance(node.arg, n.Slice):
            key = self.fold.value(node.arg)
            if isinstance(key, str):
                self.attribute(key, node, "[...]", "[")
        elif isinstance(node, n.Filter):
            self._filter(node)
        elif isinstance(node, n.Call):
            self._call(node)
        elif isinstance(node, n.BinExpr):
            self._binexpr(node)
        if isinstance(node, n.For):
            self.fold.bind(node.target, UNKNOWN)
            self.visit(node.target, steps)
            self.visit(node.iter, steps)
            count = self._range_length(node.iter)
            inner = steps * count if count is not None else steps
            if count is not None and inner > MAX_STEPS:
                self.add("unbounded", node.lineno, "for",
                         f"nested constant loops run {inner:,} iterations (more than {MAX_STEPS:,})")
            for child in (*([node.test] if node.test else []), *node.body, *node.else_):
                self.visit(child, inner if count is not None else max(steps, 2))
            for call in loop_calls_that_restart(node) if node.recursive else ():
                self.add("unbounded", call.lineno, "loop(", "a recursive loop calls loop() with a list that "
                         "is not part of its item: unbounded recursion")
            return
        if isinstance(node, n.If):
            self.visit(node.test, steps)
            self.if_stack.append(node.test)
            for child in (*node.body, *node.elif_, *node.else_):
                self.visit(child, steps)
            self.if_stack.pop()
            return
        for child in node.iter_child_nodes():
            self.visit(child, steps)

    def _macro_param(self, arg: n.Node, node: n.Node, how: str) -> bool:
        """A parameter of the enclosing macro: checked after the walk against what every
        call passes (``finish``)."""
        if isinstance(arg, n.Name) and self.macro_stack:
            macro = self.macros[self.macro_stack[-1]]
            if arg.name in {a.name for a in macro.args}:
                self.deferred.append((macro, arg.name, node, how))
                return True
        return False

    def _assign(self, target: n.Node, value: n.Node) -> None:
        if isinstance(value, n.Call) and isinstance(value.node, n.Name) and value.node.name == "namespace" \
                and isinstance(target, n.Name):
            self.fold.bind_namespace(target.name, value)
            for kw in value.kwargs:
                if kw.key.startswith("_"):
                    self.attribute(kw.key, value, "namespace(...)")
        self.fold.bind(target, self.fold.value(value))
        if isinstance(target, n.Name):
            self.defined.add(target.name)

    def _growth(self, node: n.Assign, steps: int) -> None:
        """``{% set s = s ~ s %}`` in a loop: the value doubles each pass."""
        if steps < 2 or not isinstance(node.target, (n.Name, n.NSRef)):
            return
        key = node.target.name if isinstance(node.target, n.Name) else (node.target.name, node.target.attr)
        uses = sum(1 for x in node.node.find_all((n.Name, n.Getattr))
                   if (isinstance(x, n.Name) and x.name == key) or
                   (isinstance(x, n.Getattr) and isinstance(x.node, n.Name) and (x.node.name, x.attr) == key))
        grows = any(isinstance(x, (n.Concat, n.Add, n.Mul)) for x in node.node.find_all(n.Expr)) or \
            isinstance(node.node, (n.Concat, n.Add, n.Mul))
        if uses >= 2 and grows:
            self.add("unbounded", node.lineno, "set",
                     "a value is combined with itself inside a loop: it doubles on every pass (exponential size)")

    def _size(self, value, line: int, needle: str, what: str) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_SIZE:
            self.add("unbounded", line, needle, f"{what} {value:,} (more than {MAX_SIZE:,}): output or memory without bound")

    def _filter(self, node: n.Filter) -> None:
        name = node.name
        if name == "attr" and node.args:
            v = self.fold.value(node.args[0])
            if isinstance(v, str):
                self.attribute(v, node, "|attr", "attr")
            elif not isinstance(node.args[0], n.Const) and not self._macro_param(node.args[0], node, "|attr"):
                self.add("computed-attribute", node.lineno, "attr",
                         "|attr reads an attribute whose name is computed at render time")
        if name in _ATTR_FILTERS:
            for kw in node.kwargs:
                if kw.key == "attribute":
                    self._attr_arg(kw.value, node)
            if name in ("selectattr", "rejectattr") and node.args:
                self._attr_arg(node.args[0], node)
            if name == "map" and node.args and self.fold.value(node.args[0]) == "attr" and len(node.args) > 1:
                self._attr_arg(node.args[1], node)
        if name in _SIZE_ARGS:
            kw, pos = _SIZE_ARGS[name]
            for k in node.kwargs:
                if k.key == kw:
                    self._size(self.fold.value(k.value), node.lineno, name, f"|{name}({kw}=...) of")
            if pos is not None and len(node.args) > pos:
                self._size(self.fold.value(node.args[pos]), node.lineno, name, f"|{name} of")
        if name == "format":
            self._format_widths(self.fold.value(node.node) if node.node is not None else UNKNOWN, node)

    def _attr_arg(self, arg: n.Node, node: n.Filter) -> None:
        v = self.fold.value(arg)
        if isinstance(v, str):
            self.attribute(v, node, "attribute=", "attribute")
        elif v is UNKNOWN and not isinstance(arg, n.Const) and not self._macro_param(arg, node, "attribute="):
            self.add("computed-attribute", node.lineno, node.name,
                     f"|{node.name} reads an attribute whose name is computed at render time")

    def _format_widths(self, fmt, node: n.Node, pattern: re.Pattern = _WIDTH) -> None:
        for g in (g for m in pattern.finditer(fmt) for g in m.groups() if g) if isinstance(fmt, str) else ():
            self._size(int(g), node.lineno, "%" if pattern is _WIDTH else "{", "a format width or precision of")

    def _call(self, node: n.Call) -> None:
        callee = node.node
        if isinstance(callee, n.Name):
            if callee.name == "range":
                args = [self.fold.value(a) for a in node.args]
                length = self._range_args_length(args)
                if length is not None and length > MAX_RANGE:
                    self.add("unbounded", node.lineno, "range",
                             f"range() of {length:,} items: the sandbox refuses more than {MAX_RANGE:,}")
            elif callee.name in self.macros or self.macro_stack:
                self.calls.setdefault(callee.name, []).append((node, list(self.if_stack), self.macro_stack[-1:]))
        elif isinstance(callee, n.Getattr):
            if callee.attr in ("ljust", "rjust", "center", "zfill", "expandtabs") and node.args:
                self._size(self.fold.value(node.args[-1] if callee.attr != "expandtabs" else node.args[0]),
                           node.lineno, callee.attr, f".{callee.attr}() of")
            if callee.attr in ("format", "format_map"):
                fmt = self.fold.value(callee.node)
                if isinstance(fmt, str):
                    self._format_fields(fmt, node)
                    self._format_widths(fmt, node, _BRACE_WIDTH)

    def _format_fields(self, fmt: str, node: n.Node) -> None:
        """``'{0.__class__}'.format(x)``: str.format reads attributes named in the string."""
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(fmt) if f]
        except ValueError:
            return
        for f in fields:
            for part in re.split(r"[.\[\]]", f)[1:]:
                if part:
                    self.attribute(part, node, "str.format field")

    def _binexpr(self, node: n.BinExpr) -> None:
        if isinstance(node, n.Mul):
            a, b = self.fold.value(node.left), self.fold.value(node.right)
            for seq, count in ((a, b), (b, a)):
                if (isinstance(seq, (str, list)) or isinstance(node.left if seq is a else node.right, n.Const)
                        and isinstance(seq, str)) and isinstance(count, int):
                    self._size(count * max(len(seq), 1), node.lineno, "*", "a repetition producing")
        elif isinstance(node, n.Pow):
            a, b = self.fold.value(node.left), self.fold.value(node.right)
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a) > 1 and b > 0:
                digits = b * math.log10(abs(a))
                if digits > MAX_POWER_DIGITS:
                    self.add("unbounded", node.lineno, "**", f"a power with about {int(digits):,} digits")
        elif isinstance(node, n.Mod):
            self._format_widths(self.fold.value(node.left), node)

    @staticmethod
    def _range_args_length(args) -> int | None:
        if not args or any(not isinstance(a, int) or isinstance(a, bool) for a in args):
            return None
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
        return len(range(start, stop, step)) if step else None

    def _range_length(self, it: n.Node) -> int | None:
        if isinstance(it, n.Call) and isinstance(it.node, n.Name) and it.node.name == "range":
            return self._range_args_length([self.fold.value(a) for a in it.args])
        return None

    # ---- after the walk ---------------------------------------------------------------
    def finish(self) -> None:
        known = self.defined | CONTEXT_NAMES | ENGINE_GLOBALS
        extra = []
        for name, node in self.loads.items():
            if name in GADGET_ROOTS and name not in self.defined:
                self.add("gadget-name", node.lineno, name,
                         f"uses {quoted(name)}, which no chat-template runtime provides: an engine internal "
                         "whose only use in a template is reaching Python's objects", fatal=False)
            elif name not in known:
                extra.append((name, node))
        if extra:
            names = ", ".join(sorted(x[0] for x in extra))
            self.add("extra-name", extra[0][1].lineno, extra[0][0],
                     f"reads variables no runtime documents ({names}): they render as undefined unless "
                     "the caller passes them", fatal=False)
        for macro, param, node, how in self.deferred:
            values = param_values(macro, param, self.calls.get(macro.name, []), self.fold.value)
            if values is None:
                self.add("computed-attribute", node.lineno, param,
                         f"{how} reads an attribute named by macro parameter {quoted(param)}, which a call computes")
            for v in values or ():
                self.attribute(v, node, how, param)
        for line, name in unbounded_recursion(self.macros, self.calls):
            self.add("unbounded", line, name,
                     f"macro {quoted(name)} calls itself with arguments that do not shrink: unbounded recursion")
