/*
 * FUSED steps: a chain of elementwise operations over one set of result dims, run block by block.
 * Each block of BLOCK (512) elements loads the chain's outside operands into registers
 * (broadcast NumPy-style to the chain's dims), applies every member in program order and stores
 * only the members whose values are read elsewhere. After each member its register is rounded to
 * the member's dtype (F16/BF16 round to nearest even, small integers wrap), so a fused chain gives
 * bit for bit what the same operations give one at a time.
 *
 * Registers: `float` for F32/F16/BF16, `double` for F64, `int64_t` for integers and BOOL.
 */
#include <math.h>
#include <string.h>

#include "session/session.h"

/* The block loops below are plain maps over arrays of 256; GCC's -O2 cost model ("very cheap")
 * leaves them scalar, so this file asks for the -O3 vectoriser (no fast-math: results are the
 * same bits, only several lanes at a time). Clang vectorises them at -O2 already. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#define BLOCK 512

static size_t register_size(unsigned dtype) { return uform__session_dtype_class(dtype) == UFORM__SESSION_CLASS_F32 ? 4u : 8u; }

size_t uform__session_fused_workspace(const uform__session_plan_t *plan, const uform__session_step_t *step) {
    return (size_t)step->register_count * BLOCK * 8u + (size_t)step->load_count * UFORM_SESSION_MAX_RANK * sizeof(size_t) +
           (size_t)step->register_count * sizeof(void *);
}

/* Non-zero (the element size) when a dtype's storage is its register layout (F32, F64, I64), so
 * a block can be read from, or computed into, the value's own memory without a copy. */
static size_t in_place(unsigned dtype) {
    return dtype == UFORM_SESSION_DTYPE_F32 ? 4u : dtype == UFORM_SESSION_DTYPE_F64 || dtype == UFORM_SESSION_DTYPE_I64 ? 8u : 0u;
}

/* Elements [start, start + length) of the chain's dims read from `source` (dims `type`,
 * broadcast): a pointer into `source` itself when the block is one contiguous run of a dtype
 * stored as its register, otherwise `reg` after loading (converting, broadcasting) into it. */
static const void *load_block(const uform__session_type_t *type, const void *source, const uform__session_type_t *dims,
                              const size_t *strides, size_t start, size_t length, unsigned char *reg) {
    size_t element = register_size(type->dtype), direct = in_place(type->dtype);
    if (type->count == dims->count) { // equal counts that broadcast means the same linear order
        if (direct) return (const unsigned char *)source + start * direct;
        uform__session_load(type->dtype, source, start, length, reg);
        return reg;
    }
    if (type->count == 1) {
        uform__session_load(type->dtype, source, 0, 1, reg);
        for (size_t i = 1; i < length; ++i) memcpy(reg + i * element, reg, element);
        return reg;
    }
    size_t index[UFORM_SESSION_MAX_RANK], rest = start;
    unsigned rank = dims->rank, last = rank - 1u;
    for (unsigned axis = rank; axis-- > 0;) {
        index[axis] = rest % dims->dims[axis];
        rest /= dims->dims[axis];
    }
    if (direct && strides[last] == 1 && index[last] + length <= dims->dims[last]) { // one run, e.g. a bias row
        size_t offset = 0;
        for (unsigned axis = 0; axis < rank; ++axis) offset += index[axis] * strides[axis];
        return (const unsigned char *)source + offset * direct;
    }
    size_t done = 0;
    while (done < length) {
        size_t offset = 0;
        for (unsigned axis = 0; axis < rank; ++axis) offset += index[axis] * strides[axis];
        size_t run = dims->dims[last] - index[last];
        if (run > length - done) run = length - done;
        unsigned char *target = reg + done * element;
        if (strides[last] == 1) uform__session_load(type->dtype, source, offset, run, target);
        else {
            uform__session_load(type->dtype, source, offset, 1, target);
            for (size_t i = 1; i < run; ++i) memcpy(target + i * element, target, element);
        }
        done += run;
        index[last] += run;
        for (unsigned axis = last; axis > 0 && index[axis] == dims->dims[axis]; --axis) {
            index[axis] = 0;
            ++index[axis - 1];
        }
    }
    return reg;
}

