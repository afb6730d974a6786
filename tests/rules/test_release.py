"""GG1112 needs-llama-release and GG1113 fork-type-id, and the generated release history they read.

The history table is checked three ways: it is what tools/gen_llama_history.py makes from the
recorded release lists (fixtures/llama_history), its newest release agrees with gguf-py (an
independent copy of llama.cpp's type and architecture lists) and with the pinned llama.cpp
tree's generated facts, and the ids ggscope's hand-kept type table marks as retired are
retired in it.  The rules are run on files written byte by byte here, with type ids and data
sizes of each reader's making.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import gguf
import pytest

import ggscope
from ggscope.facts import llama_history as H
from ggscope.facts.ggml_types import TYPES
from ggscope.facts.llama_arch import ARCHS, PROJECTOR_TYPES
from ggscope.validate.runner import selected_rules, validate
from tools import gen_llama_history as gen

ROOT = Path(__file__).resolve().parents[2]


# --- the table --------------------------------------------------------------------------
def test_table_is_what_the_script_makes_from_the_records():
    rec = json.loads((ROOT / "fixtures/llama_history/releases.json").read_text())
    forks = json.loads((ROOT / "fixtures/llama_history/forks.json").read_text())
    assert (ROOT / "ggscope/facts/llama_history.py").read_text() == gen.render(rec, forks), \
        "run: python -m tools.gen_llama_history"


def test_newest_release_agrees_with_gguf_py():
    newest = H.ORDER[-1]
    for q in gguf.GGMLQuantizationType:
        s = H.GGML_TYPE.get(int(q))
        assert s is not None and s.name == q.name and s.removed is None, (q, s)
    for ft in gguf.LlamaFileType:
        if ft.name == "GUESSED":
            continue
        s = H.FILE_TYPE.get(int(ft))
        assert s is not None and s.removed is None, (ft, s, newest)


def test_every_pinned_architecture_is_in_the_history():
    missing = sorted(a for a in ARCHS if a not in H.ARCH or H.ARCH[a].removed)
    assert not missing


def test_every_pinned_projector_type_is_in_the_history():
    assert sorted(p for p in PROJECTOR_TYPES if p not in H.PROJECTOR or H.PROJECTOR[p].removed) == []


def test_retired_ids_are_retired():
    for t in TYPES:
        s = H.GGML_TYPE.get(t.id)
        if t.removed and s is not None:
            assert s.removed is not None, t
        if not t.removed:
            assert s is not None and s.removed is None and s.name == t.name, t


def test_since_and_before_bracket_the_first_appearance():
    rec = json.loads((ROOT / "fixtures/llama_history/releases.json").read_text())
    by_tag = {r["tag"]: r for r in rec["releases"]}
    for name, s in H.ARCH.items():
        assert name in by_tag[s.since]["arch"]
        if s.before is not None:
            assert name not in by_tag[s.before]["arch"]
            assert H.tag_key(s.before) < H.tag_key(s.since)
    for tid, s in H.GGML_TYPE.items():
        assert by_tag[s.since]["ggml_type"].get(str(tid)) == s.name
        if s.removed:
            assert str(tid) not in by_tag[s.removed]["ggml_type"]


def test_removal_agrees_with_public_reports():
    # ggml-org/llama.cpp#10757: "version: 4295 (26a8406b)" refuses a Q4_0_4_4 file ("type 31: TYPE_Q4_0_4_4
    # REMOVED"); #11258: version 4486 refuses Q4_0_4_8.  The recorded removal must come no later.
    assert int(H.GGML_TYPE[31].removed[1:]) <= 4295
    assert int(H.GGML_TYPE[32].removed[1:]) <= 4486


def test_extractors_read_the_c_shapes():
    arch = 'static const std::map<llm_arch, const char *> LLM_ARCH_NAMES = {\n' \
           '    { LLM_ARCH_LLAMA, "llama" },\n    // { LLM_ARCH_OLD, "old" },\n' \
           '    { LLM_ARCH_UNKNOWN, "(unknown)" },\n};\n'
    assert gen.arch_names(arch) == ["llama"]
    enum = ("enum ggml_type {\n GGML_TYPE_F32 = 0,\n // GGML_TYPE_Q4_2 = 4, removed\n GGML_TYPE_Q5_0 = 6,\n"
            " GGML_TYPE_COUNT = 39,\n};")
    assert gen.enum_values(enum, "ggml_type", "GGML_TYPE_") == {0: "F32", 6: "Q5_0", 39: "COUNT"}
    assert gen.tag_key("b999") < gen.tag_key("b1000") < gen.tag_key("v0.4.0") < gen.tag_key("v0.10.0")


def test_fork_table_cites_sources_and_sizes():
    ik = [f for f in H.FORK_TYPES if f.fork == "ikawrakow/ik_llama.cpp" and f.current]
    names = {f.name for f in ik}
    assert {"IQ2_K", "IQ4_KS", "Q8_K_R8", "I2_S"} <= names
    for f in H.FORK_TYPES:
        assert len(f.commit) == 40 and f.line > 0 and f.path.endswith("ggml.h")
    for name, fork, date, commit, path, line in H.FORK_ARCHS:
        assert name not in H.ARCH and len(commit) == 40 and line > 0 and path.endswith(".cpp")
        assert (f.id, f.name) not in {(i, s.name) for i, s in H.GGML_TYPE.items()}


# --- files ------------------------------------------------------------------------------
def write(path: Path, tensors, *, arch="llama", ftype=None, align=32, trailing=0) -> Path:
    """A GGUF v3 file; ``tensors`` = [(name, ne, type_id, nbytes)], data of ``nbytes`` each, padded."""
    kv = [("general.architecture", 8, arch)] + ([("general.file_type", 4, ftype)] if ftype is not None else [])
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)))
    for k, t, v in kv:
        out += struct.pack("<Q", len(k)) + k.encode() + struct.pack("<I", t)
        out += struct.pack("<Q", len(v.encode())) + v.encode() if t == 8 else struct.pack("<I", v)
    off = 0
    for name, ne, tid, nb in tensors:
        out += struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(ne))
        out += b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", tid, off)
        off += -(-nb // align) * align
    out += bytes(-len(out) % align)
    for _, _, _, nb in tensors:
        out += b"\x11" * nb + bytes(-nb % align)
    out += bytes(trailing)
    path.write_bytes(out)
    return path


def write_kv(path: Path, tensors, strings: list[tuple[str, str]], align=32) -> Path:
    """Like ``write`` with string keys only, in the order given."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(strings)))
    for k, v in strings:
        out += struct.pack("<Q", len(k)) + k.encode() + struct.pack("<I", 8) + struct.pack("<Q", len(v)) + v.encode()
    off = 0
    for name, ne, tid, nb in tensors:
        out += struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(ne))
        out += b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", tid, off)
        off += -(-nb // align) * align
    out += bytes(-len(out) % align)
    for _, _, _, nb in tensors:
        out += b"\x11" * nb + bytes(-nb % align)
    path.write_bytes(out)
    return path


def found(path: Path, code: str):
    return [f for f in validate(ggscope.open(str(path)), selected_rules(select=(code,))) if f.code == code]


def test_needs_release_names_the_newest_minimum(tmp_path):
    # gemma3 with an MXFP4 tensor (blocks of 32 elements, 17 bytes) and an F32 one
    p = write(tmp_path / "g.gguf", [("a", (64, 2), 39, 4 * 17), ("b", (8,), 0, 32)], arch="gemma3")
    (f,) = found(p, "GG1112")
    assert f.message.startswith(f"needs llama.cpp {H.GGML_TYPE[39].since} or later: type MXFP4")
    assert f"since {H.GGML_TYPE[39].since} (not yet in {H.GGML_TYPE[39].before})" in f.message
    assert H.tag_key(H.GGML_TYPE[39].since) > H.tag_key(H.ARCH["gemma3"].since)
    assert "2 more item(s) known earlier" in f.message


def test_needs_release_newest_is_the_architecture(tmp_path):
    p = write(tmp_path / "q.gguf", [("b", (8,), 0, 32)], arch="qwen3")
    (f,) = found(p, "GG1112")
    assert f"needs llama.cpp {H.ARCH['qwen3'].since} or later" in f.message and '"qwen3"' in f.message
    assert f"not yet in {H.ARCH['qwen3'].before}" in f.message


def test_needs_release_names_removed_types(tmp_path):
    p = write(tmp_path / "r.gguf", [("a", (32, 4), 31, 4 * 18)])    # Q4_0_4_4
    (f,) = found(p, "GG1112")
    assert f"was removed by {H.GGML_TYPE[31].removed}" in f.message


def test_needs_release_old_file_and_non_gguf(tmp_path):
    p = write(tmp_path / "o.gguf", [("b", (8,), 0, 32)], ftype=0)
    (f,) = found(p, "GG1112")
    assert f.message.startswith(f"every recorded llama.cpp release ({H.ORDER[0]} to {H.ORDER[-1]})")
    assert "file type ALL_F32" in f.message


def test_hostile_names_are_escaped(tmp_path):
    p = write(tmp_path / "h.gguf", [("\x1b[31m[bold]x", (256, 2), 137, 2 * 76)], arch="llama")
    (f,) = found(p, "GG1113")
    assert all(c >= " " for c in f.message)                 # no control character reaches a terminal
    assert '"\\x1b[31m[bold]x"' in f.message


def test_fork_id_36_i2s_sizes(tmp_path):
    # BitNet / ik_llama.cpp I2_S: n/4 + 32 bytes per tensor (ggml_nbytes "hack for I2_S")
    p = write(tmp_path / "i2s.gguf", [("a", (256, 8), 36, 256 * 8 // 4 + 32), ("b", (128, 4), 36, 128 + 32)])
    (f,) = found(p, "GG1113")
    assert f.severity.value == "warning"
    assert "IQ4_NL_4_4 to mainline llama.cpp" in f.message and "I2_S to" in f.message
    assert "Eddie-Wang1120/llama.cpp" in f.message and "ikawrakow/ik_llama.cpp" in f.message
    assert f.message.endswith("fit I2_S")


def test_fork_id_36_mainline_sizes(tmp_path):
    # mainline's IQ4_NL_4_4: blocks of 32 elements, 18 bytes
    p = write(tmp_path / "nl.gguf", [("a", (256, 8), 36, 256 * 8 // 32 * 18)])
    (f,) = found(p, "GG1113")
    assert f.message.endswith("fit IQ4_NL_4_4")


def test_fork_only_id_and_wrong_size(tmp_path):
    ok = write(tmp_path / "k.gguf", [("a", (256, 4), 137, 4 * 76)])        # ik IQ2_K: 76 bytes / 256
    (f,) = found(ok, "GG1113")
    assert "nothing to mainline llama.cpp" in f.message and f.message.endswith("fit IQ2_K")
    bad = write(tmp_path / "kb.gguf", [("a", (256, 4), 137, 4 * 76 + 64)])
    (g,) = found(bad, "GG1113")
    assert "fit none of them" in g.message


def test_same_sizes_cannot_tell(tmp_path):
    # 41: mainline Q1_0 and ik_llama.cpp Q1_0_G128 are both 18 bytes per 128 elements
    p = write(tmp_path / "q1.gguf", [("a", (128, 4), 41, 4 * 18)])
    (f,) = found(p, "GG1113")
    assert "cannot tell" in f.message and "Q1_0_G128" in f.message


def test_shared_id_read_as_mainline_is_info(tmp_path):
    # 39 is MXFP4 to mainline, TL2 to BitNet's llama.cpp (and IQ4_K/IQ5_K to ik_llama.cpp of 2024):
    # a tensor sized as MXFP4 (17 bytes per 32 elements) is mainline's, and said so at info level
    p = write(tmp_path / "mx.gguf", [("a", (512, 8), 39, 512 * 8 // 32 * 17)])
    (f,) = found(p, "GG1113")
    assert f.severity.value == "info" and "fit MXFP4" in f.message and "TL2" in f.message


def test_projector_is_dated_by_its_projector_type(tmp_path):
    p = write(tmp_path / "mmproj.gguf", [("mm.0.weight", (8, 8), 0, 256)], arch="clip")
    (f,) = found(p, "GG1112")                       # no projector type: only its tensor type is dated
    assert "projector type" not in f.message and "architecture" not in f.message and "type F32" in f.message
    p2 = write_kv(tmp_path / "mmproj2.gguf", [("mm.0.weight", (8, 8), 0, 256)],
                  [("general.architecture", "clip"), ("clip.projector_type", "gemma3")])
    (f,) = found(p2, "GG1112")
    assert '"gemma3"' in f.message and "projector type" in f.message and "architecture" not in f.message
    assert f"since {H.PROJECTOR['gemma3'].since}" in f.message


def test_fork_architecture(tmp_path):
    p = write(tmp_path / "bn.gguf", [("a", (256, 8), 36, 256 * 8 // 4 + 32)], arch="bitnet-b1.58")
    (f,) = found(p, "GG1114")
    assert f.severity.value == "warning" and '"bitnet-b1.58"' in f.message
    assert "ikawrakow/ik_llama.cpp (src/llama-arch.cpp:" in f.message
    for arch in ("llama", "no-such-arch"):             # mainline's, and nobody's (GG1101's alone)
        assert found(write(tmp_path / f"{arch}.gguf", [("b", (8,), 0, 32)], arch=arch), "GG1114") == []


def test_mainline_file_has_no_fork_warning(tmp_path):
    p = write(tmp_path / "m.gguf", [("a", (32, 4), 8, 4 * 34), ("b", (8,), 0, 32)])
    assert found(p, "GG1113") == []


def test_damaged_file_gets_neither(tmp_path):
    p = write(tmp_path / "d.gguf", [("a", (256, 4), 137, 4 * 76)])
    p.write_bytes(p.read_bytes()[:60])
    assert found(p, "GG1112") == [] and found(p, "GG1113") == [] and found(p, "GG1114") == []


# where the fork's hand-kept gguf-py disagrees with its C source, and the C reader decides
_PY_DIFFERS = {("ikawrakow/ik_llama.cpp", "Q8_K32"): "C block_q8_K has 2 floats (static_assert 296); gguf-py: 292",
               ("ikawrakow/ik_llama.cpp", "Q8_KR8"): "sizeof(block_q8_K) as above",
               ("Eddie-Wang1120/llama.cpp", "TL1"): "ggml_nbytes sizes it (n/4+32), not type_traits",
               ("Eddie-Wang1120/llama.cpp", "TL2"): "ggml_nbytes sizes it (tl2), not type_traits"}


def test_fork_sizes_from_c_agree_with_the_forks_gguf_py():
    rows = json.loads((ROOT / "fixtures/llama_history/forks.json").read_text())["types"]
    checked = [r for r in rows if r["py_sizes"] is not None]
    assert len(checked) > 40
    differ = {(r["fork"], r["name"]) for r in checked if [r["blck"], r["bytes"]] != r["py_sizes"]}
    assert differ == set(_PY_DIFFERS)
    by = {(r["fork"], r["name"], r["id"]): r for r in rows if r["current"]}
    for f in H.FORK_TYPES:
        if f.current:
            r = by[(f.fork, f.name, f.id)]
            assert (f.blck, f.bytes, f.nbytes) == (r["blck"], r["bytes"], r["nbytes"])


def test_fork_sizes_parsed_from_source_match_mainline_layouts_they_repack():
    # ik_llama.cpp's repacked rows keep the mainline block per element: Q4_0_R8 as Q4_0, Q8_0_R8 / Q8_0_X4 as Q8_0
    ik = {f.name: f for f in H.FORK_TYPES if f.fork == "ikawrakow/ik_llama.cpp" and f.current}
    for fork_name, main in (("Q4_0_R8", 2), ("Q8_0_R8", 8), ("Q8_0_X4", 8), ("Q4_K_R4", 12), ("Q6_K_R4", 14)):
        f, t = ik[fork_name], TYPES[main]
        assert f.bytes * t.block_elems == t.block_bytes * f.blck, (fork_name, f, t)


def test_the_sentence_kept_for_the_process_is_the_files_own(tmp_path):
    """GG1112's sentence is kept per (architecture, type ids, file type): files that differ
    in any of them - a file type of 1 against True or 1.0 (one dict key in Python, and
    only the int is a file type), another tensor type, another architecture, a projector
    with other projector keys - each get the sentence a process that saw no other file
    gives them, in every order."""
    from gguf_writers import KV, V, write_gguf_py

    from ggscope.rules import release
    files = [write(tmp_path / "a.gguf", [("b", (8,), 0, 32)], arch="qwen3", ftype=1),
             write(tmp_path / "b.gguf", [("b", (8,), 0, 32)], arch="qwen3"),
             write(tmp_path / "c.gguf", [("a", (64, 2), 39, 4 * 17)], arch="qwen3", ftype=1),
             write(tmp_path / "d.gguf", [("b", (8,), 0, 32)], arch="gemma3", ftype=1),
             write(tmp_path / "e.gguf", [("a", (32, 4), 31, 4 * 18)], arch="qwen3", ftype=1)]
    for i, ft in enumerate((KV("general.file_type", V.BOOL, True), KV("general.file_type", V.FLOAT32, 1.0),
                            KV("general.file_type", V.UINT32, 1))):
        files.append(write_gguf_py(tmp_path / f"f{i}.gguf", arch="qwen3", kvs=[ft]))
    for i, proj in enumerate(("mlp", "ldp")):
        files.append(write_gguf_py(tmp_path / f"p{i}.gguf", arch="clip",
                                   kvs=[KV("clip.projector_type", V.STRING, proj)]))

    def alone(p):
        release._HEADS.clear()
        return [f.message for f in found(p, "GG1112")]
    want = {p: alone(p) for p in files}
    f_true, f_float, f_int = files[5:8]
    assert want[f_true] == want[f_float] != want[f_int]          # only the int names a file type
    assert len({tuple(v) for v in want.values()}) == len(files) - 2
    for order in (files, files[::-1], files[1::2] + files[::2]):
        release._HEADS.clear()
        for p in order:
            assert [f.message for f in found(p, "GG1112")] == want[p], p
