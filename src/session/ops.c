/*
 * SINGLE steps: matmul, reductions, softmax, layer norm and the data movements (transpose,
 * broadcast, slice, concat). F32 work goes through the bound kernels (kernels.c); F16 and BF16
 * are widened to F32, computed there and rounded to nearest even on store; F64 runs its own
 * loops in binary64.
 */
#include <math.h>
#include <string.h>

#include "session/session.h"

static const uform__session_type_t *type_of(const uform__session_plan_t *plan, uint32_t value) {
    return &plan->ir.types[value];
}

/* Row-major strides of a type, in elements. */
static void strides_of(const uform__session_type_t *type, size_t *strides) {
    size_t stride = 1;
    for (unsigned axis = type->rank; axis-- > 0;) {
        strides[axis] = stride;
        stride *= type->dims[axis];
    }
}

/* dst (dense, dims `dims`) = src[base + Σ index[d] · strides[d]], element by element of `size` bytes. */
static void gather(unsigned char *dst, const unsigned char *src, size_t size, const uform__session_type_t *dims,
                   const size_t *strides, size_t base) {
    if (dims->rank == 0) { // a scalar
        memcpy(dst, src + base * size, size);
        return;
    }
    size_t index[UFORM_SESSION_MAX_RANK] = {0};
    unsigned rank = dims->rank, last = rank - 1u;
    size_t run = dims->dims[last], done = 0;
    while (done < dims->count) {
        size_t offset = base;
        for (unsigned axis = 0; axis < last; ++axis) offset += index[axis] * strides[axis];
        if (strides[last] == 1) memcpy(dst + done * size, src + offset * size, run * size);
        else
            for (size_t i = 0; i < run; ++i) memcpy(dst + (done + i) * size, src + (offset + i * strides[last]) * size, size);
        done += run;
        for (unsigned axis = last; axis-- > 0;) {
            if (++index[axis] < dims->dims[axis]) break;
            index[axis] = 0;
        }
    }
}

/* ---- matmul ------------------------------------------------------------------------------ */

typedef struct matmul_shape_t {
    size_t m, n, k, batch;
    int transpose_a, transpose_b;
} matmul_shape_t;

static matmul_shape_t matmul_shape(const uform__session_plan_t *plan, const uform__session_operation_t *op) {
    const uform__session_type_t *a = type_of(plan, op->operands[0]), *c = type_of(plan, op->result);
    matmul_shape_t shape;
    shape.transpose_a = (int)op->attributes[0];
    shape.transpose_b = (int)op->attributes[1];
    shape.m = c->dims[c->rank - 2];
    shape.n = c->dims[c->rank - 1];
    shape.k = shape.transpose_a ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
    shape.batch = c->count / (shape.m * shape.n);
    return shape;
}

/* Offsets (in matrices) of batch `b` of the result into an operand whose batch dims broadcast. */
static size_t batch_offset(const uform__session_type_t *operand, const uform__session_type_t *result, size_t b) {
    unsigned result_batch = result->rank - 2u, operand_batch = operand->rank - 2u;
    size_t offset = 0, stride = 1;
    for (unsigned axis = result_batch; axis-- > 0;) {
        size_t index = b % result->dims[axis];
        b /= result->dims[axis];
        if (axis + operand_batch >= result_batch) {
            size_t dim = operand->dims[axis + operand_batch - result_batch];
            if (dim != 1) offset += index * stride;
            stride *= dim;
        }
    }
    return offset;
}

/* Writes the [rows, cols] matrix op(src) in F32 into dst: src is [rows, cols] or, transposed,
 * [cols, rows]. Widens F16/BF16. */
static void matrix_f32(unsigned dtype, const void *src, size_t first, size_t rows, size_t cols, int transposed, float *dst,
                       float *row) {
    if (!transposed) {
        uform__session_load(dtype, src, first, rows * cols, dst);
        return;
    }
    for (size_t c = 0; c < cols; ++c) { // src row c holds column c of the result
        uform__session_load(dtype, src, first + c * rows, rows, row);
        for (size_t r = 0; r < rows; ++r) dst[r * cols + c] = row[r];
    }
}

static size_t matmul_workspace(const uform__session_plan_t *plan, const uform__session_operation_t *op) {
    matmul_shape_t s = matmul_shape(plan, op);
    unsigned dtype = type_of(plan, op->result)->dtype;
    if (dtype == UFORM_SESSION_DTYPE_F64) return 0;
    size_t longest = s.m > s.n ? s.m : s.n;
    return (s.m * s.k + s.n * s.k + s.m * s.n + longest) * sizeof(float) + 256u;
}