/* torch.maximum / torch.minimum: NaN propagates, and between equal values (0 and −0) the first
 * operand is kept. */
static float max_f32(float a, float b) { return a != a ? a : b != b ? b : a < b ? b : a; }
static float min_f32(float a, float b) { return a != a ? a : b != b ? b : b < a ? b : a; }
static double max_f64(double a, double b) { return a != a ? a : b != b ? b : a < b ? b : a; }
static double min_f64(double a, double b) { return a != a ? a : b != b ? b : b < a ? b : a; }

static void unary_f32(const uform__session_kernels_t *kernels, unsigned opcode, const float *x, float *y, size_t n) {
    switch (opcode) {
    case UFORM_SESSION_OP_NEG: for (size_t i = 0; i < n; ++i) y[i] = -x[i]; break;
    case UFORM_SESSION_OP_ABS: for (size_t i = 0; i < n; ++i) y[i] = fabsf(x[i]); break;
    case UFORM_SESSION_OP_EXP: for (size_t i = 0; i < n; ++i) y[i] = expf(x[i]); break;
    case UFORM_SESSION_OP_LOG: for (size_t i = 0; i < n; ++i) y[i] = logf(x[i]); break;
    case UFORM_SESSION_OP_SQRT: for (size_t i = 0; i < n; ++i) y[i] = sqrtf(x[i]); break;
    case UFORM_SESSION_OP_RSQRT: for (size_t i = 0; i < n; ++i) y[i] = 1.0f / sqrtf(x[i]); break;
    case UFORM_SESSION_OP_TANH: for (size_t i = 0; i < n; ++i) y[i] = tanhf(x[i]); break;
    case UFORM_SESSION_OP_ERF: for (size_t i = 0; i < n; ++i) y[i] = erff(x[i]); break;
    case UFORM_SESSION_OP_SIGMOID: for (size_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-x[i])); break;
    case UFORM_SESSION_OP_RELU: for (size_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i]; break;
    case UFORM_SESSION_OP_GELU: kernels->gelu_f32(kernels, n, x, y); break;
    default: break;
    }
}

static void unary_f64(unsigned opcode, const double *x, double *y, size_t n) {
    switch (opcode) {
    case UFORM_SESSION_OP_NEG: for (size_t i = 0; i < n; ++i) y[i] = -x[i]; break;
    case UFORM_SESSION_OP_ABS: for (size_t i = 0; i < n; ++i) y[i] = fabs(x[i]); break;
    case UFORM_SESSION_OP_EXP: for (size_t i = 0; i < n; ++i) y[i] = exp(x[i]); break;
    case UFORM_SESSION_OP_LOG: for (size_t i = 0; i < n; ++i) y[i] = log(x[i]); break;
    case UFORM_SESSION_OP_SQRT: for (size_t i = 0; i < n; ++i) y[i] = sqrt(x[i]); break;
    case UFORM_SESSION_OP_RSQRT: for (size_t i = 0; i < n; ++i) y[i] = 1.0 / sqrt(x[i]); break;
    case UFORM_SESSION_OP_TANH: for (size_t i = 0; i < n; ++i) y[i] = tanh(x[i]); break;
    case UFORM_SESSION_OP_ERF: for (size_t i = 0; i < n; ++i) y[i] = erf(x[i]); break;
    case UFORM_SESSION_OP_SIGMOID: for (size_t i = 0; i < n; ++i) y[i] = 1.0 / (1.0 + exp(-x[i])); break;
    case UFORM_SESSION_OP_RELU: for (size_t i = 0; i < n; ++i) y[i] = x[i] < 0.0 ? 0.0 : x[i]; break;
    case UFORM_SESSION_OP_GELU:
        for (size_t i = 0; i < n; ++i) y[i] = 0.5 * x[i] * (1.0 + erf(x[i] * 0.70710678118654752440));
        break;
    default: break;
    }
}

