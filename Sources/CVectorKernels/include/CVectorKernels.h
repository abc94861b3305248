#ifndef LIMELIGHT_CVECTORKERNELS_H
#define LIMELIGHT_CVECTORKERNELS_H

#include <stddef.h>
#include <stdint.h>

/// out[r] = sum over j of codes[r * dimension + j] * query[j], for r < rows.
/// Uses AVX2 when the processor has it (chosen at run time), plain C otherwise.
void limelight_int8_dots(const int8_t *codes, size_t dimension, const int8_t *query,
                         int32_t *out, size_t rows);

#endif
