"""What ggml and llama.cpp define, as tables: one place per fact.

``ggml_types`` (types, block layouts, per-format codes), ``upstream`` and
``upstream_overlay`` (gguf-py's names, keys and types read at run time, plus what
llama.cpp added since), ``gguf_schema`` (metadata key types), ``loader_table``
(llama.cpp's loader requirements), ``legacy_tensors`` (the pre-GGUF tensor tables),
``rwkv_arch`` (rwkv.cpp's layouts).  Imports only ``core``.
"""
