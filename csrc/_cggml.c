/* ggscope.forward._cggml: ggml-cpu's matrix products and flash attention, each output
   element summed in the order llama.cpp's CPU backend sums it.

   Why: gemma-3-270m's KL-divergence report moves by 1-3 % with any 1e-7 change
   upstream (llama.cpp's own two attention paths differ by 2.5 % in PPL(Q)), so
   reproducing llama-perplexity's figures takes every product bit for bit -- the lanes,
   the fused multiply-adds and the horizontal sums -- and numpy cannot do that fast.

   Which build each order matches: llama.cpp as vendored in llama-cpp-python 0.3.36,
   ggml-cpu compiled with GGML_LLAMAFILE=ON for an x86-64 with AVX-512F and FMA (the
   GGML_NATIVE build of the machine the fixtures were recorded on), by GCC:

   * mm_f16: ggml/src/ggml-cpu/llamafile/sgemm.cpp tinyBLAS<16, __m512, __m512,
     ggml_fp16_t, ggml_fp16_t, float>, which ggml_compute_forward_mul_mat takes for an F16
     weight once the activations are converted to F16, with at least 2 rows, k % 16 == 0
     and rows % 4 == 0: 16 float lanes, lane i summing elements l + i by fma over the
     row, then GCC's _mm512_reduce_add_ps (halves, quarters, then (t0+t2)+(t1+t3)).
     (An AVX2-only build uses 8 lanes: not this order.)
   * mm_q0: sgemm.cpp tinyBLAS_Q0_AVX<block_q8_0 | q4_0 | q5_0 | iq4_nl, block_q8_0> (any
     AVX / AVX2 / AVX-512 build): per 32-block, 8 lanes each holding the exact integer
     sum of 4 neighbouring products, lane += fp32(d_w)*fp32(d_x) * that sum by fma,
     then hsum(__m256) = ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).  The activations are
     quantize_row_q8_0 of ggml-cpu/arch/x86/quants.c: d = amax/127, q =
     round-half-even(x * (127/amax)), d stored as fp16.
   * mm_q0 with repack: a Q4_0 / IQ4_NL weight whose rows are a multiple of 8 is not multiplied by
     tinyBLAS on an AVX2 / AVX-512 CPU: llama.cpp loads it into ggml-cpu's CPU_REPACK
     buffer (block_q4_0x8), whose kernels (arch/x86/repack.cpp gemm/gemv_q4_b32_8x8_q8_0
     _lut_avx) sum each 32-block as one integer and add float(sum) * (d_w * d_x) by fma,
     block after block.  (An ARM build repacks differently; a build without AVX2 not.)
   * mm_q1: Q4_1 / Q5_1, which sgemm does not take: vec_dot_q4_1_q8_1 / _q5_1_q8_1 (see
     the kernel's comment; AVX2 builds).
   * mm_q4k: Q4_K of rows % 8 == 0, repacked on AVX2 (repack.cpp ggml_gemm_q4_K_8x8_q8_K),
     and (type 10) Q2_K of rows % 8 == 0, repacked on AVX-512 (ggml_gemm / gemv_q2_K_8x8_q8_K):
     see the kernels' comments.
   * mm_ktiled: Q3_K .. Q6_K (Q4_K of other rows) and IQ4_XS, ggml-cpu's tiled K-quant
     path (tiled/tiled.cpp, the VNNI microkernel) for at least 8 activation rows; Q6_K,
     Q5_K and IQ4_XS of fewer rows: arch/x86/quants.c ggml_vec_dot_*_q8_K.  Q3_K's and
     Q4_K's vec_dot, Q2_K not repacked and the other i-quants have no kernel here.
   * mm_bf16 (csrc/_cggml_bf16.h): BF16 weights, sgemm.cpp tinyBLAS<32, __m512,
     __m512bh> (a build with AVX512-BF16: 16 lanes, each VDPBF16PS over pairs, then _mm512_reduce_add_ps) for at
     least 2 rows, k % 32 == 0 and rows % 4 == 0, else vec.cpp ggml_vec_dot_bf16; the
     instruction itself where the CPU has it, else a loop with its exact arithmetic.  (An
     AVX-512F build without BF16 uses tinyBLAS<16> over float32: not this order.)
   * fa_tiled: ggml-cpu/ops.cpp ggml_compute_forward_flash_attn_ext_tiled (q F32, k/v
     F16 or F32, >= GGML_FA_TILE_Q = 64 query rows), per query row: scores over tiles of
     GGML_FA_TILE_KV = 64 keys, each a sequential fma over the head dimension
     (simd-gemm.h), the online softmax with ggml_v_expf (AVX-512) and its 16-lane sums
     accumulated in double (vec.cpp ggml_vec_soft_max_f32), the rescale by expf(Mold -
     Mnew), the value sums as sequential fmas over the keys, then 1/S.

   Machines other than x86-64 with AVX-512 run ggml-cpu paths of other orders; these
   kernels still compute the order above (the lanes are spelled out in C: any compiler,
   any CPU gives the same bits, target_clones only makes it faster).  Inputs are
   C-contiguous buffers whose lengths are checked against the dimensions given; the
   GIL is released while the kernels run.  Built with -ffp-contract=off (setup.py):
   every fused multiply-add here is an explicit fmaf (or, in the AVX2 paths picked at run
   time, _mm256_fmadd_ps on the same lanes), nothing else is fused. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_ctargets.h"

#include "_cggml_f16.h"        /* conversions, horizontal sums, the F16 product */
#include "_cggml_bf16.h"       /* the BF16 product (VDPBF16PS) */
#include "_cggml_q0.h"         /* Q8_0 / Q4_0 / Q5_0 / IQ4_NL and Q4_1 / Q5_1 weights */
#include "_cggml_avx2.h"       /* the AVX2 paths of the F16 and Q8_0-family products */
#include "_cggml_kquants.h"    /* Q2_K .. Q6_K and IQ4_XS weights against Q8_K */
#include "_cggml_attn.h"       /* flash attention, SwiGLU, the rope cache */
#include "_cggml_py.h"         /* the Python entry points */

