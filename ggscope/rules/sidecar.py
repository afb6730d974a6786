"""Sidecar rules (GG1120-GG1123): projectors and LoRA adapters, judged by the loader that reads them.

Why: a multimodal projector (``general.architecture = clip``, read by tools/mtmd/clip.cpp
through ``--mmproj``) and a LoRA adapter (``general.type = adapter``, read by
src/llama-adapter.cpp through ``--lora``) are not main models; judging them as one reports
missing token embeddings on perfectly good files and misses what their own loaders refuse.
The loader engine leaves them out (``loader_engine``) and these rules check what clip.cpp
and llama_adapter_lora_init check; with ``validate --base MODEL`` (option ``base``) an
adapter or a projector is also checked against the model it belongs to.  The pinned llama.cpp is the
generated table's (``ggscope.facts.llama_arch.PINNED``).

Contract: rules need an undamaged header; each reports one finding per cause, error when the
sidecar's loader refuses it, info saying which loader reads the file.
"""
from __future__ import annotations

from collections.abc import Iterator

from ggscope.core.escape import escape_text, llama_quoted
from ggscope.facts.llama_arch import PINNED, PROJECTOR_TYPES
from ggscope.model.open import open as open_file
from ggscope.rules.base import CheckContext, Finding, Rule, Severity
from ggscope.rules.common import file_cache

__all__ = ["RULES", "kind_of", "base_model", "base_hparam"]

_ENCODERS = ("clip.has_vision_encoder", "clip.has_audio_encoder", "clip.has_gen_audio_encoder")
_PROJ_KEYS = ("clip.projector_type", "clip.vision.projector_type", "clip.audio.projector_type",
              "clip.gen_audio.projector_type")


def kind_of(mf) -> str | None:
    """``projector``, ``adapter``, ``control-vector`` or ``imatrix`` for a sidecar file, else None."""
    md = mf.metadata
    if md.get("general.architecture") == "clip":
        return "projector"
    if md.get("general.architecture") == "controlvector":     # tools/cvector-generator export_gguf
        return "control-vector"
    t = md.get("general.type")
    if t == "adapter":
        return "adapter"
    if t == "imatrix":
        return "imatrix"
    return None


class SidecarFile(Rule):
    """What it checks: whether the file is a sidecar - a projector, a LoRA adapter, a control
    vector or an importance matrix - rather than a model.

    Why it matters: llama.cpp reads each with its own loader (``--mmproj`` through
    tools/mtmd, ``--lora`` through llama_adapter_lora_init, ``llama-quantize --imatrix``)
    and refuses it as the main model ("CLIP cannot be used as main model"; an adapter has
    no token embeddings); ggscope judges it by its own loader instead.

    Example: ``mmproj-model-f16.gguf`` (``general.architecture = clip``).

    Reference: src/llama.cpp ``llama_model_load``; src/llama-adapter.cpp; tools/mtmd/clip.cpp.
    """
    code, name, severity, family = "GG1120", "sidecar-file", Severity.INFO, "loader"
    only_if = "sidecar"
    summary = "The file is a projector, adapter or importance matrix, read by its own loader."
    source = f"{PINNED}: src/llama.cpp, src/llama-adapter.cpp, tools/mtmd/clip.cpp"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if ctx.mf.damage is not None:
            return
        kind = kind_of(ctx.mf)
        how = {"projector": "a multimodal projector: llama.cpp loads it with --mmproj (tools/mtmd/clip.cpp), "
                            "never as the main model",
               "adapter": "a LoRA adapter: llama.cpp loads it with --lora on top of its base model",
               "control-vector": "a control vector: llama.cpp adds it to a model's layers with --control-vector "
                                 "(common/common.cpp), never loads it as the main model",
               "imatrix": "an importance matrix written by llama-imatrix: llama-quantize reads it with --imatrix"}
        if kind:
            yield ctx.at(ctx.node(ctx.mf.metadata_nodes.get("general.type")
                                  or ctx.mf.metadata_nodes.get("general.architecture", "")), how[kind])