static int64_t wrap_neg(int64_t a) { return (int64_t)(0u - (uint64_t)a); }

static void unary_int(unsigned opcode, const int64_t *x, int64_t *y, size_t n) {
    switch (opcode) {
    case UFORM_SESSION_OP_NEG: for (size_t i = 0; i < n; ++i) y[i] = wrap_neg(x[i]); break;
    case UFORM_SESSION_OP_ABS: for (size_t i = 0; i < n; ++i) y[i] = x[i] < 0 ? wrap_neg(x[i]) : x[i]; break;
    case UFORM_SESSION_OP_RELU: for (size_t i = 0; i < n; ++i) y[i] = x[i] < 0 ? 0 : x[i]; break;
    default: break;
    }
}

/* The floating-point binary operations, one body for both register types (`type`), calling that
 * type's maximum, minimum and power. Each case stays a plain loop over arrays so the vectoriser
 * sees the same code it saw when the two were written out. */
#define DEFINE_BINARY_FLOAT(name, type, max, min, power)                                               \
    static void name(unsigned opcode, const type *a, const type *b, type *y, size_t n) {               \
        switch (opcode) {                                                                              \
        case UFORM_SESSION_OP_ADD: for (size_t i = 0; i < n; ++i) y[i] = a[i] + b[i]; break;           \
        case UFORM_SESSION_OP_SUB: for (size_t i = 0; i < n; ++i) y[i] = a[i] - b[i]; break;           \
        case UFORM_SESSION_OP_MUL: for (size_t i = 0; i < n; ++i) y[i] = a[i] * b[i]; break;           \
        case UFORM_SESSION_OP_DIV: for (size_t i = 0; i < n; ++i) y[i] = a[i] / b[i]; break;           \
        case UFORM_SESSION_OP_MAX: for (size_t i = 0; i < n; ++i) y[i] = max(a[i], b[i]); break;       \
        case UFORM_SESSION_OP_MIN: for (size_t i = 0; i < n; ++i) y[i] = min(a[i], b[i]); break;       \
        case UFORM_SESSION_OP_POW: for (size_t i = 0; i < n; ++i) y[i] = power(a[i], b[i]); break;     \
        default: break;                                                                                \
        }                                                                                              \
    }
DEFINE_BINARY_FLOAT(binary_f32, float, max_f32, min_f32, powf)
DEFINE_BINARY_FLOAT(binary_f64, double, max_f64, min_f64, pow)
#undef DEFINE_BINARY_FLOAT

/* Integer arithmetic wraps (computed on uint64_t, then narrowed by the caller's rounding);
 * division truncates toward zero, x / 0 is 0 and MIN / -1 wraps to MIN. */
static void binary_int(unsigned opcode, const int64_t *a, const int64_t *b, int64_t *y, size_t n) {
    switch (opcode) {
    case UFORM_SESSION_OP_ADD: for (size_t i = 0; i < n; ++i) y[i] = (int64_t)((uint64_t)a[i] + (uint64_t)b[i]); break;
    case UFORM_SESSION_OP_SUB: for (size_t i = 0; i < n; ++i) y[i] = (int64_t)((uint64_t)a[i] - (uint64_t)b[i]); break;
    case UFORM_SESSION_OP_MUL: for (size_t i = 0; i < n; ++i) y[i] = (int64_t)((uint64_t)a[i] * (uint64_t)b[i]); break;
    case UFORM_SESSION_OP_DIV:
        for (size_t i = 0; i < n; ++i) y[i] = b[i] == 0 ? 0 : b[i] == -1 ? wrap_neg(a[i]) : a[i] / b[i];
        break;
    case UFORM_SESSION_OP_MAX: for (size_t i = 0; i < n; ++i) y[i] = a[i] > b[i] ? a[i] : b[i]; break;
    case UFORM_SESSION_OP_MIN: for (size_t i = 0; i < n; ++i) y[i] = a[i] < b[i] ? a[i] : b[i]; break;
    default: break;
    }
}

