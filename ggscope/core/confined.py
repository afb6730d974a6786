"""Running a function in a forked child under kernel limits and a wall-clock deadline.

Why: some work must never cost ggscope more than a budget, whatever its input does - a
hostile chat template's render (``rules/templates/sandbox.py``), every command on a
fuzzed file (``tools/fuzz.py``).  The kernel enforces the budget, not the work's good
will: the child lowers its own address space (``RLIMIT_AS``: what it maps at the fork
plus ``memory``), CPU time (``RLIMIT_CPU``, SIGXCPU then SIGKILL after ``cpu_grace``)
and, if asked, the size of any file it writes (``RLIMIT_FSIZE``); the parent reads what
the child sends through a pipe and kills it with SIGKILL at the wall-clock deadline.  A
limit is only ever lowered, never raised above a hard limit already set.

Contract: ``confined(work, memory=, cpu=, wall=, fsize=None, cpu_grace=1) -> Outcome``.
``work(write)`` runs in the child, ``write(bytes)`` sends to the parent; the child never
returns into the caller's code (``os._exit``).  ``Outcome.data`` is every byte received
before the child exited or was killed; ``killed`` says the deadline was reached;
``signal`` the signal that ended the child (None if it exited), ``exit_code`` its status
(0 the work returned, 1 it raised, 3 the limits could not be set); ``cpu_seconds`` the
child's user + system time.  Without ``os.fork`` (not POSIX) it raises ``OSError``.
"""
from __future__ import annotations

import os
import select
import signal as _signal
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Outcome", "confined", "mapped_bytes", "SETUP_FAILED"]

SETUP_FAILED = 3                  # the child's exit status when its limits could not be set


@dataclass(frozen=True)
class Outcome:
    data: bytes
    killed: bool
    signal: int | None
    exit_code: int | None
    cpu_seconds: float


def mapped_bytes() -> int:
    """This process's address space now (``/proc/self/statm``), 0 where unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _limit(which: int, value: int, grace: int = 0) -> None:
    """Lower a resource limit to ``value`` (never above an existing hard limit); the
    hard limit becomes ``value + grace`` unless one was already set."""
    import resource
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        resource.setrlimit(which, (min(value, hard), hard))
    else:
        resource.setrlimit(which, (value, value + grace))


def confined(work: Callable[[Callable[[bytes], None]], None], *, memory: int, cpu: int, wall: float,
             fsize: int | None = None, cpu_grace: int = 1) -> Outcome:
    """Run ``work`` in a forked child under the limits (module docstring)."""
    if not hasattr(os, "fork"):
        raise OSError("no fork() on this platform")
    import resource

    address_space = mapped_bytes() + memory
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                       # the child: limit, work, exit
        code = SETUP_FAILED
        try:
            os.close(r)
            _limit(resource.RLIMIT_AS, address_space)
            _limit(resource.RLIMIT_CPU, cpu, grace=cpu_grace)
            if fsize is not None:
                _limit(resource.RLIMIT_FSIZE, fsize)
            code = 1
            with os.fdopen(w, "wb", buffering=0) as pipe:
                work(pipe.write)
            code = 0
        except BaseException:          # noqa: BLE001 - the child never returns into the caller's code
            pass
        finally:
            os._exit(code)
    os.close(w)
    chunks, deadline, killed = [], time.monotonic() + wall, False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, _signal.SIGKILL)
                killed = True
                break
            ready, _, _ = select.select([r], [], [], left)
            if ready:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(r)
        _, status, usage = os.wait4(pid, 0)
    return Outcome(b"".join(chunks), killed,
                   os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                   os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                   usage.ru_utime + usage.ru_stime)