static uform_session_status_t matmul_run(const uform__session_plan_t *plan, const uform__session_step_t *step,
                                         const uform__session_operation_t *op, unsigned char *workspace) {
    const uform__session_type_t *a = type_of(plan, op->operands[0]), *b = type_of(plan, op->operands[1]);
    const uform__session_type_t *c = type_of(plan, op->result);
    matmul_shape_t s = matmul_shape(plan, op);
    const void *pa = plan->addresses[op->operands[0]], *pb = plan->addresses[op->operands[1]];
    int fused = step->epilogue_result != UINT32_MAX;
    void *pc = plan->addresses[fused ? step->epilogue_result : op->result];
    const float *bias = fused ? (const float *)plan->addresses[step->epilogue_bias] : NULL;
    unsigned dtype = c->dtype;
    size_t mk = s.m * s.k, nk = s.n * s.k, mn = s.m * s.n;
    for (size_t batch = 0; batch < s.batch; ++batch) {
        size_t oa = batch_offset(a, c, batch) * mk, ob = batch_offset(b, c, batch) * nk, oc = batch * mn;
        if (dtype == UFORM_SESSION_DTYPE_F64) {
            const double *da = (const double *)pa + oa, *db = (const double *)pb + ob;
            double *dc = (double *)pc + oc;
            for (size_t i = 0; i < s.m; ++i)
                for (size_t j = 0; j < s.n; ++j) {
                    double sum = 0.0;
                    for (size_t p = 0; p < s.k; ++p)
                        sum += (s.transpose_a ? da[p * s.m + i] : da[i * s.k + p]) *
                               (s.transpose_b ? db[j * s.k + p] : db[p * s.n + j]);
                    dc[i * s.n + j] = sum;
                }
            continue;
        }
        float *x = (float *)workspace, *w = x + mk, *y = w + nk, *row = y + mn;
        const float *xk = x, *wk = w;
        // The kernel takes X [m, k] and W [n, k]: F32 operands already in that layout are used in place.
        if (dtype == UFORM_SESSION_DTYPE_F32 && !s.transpose_a) xk = (const float *)pa + oa;
        else matrix_f32(dtype, pa, oa, s.m, s.k, s.transpose_a, x, row);
        if (dtype == UFORM_SESSION_DTYPE_F32 && s.transpose_b) wk = (const float *)pb + ob;
        else matrix_f32(dtype, pb, ob, s.n, s.k, !s.transpose_b, w, row);
        float *yk = dtype == UFORM_SESSION_DTYPE_F32 ? (float *)pc + oc : y;
        int refused = plan->kernels.matmul_f32(&plan->kernels, s.m, s.n, s.k, xk, s.k, wk, s.k, yk, s.n, bias, step->epilogue_gelu);
        if (refused)
            return refused == UFORM__SESSION_KERNEL_OUT_OF_MEMORY ? UFORM_SESSION_OUT_OF_MEMORY : UFORM_SESSION_LAUNCH_FAILED;
        if (dtype != UFORM_SESSION_DTYPE_F32) uform__session_store(dtype, y, mn, pc, oc);
    }
    return UFORM_SESSION_OK;
}

/* ---- reductions -------------------------------------------------------------------------- */

static size_t reduce_workspace(const uform__session_plan_t *plan, const uform__session_operation_t *op) {
    const uform__session_type_t *x = type_of(plan, op->operands[0]), *y = type_of(plan, op->result);
    return (y->count + x->dims[x->rank - 1]) * 8u;
}

