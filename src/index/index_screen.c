/* The BF16 screen's bound (index_screen.h has the derivation). */
#include "index/index_screen.h"

#include <math.h>

/* 2^60: norms at or past it count as infinite (their products could overflow F32). */
#define SCREEN_NORM_LIMIT 1152921504606846976.0
#define SCREEN_LANES 16

/* `value` (≥ 0 or NaN) as the smallest F32 not below it; INFINITY past the limit or for NaN. */
static float round_up(double value) {
    if (!(value < SCREEN_NORM_LIMIT)) return INFINITY;
    float rounded = (float)value;
    return (double)rounded < value ? nextafterf(rounded, INFINITY) : rounded;
}

void uform__screen_row_norms(size_t rows, size_t dims, const float *x, float *norms) {
    for (size_t r = 0; r < rows; ++r, x += dims) {
        float lanes[SCREEN_LANES] = {0}; /* independent sums the compiler keeps in vector registers */
        size_t c = 0;
        for (; c + SCREEN_LANES <= dims; c += SCREEN_LANES)
            for (size_t l = 0; l < SCREEN_LANES; ++l) lanes[l] += x[c + l] * x[c + l];
        for (size_t l = 0; c < dims; ++c, ++l) lanes[l] += x[c] * x[c];
        double sum = 0.0;
        for (size_t l = 0; l < SCREEN_LANES; ++l) sum += lanes[l];
        norms[r] = round_up(sqrt(sum));
    }
}

void uform__screen_query_terms(size_t dims, const float *q, float *a, float *b) {
    double sum = 0.0;
    for (size_t c = 0; c < dims; ++c) sum += (double)q[c] * (double)q[c];
    const double u = ldexp(1.0, -8), gamma = (double)(dims + 2) * ldexp(1.0, -24), length = sqrt(sum);
    const double bound = 2.0 * u + u * u + 2.2 * gamma;
    if (!(length < SCREEN_NORM_LIMIT)) {
        *a = *b = INFINITY;
        return;
    }
    *a = round_up(1.01 * bound * (1.0 + 2.0 * gamma) * length + ldexp(1.0, -110));
    *b = round_up(ldexp(1.0, -60) * length + ldexp(1.0, -100));
}
