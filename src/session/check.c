/*
 * The type rules of every operation (docs/wire.md lists them) and the whole-program check:
 * operands defined before use (which also rules out cycles) and declared result types equal to
 * the inferred ones. Broadcasting follows NumPy: dims align from the right, and each pair must be
 * equal or contain a 1.
 */
#include <stdio.h>
#include <string.h>

#include "session/session.h"

#define FAIL(...) uform__session_error(error, UFORM_SESSION_INVALID_PROGRAM, __VA_ARGS__)

static void format_dims(const uform__session_type_t *type, char *text, size_t capacity) {
    size_t used = 0;
    used += (size_t)snprintf(text + used, capacity - used, "%s[", uform__session_dtype_name(type->dtype));
    for (unsigned axis = 0; axis < type->rank && used < capacity; ++axis)
        used += (size_t)snprintf(text + used, capacity - used, axis ? ",%zu" : "%zu", type->dims[axis]);
    if (used < capacity) snprintf(text + used, capacity - used, "]");
}

/* Broadcasts `b` into `a` (in place). Answers 0 when the dims disagree. */
static int broadcast_into(uform__session_type_t *a, const uform__session_type_t *b) {
    unsigned rank = a->rank > b->rank ? a->rank : b->rank;
    size_t dims[UFORM_SESSION_MAX_RANK];
    for (unsigned i = 0; i < rank; ++i) {
        size_t da = i < a->rank ? a->dims[a->rank - 1 - i] : 1, db = i < b->rank ? b->dims[b->rank - 1 - i] : 1;
        if (da != db && da != 1 && db != 1) return 0;
        dims[rank - 1 - i] = da == 1 ? db : da;
    }
    a->rank = (uint8_t)rank;
    memcpy(a->dims, dims, sizeof dims);
    return 1;
}

static int types_equal(const uform__session_type_t *a, const uform__session_type_t *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return 0;
    for (unsigned axis = 0; axis < a->rank; ++axis)
        if (a->dims[axis] != b->dims[axis]) return 0;
    return 1;
}

