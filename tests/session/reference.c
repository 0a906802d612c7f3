/*
 * The reference evaluator (see reference.h). Written for clarity, not speed: every operation
 * walks its result's multi-indices and computes each element from the definition.
 */
#include "session/reference.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uform/uform.h"

int ref_is_float(int dtype) {
    return dtype == UFORM_SESSION_DTYPE_F32 || dtype == UFORM_SESSION_DTYPE_F64 || dtype == UFORM_SESSION_DTYPE_F16 ||
           dtype == UFORM_SESSION_DTYPE_BF16;
}

size_t ref_dtype_size(int dtype) {
    switch (dtype) {
    case UFORM_SESSION_DTYPE_F32: case UFORM_SESSION_DTYPE_I32: return 4;
    case UFORM_SESSION_DTYPE_F64: case UFORM_SESSION_DTYPE_I64: return 8;
    case UFORM_SESSION_DTYPE_F16: case UFORM_SESSION_DTYPE_BF16: return 2;
    default: return 1;
    }
}

/* Rounds to a binary format with `mantissa` fraction bits, minimum normal exponent `emin` and
 * largest finite value `largest`, by scaling to an integer count of the format's quantum. */
static double round_binary(double x, int mantissa, int emin, double largest) {
    if (x != x || x == 0.0 || isinf(x)) return x;
    int exponent;
    frexp(x, &exponent); // x = f · 2^exponent with 0.5 <= |f| < 1
    int e = exponent - 1;
    if (e < emin) e = emin;
    double quantum = ldexp(1.0, e - mantissa);
    double r = nearbyint(x / quantum) * quantum;
    if (fabs(r) > largest) return x > 0 ? INFINITY : -INFINITY;
    return r;
}

double ref_round(int dtype, double x) {
    switch (dtype) {
    case UFORM_SESSION_DTYPE_F32: return (double)(float)x;
    case UFORM_SESSION_DTYPE_F16: return round_binary(x, 10, -14, 65504.0);
    case UFORM_SESSION_DTYPE_BF16: return round_binary(x, 7, -126, 3.3895313892515355e38);
    default: return x;
    }
}

int64_t ref_wrap(int dtype, int64_t x) {
    uint64_t u = (uint64_t)x;
    switch (dtype) {
    case UFORM_SESSION_DTYPE_I8: return (int64_t)(u & 0xFF) - ((u & 0x80) ? 256 : 0);
    case UFORM_SESSION_DTYPE_U8: return (int64_t)(u & 0xFF);
    case UFORM_SESSION_DTYPE_I32: return (int64_t)(u & 0xFFFFFFFFu) - ((u & 0x80000000u) ? ((int64_t)1 << 32) : 0);
    case UFORM_SESSION_DTYPE_BOOL: return x != 0;
    default: return x;
    }
}

static uint16_t half_bits(double x) { // x is already a binary16 value
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    if (a != a) return 0x7E00;
    if (isinf(a)) return sign | 0x7C00;
    if (a < ldexp(1.0, -14)) return sign | (uint16_t)(a / ldexp(1.0, -24));
    int exponent;
    double f = frexp(a, &exponent); // a = f · 2^exponent
    return sign | (uint16_t)((exponent - 1 + 15) << 10) | (uint16_t)((f * 2.0 - 1.0) * 1024.0);
}

void ref_encode(const ref_node_t *node, size_t i, void *out) {
    switch (node->dtype) {
    case UFORM_SESSION_DTYPE_F32: { float v = (float)node->real[i]; memcpy(out, &v, 4); break; }
    case UFORM_SESSION_DTYPE_F64: memcpy(out, &node->real[i], 8); break;
    case UFORM_SESSION_DTYPE_F16: { uint16_t v = half_bits(node->real[i]); memcpy(out, &v, 2); break; }
    case UFORM_SESSION_DTYPE_BF16: { // a bfloat16 value is exactly a binary32 value with 16 low zero bits
        float f = (float)node->real[i];
        uint32_t bits;
        memcpy(&bits, &f, 4);
        uint16_t v = (uint16_t)(bits >> 16);
        memcpy(out, &v, 2);
        break;
    }
    case UFORM_SESSION_DTYPE_I32: { int32_t v = (int32_t)node->integer[i]; memcpy(out, &v, 4); break; }
    case UFORM_SESSION_DTYPE_I64: memcpy(out, &node->integer[i], 8); break;
    default: { uint8_t v = (uint8_t)node->integer[i]; memcpy(out, &v, 1); break; }
    }
}