/* Comparisons into 0 / 1 registers, one body for the three register types (`type`). Floating
 * point follows IEEE: every comparison with NaN is false except NE. */
#define DEFINE_COMPARE(name, type)                                                                     \
    static void name(unsigned opcode, const type *a, const type *b, int64_t *y, size_t n) {            \
        switch (opcode) {                                                                              \
        case UFORM_SESSION_OP_EQ: for (size_t i = 0; i < n; ++i) y[i] = a[i] == b[i]; break;           \
        case UFORM_SESSION_OP_NE: for (size_t i = 0; i < n; ++i) y[i] = a[i] != b[i]; break;           \
        case UFORM_SESSION_OP_LT: for (size_t i = 0; i < n; ++i) y[i] = a[i] < b[i]; break;            \
        case UFORM_SESSION_OP_LE: for (size_t i = 0; i < n; ++i) y[i] = a[i] <= b[i]; break;           \
        case UFORM_SESSION_OP_GT: for (size_t i = 0; i < n; ++i) y[i] = a[i] > b[i]; break;            \
        case UFORM_SESSION_OP_GE: for (size_t i = 0; i < n; ++i) y[i] = a[i] >= b[i]; break;           \
        default: break;                                                                                \
        }                                                                                              \
    }
DEFINE_COMPARE(compare_float, float)
DEFINE_COMPARE(compare_double, double)
DEFINE_COMPARE(compare_int64_t, int64_t)
#undef DEFINE_COMPARE

/* Float to integer: NaN gives 0, otherwise truncation toward zero saturated to the dtype. */
static int64_t float_to_integer(double value, unsigned dtype) {
    double low, high;
    int64_t low_int, high_int;
    switch (dtype) {
    case UFORM_SESSION_DTYPE_I8: low = -128.0, high = 127.0, low_int = -128, high_int = 127; break;
    case UFORM_SESSION_DTYPE_I32: low = -2147483648.0, high = 2147483647.0, low_int = INT32_MIN, high_int = INT32_MAX; break;
    case UFORM_SESSION_DTYPE_U8: low = 0.0, high = 255.0, low_int = 0, high_int = 255; break;
    case UFORM_SESSION_DTYPE_BOOL: return value != 0.0;
    default: low = -9223372036854775808.0, high = 9223372036854775808.0, low_int = INT64_MIN, high_int = INT64_MAX; break;
    }
    if (value != value) return 0;
    if (value <= low) return low_int;
    if (value >= high) return high_int;
    return (int64_t)value;
}

static void convert(unsigned from, unsigned to, const void *x, void *y, size_t n) {
    unsigned from_class = uform__session_dtype_class(from), to_class = uform__session_dtype_class(to);
    const float *xf = (const float *)x;
    const double *xd = (const double *)x;
    const int64_t *xq = (const int64_t *)x;
    float *yf = (float *)y;
    double *yd = (double *)y;
    int64_t *yq = (int64_t *)y;
    for (size_t i = 0; i < n; ++i) {
        switch (from_class * 3u + to_class) {
        case UFORM__SESSION_CLASS_F32 * 3u + UFORM__SESSION_CLASS_F32: yf[i] = xf[i]; break;
        case UFORM__SESSION_CLASS_F32 * 3u + UFORM__SESSION_CLASS_F64: yd[i] = xf[i]; break;
        case UFORM__SESSION_CLASS_F32 * 3u + UFORM__SESSION_CLASS_INT: yq[i] = float_to_integer(xf[i], to); break;
        case UFORM__SESSION_CLASS_F64 * 3u + UFORM__SESSION_CLASS_F32: yf[i] = uform__session_narrow(xd[i], to); break;
        case UFORM__SESSION_CLASS_F64 * 3u + UFORM__SESSION_CLASS_F64: yd[i] = xd[i]; break;
        case UFORM__SESSION_CLASS_F64 * 3u + UFORM__SESSION_CLASS_INT: yq[i] = float_to_integer(xd[i], to); break;
        case UFORM__SESSION_CLASS_INT * 3u + UFORM__SESSION_CLASS_F32: yf[i] = uform__session_narrow((double)xq[i], to); break;
        case UFORM__SESSION_CLASS_INT * 3u + UFORM__SESSION_CLASS_F64: yd[i] = (double)xq[i]; break;
        default: yq[i] = to == UFORM_SESSION_DTYPE_BOOL ? xq[i] != 0 : xq[i]; break;
        }
    }
}

