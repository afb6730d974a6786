meta:
  id: chatglm_cpp
  title: chatglm.cpp model file (untagged v0, versions 1 and 2)
  file-extension: bin
  license: MIT
  ks-version: 0.11
  endian: le
doc: |
  The model files of li-plus/chatglm.cpp (ChatGLM-6B, ChatGLM2, ChatGLM3, ChatGLM4 and,
  until 2024-06, Baichuan and InternLM). The file starts with the four ASCII bytes
  "ggml" (not the little-endian number of ggml.c's files, whose bytes read "lmgg").

  Three header generations exist:

  * untagged "v0" (2023-06-11 -> 07-02, ChatGLM-6B only): magic, then directly an
    11-word config whose first word is the vocabulary size;
  * version 1 (2023-07-02 ->): magic, model type, version 1, a 44-byte config record
    (48 bytes with num_kv_heads for ChatGLM2/3);
  * version 2 (2024-04-23 ->): magic, model type, version 2, a 52-byte config record
    with f32 norm_eps and rope_theta.

  The generation is recognised by peeking at the words at offsets 4 and 8: a known model
  type followed by 1 or 2 means a tagged file; anything else is a v0 file whose word at
  offset 4 is the vocabulary size.

  Then the tokenizer (a length-prefixed serialized SentencePiece ModelProto, or for
  ChatGLM4 the tiktoken vocabulary text) and tensor records until the end of the file.
  Tensor shapes are in PyTorch order (outermost first, the last entry is the contiguous
  one), unlike the ggml.c formats. Tensor data is aligned to 16 bytes of the absolute file
  offset. Quantized blocks use today's ggml layouts (f16 scales, split-halves nibbles).
doc-ref:
  - https://github.com/li-plus/chatglm.cpp/blob/6c6f376b0d5d84bbd0d37e8dd29602fe9a8c587d/convert.py
  - https://github.com/li-plus/chatglm.cpp/blob/7da55260d0a75ed17d0ee574e447f59dca9d0393/chatglm_cpp/convert.py
  - https://github.com/li-plus/chatglm.cpp/blob/f86777c85f4e14641b89c121277c11ae9cd5a9a7/chatglm_cpp/convert.py
  - legacy-formats.md §7
seq:
  - id: magic
    contents: ggml
    doc: The four ASCII bytes "ggml" (0x67 0x67 0x6d 0x6c).
  - id: model_type
    type: s4
    enum: model_type
    if: is_tagged
    doc: Model architecture (versions 1 and 2 only).
  - id: version
    type: s4
    if: is_tagged
    doc: Header generation, 1 or 2 (selects the config record).
  - id: config
    type:
      switch-on: config_layout
      cases:
        0: config_v0
        1: config_v1
        2: config_v1_gqa
        3: config_v2
    doc: Model configuration; its layout depends on the header generation and model type.
  - id: len_tokenizer
    type: u4
    doc: Byte length of the tokenizer blob.
  - id: tokenizer
    size: len_tokenizer
    doc: |
      Tokenizer: a serialized SentencePiece ModelProto (ChatGLM, ChatGLM2/3, Baichuan,
      InternLM) or, for ChatGLM4, the tiktoken vocabulary file ("base64(token) rank" lines).
  - id: tensors
    type:
      switch-on: 'is_tagged ? 1 : 0'
      cases:
        1: tensor_record
        0: tensor_record_v0
    repeat: eos
    doc: Tensor records, one after the other until the end of the file.
instances:
  word_at_4:
    pos: 4
    type: s4
    doc: Peek at offset 4 — the model type in tagged files, the vocabulary size in v0 files.
  word_at_8:
    pos: 8
    type: s4
    doc: Peek at offset 8 — the version in tagged files, the hidden size in v0 files.
  is_tagged:
    value: >-
      _io.size >= 12 and (word_at_4 == 1 or word_at_4 == 2 or word_at_4 == 3 or word_at_4 == 4
       or word_at_4 == 1024 or word_at_4 == 1025 or word_at_4 == 1280)
      and (word_at_8 == 1 or word_at_8 == 2)
    doc: |
      True when the file has a model type and version (generations 1 and 2). A file of
      fewer than 12 bytes cannot show them and is read as an untagged v0 file.
  config_layout:
    value: >-
      not is_tagged ? 0 : (version == 2 ? 3
      : ((model_type == model_type::chatglm2 or model_type == model_type::chatglm3
          or model_type == model_type::chatglm4) ? 2 : 1))
    doc: |
      Which config record follows: 0 = v0 (untagged), 1 = V1 (44 bytes), 2 = V1 with
      num_kv_heads (ChatGLM2/3, version 1), 3 = V2 (52 bytes, version 2).
types:
  config_v0:
    doc: The untagged config of the first release (chatglm.h `ChatGLMConfig`, 2023-06).
    doc-ref: legacy-formats.md §7.3
    seq:
      - id: vocab_size
        type: s4
        doc: Vocabulary size.
      - id: hidden_size
        type: s4
        doc: Hidden size.
      - id: num_attention_heads
        type: s4
        doc: Number of attention heads.
      - id: num_layers
        type: s4
        doc: Number of transformer layers.
      - id: max_sequence_length
        type: s4
        doc: Maximum sequence length.
      - id: bos_token_id
        type: s4
        doc: Begin-of-sequence token id (`<sop>`).
      - id: eos_token_id
        type: s4
        doc: End-of-sequence token id (`<eop>`).
      - id: gmask_token_id
        type: s4
        doc: Id of the `[gMASK]` token.
      - id: mask_token_id
        type: s4
        doc: Id of the `[MASK]` token.
      - id: pad_token_id
        type: s4
        doc: Padding token id.
      - id: dtype
        type: s4
        enum: ggml_type
        doc: ggml type of the 2-D weights (1-D tensors are always F32).
  config_v1:
    doc: Config record of version 1 for ChatGLM-6B, Baichuan and InternLM (`ConfigRecordV1`, 44 bytes).
    doc-ref: legacy-formats.md §7.3
    seq:
      - id: dtype
        type: s4
        enum: ggml_type
        doc: ggml type of the 2-D weights (1-D tensors are always F32).
      - id: vocab_size
        type: s4
        doc: Vocabulary size.
      - id: hidden_size
        type: s4
        doc: Hidden size.
      - id: num_attention_heads
        type: s4
        doc: Number of attention heads.
      - id: num_hidden_layers
        type: s4
        doc: Number of transformer layers.
      - id: intermediate_size
        type: s4
        doc: Feed-forward inner size.
      - id: max_length
        type: s4
        doc: Maximum sequence length.
      - id: bos_token_id
        type: s4
        doc: Begin-of-sequence token id (-1 if none).
      - id: eos_token_id
        type: s4
        doc: End-of-sequence token id (-1 if none).
      - id: pad_token_id
        type: s4
        doc: Padding token id (-1 if none).
      - id: sep_token_id
        type: s4
        doc: Separator token id (-1 if none).
  config_v1_gqa:
    doc: |
      Config record of version 1 for ChatGLM2/3 (`ConfigRecordV1GQA` today; named
      `ConfigRecordV2` in 2023-10), 48 bytes: the V1 fields plus num_kv_heads.
    doc-ref: legacy-formats.md §7.3
    seq:
      - id: dtype
        type: s4
        enum: ggml_type
        doc: ggml type of the 2-D weights (1-D tensors are always F32).
      - id: vocab_size
        type: s4
        doc: Vocabulary size (padded_vocab_size of the checkpoint).
      - id: hidden_size
        type: s4
        doc: Hidden size.
      - id: num_attention_heads
        type: s4
        doc: Number of attention heads.
      - id: num_hidden_layers
        type: s4
        doc: Number of transformer layers.
      - id: intermediate_size
        type: s4
        doc: Feed-forward inner size (ffn_hidden_size).
      - id: max_length
        type: s4
        doc: Maximum sequence length (seq_length).
      - id: bos_token_id
        type: s4
        doc: Begin-of-sequence token id (-1 if none).
      - id: eos_token_id
        type: s4
        doc: End-of-sequence token id (-1 if none).
      - id: pad_token_id
        type: s4
        doc: Padding token id (-1 if none).
      - id: sep_token_id
        type: s4
        doc: Separator token id (-1 if none).
      - id: num_kv_heads
        type: s4
        doc: Number of key/value head groups (multi_query_group_num).
  config_v2:
    doc: Config record of version 2 (`ConfigRecordV2`, 52 bytes, from 2024-04-23).
    doc-ref: legacy-formats.md §7.3
    seq:
      - id: dtype
        type: s4
        enum: ggml_type
        doc: ggml type of the 2-D weights (1-D tensors are always F32).
      - id: vocab_size
        type: s4
        doc: Vocabulary size.
      - id: hidden_size
        type: s4
        doc: Hidden size.
      - id: num_attention_heads
        type: s4
        doc: Number of attention heads.
      - id: num_key_value_heads
        type: s4
        doc: Number of key/value heads (= num_attention_heads for ChatGLM-6B).
      - id: num_hidden_layers
        type: s4
        doc: Number of transformer layers.
      - id: intermediate_size
        type: s4
        doc: Feed-forward inner size.
      - id: norm_eps
        type: f4
        doc: Epsilon of the (RMS/Layer) norm.
      - id: num_virtual_tokens
        type: s4
        doc: Number of p-tuning v2 prefix tokens (0 without a prefix).
      - id: rope_theta
        type: f4
        doc: Rotary embedding base (10000 * rope_ratio).
      - id: max_length
        type: s4
        doc: Maximum sequence length.
      - id: eos_token_id
        type: s4
        doc: End-of-sequence token id (-1 if none).
      - id: pad_token_id
        type: s4
        doc: Padding token id (-1 if none).
  tensor_record:
    doc: |
      One tensor of a version 1 or 2 file: name, shape (PyTorch order), type, zero
      padding to the next absolute file offset that is a multiple of 16, data.
    doc-ref: legacy-formats.md §7.5
    seq:
      - id: len_name
        type: u4
        doc: Byte length of the tensor name.
      - id: name
        type: str
        size: len_name
        encoding: UTF-8
        doc: Tensor name, e.g. `transformer.encoder.layers.0.self_attention.dense.weight`.
      - id: ndim
        type: u4
        doc: Number of dimensions (the reader accepts 1 to 4).
      - id: shape
        type: u4
        repeat: expr
        repeat-expr: ndim
        doc: Dimensions in PyTorch order (shape[0] outermost, the last entry contiguous).
      - id: dtype
        type: u4
        doc: ggml type id of the data (see enum ggml_type).
      - id: padding
        size: (16 - _io.pos % 16) % 16
        doc: 0-15 zero bytes up to the next absolute file offset that is a multiple of 16.
      - id: data
        size: 'is_known ? n_elements * block_bytes / block_elems : _io.size - _io.pos + 1'
        doc: |
          Tensor data, n_elements * block_bytes / block_elems bytes, blocks running along the
          last (contiguous) axis. For an unknown type (or more than four dimensions) the
          record asks for one byte more than the file holds, so the walk stops here.
    instances:
      ggml_type:
        value: dtype
        enum: ggml_type
        doc: The type code named by chatglm.cpp's `GGMLType`.
      n_elements:
        value: >-
          (ndim > 0 ? shape[0] : 1) * (ndim > 1 ? shape[1] : 1)
          * (ndim > 2 ? shape[2] : 1) * (ndim > 3 ? shape[3] : 1)
        doc: Number of elements, the product of all dimensions.
      block_elems:
        value: 'dtype <= 1 ? 1 : 32'
        doc: Elements per block (1 for F32/F16, 32 for the quantized types).
      block_bytes:
        value: >-
          dtype == 0 ? 4 : (dtype == 1 ? 2 : (dtype == 2 ? 18 : (dtype == 3 ? 20
          : (dtype == 6 ? 22 : (dtype == 7 ? 24 : (dtype == 8 ? 34 : 0))))))
        doc: Bytes per block (F32 4, F16 2, Q4_0 18, Q4_1 20, Q5_0 22, Q5_1 24, Q8_0 34; 0 = unknown).
      is_known:
        value: block_bytes != 0 and ndim <= 4
        doc: True when the data size of this record can be computed.
  tensor_record_v0:
    doc: |
      One tensor of an untagged v0 file: the header fields come in another order
      (ndim, name length, type, shape, name), then padding to 16 and data.
    doc-ref: legacy-formats.md §7.5
    seq:
      - id: ndim
        type: u4
        doc: Number of dimensions.
      - id: len_name
        type: u4
        doc: Byte length of the tensor name.
      - id: dtype
        type: u4
        doc: ggml type id of the data (F32, F16, Q4_0 or Q8_0 in this generation).
      - id: shape
        type: u4
        repeat: expr
        repeat-expr: ndim
        doc: Dimensions in PyTorch order (shape[0] outermost, the last entry contiguous).
      - id: name
        type: str
        size: len_name
        encoding: UTF-8
        doc: Tensor name, e.g. `transformer.layers.0.attention.dense.weight`.
      - id: padding
        size: (16 - _io.pos % 16) % 16
        doc: 0-15 zero bytes up to the next absolute file offset that is a multiple of 16.
      - id: data
        size: 'is_known ? n_elements * block_bytes / block_elems : _io.size - _io.pos + 1'
        doc: |
          Tensor data, n_elements * block_bytes / block_elems bytes. For an unknown type
          (or more than four dimensions) the record asks for one byte more than the file
          holds, so the walk stops here.
    instances:
      ggml_type:
        value: dtype
        enum: ggml_type
        doc: The type code named by chatglm.cpp's `GGMLType`.
      n_elements:
        value: >-
          (ndim > 0 ? shape[0] : 1) * (ndim > 1 ? shape[1] : 1)
          * (ndim > 2 ? shape[2] : 1) * (ndim > 3 ? shape[3] : 1)
        doc: Number of elements, the product of all dimensions.
      block_elems:
        value: 'dtype <= 1 ? 1 : 32'
        doc: Elements per block (1 for F32/F16, 32 for the quantized types).
      block_bytes:
        value: >-
          dtype == 0 ? 4 : (dtype == 1 ? 2 : (dtype == 2 ? 18 : (dtype == 8 ? 34 : 0)))
        doc: Bytes per block (F32 4, F16 2, Q4_0 18, Q8_0 34; 0 = unknown in this generation).
      is_known:
        value: block_bytes != 0 and ndim <= 4
        doc: True when the data size of this record can be computed.
enums:
  model_type:
    1: chatglm
    2: chatglm2
    3:
      id: chatglm3
      doc: From 2023-10-29.
    4:
      id: chatglm4
      doc: From 2024-06-13; version 2 only.
    1024:
      id: baichuan7b
      doc: 2023-08-31 -> 2024-06-21.
    1025:
      id: baichuan13b
      doc: 2023-08-31 -> 2024-06-21.
    1280:
      id: internlm
      doc: 2023-10-22 -> 2024-06-21.
  ggml_type:
    0: f32
    1: f16
    2: q4_0
    3: q4_1
    6: q5_0
    7: q5_1
    8: q8_0
