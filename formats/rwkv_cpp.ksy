meta:
  id: rwkv_cpp
  title: rwkv.cpp model file (file versions 100 and 101)
  application: rwkv.cpp
  file-extension: bin
  license: CC0-1.0
  ks-version: '0.10'
  endian: le
  encoding: UTF-8
doc: |
  RWKV checkpoints converted for rwkv.cpp (RWKV v4, v5.1, v5.2, v6 and v7). A
  24-byte header of six 32-bit words is followed by parameter records until the
  end of the file. There is no vocabulary (the tokenizer ships separately) and no
  alignment or padding anywhere: each record starts right after the previous
  record's data, and rwkv.cpp's loader reads records while the position is below
  the file size.

  The magic is the same number as llama.cpp's GGMF ('ggmf', stored as the bytes
  "fmgg"); the version word tells them apart: 1 is GGMF, 100 and 101 are rwkv.cpp.

  Version 101 (2023-05-27) changed every quantized block layout; FP32 and FP16
  did not change. A version 100 file holding quantized tensors uses the ggml
  block layouts of April/May 2023 (f32 scales, interleaved nibbles), and today's
  rwkv.cpp refuses it. Data sizes below follow the version word.

  The RWKV architecture version is not stored: rwkv.cpp infers it from the
  parameter names (blocks.0.att.ln_x.weight, blocks.0.att.gate.weight,
  blocks.0.att.time_maa_x, blocks.0.att.r_k).
doc-ref:
  - https://github.com/RWKV/rwkv.cpp/blob/master/docs/FILE_FORMAT.md
  - https://github.com/RWKV/rwkv.cpp/blob/master/rwkv_file_format.inc
seq:
  - id: magic
    contents: [0x66, 0x6d, 0x67, 0x67]
    doc: |
      File magic 0x67676d66 ('ggmf') as a little-endian u32, i.e. the bytes
      "fmgg". rwkv.cpp shares it with llama.cpp's GGMF files.
  - id: version
    type: u4
    doc: |
      File version: 100 (original; quantized blocks in the pre-2023-05-27 ggml
      layouts) or 101 (since 2023-05-27; today's ggml block layouts).
      RWKV_FILE_VERSION_0 / RWKV_FILE_VERSION_1 in rwkv.cpp.
  - id: n_vocab
    type: u4
    doc: Vocabulary size (rows of emb.weight and head.weight).
  - id: n_embed
    type: u4
    doc: Embedding width (ne[0] of emb.weight and of most parameters).
  - id: n_layer
    type: u4
    doc: Number of blocks (blocks.0 ... blocks.{n_layer-1}).
  - id: data_type
    type: u4
    enum: rwkv_type
    doc: |
      Data type of most parameters (the file type). Small vectors stay FP32 in
      every file; quantized files keep emb.weight and head.weight unquantized.
  - id: parameters
    type: parameter
    repeat: eos
    doc: Parameter (tensor) records, one after another until the end of the file.
types:
  parameter:
    doc: |
      One named tensor: a 12-byte record header, the shape in ggml order
      (PyTorch shape reversed: shape[0] is the contiguous row length), the UTF-8
      name, then the raw data with no padding.
    seq:
      - id: num_dims
        type: u4
        doc: Number of dimensions, 1 to 3 (dim_count in rwkv.cpp).
      - id: len_key
        type: u4
        doc: Length of the name in bytes (key_length in rwkv.cpp).
      - id: data_type
        type: u4
        enum: rwkv_type
        doc: Data type of this parameter, in rwkv.cpp's numbering (not ggml's).
      - id: shape
        type: u4
        repeat: expr
        repeat-expr: num_dims
        doc: Dimensions in ggml order (ne[0] first; PyTorch shape reversed).
      - id: key
        type: str
        size: len_key
        doc: Parameter name, e.g. blocks.0.att.key.weight (no terminator).
      - id: data
        size: len_data
        doc: |
          Tensor data: num_elements / block_elems blocks of block_bytes each,
          in the block layout of the file version. For a data type whose block
          size is unknown the spec asks for one byte more than the file has left,
          so that parsing stops at this field instead of guessing.
    instances:
      num_elements:
        value: '(num_dims > 0 ? shape[0] : 1) * (num_dims > 1 ? shape[1] : 1) * (num_dims > 2 ? shape[2] : 1)'
        doc: Number of elements, ne[0] * ne[1] * ne[2] (rwkv.cpp reads at most 3 dims).
      is_old_layout:
        value: '_root.version == 100'
        doc: True when quantized blocks use the version-100 (April/May 2023 ggml) layouts.
      block_elems:
        value: >-
          (data_type == rwkv_type::fp32 or data_type == rwkv_type::fp16) ? 1 :
          (data_type == rwkv_type::q4_2 or data_type == rwkv_type::q4_3) ? 16 :
          (data_type == rwkv_type::q2_k or data_type == rwkv_type::q3_k or
           data_type == rwkv_type::q4_k or data_type == rwkv_type::q5_k or
           data_type == rwkv_type::q6_k or data_type == rwkv_type::q8_k) ? 256 :
          32
        doc: Elements per block of this data type (1 for FP32/FP16).
      block_bytes:
        value: >-
          data_type == rwkv_type::fp32 ? 4 :
          data_type == rwkv_type::fp16 ? 2 :
          data_type == rwkv_type::q4_0 ? (is_old_layout ? 20 : 18) :
          data_type == rwkv_type::q4_1 ? (is_old_layout ? 24 : 20) :
          data_type == rwkv_type::q4_1_o ? 24 :
          data_type == rwkv_type::q4_2 ? 10 :
          data_type == rwkv_type::q4_3 ? 12 :
          data_type == rwkv_type::q5_0 ? 22 :
          data_type == rwkv_type::q5_1 ? 24 :
          data_type == rwkv_type::q8_0 ? (is_old_layout ? 36 : 34) :
          data_type == rwkv_type::q8_1 ? 36 :
          data_type == rwkv_type::q2_k ? 84 :
          data_type == rwkv_type::q3_k ? 110 :
          data_type == rwkv_type::q4_k ? 144 :
          data_type == rwkv_type::q5_k ? 176 :
          data_type == rwkv_type::q6_k ? 210 :
          data_type == rwkv_type::q8_k ? 292 :
          0
        doc: |
          Bytes per block. Version 101: today's ggml blocks (Q4_0 18, Q4_1 20,
          Q8_0 34, ...). Version 100: Q4_0 {f32 d; 16 B} 20, Q4_1 {f32 d; f32 m;
          16 B} 24, Q8_0 {f32 d; 32 i8} 36. Q4_1_O, Q4_2 and Q4_3 only ever existed
          in version-100 files; 0 marks an unknown data type.
      len_data:
        value: 'block_bytes == 0 ? _io.size - _io.pos + 1 : num_elements * block_bytes / block_elems'
        doc: Size of the data in bytes (rwkv_tensor_nbytes in rwkv.cpp).
enums:
  rwkv_type:
    0: fp32
    1: fp16
    2: q4_0
    3: q4_1
    4: q4_1_o
    5: q4_2
    6: q4_3
    7: q5_0
    8: q5_1
    9: q8_0
    10: q8_1
    11: q2_k
    12: q3_k
    13: q4_k
    14: q5_k
    15: q6_k
    16: q8_k