uform_session_status_t uform__session_infer(uint16_t opcode, const uform__session_type_t *const *operands,
                                            size_t operand_count, const int64_t *attributes,
                                            size_t attribute_count, const uform__session_type_t *given,
                                            uform__session_type_t *result, uform__session_error_t *error) {
    const char *name = uform__session_opcode_name(opcode);
    char text[160];
    if (!name) return FAIL("unknown opcode %u", (unsigned)opcode);
    for (size_t i = 0; i < operand_count; ++i)
        if (!operands[i]) return FAIL("%s: operand %zu is missing", name, i);
    unsigned convert_dtype = result->dtype;
    memset(result, 0, sizeof *result);

#define EXPECT_OPERANDS(low, high)                                                                           \
    do {                                                                                                     \
        if (operand_count < (low) || operand_count > (high))                                                 \
            return FAIL("%s takes %s%u operands, found %zu", name, (low) == (high) ? "" : "at least ",        \
                        (unsigned)(low), operand_count);                                                     \
    } while (0)
#define EXPECT_ATTRIBUTES(n)                                                                                 \
    do {                                                                                                     \
        if (attribute_count != (size_t)(n))                                                                  \
            return FAIL("%s takes %zu attributes, found %zu", name, (size_t)(n), attribute_count);           \
    } while (0)
#define EXPECT_FLOAT(type)                                                                                   \
    do {                                                                                                     \
        if (!uform__session_dtype_is_float((type)->dtype))                                                   \
            return FAIL("%s needs a float operand, found %s", name, uform__session_dtype_name((type)->dtype)); \
    } while (0)
#define EXPECT_NUMERIC(type)                                                                                 \
    do {                                                                                                     \
        if ((type)->dtype == UFORM_SESSION_DTYPE_BOOL) return FAIL("%s does not take bool operands", name);  \
    } while (0)

    if (uform__session_is_unary(opcode)) {
        EXPECT_OPERANDS(1, 1);
        EXPECT_ATTRIBUTES(0);
        if (opcode == UFORM_SESSION_OP_NEG || opcode == UFORM_SESSION_OP_ABS || opcode == UFORM_SESSION_OP_RELU)
            EXPECT_NUMERIC(operands[0]);
        else EXPECT_FLOAT(operands[0]);
        *result = *operands[0];
    } else if (uform__session_is_binary(opcode) || uform__session_is_compare(opcode)) {
        EXPECT_OPERANDS(2, 2);
        EXPECT_ATTRIBUTES(0);
        if (operands[0]->dtype != operands[1]->dtype)
            return FAIL("%s operands differ in dtype: %s and %s", name, uform__session_dtype_name(operands[0]->dtype),
                        uform__session_dtype_name(operands[1]->dtype));
        if (opcode == UFORM_SESSION_OP_POW) EXPECT_FLOAT(operands[0]);
        else if (uform__session_is_binary(opcode)) EXPECT_NUMERIC(operands[0]);
        *result = *operands[0];
        if (!broadcast_into(result, operands[1])) {
            char other[160];
            format_dims(operands[0], text, sizeof text);
            format_dims(operands[1], other, sizeof other);
            return FAIL("%s operands do not broadcast: %s and %s", name, text, other);
        }
        if (uform__session_is_compare(opcode)) result->dtype = UFORM_SESSION_DTYPE_BOOL;
    } else if (opcode == UFORM_SESSION_OP_SELECT) {
        EXPECT_OPERANDS(3, 3);
        EXPECT_ATTRIBUTES(0);
        if (operands[0]->dtype != UFORM_SESSION_DTYPE_BOOL)
            return FAIL("select needs a bool condition, found %s", uform__session_dtype_name(operands[0]->dtype));
        if (operands[1]->dtype != operands[2]->dtype)
            return FAIL("select choices differ in dtype: %s and %s", uform__session_dtype_name(operands[1]->dtype),
                        uform__session_dtype_name(operands[2]->dtype));
        *result = *operands[1];
        if (!broadcast_into(result, operands[2]) || !broadcast_into(result, operands[0]))
            return FAIL("select operands do not broadcast together");
    } else if (opcode == UFORM_SESSION_OP_CONVERT) {
        EXPECT_OPERANDS(1, 1);
        EXPECT_ATTRIBUTES(0);
        *result = *operands[0];
        result->dtype = (uint8_t)(given ? given->dtype : convert_dtype);
        if (result->dtype >= UFORM__SESSION_DTYPE_COUNT) return FAIL("convert to unknown dtype %u", result->dtype);
    } else if (opcode >= UFORM_SESSION_OP_REDUCE_SUM && opcode <= UFORM_SESSION_OP_REDUCE_MEAN) {
        EXPECT_OPERANDS(1, 1);
        const uform__session_type_t *x = operands[0];
        if (opcode == UFORM_SESSION_OP_REDUCE_MEAN) EXPECT_FLOAT(x);
        else EXPECT_NUMERIC(x);
        if (attribute_count < 2) return FAIL("%s needs [keepdims, axis...], found %zu attributes", name, attribute_count);
        if (attributes[0] != 0 && attributes[0] != 1) return FAIL("%s keepdims must be 0 or 1", name);
        if (attribute_count - 1 > x->rank) return FAIL("%s lists %zu axes of a rank-%u operand", name, attribute_count - 1, x->rank);
        unsigned reduced = 0;
        for (size_t i = 1; i < attribute_count; ++i) {
            if (attributes[i] < 0 || attributes[i] >= x->rank)
                return FAIL("%s axis %lld is outside rank %u", name, (long long)attributes[i], x->rank);
            if (reduced & (1u << attributes[i])) return FAIL("%s lists axis %lld twice", name, (long long)attributes[i]);
            reduced |= 1u << attributes[i];
        }
        result->dtype = x->dtype;
        for (unsigned axis = 0; axis < x->rank; ++axis) {
            if (!(reduced & (1u << axis))) result->dims[result->rank++] = x->dims[axis];
            else if (attributes[0]) result->dims[result->rank++] = 1;
        }
    } else if (opcode == UFORM_SESSION_OP_MATMUL) {
        EXPECT_OPERANDS(2, 2);
        EXPECT_ATTRIBUTES(2);
        const uform__session_type_t *a = operands[0], *b = operands[1];
        EXPECT_FLOAT(a);
        if (a->dtype != b->dtype) return FAIL("matmul operands differ in dtype");
        if ((attributes[0] != 0 && attributes[0] != 1) || (attributes[1] != 0 && attributes[1] != 1))
            return FAIL("matmul transpose flags must be 0 or 1");
        if (a->rank < 2 || b->rank < 2) return FAIL("matmul needs operands of rank >= 2, found %u and %u", a->rank, b->rank);
        size_t m = attributes[0] ? a->dims[a->rank - 1] : a->dims[a->rank - 2];
        size_t ka = attributes[0] ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
        size_t kb = attributes[1] ? b->dims[b->rank - 1] : b->dims[b->rank - 2];
        size_t n = attributes[1] ? b->dims[b->rank - 2] : b->dims[b->rank - 1];
        if (ka != kb) return FAIL("matmul inner dimensions differ: %zu and %zu", ka, kb);
        uform__session_type_t batch_a = *a, batch_b = *b;
        batch_a.rank = (uint8_t)(a->rank - 2);
        batch_b.rank = (uint8_t)(b->rank - 2);
        if (!broadcast_into(&batch_a, &batch_b)) return FAIL("matmul batch dimensions do not broadcast");
        *result = batch_a;
        result->dims[result->rank++] = m;
        result->dims[result->rank++] = n;
    } else if (opcode == UFORM_SESSION_OP_RESHAPE || opcode == UFORM_SESSION_OP_BROADCAST) {
        EXPECT_OPERANDS(1, 1);
        EXPECT_ATTRIBUTES(0);
        if (!given) return FAIL("%s takes its dims from the declared result type", name);
        *result = *given;
        if (result->dtype != operands[0]->dtype) return FAIL("%s changes the dtype", name);
        if (!uform__session_type_finish(result)) return FAIL("%s result type is too large", name);
        if (opcode == UFORM_SESSION_OP_RESHAPE && result->count != operands[0]->count)
            return FAIL("reshape from %zu to %zu elements", operands[0]->count, result->count);
        if (opcode == UFORM_SESSION_OP_BROADCAST) {
            uform__session_type_t merged = *result;
            if (operands[0]->rank > result->rank || !broadcast_into(&merged, operands[0]) || !types_equal(&merged, result)) {
                char other[160];
                format_dims(operands[0], text, sizeof text);
                format_dims(result, other, sizeof other);
                return FAIL("broadcast from %s to %s", text, other);
            }
        }
    } else if (opcode == UFORM_SESSION_OP_TRANSPOSE) {
        EXPECT_OPERANDS(1, 1);
        const uform__session_type_t *x = operands[0];
        EXPECT_ATTRIBUTES(x->rank);
        unsigned seen = 0;
        result->dtype = x->dtype;
        result->rank = x->rank;
        for (unsigned axis = 0; axis < x->rank; ++axis) {
            int64_t p = attributes[axis];
            if (p < 0 || p >= x->rank || (seen & (1u << p))) return FAIL("transpose attributes are not a permutation of %u axes", x->rank);
            seen |= 1u << p;
            result->dims[axis] = x->dims[p];
        }
    } else if (opcode == UFORM_SESSION_OP_SLICE) {
        EXPECT_OPERANDS(1, 1);
        const uform__session_type_t *x = operands[0];
        EXPECT_ATTRIBUTES(3u * x->rank);
        *result = *x;
        for (unsigned axis = 0; axis < x->rank; ++axis) {
            int64_t start = attributes[3 * axis], stop = attributes[3 * axis + 1], step = attributes[3 * axis + 2];
            if (start < 0 || stop <= start || (uint64_t)stop > x->dims[axis] || step < 1)
                return FAIL("slice axis %u: [%lld:%lld:%lld] of %zu", axis, (long long)start, (long long)stop,
                            (long long)step, x->dims[axis]);
            result->dims[axis] = (size_t)((stop - start - 1) / step + 1); // ceil((stop - start) / step) without overflow
        }
    } else if (opcode == UFORM_SESSION_OP_CONCAT) {
        EXPECT_OPERANDS(1, UFORM__SESSION_MAX_OPERANDS);
        EXPECT_ATTRIBUTES(1);
        const uform__session_type_t *x = operands[0];
        if (attributes[0] < 0 || attributes[0] >= x->rank) return FAIL("concat axis %lld is outside rank %u", (long long)attributes[0], x->rank);
        unsigned axis = (unsigned)attributes[0];
        *result = *x;
        for (size_t i = 1; i < operand_count; ++i) {
            const uform__session_type_t *y = operands[i];
            if (y->dtype != x->dtype || y->rank != x->rank) return FAIL("concat operand %zu differs in dtype or rank", i);
            for (unsigned d = 0; d < x->rank; ++d)
                if (d != axis && y->dims[d] != x->dims[d]) return FAIL("concat operand %zu differs on axis %u", i, d);
            result->dims[axis] += y->dims[axis];
            if (result->dims[axis] < y->dims[axis]) return FAIL("concat overflows");
        }
    } else if (opcode == UFORM_SESSION_OP_SOFTMAX) {
        EXPECT_OPERANDS(1, 1);
        EXPECT_ATTRIBUTES(1);
        EXPECT_FLOAT(operands[0]);
        if (attributes[0] < 0 || attributes[0] >= operands[0]->rank) return FAIL("softmax axis %lld is outside rank %u", (long long)attributes[0], operands[0]->rank);
        *result = *operands[0];
    } else if (opcode == UFORM_SESSION_OP_LAYER_NORM) {
        EXPECT_OPERANDS(1, 3);
        EXPECT_ATTRIBUTES(2);
        const uform__session_type_t *x = operands[0];
        EXPECT_FLOAT(x);
        if (attributes[0] < 0 || attributes[0] >= x->rank) return FAIL("layer_norm axis %lld is outside rank %u", (long long)attributes[0], x->rank);
        double eps;
        memcpy(&eps, &attributes[1], sizeof eps);
        if (!(eps >= 0.0 && eps < 1e300)) return FAIL("layer_norm eps must be finite and >= 0");
        unsigned axis = (unsigned)attributes[0];
        for (size_t i = 1; i < operand_count; ++i) {
            const uform__session_type_t *w = operands[i];
            int ok = w->dtype == x->dtype && w->rank == x->rank - axis;
            for (unsigned d = 0; ok && d < w->rank; ++d) ok = w->dims[d] == x->dims[axis + d];
            if (!ok) {
                format_dims(w, text, sizeof text);
                return FAIL("layer_norm %s is %s, expected %s with dims[%u:] of the input", i == 1 ? "weight" : "bias",
                            text, uform__session_dtype_name(x->dtype), axis);
            }
        }
        *result = *x;
    } else {
        return FAIL("unknown opcode %u", (unsigned)opcode);
    }
    if (!uform__session_type_finish(result)) return FAIL("%s result type is too large", name);
    if (given && !types_equal(result, given)) {
        char other[160];
        format_dims(result, text, sizeof text);
        format_dims(given, other, sizeof other);
        return FAIL("%s result is declared %s, its operands give %s", name, other, text);
    }
    return UFORM_SESSION_OK;
}