static void reduce_run(const uform__session_plan_t *plan, const uform__session_operation_t *op, unsigned char *workspace) {
    const uform__session_type_t *x = type_of(plan, op->operands[0]), *y = type_of(plan, op->result);
    unsigned opcode = op->opcode, dtype = x->dtype, klass = uform__session_dtype_class(dtype);
    unsigned reduced = 0;
    for (uint32_t i = 1; i < op->attribute_count; ++i) reduced |= 1u << op->attributes[i];
    // Output strides over the input's axes: 0 along reduced axes.
    size_t out_strides[UFORM_SESSION_MAX_RANK], stride = 1, reduced_count = 1;
    for (unsigned axis = x->rank; axis-- > 0;) {
        if (reduced & (1u << axis)) {
            out_strides[axis] = 0;
            reduced_count *= x->dims[axis];
        } else {
            out_strides[axis] = stride;
            stride *= x->dims[axis];
        }
    }
    double *acc_f = (double *)workspace;
    int64_t *acc_q = (int64_t *)workspace;
    unsigned char *row = workspace + y->count * 8u;
    int is_int = klass == UFORM__SESSION_CLASS_INT;
    for (size_t i = 0; i < y->count; ++i) {
        if (opcode == UFORM_SESSION_OP_REDUCE_MAX) {
            if (is_int) acc_q[i] = INT64_MIN;
            else acc_f[i] = -INFINITY;
        } else if (opcode == UFORM_SESSION_OP_REDUCE_MIN) {
            if (is_int) acc_q[i] = INT64_MAX;
            else acc_f[i] = INFINITY;
        } else {
            if (is_int) acc_q[i] = 0;
            else acc_f[i] = 0.0;
        }
    }
    unsigned last = x->rank - 1u;
    size_t run = x->dims[last], index[UFORM_SESSION_MAX_RANK] = {0};
    for (size_t done = 0; done < x->count; done += run) {
        size_t base = 0;
        for (unsigned axis = 0; axis < last; ++axis) base += index[axis] * out_strides[axis];
        uform__session_load(dtype, plan->addresses[op->operands[0]], done, run, row);
        size_t step = out_strides[last];
        for (size_t i = 0; i < run; ++i) {
            size_t o = base + i * step;
            if (is_int) {
                int64_t v = ((const int64_t *)row)[i];
                if (opcode == UFORM_SESSION_OP_REDUCE_SUM) acc_q[o] = (int64_t)((uint64_t)acc_q[o] + (uint64_t)v);
                else if (opcode == UFORM_SESSION_OP_REDUCE_MAX) acc_q[o] = v > acc_q[o] ? v : acc_q[o];
                else acc_q[o] = v < acc_q[o] ? v : acc_q[o];
            } else {
                double v = klass == UFORM__SESSION_CLASS_F32 ? ((const float *)row)[i] : ((const double *)row)[i];
                if (opcode == UFORM_SESSION_OP_REDUCE_SUM || opcode == UFORM_SESSION_OP_REDUCE_MEAN) acc_f[o] += v;
                else if (opcode == UFORM_SESSION_OP_REDUCE_MAX) acc_f[o] = (v > acc_f[o] || v != v) ? v : acc_f[o];
                else acc_f[o] = (v < acc_f[o] || v != v) ? v : acc_f[o];
            }
        }
        for (unsigned axis = last; axis-- > 0;) {
            if (++index[axis] < x->dims[axis]) break;
            index[axis] = 0;
        }
    }
    void *out = plan->addresses[op->result];
    if (is_int) {
        uform__session_store(dtype, acc_q, y->count, out, 0);
        return;
    }
    for (size_t i = 0; i < y->count; ++i) {
        double v = opcode == UFORM_SESSION_OP_REDUCE_MEAN ? acc_f[i] / (double)reduced_count : acc_f[i];
        if (klass == UFORM__SESSION_CLASS_F32) {
            float f = uform__session_narrow(v, dtype);
            uform__session_store(dtype, &f, 1, out, i);
        } else {
            ((double *)out)[i] = v;
        }
    }
}

/* ---- softmax and layer norm -------------------------------------------------------------- */

static void split_axis(const uform__session_type_t *x, unsigned axis, size_t *outer, size_t *n, size_t *inner) {
    *outer = 1, *inner = 1;
    for (unsigned d = 0; d < axis; ++d) *outer *= x->dims[d];
    for (unsigned d = axis + 1; d < x->rank; ++d) *inner *= x->dims[d];
    *n = x->dims[axis];
}

static size_t softmax_workspace(const uform__session_plan_t *plan, const uform__session_operation_t *op) {
    const uform__session_type_t *x = type_of(plan, op->operands[0]);
    return x->dims[op->attributes[0]] * 16u + 64u;
}

