/*
 * serial_numerics_dump DIRECTORY: runs SERIAL's roundings on chosen inputs and writes inputs and
 * outputs as raw little-endian files, for serial_numerics_reference.py to check against exact
 * arithmetic written in Python from the definitions (nothing here computes an expected value):
 *
 *   bf16.in (u32 F32 bit patterns) -> bf16.out (u16): uform__nn_f32_to_bf16_serial over every kind
 *     of F32: exact ties with an even and an odd kept part, one below and one above each, normal and
 *     subnormal, the largest finite values (which round to infinity), ±0, ±∞, quiet and signalling
 *     NaNs, and random bit patterns;
 *   gelu.in (f32) -> gelu.epilogue.out and gelu.nn.out (f32): the erf GELU of SERIAL's GEMM epilogue
 *     (UFORM__GEMM_GELU_EXACT) and of its NN table (gelu_forward), on a grid, random bit patterns,
 *     subnormals, huge values, ±∞ and NaN;
 *   i8.* : SERIAL's int8 product on operands set here (not quantized by the engine): qx [M, K],
 *     sx [M], qw [N, K], sw [N], bias [N] -> i32 sums, F32 outputs (with bias) and BF16 outputs.
 *     K = 2048 with magnitudes near 127, so that most sums exceed 2^24 and fl32(acc) rounds (many
 *     on exact ties), and scales with full 24-bit significands, so that fl32(sx·sw) and the
 *     multiply-add round too.
 * Inputs come from a fixed seed. Exit 0 on success, 1 with a message on any failure.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm.h"
#include "kernels/gemm_i8.h"
#include "kernels/nn.h"

enum { I8_M = 24, I8_N = 40, I8_K = 2048 };

static uint64_t state = 0x9E3779B97F4A7C15ull;

static uint64_t next_random(void) { /* splitmix64 */
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float float_of(uint32_t bits) {
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static const char *directory;

static int write_file(const char *name, const void *data, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    FILE *file = fopen(path, "wb");
    if (!file || fwrite(data, 1, bytes, file) != bytes || fclose(file) != 0) {
        fprintf(stderr, "serial_numerics_dump: cannot write %s\n", path);
        return 0;
    }
    return 1;
}

/* The BF16 inputs: every edge case listed at the top, then random bit patterns. */
static size_t bf16_inputs(uint32_t *bits, size_t capacity) {
    size_t n = 0;
    static const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
                                        0x7F800001u, 0xFF800001u, 0x7FBFFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F8000u,
                                        0x7F7F7FFFu, 0x7F7F8001u, 0x7F7E8000u, 0x00000001u, 0x80000001u, 0x00008000u,
                                        0x00018000u, 0x00007FFFu, 0x00008001u, 0x007FFFFFu, 0x007F8000u, 0x00800000u};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; ++i) bits[n++] = specials[i];
    /* Ties and their neighbours over every exponent, kept parts even and odd, both signs. */
    for (uint32_t exponent = 0; exponent < 256 && n + 16 <= capacity; exponent += 3)
        for (uint32_t kept = 0; kept < 2; ++kept)
            for (uint32_t sign = 0; sign < 2; ++sign) {
                uint32_t base = (sign << 31) | (exponent << 23) | ((uint32_t)(next_random() & 0x7Eu) + kept) << 16;
                bits[n++] = base | 0x8000u, bits[n++] = base | 0x7FFFu;
                bits[n++] = base | 0x8001u, bits[n++] = base | (uint32_t)(next_random() & 0xFFFFu);
            }
    while (n < capacity) bits[n++] = (uint32_t)next_random();
    return n;
}

static size_t gelu_inputs(float *x, size_t capacity) {
    size_t n = 0;
    static const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
                                        0x00000001u, 0x80000001u, 0x007FFFFFu, 0x807FFFFFu, 0x7F7FFFFFu,
                                        0xFF7FFFFFu, 0x3F800000u, 0xBF800000u};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; ++i) x[n++] = float_of(specials[i]);
    for (int i = -1000; i <= 1000 && n < capacity; ++i) x[n++] = (float)i / 32.0f; /* [-31.25, 31.25] */
    for (; n < capacity; ++n) {
        uint32_t bits = (uint32_t)next_random();
        /* Half random bit patterns (every magnitude), half random values on [-12, 12]. */
        x[n] = (n & 1) ? float_of(bits) : (float)((double)(bits >> 8) / 16777216.0 * 24.0 - 12.0);
    }
    return n;
}

