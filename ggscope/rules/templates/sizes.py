"""How large the result of a template operation can be, judged from its arguments before it runs.

Why: ``budget`` renders a template in this process only if nothing it does can allocate
more than it allows.  Measuring a result after the fact is too late for the operations
whose result can be far larger than their arguments (``'x' * n``, ``s.replace(a, b)``,
``sep.join(items)``, ``|indent(n)``, ``|tojson(indent=n)``, widths in ``%`` and
``format``); for each of them a bound is computed from the arguments first.  Filters and
methods whose result is at most a small multiple of their arguments are listed as
linear; anything in neither table is not run under the budget at all.

Contract: ``units(value)`` measures a value (characters and items, containers expanded
with multiplicity, stopping past a cap); ``need(ok)`` raises ``Tripped`` when not ok;
``within(bound, *args)`` checks a bound (arguments the bound cannot take trip too).
The tables cover Jinja2's builtin filters and the methods of str, list and dict.
"""
from __future__ import annotations

import re

from jinja2.runtime import Undefined
from jinja2.utils import Namespace

__all__ = ["Tripped", "units", "need", "small", "sized", "within", "format_bound", "MAX_UNITS", "MAX_BITS",
           "METHOD_BOUNDS", "LINEAR_METHODS", "FILTER_BOUNDS", "LINEAR_FILTERS"]

MAX_UNITS = 1 << 18          # characters / items one value may hold (real renders: a few thousand)
MAX_BITS = 1 << 12           # bits of an integer an operator may produce


class Tripped(BaseException):
    """The budget ran out.  A BaseException, so no ``except Exception`` in Jinja2 or in
    a filter swallows it."""


def units(value, cap: int = MAX_UNITS) -> int:
    """Characters and items of ``value``, containers expanded with multiplicity (a shared
    or cyclic container counts each time it is reached); stops once past ``cap``."""
    total, todo = 0, [value]
    while todo:
        x = todo.pop()
        if isinstance(x, str):
            total += len(x) + 1
        elif isinstance(x, (list, tuple, set, frozenset, dict, Namespace)):
            if isinstance(x, Namespace):
                x = object.__getattribute__(x, "_Namespace__attrs")
            total += len(x) + 1
            if total > cap:
                return total
            todo.extend(x)
            if isinstance(x, dict):
                todo.extend(x.values())
        elif isinstance(x, range):
            total += len(x) + 1
        elif isinstance(x, int) and not isinstance(x, bool):
            total += 1 + x.bit_length() // 64
        else:
            total += 1
        if total > cap:
            return total
    return total


def need(ok: bool) -> None:
    if not ok:
        raise Tripped


def small(*values) -> None:
    """Every argument is a value of at most ``MAX_UNITS``, every integer a width of at
    most that."""
    for v in values:
        if isinstance(v, int) and not isinstance(v, bool):
            need(abs(v) <= MAX_UNITS)
        elif not isinstance(v, (float, bool, type(None), Undefined)):
            need(units(v) <= MAX_UNITS)


def sized(seq) -> int:
    """Length of a sized sequence; an iterator of unknown length is not run here."""
    need(hasattr(seq, "__len__"))
    return len(seq)


_PERCENT = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\*|\d*)(?:\.(\*|\d+))?")
_BRACE_NUM = re.compile(r"\d+")


def format_bound(fmt: str, args) -> int:
    """An upper bound of what ``fmt % args`` or ``fmt.format(*args)`` writes."""
    biggest = max((units(a) for a in args), default=0)
    if "%" in fmt:
        for m in _PERCENT.finditer(fmt):
            need("*" not in m.groups())
    widths = sum(int(d) for d in _BRACE_NUM.findall(fmt) if len(d) < 12)
    return len(fmt) + (fmt.count("%") + fmt.count("{")) * biggest + widths


def replace_bound(s, old, new, count=-1) -> int:
    if not isinstance(s, str) or not isinstance(new, str):
        return units(s)
    hits = len(s) + 1 if not old else s.count(old) if isinstance(old, str) else 0
    hits = min(hits, count) if isinstance(count, int) and count >= 0 else hits
    return len(s) + hits * len(new)


