/*
 * Valid programs for the status, replay and fuzz-corpus tests, written with the builder: a few
 * templates (elementwise chains with broadcasting, matmul + softmax, layer norm, reductions,
 * data movement, conversions and select) instantiated over dtypes and small random shapes.
 * Header-only so each test stays one executable from one file.
 */
#ifndef UFORM_TESTS_SESSION_PROGRAMS_H
#define UFORM_TESTS_SESSION_PROGRAMS_H

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "uform/uform.h"

#define PROGRAM_TEMPLATES 6

/* Builds template `which` (mod PROGRAM_TEMPLATES) into `builder` with shapes drawn from `rng`. */
static inline int program_template(uform_program_builder_t builder, unsigned which, uint64_t *rng) {
    size_t m = 1 + check_random_next(rng) % 5, n = 1 + check_random_next(rng) % 6, k = 1 + check_random_next(rng) % 4;
    static const uform_session_dtype_t floats[] = {UFORM_SESSION_DTYPE_F32, UFORM_SESSION_DTYPE_F64, UFORM_SESSION_DTYPE_F16,
                                                   UFORM_SESSION_DTYPE_BF16};
    static const uform_session_dtype_t integers[] = {UFORM_SESSION_DTYPE_I8, UFORM_SESSION_DTYPE_I32, UFORM_SESSION_DTYPE_I64,
                                                     UFORM_SESSION_DTYPE_U8};
    uform_session_dtype_t f = floats[check_random_next(rng) % 4], q = integers[check_random_next(rng) % 4];
    uint32_t x, y, z, w, v;
    size_t dims_mn[2] = {m, n}, dims_n[1] = {n}, dims_kn[2] = {k, n}, dims_mk[2] = {m, k};
    int ok = 1;
#define B(call) ok &= (call) == UFORM_SESSION_OK
    switch (which % PROGRAM_TEMPLATES) {
    case 0: { // y = gelu(x * a + b) - exp(x) with broadcasting of a [n] over x [m, n]
        float a_f32[8];
        double a_f64[8];
        uint16_t a_16[8];
        for (size_t i = 0; i < n; ++i) a_f32[i] = 0.5f + (float)i, a_f64[i] = 0.5 + (double)i, a_16[i] = 0x3C00; // 1.0 in f16
        if (f == UFORM_SESSION_DTYPE_BF16)
            for (size_t i = 0; i < n; ++i) a_16[i] = 0x3F80; // 1.0 in bf16
        const void *payload = f == UFORM_SESSION_DTYPE_F32 ? (const void *)a_f32 : f == UFORM_SESSION_DTYPE_F64 ? (const void *)a_f64 : (const void *)a_16;
        size_t element = f == UFORM_SESSION_DTYPE_F32 ? 4 : f == UFORM_SESSION_DTYPE_F64 ? 8 : 2;
        B(uform_program_builder_parameter(builder, "x", f, 2, dims_mn, &x));
        B(uform_program_builder_parameter(builder, "b", f, 1, dims_n, &y));
        B(uform_program_builder_constant(builder, f, 1, dims_n, payload, n * element, &z));
        uint32_t ops[2] = {x, z};
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_MUL, ops, 2, NULL, 0, f, UFORM_SESSION_INFER, NULL, &w));
        ops[0] = w, ops[1] = y;
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, f, UFORM_SESSION_INFER, NULL, &w));
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_GELU, &w, 1, NULL, 0, f, UFORM_SESSION_INFER, NULL, &w));
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_EXP, &x, 1, NULL, 0, f, UFORM_SESSION_INFER, NULL, &v));
        ops[0] = w, ops[1] = v;
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_SUB, ops, 2, NULL, 0, f, UFORM_SESSION_INFER, NULL, &w));
        B(uform_program_builder_output(builder, "y", w));
        break;
    }
    case 1: { // softmax(x · wᵀ) over the last axis, and the product itself
        size_t dims_nk[2] = {n, k};
        int64_t t[2] = {0, 1}, axis = 1;
        B(uform_program_builder_parameter(builder, "x", f, 2, dims_mk, &x));
        B(uform_program_builder_parameter(builder, "w", f, 2, dims_nk, &y));
        uint32_t ops[2] = {x, y};
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_MATMUL, ops, 2, t, 2, f, UFORM_SESSION_INFER, NULL, &z));
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_SOFTMAX, &z, 1, &axis, 1, f, UFORM_SESSION_INFER, NULL, &w));
        B(uform_program_builder_output(builder, "p", w));
        B(uform_program_builder_output(builder, "logits", z));
        break;
    }
    case 2: { // layer_norm(x, weight, bias) then a mean over axis 0
        double eps = 1e-5;
        int64_t attributes[2], reduce[2] = {0, 0};
        attributes[0] = 1;
        memcpy(&attributes[1], &eps, 8);
        B(uform_program_builder_parameter(builder, "x", f, 2, dims_mn, &x));
        B(uform_program_builder_parameter(builder, "weight", f, 1, dims_n, &y));
        B(uform_program_builder_parameter(builder, "bias", f, 1, dims_n, &z));
        uint32_t ops[3] = {x, y, z};
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_LAYER_NORM, ops, 3, attributes, 2, f, UFORM_SESSION_INFER, NULL, &w));
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_REDUCE_MEAN, &w, 1, reduce, 2, f, UFORM_SESSION_INFER, NULL, &v));
        B(uform_program_builder_output(builder, "mean", v));
        break;
    }
    case 3: { // integer chain: (x + y) / y, its sum over axis 1 with keepdims, max with x
        int64_t reduce[2] = {1, 1};
        B(uform_program_builder_parameter(builder, "x", q, 2, dims_mn, &x));
        B(uform_program_builder_parameter(builder, "y", q, 2, dims_mn, &y));
        uint32_t ops[2] = {x, y};
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, q, UFORM_SESSION_INFER, NULL, &z));
        ops[0] = z;
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_DIV, ops, 2, NULL, 0, q, UFORM_SESSION_INFER, NULL, &z));
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_REDUCE_SUM, &z, 1, reduce, 2, q, UFORM_SESSION_INFER, NULL, &w));
        ops[0] = w, ops[1] = x;
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_MAX, ops, 2, NULL, 0, q, UFORM_SESSION_INFER, NULL, &v));
        B(uform_program_builder_output(builder, "v", v));
        break;
    }
    case 4: { // data movement: transpose, slice, concat, reshape, broadcast
        int64_t perm[2] = {1, 0}, slice[6] = {0, (int64_t)n, 2, 0, (int64_t)m, 1}, axis = 0;
        B(uform_program_builder_parameter(builder, "x", q, 2, dims_mn, &x));
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_TRANSPOSE, &x, 1, perm, 2, q, UFORM_SESSION_INFER, NULL, &y));
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_SLICE, &y, 1, slice, 6, q, UFORM_SESSION_INFER, NULL, &z));
        uint32_t ops[2] = {z, y};
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_CONCAT, ops, 2, &axis, 1, q, UFORM_SESSION_INFER, NULL, &w));
        size_t count = ((n + 1) / 2 + n) * m, flat[1] = {count}, wide[2] = {2, count};
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_RESHAPE, &w, 1, NULL, 0, q, 1, flat, &v));
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_BROADCAST, &v, 1, NULL, 0, q, 2, wide, &v));
        B(uform_program_builder_output(builder, "moved", v));
        B(uform_program_builder_output(builder, "x", x));
        break;
    }
    default: { // conversions, comparisons and select
        B(uform_program_builder_parameter(builder, "x", f, 2, dims_mn, &x));
        B(uform_program_builder_parameter(builder, "y", q, 2, dims_kn, &y));
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_CONVERT, &y, 1, NULL, 0, f, UFORM_SESSION_INFER, NULL, &z));
        uint32_t ops[3] = {x, z, 0};
        if (k != m) { // y [k, n] broadcasts with x [m, n] only when k is 1 or m
            size_t one[2] = {1, n};
            int64_t slice[6] = {0, 1, 1, 0, (int64_t)n, 1};
            B(uform_program_builder_operation(builder, UFORM_SESSION_OP_SLICE, &z, 1, slice, 6, f, 2, one, &z));
            ops[1] = z;
        }
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_LT, ops, 2, NULL, 0, f, UFORM_SESSION_INFER, NULL, &w));
        ops[0] = w, ops[1] = x, ops[2] = z;
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_SELECT, ops, 3, NULL, 0, f, UFORM_SESSION_INFER, NULL, &v));
        B(uform_program_builder_operation(builder, UFORM_SESSION_OP_CONVERT, &v, 1, NULL, 0, q, UFORM_SESSION_INFER, NULL, &v));
        B(uform_program_builder_output(builder, "picked", v));
        break;
    }
    }
#undef B
    return ok;
}

#endif
