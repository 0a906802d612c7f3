/*
 * The library's one pseudo-random stream and one shuffle, for everything that must come out the
 * same from the same seed on every machine and every run (epoch orders, shard orders, shuffle
 * buffers, the quantiser's training sample, random weights): splitmix64 (Steele, Lea and Flood,
 * "Fast splittable pseudorandom number generators", 2014), whose state is one 64-bit counter, and a
 * Fisher–Yates shuffle drawn from it. Changing either changes every cursor's meaning and every
 * seeded result: the data cursors' exact resume depends on them. Private to libuform.
 */
#ifndef UFORM_CORE_RANDOM_H
#define UFORM_CORE_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* The next value of the stream whose state is `*state` (advanced). */
static inline uint64_t uform__splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* `order` [n] := 0 .. n-1 permuted by Fisher–Yates from the stream `state` (from the last slot down,
 * each swapped with a slot drawn below it; the modulo's bias, under 2^-40 for n below 2^24, is part
 * of the definition). */
static inline void uform__shuffle_order(size_t *order, size_t n, uint64_t state) {
    for (size_t i = 0; i < n; ++i) order[i] = i;
    for (size_t i = n; i > 1; --i) {
        size_t j = (size_t)(uform__splitmix64(&state) % i);
        size_t swap = order[i - 1];
        order[i - 1] = order[j], order[j] = swap;
    }
}

#endif
