meta:
  id: bit1
  title: BIT1 packed 1-bit language model
  file-extension: bit1
  license: CC0-1.0
  ks-version: '0.10'
  endian: le
doc: |
  A flat file for a 1-bit transformer language model (BitLinear layers, ALiBi
  attention) read by a small C inference program. A 40-byte header is followed by
  contiguous sections with no padding anywhere; every section's size follows from
  the header, so the exact file size is known once the header is read (see the
  len_* instances).

  Sign bits: each weight row of d bits is packed least-significant bit first into
  ceil(d / 64) little-endian u64 words; bit 1 means +1 and bit 0 means -1; the
  unused high bits of a row's last word are zero. A BitLinear[d_in -> d_out] is
  d_out such rows of d_in bits followed by d_out i32 integer thresholds
  (ceil(threshold * sqrt(d_in))).

  Sections: header; embedding (vocab_size rows of d_model bits); n_layers layers,
  each ALiBi slopes (n_heads i32), Q, K, V, O projections (BitLinear[d_model ->
  d_model]), FFN gate and up (BitLinear[d_model -> d_ff]) and down
  (BitLinear[d_ff -> d_model]); the output codebook (vocab_size rows of d_model
  bits) and the integer output biases (vocab_size i64).

  Sections start at multiples of 4 but not necessarily of 8: readers must not
  assume that the u64 arrays are 8-byte aligned.
doc-ref: ggscope docs/legacy-formats.md section 8 (restating the exporter's description)
seq:
  - id: header
    type: header
    doc: Fixed 40-byte header; every later size derives from it.
  - id: embedding
    type: bit_rows(header.vocab_size, header.d_model)
    doc: Token embedding signs, one row of d_model bits per vocabulary entry.
  - id: layers
    type: layer
    repeat: expr
    repeat-expr: header.n_layers
    doc: The transformer blocks, n_layers of them, each len_layer bytes.
  - id: out_codebook
    type: bit_rows(header.vocab_size, header.d_model)
    doc: Output head signs, one row of d_model bits per vocabulary entry.
  - id: int_out_bias
    type: s8
    repeat: expr
    repeat-expr: header.vocab_size
    doc: Integer output bias per token, round(out_bias * logit_scale_m / logit_scale).
instances:
  num_words_d_model:
    value: '(header.d_model + 63) / 64'
    doc: u64 words per row of d_model bits, ceil(d_model / 64).
  num_words_d_ff:
    value: '(header.d_ff + 63) / 64'
    doc: u64 words per row of d_ff bits, ceil(d_ff / 64).
  len_header:
    value: 40
    doc: Size of the header in bytes.
  len_embedding:
    value: '8 * header.vocab_size * num_words_d_model'
    doc: Size of the embedding section in bytes.
  len_attn_proj:
    value: '8 * header.d_model * num_words_d_model + 4 * header.d_model'
    doc: Size of one Q/K/V/O BitLinear[d_model -> d_model] in bytes.
  len_ffn_in:
    value: '8 * header.d_ff * num_words_d_model + 4 * header.d_ff'
    doc: Size of the FFN gate or up BitLinear[d_model -> d_ff] in bytes.
  len_ffn_down:
    value: '8 * header.d_model * num_words_d_ff + 4 * header.d_model'
    doc: Size of the FFN down BitLinear[d_ff -> d_model] in bytes.
  len_layer:
    value: '4 * header.n_heads + 4 * len_attn_proj + 2 * len_ffn_in + len_ffn_down'
    doc: Size of one layer in bytes.
  len_output_head:
    value: '8 * header.vocab_size * num_words_d_model + 8 * header.vocab_size'
    doc: Size of the output codebook plus the output biases in bytes.
  len_file:
    value: 'len_header + len_embedding + header.n_layers * len_layer + len_output_head'
    doc: The exact size a well-formed file has, derived from the header alone.
types:
  header:
    doc: The 40-byte header (8 x u32, 1 x i64).
    seq:
      - id: magic
        contents: BIT1
        doc: File magic, the bytes "BIT1" (0x31544942 as a little-endian u32).
      - id: version
        type: u4
        doc: Format version; 1 is the only one defined.
      - id: vocab_size
        type: u4
        doc: Number of tokens (rows of the embedding and the output codebook).
      - id: d_model
        type: u4
        doc: Model width in bits per embedding row and per attention projection row.
      - id: n_layers
        type: u4
        doc: Number of transformer layers.
      - id: n_heads
        type: u4
        doc: Number of attention heads (ALiBi slopes per layer).
      - id: d_ff
        type: u4
        doc: FFN hidden width (rows of gate and up, bits per row of down).
      - id: max_seq_len
        type: u4
        doc: Context length the model was trained for; not used by the layout.
      - id: logit_scale_m
        type: s8
        doc: Integer logit scale multiplier M (logit_scale_M in the exporter), 65536.
  layer:
    doc: One transformer block.
    seq:
      - id: alibi_slopes
        type: s4
        repeat: expr
        repeat-expr: _root.header.n_heads
        doc: Integer ALiBi slope per attention head.
      - id: q_proj
        type: bit_linear(_root.header.d_model, _root.header.d_model)
        doc: Query projection, BitLinear[d_model -> d_model].
      - id: k_proj
        type: bit_linear(_root.header.d_model, _root.header.d_model)
        doc: Key projection, BitLinear[d_model -> d_model].
      - id: v_proj
        type: bit_linear(_root.header.d_model, _root.header.d_model)
        doc: Value projection, BitLinear[d_model -> d_model].
      - id: o_proj
        type: bit_linear(_root.header.d_model, _root.header.d_model)
        doc: Output projection, BitLinear[d_model -> d_model].
      - id: gate
        type: bit_linear(_root.header.d_model, _root.header.d_ff)
        doc: FFN gate, BitLinear[d_model -> d_ff].
      - id: up
        type: bit_linear(_root.header.d_model, _root.header.d_ff)
        doc: FFN up projection, BitLinear[d_model -> d_ff].
      - id: down
        type: bit_linear(_root.header.d_ff, _root.header.d_model)
        doc: FFN down projection, BitLinear[d_ff -> d_model].
  bit_linear:
    doc: |
      A binary linear layer: d_out rows of d_in sign bits, then d_out integer
      thresholds.
    params:
      - id: d_in
        type: u4
        doc: Input width (bits per row).
      - id: d_out
        type: u4
        doc: Output width (rows and thresholds).
    seq:
      - id: weight_bits
        type: bit_rows(d_out, d_in)
        doc: Sign bits, d_out rows of ceil(d_in / 64) u64 words.
      - id: int_threshold
        type: s4
        repeat: expr
        repeat-expr: d_out
        doc: Integer threshold per output, ceil(threshold * sqrt(d_in)).
  bit_rows:
    doc: |
      num_rows rows of num_bits sign bits, each row packed LSB first into
      num_words u64 words; the unused high bits of each row's last word are 0.
    params:
      - id: num_rows
        type: u4
        doc: Number of rows.
      - id: num_bits
        type: u4
        doc: Bits per row.
    seq:
      - id: words
        type: u8
        repeat: expr
        repeat-expr: num_rows * num_words
        doc: The packed words, row after row (num_words per row).
    instances:
      num_words:
        value: '(num_bits + 63) / 64'
        doc: u64 words per row, ceil(num_bits / 64).