def tojson_bound(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> int:
    width = len(indent) if isinstance(indent, str) else (indent or 0)
    need(0 <= width <= 16)
    return units(x) * (8 + 8 * width)


def sum_bound(seq, attribute=None, start=0) -> int:
    need(isinstance(start, (int, float)))          # summing lists copies quadratically
    return units(seq)


# what an operation may write, from its arguments, before it runs: name -> bound(*args)
METHOD_BOUNDS = {
    "replace": lambda s, old="", new="", count=-1: replace_bound(s, old, new, count),
    "join": lambda sep, seq=(): units(seq) + len(sep) * sized(seq),
    "expandtabs": lambda s, tabsize=8: len(s) + s.count("\t") * max(tabsize, 0),
    "format": lambda s, *a, **k: format_bound(s, [*a, *k.values()]),
    "format_map": lambda s, m=None: format_bound(s, [m]),
    "center": lambda s, width, fill=" ": len(s) + max(width, 0),
    "ljust": lambda s, width, fill=" ": len(s) + max(width, 0),
    "rjust": lambda s, width, fill=" ": len(s) + max(width, 0),
    "zfill": lambda s, width: len(s) + max(width, 0),
}
# methods whose result is no larger than their object and arguments
LINEAR_METHODS = frozenset({
    "get", "items", "keys", "values", "split", "rsplit", "splitlines", "strip", "lstrip", "rstrip", "lower",
    "upper", "title", "capitalize", "swapcase", "casefold", "startswith", "endswith", "count", "find", "rfind",
    "index", "rindex", "partition", "rpartition", "removeprefix", "removesuffix", "isdigit", "isalpha",
    "isalnum", "isspace", "islower", "isupper", "isnumeric", "isdecimal", "istitle", "isidentifier", "copy",
    "fromkeys", "append", "pop", "extend", "insert", "update", "clear", "remove", "sort", "reverse",
    "setdefault", "popitem",
})
FILTER_BOUNDS = {
    "replace": lambda s, old="", new="", count=None: replace_bound(s, old, new, -1 if count is None else count),
    "join": lambda seq, d="", attribute=None: units(seq) + len(str(d)) * sized(seq),
    "indent": lambda s, width=4, first=False, blank=False: units(s) + (
        len(width) if isinstance(width, str) else max(width, 0)) * (str(s).count("\n") + 1),
    "tojson": tojson_bound,
    "format": lambda s, *a, **k: format_bound(str(s), [*a, *k.values()]),
    "wordwrap": lambda s, width=79, break_long_words=True, wrapstring=None, break_on_hyphens=True: units(s) * (
        1 + len(wrapstring or "\n")),
    "center": lambda s, width=80: units(s) + max(width, 0),
    "truncate": lambda s, length=255, killwords=False, end="...", leeway=None: units(s) + len(str(end)),
    "batch": lambda seq, linecount, fill_with=None: units(seq) * 2 + max(linecount, 0),
    "slice": lambda seq, slices, fill_with=None: units(seq) * 2 + max(slices, 0),
    "sum": sum_bound,
}
# filters whose result is no larger than a small multiple of their arguments
LINEAR_FILTERS = frozenset({
    "abs", "attr", "capitalize", "count", "d", "default", "dictsort", "e", "escape", "filesizeformat",
    "first", "float", "forceescape", "groupby", "int", "items", "last", "length", "list", "lower", "map",
    "max", "min", "random", "reject", "rejectattr", "reverse", "round", "safe", "select", "selectattr",
    "sort", "string", "striptags", "title", "trim", "unique", "upper", "urlencode", "urlize", "wordcount",
    "xmlattr", "pprint",
})


def within(bound, *args, **kwargs) -> None:
    """The bound holds; a bound that cannot be computed (odd arguments) trips."""
    try:
        ok = bound(*args, **kwargs) <= MAX_UNITS
    except Tripped:
        raise
    except Exception:  # noqa: BLE001 - arguments the bound does not know: not run here
        ok = False
    need(ok)
