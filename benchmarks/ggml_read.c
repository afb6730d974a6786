/* The C peer of benchmarks/validate_vs_c.py: ggml's GGUF reader on each file named.

   For every path: gguf_init_from_file (no_alloc: the header only, as llama.cpp's loader
   opens a model), then every key-value pair read through the public API (key, type,
   scalar value, array length and element type, each string of a string array, the bytes
   of a numeric array) and every tensor info (name, type, offset, shape, size), summed
   into a checksum so nothing is optimized away, then gguf_free.  Prints one line per
   file: status (ok / refused), microseconds inside the process, the checksum.

   Built by benchmarks/validate_vs_c.py against the ggml that benchmarks/stats_vs_ggml.py
   builds (Release, -march=native). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gguf.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* bytes of one element of each GGUF scalar type (gguf.h's enum order) */
static const size_t TYPE_SIZE[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static uint64_t read_all(struct gguf_context *ctx) {
    uint64_t sum = gguf_get_version(ctx) + gguf_get_alignment(ctx) + gguf_get_data_offset(ctx);
    const int64_t n_kv = gguf_get_n_kv(ctx);
    for (int64_t i = 0; i < n_kv; i++) {
        sum += strlen(gguf_get_key(ctx, i));
        const enum gguf_type t = gguf_get_kv_type(ctx, i);
        sum += (uint64_t) t;
        if (t == GGUF_TYPE_ARRAY) {
            const enum gguf_type at = gguf_get_arr_type(ctx, i);
            const size_t n = gguf_get_arr_n(ctx, i);
            sum += n;
            if (at == GGUF_TYPE_STRING) {
                for (size_t k = 0; k < n; k++) sum += (unsigned char) gguf_get_arr_str(ctx, i, k)[0];
            } else if (at < GGUF_TYPE_COUNT && TYPE_SIZE[at] && n) {
                const unsigned char *d = gguf_get_arr_data(ctx, i);
                sum += d[0] + d[n * TYPE_SIZE[at] - 1];
            }
        } else if (t == GGUF_TYPE_STRING) {
            sum += strlen(gguf_get_val_str(ctx, i));
        } else {
            sum += *(const unsigned char *) gguf_get_val_data(ctx, i);
        }
    }
    const int64_t n_t = gguf_get_n_tensors(ctx);
    for (int64_t i = 0; i < n_t; i++) {
        const int64_t *ne = gguf_get_tensor_ne(ctx, i);
        sum += strlen(gguf_get_tensor_name(ctx, i)) + (uint64_t) gguf_get_tensor_type(ctx, i) +
               gguf_get_tensor_offset(ctx, i) + gguf_get_tensor_size(ctx, i) +
               (uint64_t) (ne[0] + ne[1] + ne[2] + ne[3]);
    }
    return sum;
}

int main(int argc, char **argv) {
    int refused = 0;
    for (int a = 1; a < argc; a++) {
        const double t0 = now_us();
        struct gguf_init_params params = {.no_alloc = true, .ctx = NULL};
        struct gguf_context *ctx = gguf_init_from_file(argv[a], params);
        uint64_t sum = 0;
        if (ctx != NULL) {
            sum = read_all(ctx);
            gguf_free(ctx);
        }
        const double t1 = now_us();
        refused += ctx == NULL;
        printf("%s\t%.1f\t%llu\n", ctx != NULL ? "ok" : "refused", t1 - t0, (unsigned long long) sum);
    }
    return refused ? 1 : 0;
}