/* Rounds a register to its dtype: what storing and reloading it would give. */
static void round_to_dtype(unsigned dtype, void *reg, size_t n) {
    float *f = (float *)reg;
    int64_t *q = (int64_t *)reg;
    switch (dtype) {
    case UFORM_SESSION_DTYPE_F16: for (size_t i = 0; i < n; ++i) f[i] = uform__session_f16_to_f32(uform__session_f32_to_f16(f[i])); break;
    case UFORM_SESSION_DTYPE_BF16: for (size_t i = 0; i < n; ++i) f[i] = uform__session_bf16_to_f32(uform__session_f32_to_bf16(f[i])); break;
    case UFORM_SESSION_DTYPE_I8: for (size_t i = 0; i < n; ++i) q[i] = (int8_t)(uint8_t)q[i]; break;
    case UFORM_SESSION_DTYPE_I32: for (size_t i = 0; i < n; ++i) q[i] = (int32_t)(uint32_t)q[i]; break;
    case UFORM_SESSION_DTYPE_U8: for (size_t i = 0; i < n; ++i) q[i] = (uint8_t)q[i]; break;
    case UFORM_SESSION_DTYPE_BOOL: for (size_t i = 0; i < n; ++i) q[i] = q[i] != 0; break;
    default: break;
    }
}

static void apply(const uform__session_kernels_t *kernels, const uform__session_operation_t *op, unsigned result_dtype,
                  unsigned operand_dtype, void *const *operands, void *result, size_t n) {
    unsigned opcode = op->opcode, klass = uform__session_dtype_class(operand_dtype);
    if (uform__session_is_unary(opcode)) {
        if (klass == UFORM__SESSION_CLASS_F32) unary_f32(kernels, opcode, (const float *)operands[0], (float *)result, n);
        else if (klass == UFORM__SESSION_CLASS_F64) unary_f64(opcode, (const double *)operands[0], (double *)result, n);
        else unary_int(opcode, (const int64_t *)operands[0], (int64_t *)result, n);
    } else if (uform__session_is_binary(opcode)) {
        if (klass == UFORM__SESSION_CLASS_F32)
            binary_f32(opcode, (const float *)operands[0], (const float *)operands[1], (float *)result, n);
        else if (klass == UFORM__SESSION_CLASS_F64)
            binary_f64(opcode, (const double *)operands[0], (const double *)operands[1], (double *)result, n);
        else binary_int(opcode, (const int64_t *)operands[0], (const int64_t *)operands[1], (int64_t *)result, n);
    } else if (uform__session_is_compare(opcode)) {
        if (klass == UFORM__SESSION_CLASS_F32)
            compare_float(opcode, (const float *)operands[0], (const float *)operands[1], (int64_t *)result, n);
        else if (klass == UFORM__SESSION_CLASS_F64)
            compare_double(opcode, (const double *)operands[0], (const double *)operands[1], (int64_t *)result, n);
        else compare_int64_t(opcode, (const int64_t *)operands[0], (const int64_t *)operands[1], (int64_t *)result, n);
    } else if (opcode == UFORM_SESSION_OP_SELECT) {
        const int64_t *condition = (const int64_t *)operands[0];
        size_t size = register_size(result_dtype);
        const unsigned char *a = (const unsigned char *)operands[1], *b = (const unsigned char *)operands[2];
        unsigned char *y = (unsigned char *)result;
        if (size == 4)
            for (size_t i = 0; i < n; ++i) ((float *)y)[i] = condition[i] ? ((const float *)a)[i] : ((const float *)b)[i];
        else
            for (size_t i = 0; i < n; ++i) ((int64_t *)y)[i] = condition[i] ? ((const int64_t *)a)[i] : ((const int64_t *)b)[i];
    } else if (opcode == UFORM_SESSION_OP_CONVERT) {
        convert(operand_dtype, result_dtype, operands[0], result, n);
    }
    round_to_dtype(result_dtype, result, n);
}

