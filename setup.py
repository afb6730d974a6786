"""The optional C extensions (csrc/_cstats.c, _cpairs.c, _cjson.c, _guard.c, _cscan.c, _cvocab.c,
_cggml.c).

Why a setup.py beside pyproject.toml: setuptools declares C extensions only here.  The
extension is optional: without a C compiler or Python's headers the install still
succeeds and ggscope uses its numba kernels instead (``ggscope.stats.cstats.ENGINE``).
"""
import sys

from setuptools import Extension, setup

# -ffp-contract=off: the decoders keep ggml's float32 operation order; a fused
# multiply-add would round differently from the numpy codecs the tests hold them to.
# -fno-wrapv undoes the -fwrapv of Python's own flags: with wrapping int indices
# the compiler cannot widen them and vectorizes none of the decoders.  -funroll-loops:
# about 5% on pass two (the pair counting), measured with benchmarks/stats_vs_ggml.py.
FLAGS = [] if sys.platform == "win32" else ["-O3", "-funroll-loops", "-ffp-contract=off", "-fno-math-errno", "-fno-wrapv", "-std=c11"]

HEADERS = ["csrc/_ctargets.h", "csrc/_cstats_z.h", "csrc/_cstats_zcount.h", "csrc/_cstats_zrange.h", "csrc/_ccount8.h"]
CSTATS = ["csrc/_cstats_decode.h", "csrc/_cstats_bounds.h", "csrc/_cstats_piece.h",   # _cstats.c's parts
          "csrc/_cstats_drivers.h", "csrc/_cstats_pick.h", "csrc/_cstats_py.h"]
STRINGS = ["csrc/_strarray.h"]          # the string-array layout _cjson.c and _cvocab.c read
GGML = ["csrc/_cggml_f16.h", "csrc/_cggml_bf16.h", "csrc/_cggml_q0.h", "csrc/_cggml_avx2.h",   # _cggml.c's parts
        "csrc/_cggml_kquants.h", "csrc/_cggml_attn.h", "csrc/_cggml_py.h"]

setup(ext_modules=[Extension("ggscope.stats._cstats", ["csrc/_cstats.c"], depends=HEADERS + CSTATS,
                             extra_compile_args=FLAGS, optional=True),
                   Extension("ggscope.diff._cpairs", ["csrc/_cpairs.c"], depends=HEADERS, extra_compile_args=FLAGS,
                             optional=True),
                   Extension("ggscope.report._cjson", ["csrc/_cjson.c"], depends=STRINGS, extra_compile_args=FLAGS,
                             optional=True),
                   Extension("ggscope.source._guard", ["csrc/_guard.c"], extra_compile_args=FLAGS, optional=True),
                   Extension("ggscope.ksy._cscan", ["csrc/_cscan.c"], extra_compile_args=FLAGS, optional=True),
                   Extension("ggscope.rules._cvocab", ["csrc/_cvocab.c"],
                             depends=STRINGS + ["csrc/_utf8.h", "csrc/_seedhash.h", "csrc/_dupfind.h",
                                                "csrc/_gather.h", "csrc/_cvocab_walk.h", "csrc/_cvocab_blocks.h"],
                             extra_compile_args=FLAGS,
                             optional=True),
                   Extension("ggscope.forward._cggml", ["csrc/_cggml.c"], depends=HEADERS + GGML,
                             extra_compile_args=FLAGS,
                             optional=True)])