uform_session_status_t uform__session_check(const uform__session_ir_t *ir, uform__session_error_t *error) {
    // An operand must be a parameter, a constant or the result of an earlier operation; with
    // operations in order, that makes the graph acyclic.
    for (uint32_t i = 0; i < ir->operation_count; ++i) {
        const uform__session_operation_t *op = &ir->operations[i];
        const uform__session_type_t *operands[UFORM__SESSION_MAX_OPERANDS];
        const char *name = uform__session_opcode_name(op->opcode);
        if (!name) return FAIL("operation %u: unknown opcode %u", i, (unsigned)op->opcode);
        for (uint32_t j = 0; j < op->operand_count; ++j) {
            uint32_t v = op->operands[j];
            if (ir->origins[v] == UFORM__SESSION_ORIGIN_OPERATION && ir->definers[v] >= i)
                return FAIL("operation %u (%s): operand %u is value %u, produced by operation %u, which is not earlier "
                            "(a cycle or forward reference)",
                            i, name, j, v, ir->definers[v]);
            operands[j] = &ir->types[v];
        }
        uform__session_type_t inferred;
        memset(&inferred, 0, sizeof inferred);
        uform__session_error_t inner;
        if (uform__session_infer(op->opcode, operands, op->operand_count, op->attributes, op->attribute_count,
                                 &ir->types[op->result], &inferred, &inner) != UFORM_SESSION_OK)
            return FAIL("operation %u (value %u): %s", i, op->result, inner.cause);
    }
    return UFORM_SESSION_OK;
}