class ProjectorRefused(Rule):
    """What it checks: a ``clip`` file is a projector clip.cpp can load.

    Why it matters: clip.cpp reads ``clip.has_vision_encoder`` / ``clip.has_audio_encoder``
    and loads nothing when neither is true, and throws "unknown projector type" for a
    ``clip.projector_type`` not in its ``PROJECTOR_TYPE_NAMES``, "Key not found" for a
    hyperparameter every encoder requires (``clip.vision.block_count``, ``image_size``, ...)
    and "unable to find tensor" for a required encoder layer tensor (``v.blk.N.attn_out``,
    ``ffn_up``, ``ffn_down``); it crashes on two optional tensors its code then uses (an
    ``mlp`` without ``mm.2.weight``, a Qwen2-VL merger without ``v.patch_embd.weight.1``); a
    file with the ``clip``
    architecture but no projector keys is neither a projector nor a model llama.cpp loads
    ("CLIP cannot be used as main model, use it with --mmproj instead").

    Example: a llama model whose ``general.architecture`` was set to ``clip``;
    ``clip.projector_type = "holdout"``.

    Reference: tools/mtmd/clip.cpp ``clip_model_loader``; tools/mtmd/clip-impl.h; src/llama.cpp.
    """
    code, name, severity, family = "GG1121", "projector-refused", Severity.ERROR, "loader"
    only_if = "projector"
    summary = "A clip (projector) file that clip.cpp refuses, or a model mislabelled clip."
    source = f"{PINNED}: tools/mtmd/clip.cpp clip_model_loader; src/llama.cpp"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        mf = ctx.mf
        if mf.damage is not None or kind_of(mf) != "projector":
            return
        md = mf.metadata
        node = ctx.node(mf.metadata_nodes.get("general.architecture", ""))
        if not any(md.get(k) is True for k in _ENCODERS):
            yield ctx.at(node, "no clip.has_vision_encoder / clip.has_audio_encoder set: clip.cpp finds no "
                               "encoder to load, and llama.cpp refuses the file as a main model (\"CLIP cannot "
                               "be used as main model, use it with --mmproj instead\")")
            return
        for k in _PROJ_KEYS:
            v = md.get(k)
            if v is not None and (not isinstance(v, str) or v not in PROJECTOR_TYPES):
                yield ctx.at(ctx.node(mf.metadata_nodes.get(k, "")), f"clip_model_loader: unknown projector type: "
                                                                      f"{llama_quoted(v)}")
                return
        missing = _first_missing(mf) or _null_tensor(mf)
        if missing:
            yield ctx.at(node, missing)


def _null_tensor(mf) -> str | None:
    """A tensor clip.cpp loads as optional but then dereferences: mtmd_init crashes (SIGSEGV) on it."""
    md, names = mf.metadata, {t.name for t in mf.tensors}
    if md.get("clip.has_vision_encoder") is not True:
        return None
    proj = md.get("clip.projector_type") or md.get("clip.vision.projector_type")
    if proj == "mlp" and "mm.2.weight" not in names and "mm.3.weight" not in names:
        return ("clip.cpp crashes on a null tensor: an mlp projector without mm.2.weight (nor the Yi-type "
                "mm.3.weight) - the llava graph and clip_n_mmproj_embd read it")
    if proj in ("qwen2vl_merger", "qwen2.5vl_merger") and "v.patch_embd.weight.1" not in names:
        return ("clip.cpp crashes on a null tensor: the qwen2vl graph convolves with v.patch_embd.weight.1 "
                "(models/qwen2vl.cpp), which the file lacks")
    return None


# clip_model_loader::load_hparams: the keys every encoder requires (get_u32/get_f32 without
# required=false), per modality in the order clip_init loads them; and load_tensors: the
# layer tensors every standard encoder requires
_MODALITIES = (("clip.has_vision_encoder", "vision", "v", ("clip.vision.image_size", "clip.vision.patch_size")),
               ("clip.has_audio_encoder", "audio", "a", ("clip.audio.num_mel_bins",)),
               ("clip.has_gen_audio_encoder", "gen.audio", None, ()))
_HPARAMS = ("embedding_length", "attention.head_count", "feed_forward_length", "block_count", "projection_dim",
            "attention.layer_norm_epsilon")
_NO_STANDARD_LAYERS = frozenset({"gemma3nv", "qwen3tts_spkenc", "pockettts_gen"})