static int fail(char *why, size_t size, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(why, size, format, arguments);
    va_end(arguments);
    return -1;
}

static size_t count_of(int rank, const size_t *dims) {
    size_t n = 1;
    for (int d = 0; d < rank; ++d) n *= dims[d];
    return n;
}

/* Index of element `flat` of dims (rank, dims) read from an operand broadcast to those dims. */
static size_t broadcast_index(size_t flat, int rank, const size_t *dims, const ref_node_t *operand) {
    size_t index = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
        size_t i = flat % dims[d];
        flat /= dims[d];
        int od = d - (rank - operand->rank);
        if (od >= 0) {
            if (operand->dims[od] != 1) index += i * stride;
            stride *= operand->dims[od];
        }
    }
    return index;
}

static int broadcast_dims(ref_node_t *out, const ref_node_t *a, const ref_node_t *b) {
    int rank = a->rank > b->rank ? a->rank : b->rank;
    size_t dims[REF_MAX_RANK];
    for (int i = 0; i < rank; ++i) {
        int da = a->rank - 1 - i, db = b->rank - 1 - i;
        size_t x = da >= 0 ? a->dims[da] : 1, y = db >= 0 ? b->dims[db] : 1;
        if (x != y && x != 1 && y != 1) return 0;
        dims[rank - 1 - i] = x > y ? x : y;
    }
    out->rank = rank;
    memcpy(out->dims, dims, sizeof dims);
    return 1;
}

static double get(const ref_node_t *n, size_t i) { return ref_is_float(n->dtype) ? n->real[i] : (double)n->integer[i]; }

static int64_t div_wrap(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    return a / b;
}

/* torch.maximum / torch.minimum: NaN wins; between equal values the first operand is kept. */
static double nan_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : (a < b ? b : a); }
static double nan_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : (b < a ? b : a); }

static int64_t saturate(double x, int dtype) {
    if (dtype == UFORM_SESSION_DTYPE_BOOL) return x != 0.0;
    if (isnan(x)) return 0;
    double lo = dtype == UFORM_SESSION_DTYPE_I8 ? -128 : dtype == UFORM_SESSION_DTYPE_U8 ? 0 : dtype == UFORM_SESSION_DTYPE_I32 ? -2147483648.0 : -9223372036854775808.0;
    double hi = dtype == UFORM_SESSION_DTYPE_I8 ? 127 : dtype == UFORM_SESSION_DTYPE_U8 ? 255 : dtype == UFORM_SESSION_DTYPE_I32 ? 2147483647.0 : 9223372036854775807.0;
    if (x <= lo) return dtype == UFORM_SESSION_DTYPE_I64 ? INT64_MIN : (int64_t)lo;
    if (x >= hi) return dtype == UFORM_SESSION_DTYPE_I64 ? INT64_MAX : (int64_t)hi;
    return (int64_t)trunc(x);
}

