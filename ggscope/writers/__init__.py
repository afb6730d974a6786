"""Writers of small, valid model files for tests and bundled examples.

Each module writes one format from a seeded RNG, with no dependency on ggscope's
parser, so that what it writes can serve as an independent check of the specs.
"""
