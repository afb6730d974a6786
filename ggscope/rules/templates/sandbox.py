"""Rendering a chat template as a runtime does, inside a hard budget of time and memory.

Why: the syntax tree says what a template could do; a render says what it does for the
conversations every runtime sends.  The render runs in transformers' environment
(``engine.environment``: Jinja2's ``ImmutableSandboxedEnvironment`` and its globals) in a
forked child process (``core.confined``) whose address space (``RLIMIT_AS``: what it already maps plus
``MEMORY_BUDGET``) and CPU time (``RLIMIT_CPU``) are capped by the kernel, and which the
parent kills after ``WALL_BUDGET`` seconds: a template that loops, recurses or allocates
without bound costs ggscope at most that, never a hang or an exhausted machine.

Contract: ``render_all(text, special)`` returns one ``Render`` per standard conversation
(``CONVERSATIONS``: system + user; user, assistant, user; a tool call and its result when
the template mentions tools; each with ``add_generation_prompt`` false and true) or
caller-given messages.  ``Render.outcome`` is "ok", "raised" (the template called
``raise_exception``), "security" (the sandbox refused an attribute or call), "error"
(any other exception), "budget" (killed: time or memory) or "unavailable" (no fork on
this platform).  The output is cut at ``MAX_OUTPUT`` characters.  ``render_rows`` turns
a compiled template into those outcomes, here in the child and in ``budget``'s render in
this process alike.  Nothing here decides safety; the rules do.
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from functools import lru_cache


__all__ = ["Render", "render_all", "render_rows", "rows_to_renders", "conversations", "MEMORY_BUDGET", "WALL_BUDGET"]

MEMORY_BUDGET = 512 << 20       # bytes the child may add to what it maps at fork
CPU_BUDGET = 5                  # seconds of CPU
WALL_BUDGET = 10.0              # seconds before the parent kills the child
MAX_OUTPUT = 1 << 16            # characters of each rendered prompt kept

_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "city name"}},
                   "required": ["city"]}}}
_CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
_BASE = {
    "system + user": [{"role": "system", "content": "You are a helpful assistant."},
                      {"role": "user", "content": "Hello!"}],
    "user, assistant, user": [{"role": "user", "content": "Hello!"},
                              {"role": "assistant", "content": "Hi! How can I help?"},
                              {"role": "user", "content": "What is 2 + 2?"}],
}
_TOOLS = {"tool call": [{"role": "user", "content": "What is the weather in Paris?"},
                        {"role": "assistant", "content": "", "tool_calls": [_CALL]},
                        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "18 C, sunny"}]}


@dataclass(frozen=True)
class Render:
    conversation: str
    add_generation_prompt: bool
    outcome: str
    output: str = ""
    error: str = ""


def conversations(text: str, messages: list | None = None) -> list[tuple[str, list, list | None]]:
    """(name, messages, tools) to render: the caller's messages, else the standard set
    (the tool call only when the template mentions tools)."""
    if messages is not None:
        return [("given messages", messages, [_TOOL] if "tools" in text else None)]
    out = [(name, msgs, None) for name, msgs in _BASE.items()]
    if "tool" in text:
        out += [(name, msgs, [_TOOL]) for name, msgs in _TOOLS.items()]
    return out


def _render_in_child(text: str, special: dict, convs) -> list[dict]:
    from ggscope.rules.templates.engine import environment  # Jinja2: only in the child that renders
    try:
        template = environment().from_string(text)
    except Exception as exc:      # noqa: BLE001 - reported as data, the parent decides
        return [{"conversation": "(compile)", "agp": False, "outcome": "error", "error": _describe(exc)}]
    return render_rows(template, special, convs)


def render_rows(template, special: dict, convs, render=None) -> list[dict]:
    """One row per conversation and ``add_generation_prompt``: the outcome of rendering a
    compiled template (``render(template, **context)``, by default ``template.render``)."""
    import jinja2

    from ggscope.rules.templates.engine import TemplateRaised  # Jinja2: only where a template renders
    render = render or (lambda t, **ctx: t.render(**ctx))
    results = []
    for name, msgs, tools in convs:
        for agp in (False, True):
            try:
                # as llama.cpp's chat.cpp: ``tools`` only when there are tools
                extra = {"tools": tools} if tools else {}
                out = render(template, messages=msgs, add_generation_prompt=agp, **extra, **special)
                results.append({"conversation": name, "agp": agp, "outcome": "ok", "output": out[:MAX_OUTPUT]})
            except TemplateRaised as exc:
                results.append({"conversation": name, "agp": agp, "outcome": "raised", "error": str(exc)[:500]})
            except jinja2.exceptions.SecurityError as exc:
                results.append({"conversation": name, "agp": agp, "outcome": "security", "error": _describe(exc)})
            except MemoryError:
                results.append({"conversation": name, "agp": agp, "outcome": "budget",
                                "error": f"memory: more than {MEMORY_BUDGET >> 20} MiB"})
            except RecursionError:
                results.append({"conversation": name, "agp": agp, "outcome": "budget",
                                "error": "recursion: Python's recursion limit"})
            except Exception as exc:      # noqa: BLE001 - any failure is data
                results.append({"conversation": name, "agp": agp, "outcome": "error", "error": _describe(exc)})
    return results


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"


@lru_cache(maxsize=1)
def _warm() -> None:
    """Build the environment and render once in this process, so that the forked child
    needs no import: another thread (the browser's, a Dask worker's) may hold the import
    lock at fork time.  With one thread the child may import what it needs."""
    from ggscope.rules.templates.engine import environment  # Jinja2: only in the child that renders
    environment().from_string("{% for i in range(2) %}{{ x|tojson }}{{ strftime_now('%Y') }}{% endfor %}"
                              "{% set ns = namespace(a=1) %}{{ dict(a=1)|items|list }}").render(x={"a": [1]})


def render_all(text: str, special: dict, messages: list | None = None) -> list[Render]:
    convs = conversations(text, messages)
    if not hasattr(os, "fork"):
        return [Render("(all)", False, "unavailable", error="no fork() on this platform: render skipped")]
    if threading.active_count() > 1:
        _warm()                          # another thread may hold the import lock: import everything first

    def work(write) -> None:
        write(json.dumps(_render_in_child(text, special, convs)).encode())

    from ggscope.core.confined import SETUP_FAILED, confined  # start-up: a kept verdict needs only the Render record
    out = confined(work, memory=MEMORY_BUDGET, cpu=CPU_BUDGET, wall=WALL_BUDGET)
    if out.killed and out.cpu_seconds < 0.5:
        return [Render("(all)", False, "unavailable", error="the renderer stalled without computing: not rendered")]
    if not out.killed and not out.data and out.exit_code == SETUP_FAILED:
        return [Render("(all)", False, "unavailable", error="the renderer could not set its limits: not rendered")]
    if out.killed or not out.data:
        import signal  # start-up: a kept verdict needs only the Render record
        why = (f"time: more than {WALL_BUDGET:g} s" if out.killed else
               f"CPU time: more than {CPU_BUDGET} s" if out.signal in (signal.SIGXCPU, signal.SIGKILL) else
               f"memory: more than {MEMORY_BUDGET >> 20} MiB (the renderer died)")
        return [Render("(all)", False, "budget", error=why)]
    try:
        rows = json.loads(out.data)
    except ValueError:
        return [Render("(all)", False, "budget", error="the renderer's report was cut off")]
    return rows_to_renders(rows)


def rows_to_renders(rows: list[dict]) -> list[Render]:
    return [Render(x["conversation"], x["agp"], x["outcome"], x.get("output", ""), x.get("error", "")) for x in rows]
