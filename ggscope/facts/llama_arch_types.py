"""Record types of the generated loader table (``ggscope.facts.llama_arch``).

Why: the table is generated from llama.cpp's source by tools/gen_llama_arch.py and used by
the loader rules and by the memory estimator; this module is its documented data API, so
the generated file stays pure data.

Contract:

* ``H`` - one ``ml.get_key*`` call of ``load_hparams`` / ``load_arch_hparams``: ``kv`` is the
  ``LLM_KV_`` enum without its prefix (``KV_NAMES[kv] % arch`` is the GGUF key), ``ctype``
  the C type it fills (``u32``, ``i32``, ``f32``, ``bool``, ``str``, ``u64``, ``u16``; a
  trailing ``[]`` for an array; None when the generator could not tell), ``required``
  (True / False; None when the flag is an expression), ``mode`` (``scalar``; ``per_layer``
  = get_key_or_arr, a scalar or an array of block_count entries, ``per_layer_main`` of the
  layers but the next-token-prediction ones (``hparams.n_layer()``), ``per_<N>`` of a
  constant N entries (``per_4``: M-RoPE's sections); ``array`` = get_arr;
  ``array_n`` = get_arr_n), ``dest`` (the hparams field or local it fills), ``conds`` (the
  C conditions around the call; empty = always read), ``when`` (each condition as a
  Python expression over the loader's variables, None where it is not plain arithmetic:
  a call is certain when all hold, impossible when one fails, unknown otherwise).
* ``T`` - one ``create_tensor`` call of ``load_arch_tensors``: ``tensor`` is the
  ``LLM_TENSOR_`` enum without its prefix (``TENSOR_NAMES[tensor]`` with ``%d`` = block),
  ``suffix`` (``weight``, ``bias``, ... or None), ``shape`` the ``ne`` list as Python
  expressions over the loader's variables (None for a dimension that is not plain
  arithmetic: not checked), ``required`` (no TENSOR_NOT_REQUIRED/TENSOR_SKIP and literal
  flags), ``loop`` (None = once; ``n_layer`` / ``n_layer_all`` = per block i below that
  bound; ``other`` = a block index other than the loop variable, ``bid``), ``conds`` (C
  conditions around the call), ``when`` (as for ``H``; ``i`` is the block), ``unless`` (a tensor whose presence makes this one
  unnecessary: the fused qkv / gate_up alternatives), ``reshape`` (TENSOR_ALLOW_RESHAPE), ``bid``, ``optional_if`` (flags held in a local
  variable: the Python condition under which they include TENSOR_NOT_REQUIRED or
  TENSOR_SKIP; ``has(name)`` is whether the file holds a tensor, ``load_mtp`` the loader's
  parameter).
* ``Arch`` - ``cls`` (llama.cpp's model class), ``preset`` (hparams fields
  load_arch_hparams sets before reading keys, ``{field: value}``), ``dynamic`` (some create_tensor call names
  its tensor at run time: the list of created tensors is incomplete), ``derive`` (local
  ``const`` sizes and flags of load_arch_tensors, as Python expressions, in order),
  ``layer_flags`` (``(name, expression of i)``: the per-layer flags load_arch_hparams sets,
  e.g. ``is_recr`` = ``n_head_kv == 0``; ``hparams.is_recr(i)`` in a condition reads them),
  ``checks`` (``(stage, kind, condition, C text, when)``: a ``GGML_ASSERT`` of
  load_arch_hparams / load_arch_tensors with its condition in Python - the process aborts
  when it is false - or a ``throw`` whose message is the C text, raised when ``when``
  holds), ``hparams``, ``tensors``.
* ``HPARAM_DEFAULTS`` (in the generated module): llama_hparams fields' initial values.
* ``Archs`` - the generated ``ARCHS``: a read-only mapping of architecture name -> ``Arch``
  whose records are built on first access, one architecture at a time.  Why: the table holds
  about 4,900 records; building them all at import cost every ``validate`` process 10-20 ms
  although a file names one architecture.  The generated module holds each architecture as
  JSON text, ``[cls, dynamic, preset, derive, layer_flags, checks, hparams, tensors]`` with
  each ``H`` and ``T`` as the list of its fields in order (lists become tuples; the records
  hold no lists), decoded when asked for: a string costs a copy when the module's bytecode
  is loaded, where a function per architecture cost every process ~1.3 ms of unmarshalling
  code objects for the ~150 architectures it does not name.

Shape variables: those of ``LLAMA_LOAD_LOCALS`` (src/llama-model.h: n_layer, n_head,
n_head_kv, n_embd, n_embd_k_gqa, n_embd_v_gqa, n_embd_head_k, n_embd_head_v, n_ff,
n_embd_gqa, n_vocab, n_rot, n_expert, n_expert_used, n_ctx_train, ...) per block, plus
every hparams field the architecture reads (by field name) and ``derive``.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

__all__ = ["H", "T", "Arch", "Archs"]


@dataclass(frozen=True)
class H:
    kv: str
    ctype: str | None
    required: bool | None
    mode: str
    dest: str
    conds: tuple[str, ...] = ()
    when: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class T:
    tensor: str
    suffix: str | None
    shape: tuple[str | None, ...] | None
    required: bool
    loop: str | None
    conds: tuple[str, ...] = ()
    when: tuple[str | None, ...] = ()
    unless: str | None = None
    reshape: bool = False
    bid: str | None = None
    optional_if: str | None = None


@dataclass(frozen=True)
class Arch:
    cls: str
    dynamic: bool
    preset: dict
    derive: tuple[tuple[str, str], ...]
    layer_flags: tuple[tuple[str, str], ...]
    checks: tuple[tuple[str, str, str | None, str, tuple[str, ...]], ...]
    hparams: tuple[H, ...]
    tensors: tuple[T, ...]


class Archs(Mapping):
    """Architecture name -> ``Arch``, each built from its JSON text on first access and kept.

    Membership, iteration and ``len`` build nothing; ``built()`` names the architectures
    built so far (what a start-up test reads)."""

    def __init__(self, makers: dict[str, str]) -> None:
        self._makers = makers
        self._built: dict[str, Arch] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> Arch:
        hit = self._built.get(name)
        if hit is not None:
            return hit
        make = self._makers[name]             # KeyError for an unknown architecture, as a dict
        with self._lock:                      # two threads' first use build one record
            hit = self._built.get(name)
            if hit is None:
                hit = self._built[name] = _build(name, make)
        return hit

    def __contains__(self, name: object) -> bool:
        return name in self._makers

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)

    def built(self) -> tuple[str, ...]:
        return tuple(self._built)


def _tuples(o):
    return tuple(_tuples(x) for x in o) if isinstance(o, list) else o


def _build(name: str, text: str) -> Arch:
    """The ``Arch`` the generated JSON text of architecture ``name`` spells."""
    import json     # start-up: only when an architecture is first asked for
    cls, dynamic, preset, derive, layer_flags, checks, hparams, tensors = json.loads(text)
    return Arch(cls, dynamic, preset, _tuples(derive), _tuples(layer_flags), _tuples(checks),
                tuple(H(*_tuples(h)) for h in hparams), tuple(T(*_tuples(t)) for t in tensors))