void uform__session_fused_run(const uform__session_plan_t *plan, const uform__session_step_t *step,
                              unsigned char *workspace) {
    const uform__session_ir_t *ir = &plan->ir;
    const uform__session_type_t *dims = &ir->types[ir->operations[step->fused[0].operation].result];
    unsigned char *registers = workspace;
    size_t *strides = (size_t *)(workspace + (size_t)step->register_count * BLOCK * 8u);
    void **pointers = (void **)(strides + (size_t)step->load_count * UFORM_SESSION_MAX_RANK); // each register's block
    // Strides of each outside operand over the chain's dims: 0 along broadcast axes.
    for (uint32_t l = 0; l < step->load_count; ++l) {
        const uform__session_type_t *type = &ir->types[step->loads[l].value];
        size_t *s = strides + (size_t)l * UFORM_SESSION_MAX_RANK, stride = 1;
        for (unsigned axis = dims->rank; axis-- > 0;) {
            unsigned offset = dims->rank - type->rank;
            if (axis < offset || type->dims[axis - offset] == 1) s[axis] = 0;
            else {
                s[axis] = stride;
                stride *= type->dims[axis - offset];
            }
        }
    }
    for (size_t start = 0; start < dims->count; start += BLOCK) {
        size_t length = dims->count - start < BLOCK ? dims->count - start : BLOCK;
        for (uint32_t l = 0; l < step->load_count; ++l) {
            uint32_t v = step->loads[l].value, reg = step->loads[l].reg;
            pointers[reg] = (void *)load_block(&ir->types[v], plan->addresses[v], dims,
                                               strides + (size_t)l * UFORM_SESSION_MAX_RANK, start, length,
                                               registers + (size_t)reg * BLOCK * 8u);
        }
        for (uint32_t m = 0; m < step->fused_count; ++m) {
            const uform__session_fused_op_t *member = &step->fused[m];
            const uform__session_operation_t *op = &ir->operations[member->operation];
            void *operands[3] = {NULL, NULL, NULL};
            for (uint32_t j = 0; j < op->operand_count && j < 3; ++j) operands[j] = pointers[member->operand_registers[j]];
            unsigned operand_dtype = ir->types[op->operands[op->opcode == UFORM_SESSION_OP_SELECT ? 1 : 0]].dtype;
            unsigned result_dtype = ir->types[op->result].dtype;
            // A stored result whose storage is its register layout is computed straight into its memory
            // (a fresh buffer: no operand of this step can overlap it).
            size_t direct = member->store ? in_place(result_dtype) : 0;
            void *result = direct ? (unsigned char *)plan->addresses[op->result] + start * direct
                                  : registers + (size_t)member->result_register * BLOCK * 8u;
            pointers[member->result_register] = result;
            apply(&plan->kernels, op, result_dtype, operand_dtype, operands, result, length);
            if (member->store && !direct) uform__session_store(result_dtype, result, length, plan->addresses[op->result], start);
        }
    }
}
