/*
 * A sample checkpoint for the safetensors tests and the fuzz replay: one tensor of every dtype
 * (plus a scalar and an empty tensor), random bytes drawn from a seed, and metadata with
 * characters JSON must escape. Header-only; each test includes it once.
 */
#ifndef UFORM_TESTS_IO_SAFETENSORS_SAMPLE_H
#define UFORM_TESTS_IO_SAFETENSORS_SAMPLE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"

#define SAMPLE_TENSORS 11
#define SAMPLE_PAIRS 3

typedef struct sample_t {
    uform__safetensors_source_t sources[SAMPLE_TENSORS];
    uint64_t shapes[SAMPLE_TENSORS][UFORM__SAFETENSORS_MAX_RANK];
    uint8_t *buffers[SAMPLE_TENSORS];
    size_t lengths[SAMPLE_TENSORS];
    uform__safetensors_pair_t pairs[SAMPLE_PAIRS];
    uform__safetensors_write_t request;
} sample_t;

static uint64_t sample_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Fills `sample` from `seed`; `scale` multiplies the first dimension of the BF16 tensor so a test
 * can make the file large (scale 1: a few hundred bytes of data). Answers 0 when out of memory. */
static int sample_make(sample_t *sample, uint64_t seed, uint64_t scale) {
    static const struct {
        const char *name;
        uform__safetensors_dtype_t dtype;
        uint32_t rank;
        uint64_t shape[4];
    } table[SAMPLE_TENSORS] = {
        {"embed.weight", UFORM__SAFETENSORS_BF16, 2, {3, 4}},
        {"norm.weight", UFORM__SAFETENSORS_F16, 1, {5}},
        {"proj.bias", UFORM__SAFETENSORS_F32, 2, {2, 3}},
        {"logit_scale", UFORM__SAFETENSORS_F64, 0, {0}},
        {"quant.i8", UFORM__SAFETENSORS_I8, 1, {7}},
        {"quant.u8", UFORM__SAFETENSORS_U8, 3, {2, 2, 2}},
        {"token_ids", UFORM__SAFETENSORS_I32, 1, {3}},
        {"positions", UFORM__SAFETENSORS_I64, 2, {2, 1}},
        {"mask", UFORM__SAFETENSORS_BOOL, 1, {5}},
        {"empty", UFORM__SAFETENSORS_F32, 2, {0, 4}},
        {"blocks.0.\xc3\xbc\"quoted\"", UFORM__SAFETENSORS_F32, 4, {1, 2, 1, 2}},
    };
    memset(sample, 0, sizeof *sample);
    uint64_t state = seed;
    for (int index = 0; index < SAMPLE_TENSORS; ++index) {
        uform__safetensors_source_t *source = &sample->sources[index];
        source->name = table[index].name;
        source->dtype = table[index].dtype;
        source->rank = table[index].rank;
        source->shape = sample->shapes[index];
        size_t length = uform__safetensors_dtype_size(source->dtype);
        for (uint32_t axis = 0; axis < source->rank; ++axis) {
            sample->shapes[index][axis] = table[index].shape[axis] * (index == 0 && axis == 0 ? scale : 1);
            length *= sample->shapes[index][axis];
        }
        sample->lengths[index] = length;
        sample->buffers[index] = malloc(length ? length : 1);
        if (!sample->buffers[index]) return 0;
        for (size_t at = 0; at < length; ++at) {
            uint8_t byte = (uint8_t)sample_next(&state);
            sample->buffers[index][at] = source->dtype == UFORM__SAFETENSORS_BOOL ? byte & 1 : byte;
        }
        source->data = sample->buffers[index];
    }
    sample->pairs[0] = (uform__safetensors_pair_t){"uform.format", "4"};
    sample->pairs[1] = (uform__safetensors_pair_t){"uform.config", "{\"width\": 8, \"depth\": 2}"};
    sample->pairs[2] = (uform__safetensors_pair_t){"note", "tab\there, newline\nthere, back\\slash, \xe2\x9c\x93"};
    sample->request.tensors = sample->sources;
    sample->request.tensor_count = SAMPLE_TENSORS;
    sample->request.metadata = sample->pairs;
    sample->request.metadata_count = SAMPLE_PAIRS;
    return 1;
}

static void sample_free(sample_t *sample) {
    for (int index = 0; index < SAMPLE_TENSORS; ++index) free(sample->buffers[index]);
}

#endif