def _first_missing(mf) -> str | None:
    """clip.cpp's refusal for the first required key or layer tensor the file lacks, or None.

    clip_init loads the vision encoder (hyperparameters, then tensors), then the audio one;
    the first miss throws.  The gen-audio encoder's layers are not checked (its tensor names
    follow its own loader).
    """
    md = mf.metadata
    names = {t.name for t in mf.tensors}
    for flag, prefix, short, extra in _MODALITIES:
        if md.get(flag) is not True:
            continue
        for k in [f"clip.{prefix}.{h}" for h in _HPARAMS] + list(extra):
            if k not in md:
                return f"clip_init: Key not found: {k}"
        proj = md.get("clip.projector_type") or md.get(f"clip.{prefix}.projector_type")
        n_layer = md.get(f"clip.{prefix}.block_count")
        if short is None or proj in _NO_STANDARD_LAYERS or not isinstance(n_layer, int) or isinstance(n_layer, bool):
            continue
        for il in range(min(n_layer, len(mf.tensors) + 1)):       # a count the tensors cannot back stops early
            moe = f"{short}.blk.{il}.ffn_gate_exps.weight" in names
            for t in ("attn_out",) + (() if moe else ("ffn_up", "ffn_down")):
                name = f"{short}.blk.{il}.{t}.weight"
                if name not in names:
                    return f"clip_init: load_tensors: unable to find tensor {name}"
    return None


# clip_n_mmproj_embd (tools/mtmd/clip.cpp): the tensor and dimension that give a projector's
# output width, for the projector types whose answer is one tensor's dimension; mtmd_init
# compares it with the text model's n_embd
# (mm_1_b is loaded from mm.2.bias for the Qwen2-VL mergers: load_tensors, PROJECTOR_TYPE_QWEN2VL)
_MMPROJ_EMBD = {"mlp": ("mm.2.weight", 1), "phi4": ("mm.2.weight", 1), "pixtral": ("mm.2.weight", 1),
                "qwen2vl_merger": ("mm.2.bias", 0), "qwen2.5vl_merger": ("mm.2.bias", 0),
                "gemma3": ("mm.input_projection.weight", 0), "idefics3": ("mm.model.fc.weight", 1)}


class ProjectorMismatch(Rule):
    """What it checks: with ``validate --base MODEL``, the projector's output width is the
    text model's embedding length.

    Why it matters: ``mtmd_init_from_file`` throws "mismatch between text model (n_embd = N)
    and mmproj (n_embd = M)": the projector was made for another model.  The width is what
    ``clip_n_mmproj_embd`` reads (``mm.2.weight`` ne[1] for mlp, ``mm.input_projection.weight``
    ne[0] for gemma3, ``mm.2.bias`` for the Qwen2-VL mergers, ``mm.model.fc.weight`` ne[1] for
    idefics3); other projector types are not checked.

    Example: a LLaVA 1.5 7B projector (4096 wide) given with a 2048-wide model.

    Reference: tools/mtmd/mtmd.cpp ``mtmd_context``; tools/mtmd/clip.cpp ``clip_n_mmproj_embd``.
    """
    code, name, severity, family = "GG1123", "projector-mismatch", Severity.ERROR, "loader"
    only_if = "projector"
    summary = "A projector whose output width is not the --base model's embedding length."
    source = f"{PINNED}: tools/mtmd/mtmd.cpp mtmd_context; tools/mtmd/clip.cpp clip_n_mmproj_embd"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        mf = ctx.mf
        base = base_for(ctx, "projector")
        if base is None:
            return
        n_embd = base_hparam(base, "embedding_length")
        where = _MMPROJ_EMBD.get(mf.metadata.get("clip.projector_type") or mf.metadata.get("clip.vision.projector_type"))
        t = next((x for x in mf.tensors if where and x.name == where[0]), None)
        if t is None or not isinstance(n_embd, int) or n_embd <= 0 or len(t.shape) <= where[1]:
            return
        if t.shape[where[1]] != n_embd:
            yield ctx.at(ctx.node(t.node_path), f"mismatch between text model (n_embd = {n_embd}) and mmproj "
                                                f"(n_embd = {t.shape[where[1]]})")


