"""A parsed file as a model: open, detect, per-format views, split sets, summary, tokenizer.

Layer 3 (above ``ksy``).  ``open`` is ``ggscope.open``; ``detect`` picks a spec from the
magic; ``views`` turn a node tree into a ``ModelFile`` (``modelfile``); ``split`` joins
the shards of a split model; ``summary`` is what the overview shows; ``tokenizer``
builds a model's tokenizer from its vocabulary.
"""
