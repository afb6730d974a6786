// The peer of benchmarks/stats_vs_ggml.py: ggml's own C, one thread.
//
//   ggml_stats quantize TYPE ROWS COLS in.f32 out.bin   quantize float32 rows with ggml
//   ggml_stats stats TYPE N data.bin REPEAT [to_float]   min/max/mean/std of N elements
//
// "stats" decodes the blocks the way ggml's CPU backend does: F16 and BF16 with the CPU
// backend's own row conversions (ggml_cpu_fp16_to_fp32 / ggml_cpu_bf16_to_fp32: F16C and
// AVX-512 where the CPU has them, what ggml-cpu uses for its F16/BF16 operands), every
// other type with ggml's to_float (ggml_get_type_traits, ggml-quants.c, which the CPU
// backend's get_rows/dup/convert call); with "to_float", every type through to_float
// (what this harness did before issue 27: ggml-base's scalar F16 row), a chunk of 64 Ki elements at a time into a buffer that stays in L2, and runs a plain loop over
// each chunk (min, max, and double sums of x and x^2) in eight independent lanes, which
// the compiler vectorizes (the script builds this file with -O3 -march=native
// -ffast-math; ggml itself is built Release with -march=native and GGML_NATIVE=ON, the way
// a user of ggml on this machine builds it).  A single
// running double sum would instead wait on each addition (4 cycles) and make the loop,
// not ggml's decoding, the measure.  It prints one JSON line: the best seconds of
// REPEAT runs over the data, already read into memory (wall and this thread's CPU time),
// and the statistics.
// Built by the benchmark script against ggml-base from ggml's source; not part of ggscope.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml.h"
#include "ggml-cpu.h"

#define CHUNK (1 << 16)

static enum ggml_type type_named(const char * name) {
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const struct ggml_type_traits * tr = ggml_get_type_traits((enum ggml_type) t);
        if (tr->type_name && strcmp(tr->type_name, name) == 0) {
            return (enum ggml_type) t;
        }
    }
    fprintf(stderr, "unknown ggml type %s\n", name);
    exit(2);
}

static void * slurp(const char * path, size_t size) {
    FILE * f = fopen(path, "rb");
    void * buf = malloc(size ? size : 1);
    if (!f || !buf || fread(buf, 1, size, f) != size) {
        fprintf(stderr, "cannot read %zu bytes of %s\n", size, path);
        exit(2);
    }
    fclose(f);
    return buf;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double cpu_now(void) {                 /* this thread's CPU time: blind to waiting for a core */
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp(const void * a, const void * b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int main(int argc, char ** argv) {
    if (argc == 7 && strcmp(argv[1], "quantize") == 0) {
        enum ggml_type t = type_named(argv[2]);
        int64_t rows = atoll(argv[3]), cols = atoll(argv[4]);
        float * x = slurp(argv[5], (size_t) (rows * cols) * sizeof(float));
        size_t size = ggml_row_size(t, cols) * rows;
        void * q = malloc(size);
        float * imatrix = NULL;
        if (ggml_quantize_requires_imatrix(t)) {            // a flat importance matrix
            imatrix = malloc(cols * sizeof(float));
            for (int64_t i = 0; i < cols; i++) imatrix[i] = 1.0f;
        }
        size_t got = ggml_quantize_chunk(t, x, q, 0, rows, cols, imatrix);
        FILE * f = fopen(argv[6], "wb");
        if (got != size || !f || fwrite(q, 1, size, f) != size) {
            fprintf(stderr, "quantize %s failed\n", argv[2]);
            return 1;
        }
        fclose(f);
        return 0;
    }
    if (argc < 6 || argc > 7 || strcmp(argv[1], "stats") != 0 || (argc == 7 && strcmp(argv[6], "to_float") != 0)) {
        fprintf(stderr, "usage: %s quantize TYPE ROWS COLS in.f32 out.bin | stats TYPE N data.bin REPEAT [to_float]\n",
                argv[0]);
        return 2;
    }
    enum ggml_type t = type_named(argv[2]);
    const int cpu_rows = argc == 6;            /* F16/BF16 through ggml-cpu's conversions */
    ggml_cpu_init();
    const struct ggml_type_traits * tr = ggml_get_type_traits(t);
    int64_t n = atoll(argv[3]);
    int repeat = atoi(argv[5]);
    size_t row = ggml_row_size(t, CHUNK);
    const char * data = slurp(argv[4], ggml_row_size(t, n));
    float * buf = malloc(CHUNK * sizeof(float));
    double * times = malloc(repeat * sizeof(double));
    double * cpus = malloc(repeat * sizeof(double));
    double mean = 0, std = 0;
    float lo = 0, hi = 0;
    for (int r = 0; r < repeat; r++) {
        double t0 = now(), c0 = cpu_now(), s1 = 0, s2 = 0;
        lo = INFINITY;
        hi = -INFINITY;
        for (int64_t i = 0; i < n; i += CHUNK) {
            int64_t k = n - i < CHUNK ? n - i : CHUNK;
            if (t == GGML_TYPE_F32) {
                memcpy(buf, data + (i / CHUNK) * row, k * sizeof(float));
            } else if (cpu_rows && t == GGML_TYPE_F16) {
                ggml_cpu_fp16_to_fp32((const ggml_fp16_t *) (data + (i / CHUNK) * row), buf, k);
            } else if (cpu_rows && t == GGML_TYPE_BF16) {
                ggml_cpu_bf16_to_fp32((const ggml_bf16_t *) (data + (i / CHUNK) * row), buf, k);
            } else {
                tr->to_float(data + (i / CHUNK) * row, buf, k);
            }
            {
                float l8[8], h8[8]; double a8[8], b8[8];
                for (int q = 0; q < 8; q++) { l8[q] = lo; h8[q] = hi; a8[q] = 0; b8[q] = 0; }
                int64_t j = 0;
                for (; j + 8 <= k; j += 8) {
                    for (int q = 0; q < 8; q++) {
                        float v = buf[j + q];
                        l8[q] = v < l8[q] ? v : l8[q];
                        h8[q] = v > h8[q] ? v : h8[q];
                        a8[q] += v;
                        b8[q] += (double) v * v;
                    }
                }
                for (; j < k; j++) { float v = buf[j]; lo = v < lo ? v : lo; hi = v > hi ? v : hi; s1 += v; s2 += (double) v * v; }
                for (int q = 0; q < 8; q++) { lo = l8[q] < lo ? l8[q] : lo; hi = h8[q] > hi ? h8[q] : hi; s1 += a8[q]; s2 += b8[q]; }
            }
        }
        mean = s1 / n;
        std = sqrt(s2 / n - mean * mean);
        times[r] = now() - t0;
        cpus[r] = cpu_now() - c0;
    }
    qsort(times, repeat, sizeof(double), cmp);
    qsort(cpus, repeat, sizeof(double), cmp);
    printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f, \"min\": %.9g, \"max\": %.9g, \"mean\": %.9g, \"std\": %.9g}\n",
           times[0], cpus[0], lo, hi, mean, std);
    return 0;
}
