"""Validation mapped over a Dask distributed cluster (``validate --scheduler``).

The validator is a pure function of one path (``check``: findings, or the reason the
file could not be checked), so the cluster only maps it: ``Client.map`` with one task
per file, results streamed back with ``as_completed`` as they finish and put back in
the order the files were given, so the report equals a local run's.  Dask's scheduler
re-runs a task whose worker died (up to ``distributed.scheduler.allowed-failures``
times); a task that still cannot finish (``KilledWorker``) or raises becomes that
file's problem line - never a lost or a duplicated result, since each file is one
task with its own key and its result slot is filled once.

``scheduler`` is an address (``tcp://host:8786``) or ``"local"``: a LocalCluster of
``jobs`` single-threaded worker processes for this run.  Connecting to an address gives
up after ggscope's network timeout (``GGSCOPE_HTTP_TIMEOUT``, the one knob for every
network wait) instead of Dask's 30 s default: an unreachable or silent scheduler is
one line within that time, a refused connection one line at once (``_probe``: Dask
retries a refused connect until its timeout), and whatever else answers there one line
too, never a traceback.
"""
from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from ggscope.core.errors import GGScopeError
from ggscope.core.escape import escape_text

__all__ = ["check_on_cluster", "ClusterError"]

Result = tuple[Any, "str | None"]


class ClusterError(GGScopeError):
    """The scheduler could not be reached or started."""


def check_on_cluster(check: Callable[..., Result], files: Sequence[str], args: tuple, *, scheduler: str,
                     jobs: int, progress: Callable[[int, int], None] | None = None) -> list[Result]:
    """``[check(f, *args) for f in files]``, computed on the cluster."""
    try:
        from distributed import Client, LocalCluster, as_completed
        from distributed.client import FutureCancelledError
        from distributed.scheduler import KilledWorker
    except ImportError as exc:   # pragma: no cover - the optional extra
        raise ClusterError(f"--scheduler needs Dask's distributed package (pip install 'ggscope[dask]'): {exc}") \
            from None
    for name in ("distributed", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL)   # a dead worker is reported per file, not logged
    cluster = None
    try:
        if scheduler == "local":
            cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.CRITICAL)
            client = Client(cluster)
        else:
            from ggscope.source.netguard import call_within, timeout  # start-up: asyncio only when used
            _probe(scheduler, timeout())
            # Dask bounds the TCP connect by ``timeout`` but not the handshake read: a
            # port that accepts and stays silent would hold the command for ever
            client = call_within(timeout() + 1, lambda: Client(scheduler, timeout=timeout()))
    except Exception as exc:  # noqa: BLE001 - whatever answers at the address is one line, not a traceback
        if cluster is not None:
            cluster.close()
        why = (f"cannot reach the Dask scheduler at {scheduler}: {exc}"
               if isinstance(exc, (OSError, TimeoutError, ValueError)) else
               f"the server at {scheduler} does not answer as a Dask scheduler ({type(exc).__name__}: {exc})")
        raise ClusterError(escape_text(why)) from None
    results: list[Result | None] = [None] * len(files)
    run = uuid.uuid4().hex[:8]
    try:
        keys = [f"ggscope-validate-{run}-{i}" for i in range(len(files))]
        where = {k: i for i, k in enumerate(keys)}
        futures = client.map(check, list(files), *[[a] * len(files) for a in args], key=keys, pure=False)
        done = 0
        for fut in as_completed(futures):
            i = where[fut.key]
            try:
                results[i] = fut.result()
            except KilledWorker:
                results[i] = (None, f"cannot check {files[i]}: the Dask workers checking it died "
                                    "(it was retried and failed each time)")
            except FutureCancelledError:
                results[i] = (None, f"cannot check {files[i]}: its task was cancelled on the cluster")
            except Exception as exc:  # noqa: BLE001 - one file's failure is that file's problem
                results[i] = (None, f"cannot check {files[i]}: {type(exc).__name__}: {exc}")
            done += 1
            if progress is not None:
                progress(done, len(files))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    assert all(r is not None for r in results)
    return results  # type: ignore[return-value]


def _probe(address: str, seconds: float) -> None:
    """One plain TCP connect to a ``tcp://`` (or bare ``host:port``) scheduler address:
    OSError at once when nothing listens there; other schemes are left to Dask."""
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port
    scheme, loc = parse_address(address)
    if scheme != "tcp":
        return
    host, port = parse_host_port(loc)
    with socket.create_connection((host, port), timeout=seconds):
        pass

