/*
 * Dtypes, opcode tables, half-precision conversions and the register loads and stores every
 * step uses. Half and bfloat16 rounding follow IEEE 754 round-to-nearest-even, matching
 * torch.Tensor.half() and torch.Tensor.bfloat16().
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/session.h"

uform_session_status_t uform__session_error(uform__session_error_t *error, uform_session_status_t status,
                                            const char *format, ...) {
    if (error) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(error->cause, sizeof error->cause, format, arguments);
        va_end(arguments);
        error->status = status;
    }
    return status;
}

static long allocations_left = -1; /* negative: never fail */

static int allocation_allowed(void) {
    long left = __atomic_load_n(&allocations_left, __ATOMIC_RELAXED);
    if (left < 0) return 1;
    if (left == 0) return 0;
    __atomic_store_n(&allocations_left, left - 1, __ATOMIC_RELAXED);
    return 1;
}

void uform__session_fail_allocations_after(long count) { __atomic_store_n(&allocations_left, count, __ATOMIC_RELAXED); }
void *uform__session_malloc(size_t size) { return allocation_allowed() ? malloc(size) : NULL; }
void *uform__session_calloc(size_t count, size_t size) { return allocation_allowed() ? calloc(count, size) : NULL; }
void *uform__session_realloc(void *pointer, size_t size) { return allocation_allowed() ? realloc(pointer, size) : NULL; }
void *uform__session_aligned(size_t alignment, size_t size) {
    return allocation_allowed() ? aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment) : NULL;
}

static const size_t dtype_sizes[UFORM__SESSION_DTYPE_COUNT] = {4, 8, 2, 2, 1, 4, 8, 1, 1};
static const char *const dtype_names[UFORM__SESSION_DTYPE_COUNT] = {"f32", "f64", "f16", "bf16", "i8",
                                                                    "i32", "i64", "u8",  "bool"};

size_t uform__session_dtype_size(unsigned dtype) { return dtype < UFORM__SESSION_DTYPE_COUNT ? dtype_sizes[dtype] : 0; }
const char *uform__session_dtype_name(unsigned dtype) {
    return dtype < UFORM__SESSION_DTYPE_COUNT ? dtype_names[dtype] : "unknown";
}
int uform__session_dtype_is_float(unsigned dtype) { return dtype <= UFORM_SESSION_DTYPE_BF16; }

unsigned uform__session_dtype_class(unsigned dtype) {
    if (dtype == UFORM_SESSION_DTYPE_F64) return UFORM__SESSION_CLASS_F64;
    if (dtype == UFORM_SESSION_DTYPE_F32 || dtype == UFORM_SESSION_DTYPE_F16 || dtype == UFORM_SESSION_DTYPE_BF16)
        return UFORM__SESSION_CLASS_F32;
    return UFORM__SESSION_CLASS_INT;
}

const char *uform__session_opcode_name(unsigned opcode) {
    switch (opcode) {
    case UFORM_SESSION_OP_NEG: return "neg";
    case UFORM_SESSION_OP_ABS: return "abs";
    case UFORM_SESSION_OP_EXP: return "exp";
    case UFORM_SESSION_OP_LOG: return "log";
    case UFORM_SESSION_OP_SQRT: return "sqrt";
    case UFORM_SESSION_OP_RSQRT: return "rsqrt";
    case UFORM_SESSION_OP_TANH: return "tanh";
    case UFORM_SESSION_OP_ERF: return "erf";
    case UFORM_SESSION_OP_SIGMOID: return "sigmoid";
    case UFORM_SESSION_OP_RELU: return "relu";
    case UFORM_SESSION_OP_GELU: return "gelu";
    case UFORM_SESSION_OP_ADD: return "add";
    case UFORM_SESSION_OP_SUB: return "sub";
    case UFORM_SESSION_OP_MUL: return "mul";
    case UFORM_SESSION_OP_DIV: return "div";
    case UFORM_SESSION_OP_MAX: return "max";
    case UFORM_SESSION_OP_MIN: return "min";
    case UFORM_SESSION_OP_POW: return "pow";
    case UFORM_SESSION_OP_EQ: return "eq";
    case UFORM_SESSION_OP_NE: return "ne";
    case UFORM_SESSION_OP_LT: return "lt";
    case UFORM_SESSION_OP_LE: return "le";
    case UFORM_SESSION_OP_GT: return "gt";
    case UFORM_SESSION_OP_GE: return "ge";
    case UFORM_SESSION_OP_SELECT: return "select";
    case UFORM_SESSION_OP_CONVERT: return "convert";
    case UFORM_SESSION_OP_REDUCE_SUM: return "reduce_sum";
    case UFORM_SESSION_OP_REDUCE_MAX: return "reduce_max";
    case UFORM_SESSION_OP_REDUCE_MIN: return "reduce_min";
    case UFORM_SESSION_OP_REDUCE_MEAN: return "reduce_mean";
    case UFORM_SESSION_OP_MATMUL: return "matmul";
    case UFORM_SESSION_OP_RESHAPE: return "reshape";
    case UFORM_SESSION_OP_TRANSPOSE: return "transpose";
    case UFORM_SESSION_OP_BROADCAST: return "broadcast";
    case UFORM_SESSION_OP_SLICE: return "slice";
    case UFORM_SESSION_OP_CONCAT: return "concat";
    case UFORM_SESSION_OP_SOFTMAX: return "softmax";
    case UFORM_SESSION_OP_LAYER_NORM: return "layer_norm";
    default: return NULL;
    }
}

