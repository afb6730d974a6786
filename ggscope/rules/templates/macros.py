"""What a template's macros do: recursion without end, and the values their parameters get.

Why: Jinja2 lets a macro call itself (directly, through other macros, or through a call
block's ``caller()``); Python stops it at its recursion limit, llama.cpp's recursive C++
evaluator (common/jinja/runtime.cpp, as vendored in llama-cpp-python 0.3.36) at the end
of its stack.  Recursion is fine when each call descends into a part of its argument
(a JSON schema's ``properties``, a list's items) or sits under a guard comparing an
argument; anything else has no bound but the stack.

A recursive ``{% for ... recursive %}`` loop is bounded the same way: ``loop(x.children)``
descends into the item, ``loop(messages)`` starts over.

A macro parameter passed to ``|attr`` or ``attribute=`` is not a name built at render
time when every call gives it a constant: ``param_values`` collects those constants so
the attribute checks see them.

Contract: ``unbounded_recursion(macros, calls)`` takes the walk's macro table and its
call sites (callee -> [(call node, enclosing if-tests, [enclosing macro])]) and returns
(line, macro name) of each recursive call that neither descends nor is guarded;
``loop_calls_that_restart(for_node)`` the ``loop()`` calls of a recursive loop that do
not descend; ``param_values(macro, param, sites, value)`` the values the call sites give
``param`` (``value`` folds an expression), or None when one of them is not known.
"""
from __future__ import annotations

import jinja2.nodes as n

__all__ = ["unbounded_recursion", "loop_calls_that_restart", "param_values"]


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


def loop_calls_that_restart(node: n.For) -> list[n.Call]:
    targets = {x.name for x in (node.target, *node.target.find_all(n.Name)) if isinstance(x, n.Name)}
    out = []
    for call in node.find_all(n.Call):
        if isinstance(call.node, n.Name) and call.node.name == "loop":
            descends = any(isinstance(x, (n.Getattr, n.Getitem)) and any(
                isinstance(y, n.Name) and y.name in targets for y in (x, *x.find_all(n.Name)))
                for a in call.args for x in (a, *a.find_all(n.Expr)))
            if not descends:
                out.append(call)
    return out


def param_values(macro: n.Macro, param: str, sites: list, value) -> list | None:
    """What each call of ``macro`` passes as ``param`` (positional, keyword or default)."""
    names = [a.name for a in macro.args]
    if param not in names:
        return None
    i = names.index(param)
    default_at = i - (len(names) - len(macro.defaults))
    out = []
    for call, _, _ in sites:
        given = next((k.value for k in call.kwargs if k.key == param), None)
        if given is None and i < len(call.args):
            given = call.args[i]
        if given is None and default_at >= 0:
            given = macro.defaults[default_at]
        v = value(given) if given is not None else None
        if not isinstance(v, str):
            return None
        out.append(v)
    return out