/* softmax(x)_j = exp(x_j − max x) / Σ exp(x_i − max x) along the axis (torch.softmax). */
static void softmax_run(const uform__session_plan_t *plan, const uform__session_operation_t *op, unsigned char *workspace) {
    const uform__session_type_t *x = type_of(plan, op->operands[0]);
    size_t outer, n, inner;
    split_axis(x, (unsigned)op->attributes[0], &outer, &n, &inner);
    const void *src = plan->addresses[op->operands[0]];
    void *dst = plan->addresses[op->result];
    if (x->dtype == UFORM_SESSION_DTYPE_F32 && inner == 1) {
        plan->kernels.softmax_f32(&plan->kernels, outer, n, (const float *)src, (float *)dst);
        return;
    }
    int wide = x->dtype == UFORM_SESSION_DTYPE_F64;
    double *row = (double *)workspace;
    unsigned char *reg = workspace + n * 8u;
    for (size_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < inner; ++i) {
            double high = -INFINITY, sum = 0.0;
            for (size_t j = 0; j < n; ++j) {
                uform__session_load(x->dtype, src, (o * n + j) * inner + i, 1, reg);
                row[j] = wide ? *(double *)reg : (double)*(float *)reg;
                if (row[j] > high || row[j] != row[j]) high = row[j];
            }
            for (size_t j = 0; j < n; ++j) sum += row[j] = exp(row[j] - high);
            for (size_t j = 0; j < n; ++j) {
                double v = row[j] / sum;
                if (wide) *(double *)reg = v;
                else *(float *)reg = uform__session_narrow(v, x->dtype);
                uform__session_store(x->dtype, reg, 1, dst, (o * n + j) * inner + i);
            }
        }
}

static size_t layer_norm_workspace(const uform__session_plan_t *plan, const uform__session_operation_t *op) {
    const uform__session_type_t *x = type_of(plan, op->operands[0]);
    size_t outer, n, inner;
    split_axis(x, (unsigned)op->attributes[0], &outer, &n, &inner);
    n *= inner;
    return (n * 5u + outer * 2u) * 8u + 256u;
}

static void layer_norm_run(const uform__session_plan_t *plan, const uform__session_operation_t *op,
                           unsigned char *workspace) {
    const uform__session_type_t *x = type_of(plan, op->operands[0]);
    size_t rows, n, inner;
    split_axis(x, (unsigned)op->attributes[0], &rows, &n, &inner);
    n *= inner;
    double eps;
    memcpy(&eps, &op->attributes[1], sizeof eps);
    const void *src = plan->addresses[op->operands[0]];
    const void *weight = op->operand_count > 1 ? plan->addresses[op->operands[1]] : NULL;
    const void *bias = op->operand_count > 2 ? plan->addresses[op->operands[2]] : NULL;
    void *dst = plan->addresses[op->result];
    if (x->dtype == UFORM_SESSION_DTYPE_F32) {
        float *ones = (float *)workspace, *zeros = ones + n, *mean = zeros + n, *rstd = mean + rows;
        if (!weight)
            for (size_t i = 0; i < n; ++i) ones[i] = 1.0f;
        if (!bias) memset(zeros, 0, n * sizeof(float));
        plan->kernels.layer_norm_f32(&plan->kernels, rows, n, (const float *)src, weight ? (const float *)weight : ones,
                                     bias ? (const float *)bias : zeros, (float)eps, (float *)dst, mean, rstd);
        return;
    }
    // F64, F16, BF16: rows widened to binary64, statistics in binary64, rounded on store.
    int wide = x->dtype == UFORM_SESSION_DTYPE_F64;
    double *w = (double *)workspace, *b = w + n, *row = b + n;
    unsigned char *reg = (unsigned char *)(row + n);
    for (size_t j = 0; j < n; ++j) {
        w[j] = 1.0, b[j] = 0.0;
        if (weight) {
            uform__session_load(x->dtype, weight, j, 1, reg);
            w[j] = wide ? *(double *)reg : *(float *)reg;
        }
        if (bias) {
            uform__session_load(x->dtype, bias, j, 1, reg);
            b[j] = wide ? *(double *)reg : *(float *)reg;
        }
    }
    for (size_t r = 0; r < rows; ++r) {
        uform__session_load(x->dtype, src, r * n, n, reg);
        double mean = 0.0, variance = 0.0;
        for (size_t j = 0; j < n; ++j) mean += row[j] = wide ? ((double *)reg)[j] : ((float *)reg)[j];
        mean /= (double)n;
        for (size_t j = 0; j < n; ++j) variance += (row[j] - mean) * (row[j] - mean);
        double rstd = 1.0 / sqrt(variance / (double)n + eps);
        for (size_t j = 0; j < n; ++j) {
            double v = (row[j] - mean) * rstd * w[j] + b[j];
            if (wide) ((double *)reg)[j] = v;
            else ((float *)reg)[j] = uform__session_narrow(v, x->dtype);
        }
        uform__session_store(x->dtype, reg, n, dst, r * n);
    }
}