int uform__session_is_unary(unsigned opcode) { return opcode >= UFORM_SESSION_OP_NEG && opcode <= UFORM_SESSION_OP_GELU; }
int uform__session_is_binary(unsigned opcode) { return opcode >= UFORM_SESSION_OP_ADD && opcode <= UFORM_SESSION_OP_POW; }
int uform__session_is_compare(unsigned opcode) { return opcode >= UFORM_SESSION_OP_EQ && opcode <= UFORM_SESSION_OP_GE; }
int uform__session_is_elementwise(unsigned opcode) {
    return uform__session_is_unary(opcode) || uform__session_is_binary(opcode) || uform__session_is_compare(opcode) ||
           opcode == UFORM_SESSION_OP_SELECT || opcode == UFORM_SESSION_OP_CONVERT;
}

int uform__session_type_finish(uform__session_type_t *type) {
    size_t size = uform__session_dtype_size(type->dtype);
    if (!size || type->rank > UFORM_SESSION_MAX_RANK) return 0;
    uint64_t count = 1;
    for (unsigned axis = 0; axis < type->rank; ++axis) {
        uint64_t dim = type->dims[axis];
        if (dim == 0 || dim > ((uint64_t)1 << 62) / count) return 0;
        count *= dim;
    }
    if (count > ((uint64_t)1 << 62) / size) return 0;
    type->count = (size_t)count;
    type->bytes = (size_t)(count * size);
    return 1;
}

/* Binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
float uform__session_f16_to_f32(uint16_t bits) {
    uint32_t sign = (uint32_t)(bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1Fu, mantissa = bits & 0x3FFu;
    uint32_t out;
    if (exponent == 0x1F) out = sign | 0x7F800000u | (mantissa << 13);
    else if (exponent != 0) out = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    else if (mantissa == 0) out = sign;
    else { // subnormal: value = mantissa * 2^-24, exact in binary32
        float value = (float)mantissa * 5.9604644775390625e-8f;
        memcpy(&out, &value, 4);
        out |= sign;
    }
    float result;
    memcpy(&result, &out, 4);
    return result;
}

uint16_t uform__session_f32_to_f16(float value) {
    uint32_t bits;
    memcpy(&bits, &value, 4);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return (uint16_t)(sign | 0x7E00u); // NaN stays a quiet NaN
    if (magnitude >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); // rounds to or past 65520: infinity
    if (magnitude < 0x38800000u) {                                  // below 2^-14: subnormal or zero
        // Scale so the rounding to an integer count of 2^-24 happens in the FPU (nearest even).
        float absolute;
        memcpy(&absolute, &magnitude, 4);
        float scaled = absolute * 16777216.0f; // exact: a power of two
        uint32_t units = (uint32_t)nearbyintf(scaled);
        return (uint16_t)(sign | units);
    }
    uint32_t exponent = (magnitude >> 23) - 112u, mantissa = magnitude & 0x7FFFFFu;
    uint32_t half = (exponent << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half; // carries into the exponent correctly
    return (uint16_t)(sign | half);
}

float uform__session_bf16_to_f32(uint16_t bits) {
    uint32_t out = (uint32_t)bits << 16;
    float result;
    memcpy(&result, &out, 4);
    return result;
}

uint16_t uform__session_f32_to_bf16(float value) {
    uint32_t bits;
    memcpy(&bits, &value, 4);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((bits >> 16) | 0x40u);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

float uform__session_narrow(double value, unsigned dtype) {
    float narrow = (float)value;
    if (dtype != UFORM_SESSION_DTYPE_F16 && dtype != UFORM_SESSION_DTYPE_BF16) return narrow;
    if ((double)narrow == value || narrow != narrow || isinf(narrow)) return narrow;
    if (fabs((double)narrow) > fabs(value)) narrow = nextafterf(narrow, 0.0f); // truncate toward zero ...
    uint32_t bits;
    memcpy(&bits, &narrow, 4);
    bits |= 1u; // ... and make it odd: the sticky bit of the dropped part
    memcpy(&narrow, &bits, 4);
    return narrow;
}

void uform__session_load(unsigned dtype, const void *source, size_t first, size_t count, void *reg) {
    float *f = (float *)reg;
    double *d = (double *)reg;
    int64_t *q = (int64_t *)reg;
    switch (dtype) {
    case UFORM_SESSION_DTYPE_F32: memcpy(f, (const float *)source + first, count * 4); break;
    case UFORM_SESSION_DTYPE_F64: memcpy(d, (const double *)source + first, count * 8); break;
    case UFORM_SESSION_DTYPE_F16: {
        const uint16_t *s = (const uint16_t *)source + first;
        for (size_t i = 0; i < count; ++i) f[i] = uform__session_f16_to_f32(s[i]);
        break;
    }
    case UFORM_SESSION_DTYPE_BF16: {
        const uint16_t *s = (const uint16_t *)source + first;
        for (size_t i = 0; i < count; ++i) f[i] = uform__session_bf16_to_f32(s[i]);
        break;
    }
    case UFORM_SESSION_DTYPE_I8: {
        const int8_t *s = (const int8_t *)source + first;
        for (size_t i = 0; i < count; ++i) q[i] = s[i];
        break;
    }
    case UFORM_SESSION_DTYPE_I32: {
        const int32_t *s = (const int32_t *)source + first;
        for (size_t i = 0; i < count; ++i) q[i] = s[i];
        break;
    }
    case UFORM_SESSION_DTYPE_I64: memcpy(q, (const int64_t *)source + first, count * 8); break;
    case UFORM_SESSION_DTYPE_U8: {
        const uint8_t *s = (const uint8_t *)source + first;
        for (size_t i = 0; i < count; ++i) q[i] = s[i];
        break;
    }
    case UFORM_SESSION_DTYPE_BOOL: {
        const uint8_t *s = (const uint8_t *)source + first;
        for (size_t i = 0; i < count; ++i) q[i] = s[i] != 0;
        break;
    }
    default: break;
    }
}

void uform__session_store(unsigned dtype, const void *reg, size_t count, void *target, size_t first) {
    const float *f = (const float *)reg;
    const int64_t *q = (const int64_t *)reg;
    switch (dtype) {
    case UFORM_SESSION_DTYPE_F32: memcpy((float *)target + first, f, count * 4); break;
    case UFORM_SESSION_DTYPE_F64: memcpy((double *)target + first, reg, count * 8); break;
    case UFORM_SESSION_DTYPE_F16: {
        uint16_t *t = (uint16_t *)target + first;
        for (size_t i = 0; i < count; ++i) t[i] = uform__session_f32_to_f16(f[i]);
        break;
    }
    case UFORM_SESSION_DTYPE_BF16: {
        uint16_t *t = (uint16_t *)target + first;
        for (size_t i = 0; i < count; ++i) t[i] = uform__session_f32_to_bf16(f[i]);
        break;
    }
    case UFORM_SESSION_DTYPE_I8: {
        int8_t *t = (int8_t *)target + first;
        for (size_t i = 0; i < count; ++i) t[i] = (int8_t)(uint8_t)q[i];
        break;
    }
    case UFORM_SESSION_DTYPE_I32: {
        int32_t *t = (int32_t *)target + first;
        for (size_t i = 0; i < count; ++i) t[i] = (int32_t)(uint32_t)q[i];
        break;
    }
    case UFORM_SESSION_DTYPE_I64: memcpy((int64_t *)target + first, q, count * 8); break;
    case UFORM_SESSION_DTYPE_U8:
    case UFORM_SESSION_DTYPE_BOOL: {
        uint8_t *t = (uint8_t *)target + first;
        for (size_t i = 0; i < count; ++i) t[i] = (uint8_t)q[i];
        break;
    }
    default: break;
    }
}
