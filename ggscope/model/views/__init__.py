"""View builders: one module per format, mapping its Node tree onto ``ModelFile``.

Each module exposes ``build(root, source, path) -> ModelFile`` and reads only the tree
(``ggscope.ksy.node.find``, ``.value``, ``.children``); none re-reads header bytes.
"""
