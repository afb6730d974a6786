"""A plan as text: llama.cpp's own log lines, so the two can be read side by side.

Why: ``ggscope fit``, ``ggscope info`` and the browser's overview show the same numbers;
one formatter keeps them identical.  Plain strings (no markup); the file's text never
appears in them (buffer names and cache types are ggscope's own vocabulary).

Contract: ``lines(plan) -> list[str]`` (the buffers, ``MiB`` with two decimals as
llama.cpp prints them, then the total); ``one_line(plan) -> str`` (the totals, for an
overview); ``mib(n) -> str``.
"""
from __future__ import annotations

__all__ = ["lines", "one_line", "mib", "human"]

_WHERE = {"model": "load_tensors", "output": "llama_context", "kv": "llama_kv_cache", "rs": "llama_memory_recurrent",
          "compute": "sched_reserve"}


def mib(n: int) -> str:
    return f"{n / 1048576:.2f} MiB"


def human(n: int) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n} B"


def lines(plan) -> list[str]:
    out = []
    caches = {c.name: c for c in plan.caches}
    for b in plan.buffers:
        label = {"model": "model buffer size", "output": " output buffer size", "kv": "KV buffer size",
                 "rs": "RS buffer size", "compute": "compute buffer size"}[b.kind]
        text = f"{_WHERE[b.kind] + ':':24}{b.name:>12} {label} = {b.nbytes / 1048576:8.2f} MiB"
        if b.kind == "kv" and b.cache in caches:
            c = caches.pop(b.cache)         # the cache's totals once, beside its first buffer
            text += (f"  ({c.name}: {c.cells} cells, {c.layers} layers, K {c.k_bytes / 1048576:.2f} MiB, "
                     f"V {c.v_bytes / 1048576:.2f} MiB)")
        elif b.kind == "compute":
            text += ("  (ggml-alloc replayed over llama.cpp's graph)" if b.how == "replay" else
                     "  (estimate: llama.cpp's within 10 %)")
        out.append(text)
    out.append(f"{'total:':24}{'':>12} {human(plan.total_bytes)} ({plan.total_bytes} bytes)")
    return out


def one_line(plan) -> str:
    parts = [f"weights {human(plan.model_bytes)}"]
    if plan.kv_bytes:
        parts.append(f"KV {human(plan.kv_bytes)}")
    if plan.recurrent_bytes:
        parts.append(f"state {human(plan.recurrent_bytes)}")
    replayed = all(b.how == "replay" for b in plan.buffers if b.kind == "compute")
    parts.append(f"compute {'' if replayed else '~'}{human(plan.compute_bytes)}")   # ~: the plan of peaks
    return f"{human(plan.total_bytes)} at context {plan.n_ctx} (" + ", ".join(parts) + ")"