static int evaluate_node(ref_program_t *p, ref_node_t *n, char *why, size_t size) {
    ref_node_t *a = n->operand_count > 0 ? &p->nodes[n->operands[0]] : NULL;
    ref_node_t *b = n->operand_count > 1 ? &p->nodes[n->operands[1]] : NULL;
    int op = n->opcode;
    // Types first.
    if (op >= UFORM_SESSION_OP_NEG && op <= UFORM_SESSION_OP_GELU) {
        n->dtype = a->dtype, n->rank = a->rank;
        memcpy(n->dims, a->dims, sizeof n->dims);
    } else if ((op >= UFORM_SESSION_OP_ADD && op <= UFORM_SESSION_OP_POW) || (op >= UFORM_SESSION_OP_EQ && op <= UFORM_SESSION_OP_GE)) {
        if (a->dtype != b->dtype || !broadcast_dims(n, a, b)) return fail(why, size, "binary operands disagree");
        n->dtype = op >= UFORM_SESSION_OP_EQ ? UFORM_SESSION_DTYPE_BOOL : a->dtype;
    } else if (op == UFORM_SESSION_OP_SELECT) {
        ref_node_t *c = &p->nodes[n->operands[2]], t;
        if (!broadcast_dims(&t, b, c) || !broadcast_dims(n, &t, a)) return fail(why, size, "select operands disagree");
        n->dtype = b->dtype;
    } else if (op == UFORM_SESSION_OP_CONVERT) {
        n->rank = a->rank;
        memcpy(n->dims, a->dims, sizeof n->dims);
    } else if (op >= UFORM_SESSION_OP_REDUCE_SUM && op <= UFORM_SESSION_OP_REDUCE_MEAN) {
        n->dtype = a->dtype, n->rank = 0;
        for (int d = 0; d < a->rank; ++d) {
            int reduced = 0;
            for (int j = 1; j < n->attribute_count; ++j) reduced |= n->attributes[j] == d;
            if (!reduced) n->dims[n->rank++] = a->dims[d];
            else if (n->attributes[0]) n->dims[n->rank++] = 1;
        }
    } else if (op == UFORM_SESSION_OP_MATMUL) {
        int ta = (int)n->attributes[0], tb = (int)n->attributes[1];
        size_t m = ta ? a->dims[a->rank - 1] : a->dims[a->rank - 2], k = ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
        size_t k2 = tb ? b->dims[b->rank - 1] : b->dims[b->rank - 2], nn = tb ? b->dims[b->rank - 2] : b->dims[b->rank - 1];
        if (k != k2) return fail(why, size, "matmul inner dims %zu and %zu", k, k2);
        ref_node_t ba = *a, bb = *b;
        ba.rank -= 2, bb.rank -= 2;
        if (!broadcast_dims(n, &ba, &bb)) return fail(why, size, "matmul batches disagree");
        n->dims[n->rank++] = m;
        n->dims[n->rank++] = nn;
        n->dtype = a->dtype;
    } else if (op == UFORM_SESSION_OP_RESHAPE || op == UFORM_SESSION_OP_BROADCAST) {
        n->dtype = a->dtype;
    } else if (op == UFORM_SESSION_OP_TRANSPOSE) {
        n->dtype = a->dtype, n->rank = a->rank;
        for (int d = 0; d < a->rank; ++d) n->dims[d] = a->dims[n->attributes[d]];
    } else if (op == UFORM_SESSION_OP_SLICE) {
        n->dtype = a->dtype, n->rank = a->rank;
        for (int d = 0; d < a->rank; ++d) {
            int64_t start = n->attributes[3 * d], stop = n->attributes[3 * d + 1], step = n->attributes[3 * d + 2];
            n->dims[d] = (size_t)((stop - start - 1) / step + 1);
        }
    } else if (op == UFORM_SESSION_OP_CONCAT) {
        n->dtype = a->dtype, n->rank = a->rank;
        memcpy(n->dims, a->dims, sizeof n->dims);
        n->dims[n->attributes[0]] = 0;
        for (int j = 0; j < n->operand_count; ++j) n->dims[n->attributes[0]] += p->nodes[n->operands[j]].dims[n->attributes[0]];
    } else if (op == UFORM_SESSION_OP_SOFTMAX || op == UFORM_SESSION_OP_LAYER_NORM) {
        n->dtype = a->dtype, n->rank = a->rank;
        memcpy(n->dims, a->dims, sizeof n->dims);
    } else {
        return fail(why, size, "unknown opcode %d", op);
    }
    n->count = count_of(n->rank, n->dims);
    int is_float = ref_is_float(n->dtype);
    n->real = (double *)calloc(n->count, sizeof(double));
    n->integer = (int64_t *)calloc(n->count, sizeof(int64_t));
    if (!n->real || !n->integer) return fail(why, size, "out of memory");

    for (size_t i = 0; i < n->count; ++i) {
        double r = 0.0;
        int64_t q = 0;
        if (op >= UFORM_SESSION_OP_NEG && op <= UFORM_SESSION_OP_GELU) {
            if (is_float) {
                double x = a->real[i];
                switch (op) {
                case UFORM_SESSION_OP_NEG: r = -x; break;
                case UFORM_SESSION_OP_ABS: r = fabs(x); break;
                case UFORM_SESSION_OP_EXP: r = exp(x); break;
                case UFORM_SESSION_OP_LOG: r = log(x); break;
                case UFORM_SESSION_OP_SQRT: r = sqrt(x); break;
                case UFORM_SESSION_OP_RSQRT: r = 1.0 / sqrt(x); break;
                case UFORM_SESSION_OP_TANH: r = tanh(x); break;
                case UFORM_SESSION_OP_ERF: r = erf(x); break;
                case UFORM_SESSION_OP_SIGMOID: r = 1.0 / (1.0 + exp(-x)); break;
                case UFORM_SESSION_OP_RELU: r = isnan(x) ? x : x < 0 ? 0.0 : x; break; // NaN and −0 kept (torch.relu)
                default: r = 0.5 * x * (1.0 + erf(x / sqrt(2.0))); break;
                }
            } else {
                int64_t x = a->integer[i];
                if (op == UFORM_SESSION_OP_NEG) q = (int64_t)(0 - (uint64_t)x);
                else if (op == UFORM_SESSION_OP_ABS) q = x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
                else q = x > 0 ? x : 0;
            }
        } else if (op >= UFORM_SESSION_OP_ADD && op <= UFORM_SESSION_OP_POW) {
            size_t ia = broadcast_index(i, n->rank, n->dims, a), ib = broadcast_index(i, n->rank, n->dims, b);
            if (is_float) {
                double x = a->real[ia], y = b->real[ib];
                switch (op) {
                case UFORM_SESSION_OP_ADD: r = x + y; break;
                case UFORM_SESSION_OP_SUB: r = x - y; break;
                case UFORM_SESSION_OP_MUL: r = x * y; break;
                case UFORM_SESSION_OP_DIV: r = x / y; break;
                case UFORM_SESSION_OP_MAX: r = nan_max(x, y); break;
                case UFORM_SESSION_OP_MIN: r = nan_min(x, y); break;
                default: r = pow(x, y); break;
                }
            } else {
                int64_t x = a->integer[ia], y = b->integer[ib];
                switch (op) {
                case UFORM_SESSION_OP_ADD: q = (int64_t)((uint64_t)x + (uint64_t)y); break;
                case UFORM_SESSION_OP_SUB: q = (int64_t)((uint64_t)x - (uint64_t)y); break;
                case UFORM_SESSION_OP_MUL: q = (int64_t)((uint64_t)x * (uint64_t)y); break;
                case UFORM_SESSION_OP_DIV: q = div_wrap(x, y); break;
                case UFORM_SESSION_OP_MAX: q = x > y ? x : y; break;
                default: q = x < y ? x : y; break;
                }
            }
        } else if (op >= UFORM_SESSION_OP_EQ && op <= UFORM_SESSION_OP_GE) {
            size_t ia = broadcast_index(i, n->rank, n->dims, a), ib = broadcast_index(i, n->rank, n->dims, b);
            double x = get(a, ia), y = get(b, ib);
            int64_t xi = a->integer[ia], yi = b->integer[ib];
            int fl = ref_is_float(a->dtype);
            switch (op) {
            case UFORM_SESSION_OP_EQ: q = fl ? x == y : xi == yi; break;
            case UFORM_SESSION_OP_NE: q = fl ? x != y : xi != yi; break;
            case UFORM_SESSION_OP_LT: q = fl ? x < y : xi < yi; break;
            case UFORM_SESSION_OP_LE: q = fl ? x <= y : xi <= yi; break;
            case UFORM_SESSION_OP_GT: q = fl ? x > y : xi > yi; break;
            default: q = fl ? x >= y : xi >= yi; break;
            }
        } else if (op == UFORM_SESSION_OP_SELECT) {
            ref_node_t *c = &p->nodes[n->operands[2]];
            int take = a->integer[broadcast_index(i, n->rank, n->dims, a)] != 0;
            const ref_node_t *from = take ? b : c;
            size_t j = broadcast_index(i, n->rank, n->dims, from);
            r = from->real[j], q = from->integer[j];
        } else if (op == UFORM_SESSION_OP_CONVERT) {
            if (is_float) r = ref_is_float(a->dtype) ? a->real[i] : (double)a->integer[i];
            else q = ref_is_float(a->dtype) ? saturate(a->real[i], n->dtype) : a->integer[i];
        } else if (op == UFORM_SESSION_OP_MATMUL || (op >= UFORM_SESSION_OP_REDUCE_SUM && op <= UFORM_SESSION_OP_REDUCE_MEAN) ||
                   op == UFORM_SESSION_OP_SOFTMAX || op == UFORM_SESSION_OP_LAYER_NORM || op == UFORM_SESSION_OP_TRANSPOSE ||
                   op == UFORM_SESSION_OP_SLICE || op == UFORM_SESSION_OP_CONCAT || op == UFORM_SESSION_OP_RESHAPE ||
                   op == UFORM_SESSION_OP_BROADCAST) {
            break; // computed below, over whole index spaces
        }
        n->real[i] = is_float ? ref_round(n->dtype, r) : 0.0;
        n->integer[i] = is_float ? 0 : ref_wrap(n->dtype, q);
    }

    size_t idx[REF_MAX_RANK];
    if (op == UFORM_SESSION_OP_MATMUL) {
        int ta = (int)n->attributes[0], tb = (int)n->attributes[1];
        size_t m = n->dims[n->rank - 2], nn = n->dims[n->rank - 1];
        size_t k = ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
        for (size_t i = 0; i < n->count; ++i) {
            size_t batch = i / (m * nn), row = i / nn % m, col = i % nn;
            // Batch offsets, broadcasting each operand's batch dims.
            ref_node_t bn = *n, ba = *a, bbb = *b;
            bn.rank -= 2, ba.rank -= 2, bbb.rank -= 2;
            size_t oa = broadcast_index(batch, bn.rank, bn.dims, &ba), ob = broadcast_index(batch, bn.rank, bn.dims, &bbb);
            double sum = 0.0;
            for (size_t p2 = 0; p2 < k; ++p2) {
                double x = ta ? a->real[oa * m * k + p2 * m + row] : a->real[oa * m * k + row * k + p2];
                double y = tb ? b->real[ob * k * nn + col * k + p2] : b->real[ob * k * nn + p2 * nn + col];
                sum += x * y;
            }
            n->real[i] = ref_round(n->dtype, sum);
        }
    } else if (op >= UFORM_SESSION_OP_REDUCE_SUM && op <= UFORM_SESSION_OP_REDUCE_MEAN) {
        double *acc = (double *)calloc(n->count, sizeof(double));
        int64_t *acci = (int64_t *)calloc(n->count, sizeof(int64_t));
        char *seen = (char *)calloc(n->count, 1);
        size_t per = a->count / n->count;
        for (size_t i = 0; i < a->count; ++i) {
            size_t rest = i, out = 0, stride = 1;
            for (int d = a->rank - 1; d >= 0; --d) { idx[d] = rest % a->dims[d]; rest /= a->dims[d]; }
            for (int d = a->rank - 1; d >= 0; --d) {
                int reduced = 0;
                for (int j = 1; j < n->attribute_count; ++j) reduced |= n->attributes[j] == d;
                if (!reduced) { out += idx[d] * stride; stride *= a->dims[d]; }
            }
            if (is_float) {
                double v = a->real[i];
                if (op == UFORM_SESSION_OP_REDUCE_SUM || op == UFORM_SESSION_OP_REDUCE_MEAN) acc[out] += v;
                else if (!seen[out]) acc[out] = v;
                else acc[out] = op == UFORM_SESSION_OP_REDUCE_MAX ? nan_max(acc[out], v) : nan_min(acc[out], v);
            } else {
                int64_t v = a->integer[i];
                if (op == UFORM_SESSION_OP_REDUCE_SUM) acci[out] = (int64_t)((uint64_t)acci[out] + (uint64_t)v);
                else if (!seen[out]) acci[out] = v;
                else acci[out] = op == UFORM_SESSION_OP_REDUCE_MAX ? (v > acci[out] ? v : acci[out]) : (v < acci[out] ? v : acci[out]);
            }
            seen[out] = 1;
        }
        for (size_t i = 0; i < n->count; ++i) {
            if (is_float) n->real[i] = ref_round(n->dtype, op == UFORM_SESSION_OP_REDUCE_MEAN ? acc[i] / (double)per : acc[i]);
            else n->integer[i] = ref_wrap(n->dtype, acci[i]);
        }
        free(acc);
        free(acci);
        free(seen);
    } else if (op == UFORM_SESSION_OP_SOFTMAX || op == UFORM_SESSION_OP_LAYER_NORM) {
        int axis = (int)n->attributes[0];
        size_t outer = count_of(axis, a->dims), len, inner;
        if (op == UFORM_SESSION_OP_SOFTMAX) len = a->dims[axis], inner = a->count / outer / len;
        else len = a->count / outer, inner = 1;
        for (size_t o = 0; o < outer; ++o)
            for (size_t in = 0; in < inner; ++in) {
                double high = -INFINITY, sum = 0.0, mean = 0.0, var = 0.0;
                for (size_t j = 0; j < len; ++j) {
                    double v = a->real[(o * len + j) * inner + in];
                    high = v > high ? v : high;
                    mean += v;
                }
                mean /= (double)len;
                for (size_t j = 0; j < len; ++j) {
                    double v = a->real[(o * len + j) * inner + in];
                    sum += exp(v - high);
                    var += (v - mean) * (v - mean);
                }
                var /= (double)len;
                double eps;
                memcpy(&eps, &n->attributes[1], sizeof eps);
                for (size_t j = 0; j < len; ++j) {
                    size_t at = (o * len + j) * inner + in;
                    double v = a->real[at], y;
                    if (op == UFORM_SESSION_OP_SOFTMAX) y = exp(v - high) / sum;
                    else {
                        y = (v - mean) / sqrt(var + eps);
                        if (n->operand_count > 1) y *= p->nodes[n->operands[1]].real[j];
                        if (n->operand_count > 2) y += p->nodes[n->operands[2]].real[j];
                    }
                    n->real[at] = ref_round(n->dtype, y);
                }
            }
    } else if (op == UFORM_SESSION_OP_RESHAPE) {
        if (a->count != n->count) return fail(why, size, "reshape changes the count");
        for (size_t i = 0; i < n->count; ++i) n->real[i] = a->real[i], n->integer[i] = a->integer[i];
    } else if (op == UFORM_SESSION_OP_BROADCAST) {
        for (size_t i = 0; i < n->count; ++i) {
            size_t j = broadcast_index(i, n->rank, n->dims, a);
            n->real[i] = a->real[j], n->integer[i] = a->integer[j];
        }
    } else if (op == UFORM_SESSION_OP_TRANSPOSE || op == UFORM_SESSION_OP_SLICE) {
        for (size_t i = 0; i < n->count; ++i) {
            size_t rest = i;
            for (int d = n->rank - 1; d >= 0; --d) { idx[d] = rest % n->dims[d]; rest /= n->dims[d]; }
            size_t src[REF_MAX_RANK];
            for (int d = 0; d < n->rank; ++d) {
                if (op == UFORM_SESSION_OP_TRANSPOSE) src[n->attributes[d]] = idx[d];
                else src[d] = (size_t)n->attributes[3 * d] + idx[d] * (size_t)n->attributes[3 * d + 2];
            }
            size_t j = 0;
            for (int d = 0; d < a->rank; ++d) j = j * a->dims[d] + src[d];
            n->real[i] = a->real[j], n->integer[i] = a->integer[j];
        }
    } else if (op == UFORM_SESSION_OP_CONCAT) {
        int axis = (int)n->attributes[0];
        for (size_t i = 0; i < n->count; ++i) {
            size_t rest = i;
            for (int d = n->rank - 1; d >= 0; --d) { idx[d] = rest % n->dims[d]; rest /= n->dims[d]; }
            int part = 0;
            while (idx[axis] >= p->nodes[n->operands[part]].dims[axis]) idx[axis] -= p->nodes[n->operands[part++]].dims[axis];
            const ref_node_t *from = &p->nodes[n->operands[part]];
            size_t j = 0;
            for (int d = 0; d < from->rank; ++d) j = j * from->dims[d] + idx[d];
            n->real[i] = from->real[j], n->integer[i] = from->integer[j];
        }
    }
    return 0;
}

int ref_evaluate(ref_program_t *program, char *why, size_t why_size) {
    for (int i = 0; i < program->count; ++i) {
        ref_node_t *n = &program->nodes[i];
        if (n->kind != REF_OPERATION) {
            n->count = count_of(n->rank, n->dims);
            continue;
        }
        if (evaluate_node(program, n, why, why_size) != 0) return -1;
    }
    return 0;
}

void ref_free(ref_program_t *program) {
    for (int i = 0; i < program->count; ++i) {
        free(program->nodes[i].real);
        free(program->nodes[i].integer);
        program->nodes[i].real = NULL;
        program->nodes[i].integer = NULL;
    }
}