/* ---- data movement ----------------------------------------------------------------------- */

static void movement_run(const uform__session_plan_t *plan, const uform__session_operation_t *op) {
    const uform__session_type_t *x = type_of(plan, op->operands[0]), *y = type_of(plan, op->result);
    size_t size = uform__session_dtype_size(x->dtype), xs[UFORM_SESSION_MAX_RANK], strides[UFORM_SESSION_MAX_RANK];
    size_t base = 0;
    strides_of(x, xs);
    unsigned char *dst = (unsigned char *)plan->addresses[op->result];
    const unsigned char *src = (const unsigned char *)plan->addresses[op->operands[0]];
    switch (op->opcode) {
    case UFORM_SESSION_OP_TRANSPOSE:
        for (unsigned axis = 0; axis < y->rank; ++axis) strides[axis] = xs[op->attributes[axis]];
        break;
    case UFORM_SESSION_OP_BROADCAST:
        for (unsigned axis = 0; axis < y->rank; ++axis) {
            unsigned offset = y->rank - x->rank;
            strides[axis] = axis < offset || x->dims[axis - offset] == 1 ? 0 : xs[axis - offset];
        }
        break;
    case UFORM_SESSION_OP_SLICE:
        for (unsigned axis = 0; axis < y->rank; ++axis) {
            base += (size_t)op->attributes[3 * axis] * xs[axis];
            strides[axis] = (size_t)op->attributes[3 * axis + 2] * xs[axis];
        }
        break;
    case UFORM_SESSION_OP_CONCAT: {
        size_t outer, n, inner, placed = 0;
        unsigned axis = (unsigned)op->attributes[0];
        split_axis(y, axis, &outer, &n, &inner);
        for (uint32_t j = 0; j < op->operand_count; ++j) {
            const uform__session_type_t *part = type_of(plan, op->operands[j]);
            const unsigned char *from = (const unsigned char *)plan->addresses[op->operands[j]];
            size_t chunk = part->dims[axis] * inner * size;
            for (size_t o = 0; o < outer; ++o) memcpy(dst + (o * n + placed) * inner * size, from + o * chunk, chunk);
            placed += part->dims[axis];
        }
        return;
    }
    default: return;
    }
    gather(dst, src, size, y, strides, base);
}

/* ---- dispatch ---------------------------------------------------------------------------- */

size_t uform__session_single_workspace(const uform__session_plan_t *plan, const uform__session_operation_t *op) {
    switch (op->opcode) {
    case UFORM_SESSION_OP_MATMUL: return matmul_workspace(plan, op);
    case UFORM_SESSION_OP_REDUCE_SUM:
    case UFORM_SESSION_OP_REDUCE_MAX:
    case UFORM_SESSION_OP_REDUCE_MIN:
    case UFORM_SESSION_OP_REDUCE_MEAN: return reduce_workspace(plan, op);
    case UFORM_SESSION_OP_SOFTMAX: return softmax_workspace(plan, op);
    case UFORM_SESSION_OP_LAYER_NORM: return layer_norm_workspace(plan, op);
    default: return 0;
    }
}

uform_session_status_t uform__session_single_run(const uform__session_plan_t *plan, const uform__session_step_t *step,
                                                 unsigned char *workspace) {
    const uform__session_operation_t *op = &plan->ir.operations[step->operation];
    switch (op->opcode) {
    case UFORM_SESSION_OP_MATMUL: return matmul_run(plan, step, op, workspace);
    case UFORM_SESSION_OP_REDUCE_SUM:
    case UFORM_SESSION_OP_REDUCE_MAX:
    case UFORM_SESSION_OP_REDUCE_MIN:
    case UFORM_SESSION_OP_REDUCE_MEAN: reduce_run(plan, op, workspace); break;
    case UFORM_SESSION_OP_SOFTMAX: softmax_run(plan, op, workspace); break;
    case UFORM_SESSION_OP_LAYER_NORM: layer_norm_run(plan, op, workspace); break;
    default: movement_run(plan, op); break;
    }
    return UFORM_SESSION_OK;
}
