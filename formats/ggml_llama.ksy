meta:
  id: ggml_llama
  title: llama.cpp legacy model file (unversioned GGML, GGMF v1, GGJT v1/v2/v3)
  file-extension: bin
  license: MIT
  ks-version: 0.11
  endian: le
doc: |
  The model files llama.cpp wrote between 2023-03-10 and 2023-08-21, before GGUF:

  * unversioned GGML (magic bytes "lmgg", 2023-03-10 -> 03-20): header of seven
    hyper-parameters, vocabulary without scores, tensor records without padding;
  * GGMF v1 (bytes "fmgg", version 1, 2023-03-20 -> 03-30): a version word and a score
    after every token, otherwise as GGML;
  * GGJT v1/v2/v3 (bytes "tjgg", 2023-03-30 -> 08-21): as GGMF, plus zero padding in
    every tensor record so that tensor data starts at a multiple of 32 bytes of the
    absolute file offset. The three versions share the container; they differ in the
    block layouts of quantized tensors (v1: interleaved nibbles, f32 scales; v2: split
    halves, f32 scales; v3: today's layouts with f16 scales).

  There is no tensor count: tensor records follow each other until the end of the file,
  and a well-formed file ends exactly after the last tensor's data. Tensor dimensions are
  in ggml order (`ne[0]` is the row length).

  The meaning of a tensor's type code and the byte size of its blocks depend on the era
  (`era`): the size table in `tensor_record` follows legacy-formats.md §3.3. A type code
  the era does not define makes the data size impossible, so the walk stops at that record
  instead of misreading the rest of the file.

  The magic `ggmf` is shared with rwkv.cpp files (versions 100/101, a different layout,
  see rwkv_cpp.ksy); the magic bytes "lmgg" are shared with the unversioned GGML files
  of ggml's example programs (ggml_example.ksy), which have other hyper-parameters.
  Files of the GPT4All converter (header n_vocab 32001 with only 32000 tokens) are not
  covered by this layout.
doc-ref:
  - https://github.com/ggerganov/llama.cpp/blob/26c084662903ddaca19bef982831bfb0856e8257/convert-pth-to-ggml.py
  - https://github.com/ggerganov/llama.cpp/blob/074bea2eb1f1349a0118239c4152914aecaa1be4/convert-pth-to-ggml.py
  - https://github.com/ggerganov/llama.cpp/blob/78ca9838ee36660a776e97e3391b6fb5dcaacf7f/llama.cpp
  - https://github.com/ggerganov/llama.cpp/blob/2d5db48371052087a83974abda3767d1aedec598/llama.cpp
  - legacy-formats.md §1.2, §2, §3, §4
seq:
  - id: magic
    type: u4
    enum: magic
    doc: |
      Format identifier, written by llama.cpp as a little-endian 32-bit number: 0x67676d6c
      (bytes "lmgg") for unversioned GGML, 0x67676d66 ("fmgg") for GGMF, 0x67676a74
      ("tjgg") for GGJT.
  - id: version
    type: u4
    if: magic != magic::ggml
    doc: |
      Container version: 1 for GGMF; 1, 2 or 3 for GGJT (2 = nibble order of Q4/Q5
      blocks changed on 2023-05-12, 3 = Q4_0/Q4_1/Q8_0 scales became f16 on 2023-05-19).
      Absent in unversioned GGML files.
  - id: hparams
    type: hparams
    doc: Model hyper-parameters (seven 32-bit words, the same in all versions).
  - id: vocab
    type: token
    repeat: expr
    repeat-expr: hparams.n_vocab
    doc: |
      The vocabulary: exactly `n_vocab` entries. Unversioned GGML stores only the token
      bytes; GGMF and GGJT add a SentencePiece score to each entry.
  - id: tensors
    type: tensor_record
    repeat: eos
    doc: Tensor records, one after the other until the end of the file.
instances:
  has_scores:
    value: magic != magic::ggml
    doc: True when vocabulary entries carry an f32 score (GGMF and GGJT).
  is_aligned:
    value: magic == magic::ggjt
    doc: True when tensor data is padded to 32-byte file offsets (GGJT).
  era:
    value: 'magic == magic::ggjt ? version : 0'
    doc: |
      Which block-size table applies: 0 = unversioned GGML and GGMF (2023-03), 1, 2, 3 =
      GGJT version 1, 2, 3. Other values have no table; every quantized record then stops
      the walk.
types:
  hparams:
    doc: |
      The header words of llama.cpp's `llama_hparams` as written by its converters
      (`struct.pack("i", ...)` for GGML/GGMF, u32 for GGJT). No valid file has a negative
      value, so all are read as unsigned.
    doc-ref: legacy-formats.md §1.2, §3.1
    seq:
      - id: n_vocab
        type: u4
        doc: Vocabulary size; exactly this many vocabulary entries follow the header.
      - id: n_embd
        type: u4
        doc: Embedding (hidden) size.
      - id: n_mult
        type: u4
        doc: |
          `multiple_of` from Meta's params.json (256); the feed-forward size is derived as
          ((2 * 4 * n_embd / 3 + n_mult - 1) / n_mult) * n_mult.
      - id: n_head
        type: u4
        doc: Number of attention heads.
      - id: n_layer
        type: u4
        doc: Number of transformer layers.
      - id: n_rot
        type: u4
        doc: Rotary dimensions, n_embd / n_head (64 in the very first converter); unused by readers.
      - id: ftype
        type: u4
        enum: llama_ftype
        doc: |
          File type (`llama_ftype`, formerly the `f16` flag): the dominant tensor type. The
          per-tensor type code is authoritative for decoding. In GGJT v1 files it also tells
          tensor type code 6 apart: Q8_0 when ftype is 7 (MOSTLY_Q8_0), otherwise Q5_0.
  token:
    doc: One vocabulary entry.
    doc-ref: legacy-formats.md §1.2, §2
    seq:
      - id: len_text
        type: u4
        doc: Byte length of the token text.
      - id: text
        size: len_text
        doc: |
          Token bytes (UTF-8 text in general; SentencePiece byte tokens `<0xNN>` are written
          as that single raw byte, control tokens as empty strings, `▁` as a space).
      - id: score
        type: f4
        if: _root.has_scores
        doc: SentencePiece score of the token (GGMF and GGJT only).
  tensor_record:
    doc: |
      One tensor: a small header, the name, (GGJT only) zero padding up to the next
      absolute file offset that is a multiple of 32, then the data. The data size is
      n_elements * block_bytes / block_elems for the era's block table.
    doc-ref: legacy-formats.md §1.1, §3.1, §3.3
    seq:
      - id: n_dims
        type: u4
        doc: Number of dimensions (llama.cpp writes and accepts only 1 or 2).
      - id: len_name
        type: u4
        doc: Byte length of the tensor name.
      - id: ttype
        type: u4
        doc: |
          Tensor type code. Its meaning depends on the era (see the instances
          `type_2023_03`, `type_ggjt_v1`, `type_ggjt_v2`, `type_ggjt_v3`).
      - id: ne
        type: u4
        repeat: expr
        repeat-expr: n_dims
        doc: Dimensions in ggml order (ne[0] = row length, the PyTorch shape reversed).
      - id: name
        type: str
        size: len_name
        encoding: UTF-8
        doc: Tensor name, e.g. `layers.0.attention.wq.weight` (not NUL-terminated).
      - id: padding
        size: (32 - _io.pos % 32) % 32
        if: _root.is_aligned
        doc: |
          GGJT only: 0-31 zero bytes so that the data starts at an absolute file offset
          that is a multiple of 32 (llama.cpp computes `(offset + 31) & -32`).
      - id: data
        size: 'is_known ? n_elements * block_bytes / block_elems : _io.size - _io.pos + 1'
        doc: |
          Tensor data, n_elements * block_bytes / block_elems bytes. For a type code the
          era does not define (or more than four dimensions) the size cannot be known; the
          record then asks for one byte more than the file holds, so the walk stops here.
    instances:
      n_elements:
        value: >-
          (n_dims > 0 ? ne[0] : 1) * (n_dims > 1 ? ne[1] : 1)
          * (n_dims > 2 ? ne[2] : 1) * (n_dims > 3 ? ne[3] : 1)
        doc: Number of elements, the product of all dimensions.
      block_elems:
        value: >-
          ttype <= 1 ? 1 : ((ttype == 4 or ttype == 5) ? 16 : (ttype >= 10 ? 256 : 32))
        doc: Elements per block of this type (1 for F32/F16, 16 for Q4_2/Q4_3, 256 for K-quants).
      block_bytes:
        value: >-
          _root.era == 0 ? (ttype == 0 ? 4 : (ttype == 1 ? 2 : (ttype == 2 ? 20 : (ttype == 3 ? 24 : 0))))
          : (_root.era == 1 ? (ttype == 0 ? 4 : (ttype == 1 ? 2 : (ttype == 2 ? 20 : (ttype == 3 ? 24
            : (ttype == 4 ? 10 : (ttype == 5 ? 12
            : (ttype == 6 ? (_root.hparams.ftype == llama_ftype::mostly_q8_0 ? 36 : 22)
            : (ttype == 7 ? 24 : (ttype == 8 ? 36 : 0)))))))))
          : (_root.era == 2 ? (ttype == 0 ? 4 : (ttype == 1 ? 2 : (ttype == 2 ? 20 : (ttype == 3 ? 24
            : (ttype == 6 ? 22 : (ttype == 7 ? 24 : (ttype == 8 ? 36 : 0)))))))
          : (_root.era == 3 ? (ttype == 0 ? 4 : (ttype == 1 ? 2 : (ttype == 2 ? 18 : (ttype == 3 ? 20
            : (ttype == 6 ? 22 : (ttype == 7 ? 24 : (ttype == 8 ? 34
            : (ttype == 10 ? 84 : (ttype == 11 ? 110 : (ttype == 12 ? 144 : (ttype == 13 ? 176
            : (ttype == 14 ? 210 : (ttype == 15 ? 292 : 0)))))))))))))
          : 0)))
        doc: |
          Bytes per block of this type in this era (0 = not defined in this era):
          GGML/GGMF F32 4, F16 2, Q4_0 20, Q4_1 24; GGJT v1 adds Q4_2 10, Q4_3 12,
          Q5_0 22 (or, code 6 with header ftype 7, the one-day Q8_0 of 36), Q5_1 24,
          Q8_0 36; GGJT v2 drops Q4_2/Q4_3; GGJT v3 Q4_0 18, Q4_1 20, Q8_0 34 and the
          K-quants Q2_K..Q6_K (84, 110, 144, 176, 210 per 256 elements) and Q8_K (292;
          an intermediate type, not expected in model files).
      is_known:
        value: block_bytes != 0 and n_dims <= 4
        doc: True when the data size of this record can be computed.
      type_2023_03:
        value: ttype
        enum: ggml_type_2023_03
        if: _root.era == 0
        doc: The type code read with the file codes of unversioned GGML and GGMF (2023-03).
      type_ggjt_v1:
        value: ttype
        enum: ggml_type_ggjt_v1
        if: _root.era == 1
        doc: The type code read with the ggml_type ids of GGJT v1 files (2023-03-30 -> 05-12).
      type_ggjt_v2:
        value: ttype
        enum: ggml_type_ggjt_v2
        if: _root.era == 2
        doc: The type code read with the ggml_type ids of GGJT v2 files (2023-05-12 -> 05-19).
      type_ggjt_v3:
        value: ttype
        enum: ggml_type_ggjt_v3
        if: _root.era == 3
        doc: The type code read with the ggml_type ids of GGJT v3 files (2023-05-19 -> 08-21).
enums:
  magic:
    0x67676d6c:
      id: ggml
      doc: Unversioned GGML (bytes "lmgg").
    0x67676d66:
      id: ggmf
      doc: GGMF, version 1 (bytes "fmgg"; rwkv.cpp uses the same value with versions 100/101).
    0x67676a74:
      id: ggjt
      doc: GGJT, versions 1 to 3 (bytes "tjgg").
  llama_ftype:
    0: all_f32
    1: mostly_f16
    2: mostly_q4_0
    3: mostly_q4_1
    4:
      id: mostly_q4_1_some_f16
      doc: Written by the GPTQ importer (2023-03-21); embeddings and output F16.
    5:
      id: mostly_q4_2
      doc: 2023-04-18 -> 2023-05-12.
    6:
      id: mostly_q4_3
      doc: 2023-04-20 -> 2023-04-28.
    7: mostly_q8_0
    8: mostly_q5_0
    9: mostly_q5_1
    10: mostly_q2_k
    11: mostly_q3_k_s
    12: mostly_q3_k_m
    13: mostly_q3_k_l
    14: mostly_q4_k_s
    15: mostly_q4_k_m
    16: mostly_q5_k_s
    17: mostly_q5_k_m
    18: mostly_q6_k
  ggml_type_2023_03:
    0: f32
    1: f16
    2:
      id: q4_0
      doc: 32 elements in 20 bytes (f32 scale, interleaved nibbles; row-split on 2023-03-10).
    3:
      id: q4_1
      doc: 32 elements in 24 bytes (f32 scale and min, interleaved nibbles; row-split before 2023-03-17).
  ggml_type_ggjt_v1:
    0: f32
    1: f16
    2:
      id: q4_0
      doc: 20-byte blocks, f32 scale, interleaved nibbles.
    3:
      id: q4_1
      doc: 24-byte blocks, f32 scale and min, interleaved nibbles.
    4:
      id: q4_2
      doc: 16 elements in 10 bytes (f16 scale), interleaved nibbles; 2023-04-18 -> 05-12.
    5:
      id: q4_3
      doc: 16 elements in 12 bytes (f16 scale and min), interleaved nibbles; 2023-04-20 -> 04-28.
    6:
      id: q5_0
      doc: 22-byte blocks, interleaved nibbles; in files with header ftype 7 (2023-04-25/26) this code is Q8_0 (36 bytes).
    7:
      id: q5_1
      doc: 24-byte blocks, interleaved nibbles.
    8:
      id: q8_0
      doc: 36-byte blocks (f32 scale).
  ggml_type_ggjt_v2:
    0: f32
    1: f16
    2:
      id: q4_0
      doc: 20-byte blocks, f32 scale, split-halves nibbles.
    3:
      id: q4_1
      doc: 24-byte blocks, f32 scale and min, split-halves nibbles.
    6:
      id: q5_0
      doc: 22-byte blocks as today.
    7:
      id: q5_1
      doc: 24-byte blocks as today.
    8:
      id: q8_0
      doc: 36-byte blocks (f32 scale).
  ggml_type_ggjt_v3:
    0: f32
    1: f16
    2: q4_0
    3: q4_1
    6: q5_0
    7: q5_1
    8: q8_0
    10: q2_k
    11: q3_k
    12: q4_k
    13: q5_k
    14: q6_k
    15:
      id: q8_k
      doc: Intermediate type of the K-quant dot products; not expected in model files.
