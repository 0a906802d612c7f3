/*
 * Reproducible Gaussian numbers for generated test data: Box–Muller over a 64-bit LCG whose state
 * the test owns (no libc rand, the same sequence on every machine).
 */
#ifndef UFORM_TESTS_GAUSSIAN_H
#define UFORM_TESTS_GAUSSIAN_H

#include <math.h>
#include <stdint.h>

static inline double test_gaussian(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    double u = ((double)(*state >> 11) + 0.5) / 9007199254740992.0;
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    double v = (double)(*state >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

#endif
