// The 8-bit dot products of a shard's vector scan, in C so that one binary can
// carry an AVX2 version beside the baseline x86-64 one and pick at run time:
// Swift has no per-function target attribute, and its compiler does not turn
// the widening multiply-add into the packed instruction (vpmaddwd) the loop
// needs. The AVX2 version scans a shard's codes nearly three times as fast.
#include "CVectorKernels.h"

#define DOTS_BODY                                                    \
    for (size_t r = 0; r < rows; r++) {                              \
        const int8_t *row = codes + r * dimension;                   \
        int32_t acc = 0;                                             \
        for (size_t j = 0; j < dimension; j++)                       \
            acc += (int32_t)row[j] * (int32_t)query[j];              \
        out[r] = acc;                                                \
    }

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
__attribute__((target("avx2")))
static void dots_avx2(const int8_t *codes, size_t dimension, const int8_t *query, int32_t *out, size_t rows) {
    DOTS_BODY
}
#endif

static void dots_baseline(const int8_t *codes, size_t dimension, const int8_t *query, int32_t *out, size_t rows) {
    DOTS_BODY
}

void limelight_int8_dots(const int8_t *codes, size_t dimension, const int8_t *query, int32_t *out, size_t rows) {
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
    if (__builtin_cpu_supports("avx2")) {
        dots_avx2(codes, dimension, query, out, rows);
        return;
    }
#endif
    dots_baseline(codes, dimension, query, out, rows);
}
