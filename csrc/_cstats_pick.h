/* The family table and the variant pick (included by _cstats.c after _cstats_z.h).

   Why a file of its own: _cstats.c is split by job; mapping a family of
   ggscope.stats.fused_specs and its constant arguments to a compiled variant is a
   lookup apart from the passes themselves.  Contract: FAMILIES lists the families by
   fused_specs' decoder names and argument counts (its index is the family number the
   Python side passes); pick(fam, J, &rf, &bf) returns 1 with the variant's pass one
   and pass two (the AVX-512 ones where z_range / z_bins choose them) and its decoder in
   picked_decode, or 0 when no variant takes these arguments (the caller then uses the
   other engine). */
#ifndef GGSCOPE_CSTATS_PICK_H
#define GGSCOPE_CSTATS_PICK_H

typedef void (*range_fn)(const job_t *, range_t *);
typedef void (*bins_fn)(const job_t *, const binargs_t *, bins_t *);
typedef void (*decode_fn)(const job_t *, float *);
/* pick's third answer: the variant's decode-only driver (one slot: pick runs with the GIL held) */
static decode_fn picked_decode;

/* The families by the names fused_specs gives their decoders, and how many constant
   arguments each takes. */
static const struct {
    const char *name;
    int nargs;
} FAMILIES[] = {
    {"_dec_nibbles", 9}, {"_dec_int8", 4}, {"_dec_crumbs", 5}, {"_dec_tq1_0", 0}, {"_dec_q2_k", 0}, {"_dec_q3_k", 0},
    {"_dec_q45_k", 2},  {"_dec_q6_k", 0}, {"_dec_table4", 3}, {"_dec_iq2", 1},   {"_dec_iq3", 1},  {"_dec_iq1", 1},
};
#define N_FAMILIES ((int) (sizeof FAMILIES / sizeof FAMILIES[0]))

/* The variant for a family and its arguments, or 0 when the arguments are not ones
   this engine knows (the caller then uses the other engine). */
static int pick(int fam, const job_t *J, range_fn *rf, bins_fn *bf) {
#define USE(NAME)                    \
    do {                             \
        *rf = range_##NAME;          \
        *bf = z_bins(#NAME, bins_##NAME); \
        picked_decode = decto_##NAME; \
        return 1;                    \
    } while (0)
#define USEB(NAME)                   \
    do {                             \
        *rf = z_range(#NAME, rangeb_##NAME); \
        *bf = z_bins(#NAME, bins_##NAME); \
        picked_decode = decto_##NAME; \
        return 1;                    \
    } while (0)
    const int *a = J->a;
    switch (fam) {
    case 0:
        if (a[1] == 0 && a[5] == 16 && a[6] == 0 && a[8] < 0 && J->n == 32) {
            if (a[2] < 0 && a[3] < 0) USEB(nib_00);
            if (a[2] >= 0 && a[3] < 0) USEB(nib_10);
            if (a[2] < 0 && a[3] >= 0) USEB(nib_01);
            USEB(nib_11);
        }
        if (J->n != 2 * a[5]) return 0;
        USE(nib);
    case 1:
        if (J->n != a[3]) return 0;
        if (a[1] == 0 && a[3] == 32) USEB(int8_32);
        USEB(int8);
    case 2:
        if (J->n != a[2] || (a[3] != 1 && a[3] != 2) || (a[4] && J->n % 128)) return 0;
        USE(crumbs);
    case 3:
        if (J->n != 256) return 0;
        *rf = rangeb_tq1_0;
        *bf = bins_tq1_0_counts;
        picked_decode = decto_tq1_0;
        return 1;
    case 4: if (J->n != 256) return 0; USEB(q2_k);
    case 5: if (J->n != 256) return 0; USEB(q3_k);
    case 6:
        if (J->n != 256) return 0;
        if (a[0] == 16 && a[1] == 0) USEB(q4_k);
        if (a[0] == 48 && a[1] == 1) USEB(q5_k);
        return 0;
    case 7: if (J->n != 256) return 0; USEB(q6_k);
    case 8:
        if (J->n != a[1] * a[2] || a[2] % 2 || a[1] <= 0) return 0;
        switch (a[0]) {
        case 0: USEB(table4_0);
        case 1: USEB(table4_1);
        case 2: USEB(table4_2);
        case 3: USEB(table4_3);
        }
        return 0;
    case 9:
        if (J->n != 256 || a[0] < 0 || a[0] > 2) return 0;
        if (a[0] == 0) USE(iq2_0);
        if (a[0] == 1) USE(iq2_1);
        USE(iq2_2);
    case 10:
        if (J->n != 256 || a[0] < 0 || a[0] > 1) return 0;
        if (a[0] == 0) USE(iq3_0);
        USE(iq3_1);
    case 11:
        if (J->n != 256 || a[0] < 0 || a[0] > 1) return 0;
        if (a[0] == 0) USE(iq1_0);
        USE(iq1_1);
    }
    return 0;
#undef USE
#undef USEB
}

#endif /* GGSCOPE_CSTATS_PICK_H */
