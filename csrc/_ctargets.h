/* The instruction sets ggscope's C kernels are built for, and the one loop-level
   optimization they allow, shared by every kernel extension.

   Why: one build from source has to run well on the machine it lands on and on any
   other x86-64 it is copied to; target_clones compiles a function once per level and
   the loader picks the widest the CPU has.  Elsewhere (other compilers, other
   architectures) TARGETS is empty and the default build runs. */
#ifndef GGSCOPE_CTARGETS_H
#define GGSCOPE_CTARGETS_H

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
/* a false alarm of GCC 12 on the address of a target_clones function (its resolver) */
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && __GNUC__ >= 12
#define TARGETS __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TARGETS
#endif

/* For a sum loop alone: its additions may be reordered (vector lanes), nothing else
   changes -- NaN and Inf keep their meaning, no FMA (setup.py), no other arithmetic
   rewritten.  Out of line, so the flags stay on that loop. */
#define REASSOC __attribute__((noinline, optimize("associative-math", "no-signed-zeros", "no-trapping-math")))

/* Elements per float32 partial sum in the statistics and pair-sum kernels: L1-sized,
   and accurate (float32 within a piece, float64 across).  The one C place; Python's is
   ggscope/stats/kernels_numpy.py, and _cstats exports this one so a test holds them equal. */
#define PIECE 2048

#endif
