meta:
  id: gguf
  title: GGUF (GGML Universal File) model file, versions 1 to 3
  file-extension: gguf
  license: CC0-1.0
  ks-version: '0.11'
  encoding: UTF-8
doc: |
  A GGUF file: a header, typed key/value metadata, tensor infos, padding up to the
  alignment, then the tensor data section.  Version 1 (2023-08-21) uses 32-bit counts,
  string lengths, array lengths and dimensions; versions 2 and 3 use 64-bit ones.
  Version 3 files may be big-endian: every field, metadata values and tensor data
  included.  No field says so: a version whose low 16 bits are zero when read
  little-endian (3 reads as 0x03000000) marks a byte-swapped file.
doc-ref: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
seq:
  - id: magic
    contents: GGUF
    doc: The four ASCII bytes "GGUF" (0x47 0x47 0x55 0x46), in every byte order.
  - id: header
    type: header
    doc: Version and the counts of tensors and metadata entries.
  - id: metadata_kv
    type: kv
    repeat: expr
    repeat-expr: header.num_kv
    doc: The metadata key/value pairs, in file order.
  - id: tensor_infos
    type: tensor_info
    repeat: expr
    repeat-expr: header.num_tensors
    doc: One record per tensor - name, dimensions, ggml type and data offset.
  - id: alignment_search
    type: alignment_probe(_index)
    repeat: until
    repeat-until: _.is_alignment or _index + 1 >= header.num_kv
    if: header.num_kv > 0
    -ggscope-hidden: true
    doc: |
      Zero-byte probes that find the general.alignment entry (Kaitai's expression
      language has no search); the last probe is the entry when it matched.
  - id: padding
    size: '_io.size - _io.pos < pad_len ? _io.size - _io.pos : pad_len'
    doc: |
      Bytes that pad the header to a multiple of the alignment; should be zero.  A file
      without tensor data may end before the padding (ggml's reader accepts that).
  - id: data
    type: tensor_data
    size-eos: true
    doc: |
      The tensor data section.  Tensor offsets are relative to its start; each
      tensor's data starts at a multiple of the alignment and is padded to it.
instances:
  version_probe:
    pos: 4
    type: version_probe
    -ggscope-hidden: true
    doc: The version read as little-endian, to detect byte-swapped (big-endian) files.
  is_be:
    value: (version_probe.version & 0xffff) == 0
    -ggscope-hidden: true
    doc: |
      Whether the file is big-endian.  Every type that reads numbers decides its byte
      order from it (the YAML anchor file_byte_order), not the root: Kaitai's generated
      code cannot read the probe from a type whose own byte order depends on it, and
      does not hand a calculated byte order down to subtypes.
  pad_len:
    value: 'alignment > 0 ? (alignment - _io.pos % alignment) % alignment : 0'
    -ggscope-hidden: true
    doc: Padding needed after the tensor infos (evaluated where the padding starts).
  alignment:
    value: 'header.num_kv > 0 and alignment_search.last.is_alignment ? metadata_kv[alignment_search.size - 1].value.as<u4> : 32'
    doc: The data alignment - general.alignment when present as a uint32, else 32.
types:
  version_probe:
    meta:
      endian: le
    doc: |
      The version word read little-endian.  A type of its own with a fixed byte order,
      so that reading it does not depend on the byte order it decides.
    seq:
      - id: version
        type: u4
        doc: The version as a little-endian u32.
  header:
    doc: The fixed part after the magic.
    meta: &file_byte_order
      endian:
        switch-on: _root.is_be
        cases:
          true: be
          false: le
    seq:
      - id: version
        type: u4
        doc: Format version, 1 to 3.
      - id: num_tensors
        type:
          switch-on: version
          cases:
            1: u4
            _: u8
        doc: Number of tensor infos (uint32 in version 1, uint64 after).
      - id: num_kv
        type:
          switch-on: version
          cases:
            1: u4
            _: u8
        doc: Number of metadata key/value pairs (uint32 in version 1, uint64 after).
  gguf_str:
    doc: A length-prefixed UTF-8 string without terminator.
    meta: *file_byte_order
    seq:
      - id: len
        type:
          switch-on: _root.header.version
          cases:
            1: u4
            _: u8
        doc: Length in bytes (uint32 in version 1, uint64 after).
      - id: data
        type: str
        size: len
        encoding: UTF-8
        doc: The string's bytes, UTF-8 by the spec.
  kv:
    doc: One metadata entry.
    meta: *file_byte_order
    seq:
      - id: key
        type: gguf_str
        doc: The key - lower_snake_case segments joined by dots, ASCII, at most 65535 bytes.
      - id: type
        type: u4
        enum: gguf_type
        doc: Type of the value.
      - id: value
        type:
          switch-on: type
          cases:
            gguf_type::uint8: u1
            gguf_type::int8: s1
            gguf_type::uint16: u2
            gguf_type::int16: s2
            gguf_type::uint32: u4
            gguf_type::int32: s4
            gguf_type::float32: f4
            gguf_type::bool: u1
            gguf_type::string: gguf_str
            gguf_type::array: gguf_array
            gguf_type::uint64: u8
            gguf_type::int64: s8
            gguf_type::float64: f8
        doc: The value; a bool is one byte that must be 0 or 1.
  gguf_array:
    doc: A typed array - element type, count, elements.
    meta: *file_byte_order
    seq:
      - id: type
        type: u4
        enum: gguf_type
        doc: Type of every element.
      - id: num_elems
        type:
          switch-on: _root.header.version
          cases:
            1: u4
            _: u8
        doc: Number of elements (uint32 in version 1, uint64 after).
      - id: elems
        type:
          switch-on: type
          cases:
            gguf_type::uint8: u1
            gguf_type::int8: s1
            gguf_type::uint16: u2
            gguf_type::int16: s2
            gguf_type::uint32: u4
            gguf_type::int32: s4
            gguf_type::float32: f4
            gguf_type::bool: u1
            gguf_type::string: gguf_str
            gguf_type::array: gguf_array
            gguf_type::uint64: u8
            gguf_type::int64: s8
            gguf_type::float64: f8
        repeat: expr
        repeat-expr: num_elems
        doc: The elements.
  tensor_info:
    doc: Where one tensor's data is and how to read it.
    meta: *file_byte_order
    seq:
      - id: name
        type: gguf_str
        doc: Tensor name, at most 64 bytes (ggml's GGML_MAX_NAME).
      - id: n_dims
        type: u4
        doc: Number of dimensions, at most 4 (GGML_MAX_DIMS).
      - id: dims
        type:
          switch-on: _root.header.version
          cases:
            1: u4
            _: u8
        repeat: expr
        repeat-expr: n_dims
        doc: Dimensions in ggml order - ne[0], the row length, first.
      - id: type
        type: u4
        enum: ggml_type
        doc: The ggml type of the elements.
      - id: offset
        type: u8
        doc: Offset of the data from the start of the data section; a multiple of the alignment.
    instances:
      num_elements:
        value: '(n_dims > 0 ? dims[0] : 1) * (n_dims > 1 ? dims[1] : 1) * (n_dims > 2 ? dims[2] : 1) * (n_dims > 3 ? dims[3] : 1)'
        doc: Number of elements (product of the first four dimensions).
      nbytes:
        value: 'block_elems == 0 ? 0 : num_elements / block_elems * block_bytes'
        doc: Bytes of data - elements / block elements x block bytes.
      data:
        io: _root.data._io
        pos: offset
        size: nbytes
        doc: The tensor's bytes inside the data section.
      # -- generated from ggscope/facts/ggml_types.py by `python -m tools.gen_gguf_types`; do not edit --
      block_elems:
        value: 'type == ggml_type::f32 ? 1 : type == ggml_type::f16 ? 1 : type == ggml_type::q4_0 ? 32 : type == ggml_type::q4_1 ? 32 : type == ggml_type::q5_0 ? 32 : type == ggml_type::q5_1 ? 32 : type == ggml_type::q8_0 ? 32 : type == ggml_type::q8_1 ? 32 : type == ggml_type::q2_k ? 256 : type == ggml_type::q3_k ? 256 : type == ggml_type::q4_k ? 256 : type == ggml_type::q5_k ? 256 : type == ggml_type::q6_k ? 256 : type == ggml_type::q8_k ? 256 : type == ggml_type::iq2_xxs ? 256 : type == ggml_type::iq2_xs ? 256 : type == ggml_type::iq3_xxs ? 256 : type == ggml_type::iq1_s ? 256 : type == ggml_type::iq4_nl ? 32 : type == ggml_type::iq3_s ? 256 : type == ggml_type::iq2_s ? 256 : type == ggml_type::iq4_xs ? 256 : type == ggml_type::i8 ? 1 : type == ggml_type::i16 ? 1 : type == ggml_type::i32 ? 1 : type == ggml_type::i64 ? 1 : type == ggml_type::f64 ? 1 : type == ggml_type::iq1_m ? 256 : type == ggml_type::bf16 ? 1 : type == ggml_type::tq1_0 ? 256 : type == ggml_type::tq2_0 ? 256 : type == ggml_type::mxfp4 ? 32 : type == ggml_type::nvfp4 ? 64 : type == ggml_type::q1_0 ? 128 : type == ggml_type::q2_0 ? 64 : 0'
        doc: Elements per block of the type (0 for unknown or removed types).
      block_bytes:
        value: 'type == ggml_type::f32 ? 4 : type == ggml_type::f16 ? 2 : type == ggml_type::q4_0 ? 18 : type == ggml_type::q4_1 ? 20 : type == ggml_type::q5_0 ? 22 : type == ggml_type::q5_1 ? 24 : type == ggml_type::q8_0 ? 34 : type == ggml_type::q8_1 ? 36 : type == ggml_type::q2_k ? 84 : type == ggml_type::q3_k ? 110 : type == ggml_type::q4_k ? 144 : type == ggml_type::q5_k ? 176 : type == ggml_type::q6_k ? 210 : type == ggml_type::q8_k ? 292 : type == ggml_type::iq2_xxs ? 66 : type == ggml_type::iq2_xs ? 74 : type == ggml_type::iq3_xxs ? 98 : type == ggml_type::iq1_s ? 50 : type == ggml_type::iq4_nl ? 18 : type == ggml_type::iq3_s ? 110 : type == ggml_type::iq2_s ? 82 : type == ggml_type::iq4_xs ? 136 : type == ggml_type::i8 ? 1 : type == ggml_type::i16 ? 2 : type == ggml_type::i32 ? 4 : type == ggml_type::i64 ? 8 : type == ggml_type::f64 ? 8 : type == ggml_type::iq1_m ? 56 : type == ggml_type::bf16 ? 2 : type == ggml_type::tq1_0 ? 54 : type == ggml_type::tq2_0 ? 66 : type == ggml_type::mxfp4 ? 17 : type == ggml_type::nvfp4 ? 36 : type == ggml_type::q1_0 ? 18 : type == ggml_type::q2_0 ? 18 : 0'
        doc: Bytes per block of the type (0 for unknown or removed types).
      # -- end of generated part --
  alignment_probe:
    doc: Looks at one metadata entry; consumes no bytes.
    params:
      - id: i
        type: u8
    instances:
      is_alignment:
        value: '_root.metadata_kv[i].key.data == "general.alignment" and _root.metadata_kv[i].type == gguf_type::uint32'
        doc: Whether entry i is general.alignment with a uint32 value.
  tensor_data:
    doc: Raw tensor bytes; each tensor_infos entry points into this section.
    seq: []
enums:
  gguf_type:
    0: uint8
    1: int8
    2: uint16
    3: int16
    4: uint32
    5: int32
    6: float32
    7: bool
    8: string
    9: array
    10: uint64
    11: int64
    12: float64
  # -- generated from ggscope/facts/ggml_types.py by `python -m tools.gen_gguf_types`; do not edit --
  ggml_type:
    0: f32
    1: f16
    2: q4_0
    3: q4_1
    6: q5_0
    7: q5_1
    8: q8_0
    9: q8_1
    10: q2_k
    11: q3_k
    12: q4_k
    13: q5_k
    14: q6_k
    15: q8_k
    16: iq2_xxs
    17: iq2_xs
    18: iq3_xxs
    19: iq1_s
    20: iq4_nl
    21: iq3_s
    22: iq2_s
    23: iq4_xs
    24: i8
    25: i16
    26: i32
    27: i64
    28: f64
    29: iq1_m
    30: bf16
    34: tq1_0
    35: tq2_0
    39: mxfp4
    40: nvfp4
    41: q1_0
    42: q2_0
  # -- end of generated part --
