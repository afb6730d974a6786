"""A work bound that does not depend on the clock: count function calls.

Hostile files must not cost time that grows with a number the file claims.  Timing
that in a test fails on a busy machine, so the tests count instead: ``call_budget(n)``
counts every Python and C function call made inside it (``sys.setprofile``) and raises
``WorkBudgetExceeded`` at call ``n + 1``, which also turns a would-be hang into a
failure.  A loop over a claimed count makes one call or more per iteration, so it
shows; vectorised numpy work is bounded by the memory checks beside it.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager

__all__ = ["call_budget", "WorkBudgetExceeded"]


class WorkBudgetExceeded(AssertionError):
    pass


class _Counter:
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.calls = 0

    def __call__(self, frame, event, arg):
        if event == "call" or event == "c_call":
            self.calls += 1
            if self.calls > self.budget:
                sys.setprofile(None)
                raise WorkBudgetExceeded(f"more than {self.budget:,} function calls")


@contextmanager
def call_budget(budget: int):
    """Count the calls of this thread inside the block; ``.calls`` holds the count."""
    counter = _Counter(budget)
    old = sys.getprofile()
    sys.setprofile(counter)
    try:
        yield counter
    finally:
        sys.setprofile(old)
