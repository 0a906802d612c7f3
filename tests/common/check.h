/*
 * A minimal test harness: every CHECK counts as passed or failed, a failure prints where and
 * both values, and `check_finish()` prints "N passed, N failed" and answers the exit code.
 * Header-only so each test executable stays one file.
 */
#ifndef UFORM_TESTS_CHECK_H
#define UFORM_TESTS_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t check_passed_count = 0, check_failed_count = 0;

#define CHECK(condition)                                                                   \
    do {                                                                                   \
        if (condition) ++check_passed_count;                                               \
        else {                                                                             \
            ++check_failed_count;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
        }                                                                                  \
    } while (0)

#define CHECK_MSG(condition, ...)                                                          \
    do {                                                                                   \
        if (condition) ++check_passed_count;                                               \
        else {                                                                             \
            ++check_failed_count;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #condition); \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fputc('\n', stderr);                                                           \
        }                                                                                  \
    } while (0)

#define CHECK_EQ_INT(actual, expected)                                                                        \
    do {                                                                                                      \
        long long check_a_ = (long long)(actual), check_e_ = (long long)(expected);                           \
        if (check_a_ == check_e_) ++check_passed_count;                                                       \
        else {                                                                                                \
            ++check_failed_count;                                                                             \
            fprintf(stderr, "%s:%d: %s == %s: got %lld, expected %lld\n", __FILE__, __LINE__, #actual, #expected, \
                    check_a_, check_e_);                                                                      \
        }                                                                                                     \
    } while (0)

#define CHECK_STATUS(actual, expected)                                                                         \
    do {                                                                                                       \
        int check_a_ = (int)(actual), check_e_ = (int)(expected);                                              \
        if (check_a_ == check_e_) ++check_passed_count;                                                        \
        else {                                                                                                 \
            ++check_failed_count;                                                                              \
            fprintf(stderr, "%s:%d: %s: got status %s (%d), expected %s (%d)\n", __FILE__, __LINE__, #actual,  \
                    uform_status_name((uform_status_t)check_a_), check_a_,                                     \
                    uform_status_name((uform_status_t)check_e_), check_e_);                                    \
        }                                                                                                      \
    } while (0)

/* Passes when `haystack` contains `needle`; prints both otherwise. */
#define CHECK_CONTAINS(haystack, needle)                                                                      \
    do {                                                                                                      \
        const char *check_h_ = (haystack), *check_n_ = (needle);                                              \
        if (check_h_ && strstr(check_h_, check_n_)) ++check_passed_count;                                     \
        else {                                                                                                \
            ++check_failed_count;                                                                             \
            fprintf(stderr, "%s:%d: expected \"%s\" to contain \"%s\"\n", __FILE__, __LINE__,                 \
                    check_h_ ? check_h_ : "(null)", check_n_);                                                \
        }                                                                                                     \
    } while (0)

/* |actual - expected| <= absolute + relative * |expected|, and neither is NaN. */
#define CHECK_NEAR(actual, expected, absolute, relative)                                                       \
    do {                                                                                                       \
        double check_a_ = (double)(actual), check_e_ = (double)(expected);                                     \
        double check_t_ = (absolute) + (relative)*fabs(check_e_);                                              \
        if (!isnan(check_a_) && !isnan(check_e_) && fabs(check_a_ - check_e_) <= check_t_) ++check_passed_count; \
        else {                                                                                                 \
            ++check_failed_count;                                                                              \
            fprintf(stderr, "%s:%d: %s: got %.9g, expected %.9g (tolerance %.3g)\n", __FILE__, __LINE__,       \
                    #actual, check_a_, check_e_, check_t_);                                                    \
        }                                                                                                      \
    } while (0)

static inline int check_finish(void) {
    printf("%zu passed, %zu failed\n", check_passed_count, check_failed_count);
    return check_failed_count == 0 && check_passed_count > 0 ? 0 : 1;
}

/* A small deterministic generator (SplitMix64) so tests draw inputs from a printed seed. */
static inline uint64_t check_random_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static inline float check_random_float(uint64_t *state) {
    return (float)((double)(check_random_next(state) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

#endif