class AdapterRefused(Rule):
    """What it checks: a LoRA adapter passes llama_adapter_lora_init (and fits its base model
    when ``validate --base MODEL`` names it).

    Why it matters: the adapter loader throws on an ``adapter.type`` other than ``lora``,
    a tensor without the ``.lora_a`` / ``.lora_b`` suffix, a pair missing one half, an
    ``lora_a`` that is not transposed (``a.ne[1] != b.ne[0]``); against the base model on an
    architecture mismatch, a tensor the base does not have and a pair whose outer
    dimensions differ from the base tensor's.

    Example: ``blk.0.attn_q.weight.lora_a`` without its ``lora_b``; an adapter for qwen2
    applied to a llama model.

    Reference: src/llama-adapter.cpp ``llama_adapter_lora_init_impl``.
    """
    code, name, severity, family = "GG1122", "adapter-refused", Severity.ERROR, "loader"
    only_if = "adapter"
    summary = "A LoRA adapter llama.cpp's adapter loader refuses (alone or against --base)."
    source = f"{PINNED}: src/llama-adapter.cpp llama_adapter_lora_init_impl"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        mf = ctx.mf
        if mf.damage is not None or kind_of(mf) != "adapter":
            return
        md = mf.metadata
        nodes = mf.metadata_nodes
        at = ctx.node(nodes.get("general.type", ""))
        t = md.get("adapter.type")
        if t != "lora":
            yield ctx.at(ctx.node(nodes.get("adapter.type", "")) or at,
                         f"expect adapter.type to be 'lora', but got: {escape_text(t if t is not None else '')}")
            return
        pairs: dict[str, dict[str, object]] = {}
        for ti in mf.tensors:
            if ti.name.endswith(".lora_a") or ti.name.endswith(".lora_b"):
                pairs.setdefault(ti.name[:-7], {})[ti.name[-1]] = ti
            else:
                yield ctx.at(ctx.node(ti.node_path), f"LoRA tensor {llama_quoted(ti.name)} has unexpected suffix")
                return
        base = base_model(ctx)
        if base is not None and base.metadata.get("general.architecture") != md.get("general.architecture"):
            yield ctx.at(ctx.node(nodes.get("general.architecture", "")) or at, "model arch and LoRA arch mismatch")
            return
        btensors = {ti.name: ti for ti in base.tensors} if base is not None else {}
        for name, w in pairs.items():
            a, b = w.get("a"), w.get("b")
            if a is None or b is None:
                yield ctx.at(ctx.node((a or b).node_path), f"LoRA tensor pair for {llama_quoted(name)} is missing one component")
                return
            an, bn = _ne(a), _ne(b)
            if base is not None:
                mt = btensors.get(name)
                if mt is None:
                    yield ctx.at(ctx.node(a.node_path), f"LoRA tensor {llama_quoted(name)} does not exist in base model "
                                                        "(hint: maybe wrong base model?)")
                    return
                mn = _ne(mt)
                embd = name.endswith("token_embd.weight")
                if (mn[0] != bn[1] or mn[1] != an[1]) if embd else (mn[0] != an[0] or mn[1] != bn[1]):
                    yield ctx.at(ctx.node(a.node_path), f"tensor {llama_quoted(name)} has incorrect shape (hint: maybe "
                                                        "wrong base model?)")
                    return
            if not name.endswith("token_embd.weight") and an[1] != bn[0]:
                yield ctx.at(ctx.node(a.node_path), "lora_a tensor is not transposed (hint: adapter from "
                                                    "\"finetune\" example is no longer supported)")
                return


def _ne(ti) -> list[int]:
    return list(ti.shape) + [1] * (4 - len(ti.shape))


def base_model(ctx: CheckContext):
    """The model named by ``validate --base`` (opened once per check), or None."""
    path = ctx.options.get("base")
    if not path:
        return None
    cache = file_cache(ctx.mf)
    if "base" not in cache:
        cache["base"] = open_file(path)
    return cache["base"]


def base_for(ctx: CheckContext, kind: str):
    """The ``--base`` model when the file checked is an undamaged sidecar of ``kind``
    (``projector``, ``control-vector``, ``imatrix``), else None: the guard every rule that
    judges a sidecar against its base starts with."""
    mf = ctx.mf
    return base_model(ctx) if mf.damage is None and kind_of(mf) == kind else None


def base_hparam(base, name: str):
    """``{arch}.{name}`` of the ``--base`` model as stored (``embedding_length``,
    ``block_count``), or None without a string ``general.architecture``."""
    arch = base.metadata.get("general.architecture")
    return base.metadata.get(f"{arch}.{name}") if isinstance(arch, str) else None


RULES = [SidecarFile, ProjectorRefused, AdapterRefused, ProjectorMismatch]
