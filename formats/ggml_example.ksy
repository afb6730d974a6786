meta:
  id: ggml_example
  title: Unversioned GGML model file of ggml's example programs (gpt-2, gpt-j style)
  file-extension: bin
  license: MIT
  ks-version: 0.11
  endian: le
doc: |
  The model files read and written by the example programs of the ggml repository
  (examples/gpt-2, examples/gpt-j and their siblings starcoder and Cerebras-GPT), 2022-09
  onwards: the 32-bit magic 0x67676d6c (bytes "lmgg", the same as llama.cpp's unversioned
  GGML), the hyper-parameters, an explicit vocabulary count, the vocabulary (no scores),
  then tensor records without padding until the end of the file.

  Two header layouts exist and both are followed by the vocabulary count, which repeats
  `n_vocab`:

  * gpt-2 style (gpt-2, starcoder, Cerebras-GPT): n_vocab, n_ctx, n_embd, n_head,
    n_layer, ftype; the vocabulary count is at offset 28.
  * gpt-j style: n_vocab, n_ctx, n_embd, n_head, n_layer, n_rot, ftype; the vocabulary
    count is at offset 32.

  The layout is chosen by peeking at offset 28: when that word equals n_vocab it is
  gpt-2's vocabulary count, otherwise it is gpt-j's ftype (an ftype equal to n_vocab does
  not occur: ftype is below 3000, vocabularies of real models are far larger).

  The header `ftype` carries the quantization version since 2023-05-14:
  ftype = ggml_ftype + 1000 * qntvr. qntvr selects the block layouts of quantized tensors:
  0 = before 2023-05-14 (interleaved nibbles, f32 scales, Q4_2/Q4_3 exist), 1 = 2023-05-14
  -> 05-19 (split-halves nibbles, f32 scales), 2 = 2023-05-20 onwards (today's layouts).
  The per-tensor type codes are the same numbers in every era.

  Not covered: gpt-neox/dolly-v2 (eight header words, no vocabulary count), mpt and replit
  (other header orders, replit has token scores) and whisper.
doc-ref:
  - https://github.com/ggml-org/ggml/blob/fb558f78d905f85c54813602649ddd628ffe0f3a/examples/gpt-2/main.cpp
  - https://github.com/ggml-org/ggml/blob/fb558f78d905f85c54813602649ddd628ffe0f3a/examples/gpt-j/main.cpp
  - https://github.com/ggml-org/ggml/blob/b0d536bb85a0681fa746f868e37180570d00fcf0/examples/gpt-2/quantize.cpp
  - legacy-formats.md §1.1, §1.3
seq:
  - id: magic
    contents: [0x6c, 0x6d, 0x67, 0x67]
    doc: The 32-bit number 0x67676d6c ('ggml') stored little-endian, i.e. the bytes "lmgg".
  - id: hparams
    type: hparams
    doc: Model hyper-parameters (six words for gpt-2 style, seven for gpt-j style).
  - id: n_vocab_tokens
    type: u4
    doc: |
      Number of vocabulary entries that follow; the example loaders reject a file where it
      differs from hparams.n_vocab (gpt-j writes len(encoder) + len(added_tokens) here).
  - id: vocab
    type: token
    repeat: expr
    repeat-expr: n_vocab_tokens
    doc: The vocabulary, token bytes only (no scores).
  - id: tensors
    type: tensor_record
    repeat: eos
    doc: Tensor records, one after the other until the end of the file.
instances:
  qntvr:
    value: hparams.ftype / 1000
    doc: Quantization version, ftype / 1000 (GGML_QNT_VERSION_FACTOR); 0 before 2023-05-14.
  ggml_ftype:
    value: hparams.ftype % 1000
    enum: ggml_ftype
    doc: The file type proper, ftype % 1000 (`enum ggml_ftype`).
types:
  hparams:
    doc: |
      The header words of the example's `hparams` struct, written as int32 by the
      converters; no valid file has a negative value, so they are read as unsigned.
    doc-ref: legacy-formats.md §1.3
    seq:
      - id: n_vocab
        type: u4
        doc: Vocabulary size (rows of the token embedding).
      - id: n_ctx
        type: u4
        doc: Maximum context length (rows of the position embedding for gpt-2).
      - id: n_embd
        type: u4
        doc: Embedding (hidden) size.
      - id: n_head
        type: u4
        doc: Number of attention heads.
      - id: n_layer
        type: u4
        doc: Number of transformer layers.
      - id: n_rot
        type: u4
        if: has_n_rot
        doc: gpt-j style only — number of rotary dimensions per head.
      - id: ftype
        type: u4
        doc: |
          File type: `ggml_ftype` + 1000 * quantization version (from 2023-05-14; before,
          the plain file type, called `f16` in 2022: 0 F32, 1 F16).
    instances:
      word_at_28:
        pos: 28
        type: u4
        doc: |
          Peek at the header word at offset 28: gpt-2's vocabulary count (equal to n_vocab)
          or gpt-j's ftype. Decides which layout this header has.
      has_n_rot:
        value: _io.size >= 32 and word_at_28 != n_vocab
        doc: |
          True for the gpt-j style header (n_rot present, ftype at offset 28). A file too
          short to hold the word at offset 28 is read as gpt-2 style, so that a truncated
          header is reported at the field where the bytes end.
  token:
    doc: One vocabulary entry.
    seq:
      - id: len_text
        type: u4
        doc: Byte length of the token text.
      - id: text
        size: len_text
        doc: |
          Token bytes: the byte-level BPE string mapped back to raw bytes (the 2022
          converters re-encoded them as UTF-8 with replacement characters).
  tensor_record:
    doc: |
      One tensor: header, name, data (no padding anywhere). The data size is
      n_elements * block_bytes / block_elems for the file's quantization version.
    doc-ref: legacy-formats.md §1.1, §1.3
    seq:
      - id: n_dims
        type: u4
        doc: Number of dimensions (1 or 2 for gpt-2/gpt-j; the shared quantizer accepts up to 4).
      - id: len_name
        type: u4
        doc: Byte length of the tensor name.
      - id: ttype
        type: u4
        doc: Tensor type code (`enum ggml_type` id; the same numbers in every era of these files).
      - id: ne
        type: u4
        repeat: expr
        repeat-expr: n_dims
        doc: Dimensions in ggml order (ne[0] = row length).
      - id: name
        type: str
        size: len_name
        encoding: UTF-8
        doc: Tensor name, e.g. `model/h0/attn/c_attn/w` (gpt-2) or `transformer.wte.weight` (gpt-j).
      - id: data
        size: 'is_known ? n_elements * block_bytes / block_elems : _io.size - _io.pos + 1'
        doc: |
          Tensor data, n_elements * block_bytes / block_elems bytes. For a type code the
          quantization version does not define (or more than four dimensions) the size
          cannot be known; the record then asks for one byte more than the file holds, so
          the walk stops here.
    instances:
      ggml_type:
        value: ttype
        enum: ggml_type
        doc: The type code named by `enum ggml_type`.
      n_elements:
        value: >-
          (n_dims > 0 ? ne[0] : 1) * (n_dims > 1 ? ne[1] : 1)
          * (n_dims > 2 ? ne[2] : 1) * (n_dims > 3 ? ne[3] : 1)
        doc: Number of elements, the product of all dimensions.
      block_elems:
        value: >-
          ttype <= 1 ? 1 : ((ttype == 4 or ttype == 5) ? 16 : (ttype >= 10 ? 256 : 32))
        doc: Elements per block (1 for F32/F16, 16 for Q4_2/Q4_3, 256 for K-quants).
      block_bytes:
        value: >-
          _root.qntvr == 0 ? (ttype == 0 ? 4 : (ttype == 1 ? 2 : (ttype == 2 ? 20 : (ttype == 3 ? 24
            : (ttype == 4 ? 10 : (ttype == 5 ? 12
            : (ttype == 6 ? (_root.hparams.ftype % 1000 == 7 ? 36 : 22) : (ttype == 7 ? 24
            : (ttype == 8 ? 36 : 0)))))))))
          : (_root.qntvr == 1 ? (ttype == 0 ? 4 : (ttype == 1 ? 2 : (ttype == 2 ? 20 : (ttype == 3 ? 24
            : (ttype == 6 ? 22 : (ttype == 7 ? 24 : (ttype == 8 ? 36 : 0)))))))
          : (_root.qntvr == 2 ? (ttype == 0 ? 4 : (ttype == 1 ? 2 : (ttype == 2 ? 18 : (ttype == 3 ? 20
            : (ttype == 6 ? 22 : (ttype == 7 ? 24 : (ttype == 8 ? 34
            : (ttype == 10 ? 84 : (ttype == 11 ? 110 : (ttype == 12 ? 144 : (ttype == 13 ? 176
            : (ttype == 14 ? 210 : (ttype == 15 ? 292 : 0)))))))))))))
          : 0))
        doc: |
          Bytes per block (0 = not defined for this quantization version): qntvr 0
          F32 4, F16 2, Q4_0 20, Q4_1 24, Q4_2 10, Q4_3 12, Q5_0 22 (code 6 in a file whose
          ftype is 7 = the one-day Q8_0 of 2023-04-25, 36 bytes), Q5_1 24, Q8_0 36;
          qntvr 1 drops Q4_2/Q4_3; qntvr 2 Q4_0 18, Q4_1 20, Q8_0 34 and the K-quants
          Q2_K..Q6_K and Q8_K (84, 110, 144, 176, 210, 292 per 256 elements).
      is_known:
        value: block_bytes != 0 and n_dims <= 4
        doc: True when the data size of this record can be computed.
enums:
  ggml_type:
    0: f32
    1: f16
    2: q4_0
    3: q4_1
    4:
      id: q4_2
      doc: 16-element blocks; only in files with quantization version 0 (2023-04-18 -> 05-14).
    5:
      id: q4_3
      doc: 16-element blocks; only in files with quantization version 0 (2023-04-20 -> 04-28).
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
  ggml_ftype:
    0: all_f32
    1: mostly_f16
    2: mostly_q4_0
    3: mostly_q4_1
    4: mostly_q4_1_some_f16
    5:
      id: mostly_q4_2
      doc: 2023-04 only.
    6:
      id: mostly_q4_3
      doc: 2023-04 only.
    7: mostly_q8_0
    8: mostly_q5_0
    9: mostly_q5_1
    10: mostly_q2_k
    11: mostly_q3_k
    12: mostly_q4_k
    13: mostly_q5_k
    14: mostly_q6_k
