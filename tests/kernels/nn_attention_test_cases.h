/*
 * The variable-length attention cases the F32 (test_nn_attention.c) and BF16
 * (test_nn_attention_bf16.c) attention tests share.
 */
#ifndef UFORM_TESTS_KERNELS_NN_ATTENTION_TEST_CASES_H
#define UFORM_TESTS_KERNELS_NN_ATTENTION_TEST_CASES_H

#include <stddef.h>

/* `count` items of lengths[0 .. count) tokens, `heads` heads of `head_width` each. */
typedef struct attention_case_t {
    size_t heads, head_width, count;
    size_t lengths[8];
} attention_case_t;

/* Lengths 1, primes, exact blocks, ragged tails past one and two blocks, an empty item. */
static const attention_case_t nn_attention_cases[] = {
    {2, 13, 6, {1, 5, 64, 67, 0, 131}},
    {6, 64, 3, {197, 64, 1}},
    {1, 1, 2, {2, 3}},
    {3, 128, 2, {70, 9}},
};
enum { nn_attention_case_count = sizeof nn_attention_cases / sizeof nn_attention_cases[0] };

/* Causal attention (the shape's `causal`): items of 1, 2, 15, 16, 17, 77 (CLIP's text length: a
 * whole key block and a ragged diagonal one) and 300 tokens (four blocks and a ragged fifth)
 * packed end to end, at the head widths of the published text towers. The bidirectional cases
 * above run causal too. */
static const attention_case_t nn_attention_causal_cases[] = {
    {2, 32, 7, {1, 2, 15, 16, 17, 77, 300}},
    {2, 64, 7, {300, 17, 77, 1, 16, 2, 15}},
    {1, 128, 7, {77, 1, 300, 2, 15, 16, 17}},
};
enum { nn_attention_causal_case_count = sizeof nn_attention_causal_cases / sizeof nn_attention_causal_cases[0] };

#endif