static PyMethodDef METHODS[] = {
    {"mm_ktiled", py_mm_ktiled, METH_VARARGS, "ggml-cpu's tiled K-quant x Q8_K product, its order"},
    {"mm_q4k", py_mm_q4k, METH_VARARGS, "repacked Q4_K (or, type 10, Q2_K) x Q8_K product, ggml's order"},
    {"swiglu", py_swiglu, METH_VARARGS, "ggml_vec_swiglu_f32 row by row"},
    {"rope_cache", py_rope_cache, METH_VARARGS, "ggml_rope_cache_init's cos and sin, with the C library's libm"},
    {"mm_f16", py_mm_f16, METH_VARARGS, "tinyBLAS<16> F16 x F16 product, ggml's order"},
    {"mm_bf16", py_mm_bf16, METH_VARARGS, "tinyBLAS<32> BF16 x BF16 product (VDPBF16PS), ggml's order"},
    {"mm_q0", py_mm_q0, METH_VARARGS, "tinyBLAS_Q0_AVX Q8_0/Q4_0 x Q8_0 product, ggml's order"},
    {"mm_q1", py_mm_q1, METH_VARARGS, "vec_dot Q4_1/Q5_1 x Q8_1 product, ggml's order"},
    {"quantize", py_quantize, METH_VARARGS, "quantize_row_q8_0 (x86)"},
    {"fa_tiled", py_fa_tiled, METH_VARARGS, "ggml-cpu's tiled flash attention, one row at a time"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "ggscope.forward._cggml",
                                    "ggml-cpu's products and flash attention in its own summation order", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__cggml(void) { return PyModule_Create(&MODULE); }