static int dump_i8(void) {
    const uform__gemm_i8_kernels_t *serial = uform__gemm_i8_kernels(UFORM_CPU_CLASS_SERIAL);
    size_t kp = uform__gemm_i8_k_padded(I8_K);
    int8_t *qx = calloc(I8_M * kp, 1), *qw = calloc(I8_N * kp, 1);
    float sx[I8_M], sw[I8_N], bias[I8_N];
    int32_t sums[I8_M], *acc = malloc(sizeof(int32_t) * I8_M * I8_N);
    float *y = malloc(sizeof(float) * I8_M * I8_N);
    uint16_t *y16 = malloc(sizeof(uint16_t) * I8_M * I8_N);
    size_t packed_bytes = serial->packed_size(I8_N, I8_K);
    void *memory = aligned_alloc(64, (packed_bytes + 63) / 64 * 64);
    if (!qx || !qw || !acc || !y || !y16 || !memory) {
        fprintf(stderr, "serial_numerics_dump: out of memory\n");
        return 0;
    }
    /* Magnitudes 96..127, each row of one sign (alternating), so that against the positive columns
     * the sums reach ±2^24 to ±2^25 (where F32 holds only even or multiple-of-4 integers); the last
     * row is all +127 (K·127² = 33,032,192 against a column of +127). */
    for (size_t i = 0; i < I8_M; ++i) {
        sums[i] = 0;
        for (size_t k = 0; k < I8_K; ++k) {
            uint64_t r = next_random();
            int value = (int)(96 + (r & 31)) * (i & 1 ? -1 : 1);
            if (i == I8_M - 1) value = 127;
            qx[i * kp + k] = (int8_t)value;
            sums[i] += value;
        }
        /* A full 24-bit significand around 2^-10 (and one zero scale). */
        sx[i] = i == 3 ? 0.0f : ldexpf((float)((next_random() >> 40) | 0x800000u), -34);
    }
    for (size_t j = 0; j < I8_N; ++j) {
        for (size_t k = 0; k < I8_K; ++k) {
            uint64_t r = next_random();
            /* The first half of the columns with random signs (sums near zero), the rest positive. */
            int value = (int)(96 + (r & 31)) * (j < I8_N / 2 && ((r >> 8) & 1) ? -1 : 1);
            if (j == I8_N - 1) value = 127;
            qw[j * kp + k] = (int8_t)value;
        }
        sw[j] = ldexpf((float)((next_random() >> 40) | 0x800000u), -33);
        bias[j] = ldexpf((float)(int32_t)(next_random() >> 40) - 8388608.0f, -20);
    }
    uform_outcome_t outcome = {0};
    uform__gemm_i8_packed_t packed;
    if (serial->pack(qw, kp, sw, I8_N, I8_K, memory, packed_bytes, &packed, &outcome) != UFORM_OK) {
        fprintf(stderr, "serial_numerics_dump: pack: %s\n", outcome.message);
        return 0;
    }
    uform__gemm_i8_forward_t args = {.m = I8_M, .n = I8_N, .k = I8_K, .x = {qx, kp, sx, sums}, .packed = &packed,
                                     .y = acc, .ldy = I8_N, .output = UFORM__GEMM_I8_I32};
    uform_status_t status = serial->forward(&args, NULL, &outcome);
    args.bias = bias, args.y = y, args.output = UFORM__GEMM_I8_F32;
    if (status == UFORM_OK) status = serial->forward(&args, NULL, &outcome);
    args.y = y16, args.output = UFORM__GEMM_I8_BF16;
    if (status == UFORM_OK) status = serial->forward(&args, NULL, &outcome);
    if (status != UFORM_OK) {
        fprintf(stderr, "serial_numerics_dump: forward: %s\n", outcome.message);
        return 0;
    }
    /* qx and qw unpadded: K is a multiple of 4, so kp == K. */
    int ok = kp == I8_K && write_file("i8.qx", qx, I8_M * kp) && write_file("i8.qw", qw, I8_N * kp) &&
             write_file("i8.sx", sx, sizeof sx) && write_file("i8.sw", sw, sizeof sw) &&
             write_file("i8.bias", bias, sizeof bias) && write_file("i8.i32", acc, sizeof(int32_t) * I8_M * I8_N) &&
             write_file("i8.f32", y, sizeof(float) * I8_M * I8_N) &&
             write_file("i8.bf16", y16, sizeof(uint16_t) * I8_M * I8_N);
    free(qx), free(qw), free(acc), free(y), free(y16), free(memory);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: serial_numerics_dump DIRECTORY\n");
        return 2;
    }
    directory = argv[1];
    enum { BF16_N = 40000, GELU_N = 6000 };
    static uint32_t bits[BF16_N];
    static uint16_t rounded[BF16_N];
    static float x[GELU_N], epilogue[GELU_N], nn[GELU_N];
    size_t n = bf16_inputs(bits, BF16_N);
    uform__nn_f32_to_bf16_serial(n, (const float *)(const void *)bits, rounded);
    size_t g = gelu_inputs(x, GELU_N);
    memcpy(epilogue, x, sizeof x);
    uform__gemm_kernels(UFORM_CPU_CLASS_SERIAL)->epilogue(epilogue, g, 1, g, NULL, UFORM__GEMM_GELU_EXACT);
    uform__nn_kernels(UFORM_CPU_CLASS_SERIAL)->gelu_forward(g, x, nn, NULL);
    int ok = write_file("bf16.in", bits, n * 4) && write_file("bf16.out", rounded, n * 2) &&
             write_file("gelu.in", x, g * 4) && write_file("gelu.epilogue.out", epilogue, g * 4) &&
             write_file("gelu.nn.out", nn, g * 4) && dump_i8();
    return ok ? 0 : 1;
}
