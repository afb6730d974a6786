"""Recursion in a chat template: macros that call themselves without end.

Why: Jinja2 lets a macro call itself (directly, through other macros, or through a call
block's ``caller()``); Python stops it at its recursion limit, llama.cpp's recursive C++
evaluator (common/jinja/runtime.cpp, as vendored in llama-cpp-python 0.3.36) at the end
of its stack.  Recursion is fine when each call descends into a part of its argument
(a JSON schema's ``properties``, a list's items) or sits under a guard comparing an
argument; anything else has no bound but the stack.

Contract: ``unbounded_recursion(macros, calls)`` takes the walk's macro table and its
call sites (callee -> [(call node, enclosing if-tests, [enclosing macro])]) and returns
(line, macro name) of each recursive call that neither descends nor is guarded.
"""
from __future__ import annotations

import jinja2.nodes as n

__all__ = ["unbounded_recursion"]


def unbounded_recursion(macros: dict, calls: dict) -> list[tuple[int, str]]:
    out = []
    for name, sites in calls.items():
        macro = macros.get(name)
        if macro is None:
            continue
        params = {a.name for a in macro.args}
        for call, guards, inside in sites:
            if not inside or (inside[0] != name and inside[0] not in _reaches(calls, name)):
                continue          # not a call from inside the cycle
            descends = any(isinstance(x, (n.Getattr, n.Getitem, n.Filter)) or
                           (isinstance(x, n.Name) and x.name not in params)
                           for a in [*call.args, *(k.value for k in call.kwargs)]
                           for x in (a, *a.find_all(n.Expr)))
            guarded = any(isinstance(x, n.Compare) and any(isinstance(y, n.Name) and y.name in params
                                                           for y in x.find_all(n.Name))
                          for g in guards for x in [g, *g.find_all(n.Compare)])
            if not descends and not guarded:
                out.append((call.lineno, name))
    return out


def _reaches(calls: dict, start: str) -> set[str]:
    """Macros reachable by calls from macro ``start``."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        cur = todo.pop()
        for callee, sites in calls.items():
            if callee in seen:
                continue
            if any(inside and inside[0] == cur for _, _, inside in sites):
                seen.add(callee)
                todo.append(callee)
    return seen
