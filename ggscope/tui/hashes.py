"""The browser's `h`: the selected tensor's llama-gguf-hash digests, computed on demand.

A mixin of ``GGScopeApp``: hashing reads the whole tensor, so it runs in a worker
thread and its result arrives as a notification (file text as plain text, never markup).
"""
from __future__ import annotations

from textual import work
from ggscope.core.escape import escape_text

__all__ = ["HashesOnDemand"]


class HashesOnDemand:
    def action_hashes(self) -> None:
        shown = self.shards[self.shown].tensor_by_path if self.shards else {}     # the file the selection is in
        t = shown.get(self.selected.path) if self.selected is not None else None
        if t is None:
            self.notify("select a tensor to hash (tensors tab)", timeout=3)
        else:
            self.compute_hashes(t)

    @work(thread=True, exclusive=True, group="hash", exit_on_error=False)
    def compute_hashes(self, t) -> None:
        from ggscope.hash.engine import tensor_digests  # start-up: xxhash only when used
        try:
            text = "\n".join(f"{a:<7} {h}" for a, h in tensor_digests(t, ("xxh64", "sha1", "sha256")))
        except Exception as exc:  # noqa: BLE001 - a damaged or vanished file must not kill the app
            text = f"cannot hash: {escape_text(str(exc))}"
        self.call_from_thread(self.notify, text, title=escape_text(t.name), timeout=60, markup=False)
