/*
 * Random programs against the reference evaluator: random chains of every operation over random
 * shapes and every dtype, drawn from a printed seed (pass a seed as argv[1] to replay one run).
 * Each program is written twice from one description: into the builder (compiled and invoked by
 * the session) and into the reference (reference.c), which derives the types on its own and
 * computes in binary64. Outputs must agree exactly for integers and within a tolerance scaled by
 * a tracked magnitude bound for floats; the output descriptors must agree with the reference's
 * dims; the inputs must be unchanged after the call.
 *
 * A quarter of the programs (seed % 4 == 0) draw floats from special values (NaN, ±inf, ±0,
 * values that overflow F16 or saturate integer conversions) and use only operations that both
 * sides round identically; their outputs must match exactly.
 *
 * To keep comparisons meaningful elsewhere, the generator avoids inputs where a 1-ulp difference flips a
 * result: comparisons and float→integer conversions read only parameters and constants (exact in
 * both), and log, sqrt, rsqrt, division and pow only see operands with a positive lower bound.
 */
#include <math.h>
#include <string.h>

#include "common/check.h"
#include "common/skip.h"
#include "core/cpu.h"
#include "session/reference.h"
#include "uform/uform.h"

typedef struct bound_t {
    double lo, mag; /* every element lies in [lo, mag] and |x| <= mag */
    int exact;      /* a parameter or constant: identical bits in engine and reference */
    double tol;     /* relative tolerance: the loosest of its own dtype's and its operands' */
} bound_t;

static double tolerance(int dtype) {
    switch (dtype) {
    case UFORM_SESSION_DTYPE_F64: return 1e-10;
    case UFORM_SESSION_DTYPE_F32: return 1e-4;
    case UFORM_SESSION_DTYPE_F16: return 2e-2;
    default: return 8e-2;
    }
}

typedef struct generator_t {
    uint64_t rng;
    ref_program_t ref;
    bound_t bounds[REF_MAX_NODES];
    uform_program_builder_t builder;
    int failed;
    int special; /* floats drawn from NaN, ±inf, ±0, huge and tiny values; only exactly rounded operations */
} generator_t;

/* Values where the semantics matter: NaN propagation, infinities, signed zeros, saturation of
 * float → integer conversions, overflow to infinity in F16/BF16, subnormals. */
static const double special_values[] = {NAN,  INFINITY, -INFINITY, 0.0,    -0.0,  1.0,   -1.0,  0.5,   3.0,   65504.0,
                                        7e4, 1e-8,     -1e30,     1e30,   2.5,   -2.5,  127.6, -128.9, 300.0, 6e-6};

static uint64_t pick(generator_t *g, uint64_t n) { return check_random_next(&g->rng) % n; }
static double uniform(generator_t *g, double lo, double hi) {
    return lo + (hi - lo) * ((double)(check_random_next(&g->rng) >> 11) / 9007199254740992.0);
}

static size_t count_dims(int rank, const size_t *dims) {
    size_t n = 1;
    for (int d = 0; d < rank; ++d) n *= dims[d];
    return n;
}

/* Adds a parameter (constant when `constant`) with random contents drawn for its dtype. */
static int add_leaf(generator_t *g, int constant, int dtype, int rank, const size_t *dims, int positive) {
    if (g->ref.count >= REF_MAX_NODES - 4) return -1;
    int id = g->ref.count++;
    ref_node_t *n = &g->ref.nodes[id];
    memset(n, 0, sizeof *n);
    n->kind = constant ? REF_CONSTANT : REF_PARAMETER;
    n->dtype = dtype, n->rank = rank;
    memcpy(n->dims, dims, sizeof(size_t) * (size_t)rank);
    n->count = count_dims(rank, dims);
    n->real = (double *)calloc(n->count, sizeof(double));
    n->integer = (int64_t *)calloc(n->count, sizeof(int64_t));
    bound_t *b = &g->bounds[id];
    b->exact = 1;
    if (ref_is_float(dtype)) b->lo = positive ? 0.5 : -1.0, b->mag = positive ? 2.0 : 1.0;
    for (size_t i = 0; i < n->count; ++i) {
        if (ref_is_float(dtype) && g->special)
            n->real[i] = ref_round(dtype, special_values[pick(g, sizeof special_values / sizeof special_values[0])]);
        else if (ref_is_float(dtype)) n->real[i] = ref_round(dtype, positive ? uniform(g, 0.5, 2.0) : uniform(g, -1.0, 1.0));
        else if (dtype == UFORM_SESSION_DTYPE_BOOL) n->integer[i] = (int64_t)pick(g, 2);
        else if (dtype == UFORM_SESSION_DTYPE_U8) n->integer[i] = (int64_t)pick(g, 41);
        else n->integer[i] = (int64_t)pick(g, 41) - 20;
    }
    uint32_t value = 0;
    uform_session_status_t status;
    if (constant) {
        size_t size = ref_dtype_size(dtype);
        unsigned char *payload = (unsigned char *)malloc(n->count * size);
        for (size_t i = 0; i < n->count; ++i) ref_encode(n, i, payload + i * size);
        status = uform_program_builder_constant(g->builder, (uform_session_dtype_t)dtype, (size_t)rank, dims, payload,
                                                n->count * size, &value);
        free(payload);
    } else {
        status = uform_program_builder_parameter(g->builder, "x", (uform_session_dtype_t)dtype, (size_t)rank, dims, &value);
    }
    CHECK_STATUS(status, UFORM_SESSION_OK);
    CHECK_EQ_INT(value, id);
    return id;
}

/* Adds an operation to both descriptions; `dims` only for RESHAPE and BROADCAST, `dtype` for CONVERT. */
static int add_op(generator_t *g, int opcode, const int *operands, int operand_count, const int64_t *attributes,
                  int attribute_count, int dtype, int rank, const size_t *dims, bound_t bound) {
    if (g->ref.count >= REF_MAX_NODES - 4) return -1;
    int id = g->ref.count++;
    ref_node_t *n = &g->ref.nodes[id];
    memset(n, 0, sizeof *n);
    n->kind = REF_OPERATION, n->opcode = opcode, n->operand_count = operand_count, n->attribute_count = attribute_count;
    n->dtype = dtype;
    for (int i = 0; i < operand_count; ++i) n->operands[i] = operands[i];
    for (int i = 0; i < attribute_count; ++i) n->attributes[i] = attributes[i];
    uint32_t ids[8];
    for (int i = 0; i < operand_count; ++i) ids[i] = (uint32_t)operands[i];
    uint32_t value = 0;
    uform_session_status_t status;
    if (opcode == UFORM_SESSION_OP_RESHAPE || opcode == UFORM_SESSION_OP_BROADCAST) {
        n->rank = rank;
        memcpy(n->dims, dims, sizeof(size_t) * (size_t)rank);
        n->dtype = g->ref.nodes[operands[0]].dtype;
        status = uform_program_builder_operation(g->builder, (uform_session_opcode_t)opcode, ids, (size_t)operand_count,
                                                 attributes, (size_t)attribute_count, (uform_session_dtype_t)n->dtype,
                                                 (size_t)rank, dims, &value);
    } else {
        status = uform_program_builder_operation(g->builder, (uform_session_opcode_t)opcode, ids, (size_t)operand_count,
                                                 attributes, (size_t)attribute_count, (uform_session_dtype_t)dtype,
                                                 UFORM_SESSION_INFER, NULL, &value);
    }
    CHECK_MSG(status == UFORM_SESSION_OK, "builder refused opcode %d: %s", opcode, uform_program_builder_cause(g->builder));
    if (status != UFORM_SESSION_OK) g->failed = 1;
    // The generator needs the type now to draw the next operation; the reference derives its own
    // in ref_evaluate, and the outputs' descriptors are compared with that.
    uform_session_dtype_t builder_dtype = UFORM_SESSION_DTYPE_F32;
    size_t builder_rank = 0;
    uform_program_builder_type(g->builder, value, &builder_dtype, &builder_rank, n->dims);
    n->dtype = (int)builder_dtype, n->rank = (int)builder_rank;
    n->count = count_dims(n->rank, n->dims);
    g->bounds[id] = bound;
    g->bounds[id].tol = tolerance(n->dtype);
    for (int i = 0; i < operand_count; ++i)
        if (g->bounds[operands[i]].tol > g->bounds[id].tol) g->bounds[id].tol = g->bounds[operands[i]].tol;
    return id;
}

static int broadcastable(const ref_node_t *a, const ref_node_t *b) {
    for (int i = 0; i < a->rank && i < b->rank; ++i) {
        size_t x = a->dims[a->rank - 1 - i], y = b->dims[b->rank - 1 - i];
        if (x != y && x != 1 && y != 1) return 0;
    }
    return 1;
}

static bound_t make_bound(double lo, double mag) {
    bound_t b = {lo, mag, 0};
    return b;
}

/* A second operand for x: an existing value of the same dtype that broadcasts with it, or a new
 * constant whose dims are x's with some axes set to 1 (or a suffix of them). */
static int partner(generator_t *g, int x, int positive, int need_exact) {
    const ref_node_t *a = &g->ref.nodes[x];
    for (int attempt = 0; attempt < 6; ++attempt) {
        int y = (int)pick(g, (uint64_t)g->ref.count);
        const ref_node_t *b = &g->ref.nodes[y];
        if (b->kind == 0 || b->dtype != a->dtype || !broadcastable(a, b)) continue;
        if (positive && g->bounds[y].lo < 0.05) continue;
        if (need_exact && !g->bounds[y].exact) continue;
        return y;
    }
    size_t dims[REF_MAX_RANK];
    int rank = a->rank;
    memcpy(dims, a->dims, sizeof dims);
    if (pick(g, 3) == 0 && rank > 1) { // a suffix
        int drop = 1 + (int)pick(g, (uint64_t)rank - 1);
        memmove(dims, dims + drop, sizeof(size_t) * (size_t)(rank - drop));
        rank -= drop;
    } else {
        for (int d = 0; d < rank; ++d)
            if (pick(g, 3) == 0) dims[d] = 1;
    }
    return add_leaf(g, (int)pick(g, 2), a->dtype, rank, dims, positive);
}

static const int unary_float[] = {UFORM_SESSION_OP_NEG,  UFORM_SESSION_OP_ABS,  UFORM_SESSION_OP_EXP,     UFORM_SESSION_OP_LOG,
                                  UFORM_SESSION_OP_SQRT, UFORM_SESSION_OP_RSQRT, UFORM_SESSION_OP_TANH,   UFORM_SESSION_OP_ERF,
                                  UFORM_SESSION_OP_SIGMOID, UFORM_SESSION_OP_RELU, UFORM_SESSION_OP_GELU};

/* Tries one random operation on value x; answers its id, or -1 when the draw did not fit. */
static int grow(generator_t *g, int x) {
    ref_node_t *a = &g->ref.nodes[x];
    bound_t bx = g->bounds[x];
    int fl = ref_is_float(a->dtype), is_bool = a->dtype == UFORM_SESSION_DTYPE_BOOL;
    int operands[4] = {x, 0, 0, 0};
    int64_t attributes[24];
    double mag = bx.mag, lo = bx.lo;
    unsigned kind = (unsigned)pick(g, 14);
    if (a->rank == 0 && (kind == 6 || kind >= 12)) return -1; // these need an axis
    // Special values: only operations both sides round exactly the same way (no transcendental
    // functions, no matmul, softmax or layer norm, whose summation orders differ).
    if (g->special && fl && (kind == 7 || kind == 13)) return -1;
    switch (kind) {
    case 0:
    case 1: { // unary
        if (is_bool) return -1;
        if (!fl) {
            static const int ops[] = {UFORM_SESSION_OP_NEG, UFORM_SESSION_OP_ABS, UFORM_SESSION_OP_RELU};
            return add_op(g, ops[pick(g, 3)], operands, 1, NULL, 0, a->dtype, 0, NULL, make_bound(0, 0));
        }
        int op = g->special ? unary_float[pick(g, 2)] : unary_float[pick(g, 11)];
        if (g->special && pick(g, 2)) op = UFORM_SESSION_OP_RELU;
        bound_t b = make_bound(-mag, mag);
        switch (op) {
        case UFORM_SESSION_OP_ABS: b = make_bound(lo > 0 ? lo : 0.0, mag); break;
        case UFORM_SESSION_OP_RELU: b = make_bound(lo > 0 ? lo : 0.0, mag); break;
        case UFORM_SESSION_OP_EXP:
            if (mag > 3) return -1;
            b = make_bound(exp(lo), exp(mag));
            break;
        case UFORM_SESSION_OP_LOG:
            if (lo < 0.05) return -1;
            b = make_bound(-fmax(fabs(log(lo)), fabs(log(mag))), fmax(fabs(log(lo)), fabs(log(mag))));
            break;
        case UFORM_SESSION_OP_SQRT:
            if (lo < 0.05) return -1;
            b = make_bound(sqrt(lo), sqrt(mag));
            break;
        case UFORM_SESSION_OP_RSQRT:
            if (lo < 0.05) return -1;
            b = make_bound(1 / sqrt(mag), 1 / sqrt(lo));
            break;
        case UFORM_SESSION_OP_TANH: case UFORM_SESSION_OP_ERF: b = make_bound(-1, 1); break;
        case UFORM_SESSION_OP_SIGMOID:
            if (mag > 3) return -1;
            b = make_bound(1 / (1 + exp(mag)), 1);
            break;
        case UFORM_SESSION_OP_GELU: b = make_bound(-0.2 * mag, mag); break;
        default: break;
        }
        return add_op(g, op, operands, 1, NULL, 0, a->dtype, 0, NULL, b);
    }
    case 2:
    case 3: { // binary
        if (is_bool) return -1;
        static const int ops[] = {UFORM_SESSION_OP_ADD, UFORM_SESSION_OP_SUB, UFORM_SESSION_OP_MUL, UFORM_SESSION_OP_DIV,
                                  UFORM_SESSION_OP_MAX, UFORM_SESSION_OP_MIN, UFORM_SESSION_OP_POW};
        int op = ops[pick(g, fl && !g->special ? 7 : 6)];
        if (fl && op == UFORM_SESSION_OP_POW && lo < 0.05) return -1;
        int y = partner(g, x, fl && op == UFORM_SESSION_OP_DIV && !g->special, 0);
        if (y < 0) return -1;
        a = &g->ref.nodes[x];
        bound_t by = g->bounds[y];
        operands[1] = y;
        bound_t b = make_bound(0, 0);
        if (fl) {
            switch (op) {
            case UFORM_SESSION_OP_ADD: b = make_bound(lo + by.lo, mag + by.mag); break;
            case UFORM_SESSION_OP_SUB: b = make_bound(-(mag + by.mag), mag + by.mag); break;
            case UFORM_SESSION_OP_MUL:
                b = make_bound(lo > 0 && by.lo > 0 ? lo * by.lo : -mag * by.mag, mag * by.mag);
                break;
            case UFORM_SESSION_OP_DIV:
                if (by.lo < 0.05 && !g->special) return -1;
                b = make_bound(lo > 0 ? lo / by.mag : -mag / by.lo, mag / by.lo);
                break;
            case UFORM_SESSION_OP_MAX: b = make_bound(fmax(lo, by.lo), fmax(mag, by.mag)); break;
            case UFORM_SESSION_OP_MIN: b = make_bound(fmin(lo, by.lo), fmax(mag, by.mag)); break;
            default: {
                if (by.mag > 2) return -1;
                double spread = fmax(fabs(log(lo)), fabs(log(mag))) * by.mag;
                b = make_bound(exp(-spread), exp(spread));
                break;
            }
            }
            if (b.mag > 1e4 && !g->special) return -1;
        }
        return add_op(g, op, operands, 2, NULL, 0, a->dtype, 0, NULL, b);
    }
    case 4: { // comparison, then usually select
        if (fl && !bx.exact && !g->special) return -1;
        static const int ops[] = {UFORM_SESSION_OP_EQ, UFORM_SESSION_OP_NE, UFORM_SESSION_OP_LT,
                                  UFORM_SESSION_OP_LE, UFORM_SESSION_OP_GT, UFORM_SESSION_OP_GE};
        int y = partner(g, x, 0, fl && !g->special);
        if (y < 0) return -1;
        operands[1] = y;
        int c = add_op(g, ops[pick(g, 6)], operands, 2, NULL, 0, UFORM_SESSION_DTYPE_BOOL, 0, NULL, make_bound(0, 1));
        if (c < 0 || pick(g, 4) == 0) return c;
        bound_t bx2 = g->bounds[x], by = g->bounds[y];
        int select_operands[3] = {c, pick(g, 2) ? x : y, 0};
        select_operands[2] = select_operands[1] == x ? y : x;
        return add_op(g, UFORM_SESSION_OP_SELECT, select_operands, 3, NULL, 0, g->ref.nodes[x].dtype, 0, NULL,
                      make_bound(fmin(bx2.lo, by.lo), fmax(bx2.mag, by.mag)));
    }
    case 5: { // convert
        static const int dtypes[] = {UFORM_SESSION_DTYPE_F32, UFORM_SESSION_DTYPE_F64, UFORM_SESSION_DTYPE_F16, UFORM_SESSION_DTYPE_BF16,
                                     UFORM_SESSION_DTYPE_I8,  UFORM_SESSION_DTYPE_I32, UFORM_SESSION_DTYPE_I64, UFORM_SESSION_DTYPE_U8,
                                     UFORM_SESSION_DTYPE_BOOL};
        int to = dtypes[pick(g, 9)];
        if (fl && !ref_is_float(to) && !bx.exact && !g->special) return -1;
        if (fl && ref_is_float(to) && mag > 6e4 && !g->special) return -1;
        bound_t b = fl ? bx : make_bound(-200, 200);
        b.exact = 0;
        if (!fl && ref_is_float(to)) {
            if (a->dtype == UFORM_SESSION_DTYPE_I64 || a->dtype == UFORM_SESSION_DTYPE_I32) return -1; // may exceed f16's range
            b = make_bound(-256, 256);
        }
        return add_op(g, UFORM_SESSION_OP_CONVERT, operands, 1, NULL, 0, to, 0, NULL, b);
    }
    case 6: { // reduction over a random non-empty set of axes
        if (is_bool) return -1;
        int op = UFORM_SESSION_OP_REDUCE_SUM + (int)pick(g, fl ? 4 : 3);
        int count = 1;
        attributes[0] = (int64_t)pick(g, 2);
        size_t reduced = 1;
        for (int d = 0; d < a->rank; ++d)
            if (pick(g, 2) || (d == a->rank - 1 && count == 1)) attributes[count++] = d, reduced *= a->dims[d];
        bound_t b = bx;
        b.exact = 0;
        if (op == UFORM_SESSION_OP_REDUCE_SUM && fl) b = make_bound(-(double)reduced * mag, (double)reduced * mag);
        if (op == UFORM_SESSION_OP_REDUCE_SUM && fl && lo > 0) b.lo = lo;
        return add_op(g, op, operands, 1, attributes, count, a->dtype, 0, NULL, b);
    }
    case 7: { // matmul with a new constant or parameter
        if (!fl || a->rank < 2 || mag > 100) return -1;
        int ta = (int)pick(g, 2), tb = (int)pick(g, 2);
        size_t k = ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1], n = 1 + pick(g, 6);
        size_t dims[REF_MAX_RANK];
        int rank = 2;
        if (pick(g, 3) == 0 && a->rank > 2) { // batch dims: the same or 1
            rank = a->rank;
            for (int d = 0; d < a->rank - 2; ++d) dims[d] = pick(g, 2) ? a->dims[d] : 1;
        }
        dims[rank - 2] = tb ? n : k;
        dims[rank - 1] = tb ? k : n;
        int y = add_leaf(g, (int)pick(g, 2), a->dtype, rank, dims, 0);
        if (y < 0) return -1;
        operands[1] = y;
        attributes[0] = ta, attributes[1] = tb;
        int dtype = g->ref.nodes[x].dtype;
        int product = add_op(g, UFORM_SESSION_OP_MATMUL, operands, 2, attributes, 2, dtype, 0, NULL,
                             make_bound(-(double)k * mag, (double)k * mag));
        if (product < 0 || pick(g, 2)) return product;
        // The linear-layer pattern the planner folds into the GEMM epilogue: + bias [N] (or [1, N]), then GELU.
        size_t bias_dims[2] = {1, n};
        int bias_rank = 1 + (int)pick(g, 2);
        int bias = add_leaf(g, (int)pick(g, 2), dtype, bias_rank, bias_dims + (2 - bias_rank), 0);
        if (bias < 0) return product;
        int sum_operands[2] = {product, bias};
        if (pick(g, 2)) sum_operands[0] = bias, sum_operands[1] = product;
        double bound = (double)k * mag + 1.0;
        int sum = add_op(g, UFORM_SESSION_OP_ADD, sum_operands, 2, NULL, 0, dtype, 0, NULL, make_bound(-bound, bound));
        if (sum < 0 || pick(g, 2)) return sum;
        return add_op(g, UFORM_SESSION_OP_GELU, &sum, 1, NULL, 0, dtype, 0, NULL, make_bound(-0.2 * bound, bound));
    }
    case 8: { // reshape: flatten, or split the count into two factors
        size_t dims[3], count = a->count;
        int rank = 1;
        dims[0] = count;
        if (pick(g, 2)) {
            size_t f = 1;
            for (size_t d = 2; d <= count; ++d)
                if (count % d == 0) { f = d; break; }
            dims[0] = f, dims[1] = count / f, rank = 2;
        }
        bound_t b = bx;
        b.exact = 0;
        return add_op(g, UFORM_SESSION_OP_RESHAPE, operands, 1, NULL, 0, a->dtype, rank, dims, b);
    }
    case 9: { // transpose by a random permutation
        for (int d = 0; d < a->rank; ++d) attributes[d] = d;
        for (int d = a->rank - 1; d > 0; --d) {
            int j = (int)pick(g, (uint64_t)d + 1);
            int64_t t = attributes[d];
            attributes[d] = attributes[j], attributes[j] = t;
        }
        bound_t b = bx;
        b.exact = 0;
        return add_op(g, UFORM_SESSION_OP_TRANSPOSE, operands, 1, attributes, a->rank, a->dtype, 0, NULL, b);
    }
    case 10: { // broadcast: a new leading axis, or a 1 stretched
        if (a->rank >= 4) return -1;
        size_t dims[REF_MAX_RANK];
        int rank = a->rank + 1;
        dims[0] = 1 + pick(g, 3);
        memcpy(dims + 1, a->dims, sizeof(size_t) * (size_t)a->rank);
        for (int d = 1; d < rank; ++d)
            if (dims[d] == 1) dims[d] = 1 + pick(g, 3);
        bound_t b = bx;
        b.exact = 0;
        return add_op(g, UFORM_SESSION_OP_BROADCAST, operands, 1, NULL, 0, a->dtype, rank, dims, b);
    }
    case 11: { // slice with random start, stop and step per axis
        for (int d = 0; d < a->rank; ++d) {
            int64_t dim = (int64_t)a->dims[d], start = (int64_t)pick(g, (uint64_t)dim);
            int64_t stop = start + 1 + (int64_t)pick(g, (uint64_t)(dim - start));
            attributes[3 * d] = start, attributes[3 * d + 1] = stop, attributes[3 * d + 2] = 1 + (int64_t)pick(g, 3);
        }
        bound_t b = bx;
        b.exact = 0;
        return add_op(g, UFORM_SESSION_OP_SLICE, operands, 1, attributes, 3 * a->rank, a->dtype, 0, NULL, b);
    }
    case 12: { // concat with itself and maybe a fresh leaf
        int axis = (int)pick(g, (uint64_t)a->rank), count = 2;
        operands[1] = x;
        if (pick(g, 2)) {
            size_t dims[REF_MAX_RANK];
            memcpy(dims, a->dims, sizeof dims);
            dims[axis] = 1 + pick(g, 3);
            int y = add_leaf(g, 0, a->dtype, a->rank, dims, bx.lo > 0);
            if (y < 0) return -1;
            operands[count++] = y;
            a = &g->ref.nodes[x];
        }
        attributes[0] = axis;
        bound_t b = make_bound(fmin(bx.lo, -1), fmax(bx.mag, 2));
        if (bx.lo > 0) b.lo = fmin(bx.lo, 0.5);
        return add_op(g, UFORM_SESSION_OP_CONCAT, operands, count, attributes, 1, a->dtype, 0, NULL, b);
    }
    default: { // softmax or layer norm
        if (!fl || mag > 50) return -1;
        attributes[0] = (int64_t)pick(g, (uint64_t)a->rank);
        if (pick(g, 2)) return add_op(g, UFORM_SESSION_OP_SOFTMAX, operands, 1, attributes, 1, a->dtype, 0, NULL, make_bound(0, 1));
        double eps = 1e-3;
        memcpy(&attributes[1], &eps, sizeof eps);
        int axis = (int)attributes[0], count = 1 + (int)pick(g, 3);
        size_t width = 1;
        for (int d = axis; d < a->rank; ++d) width *= a->dims[d];
        for (int i = 1; i < count; ++i) {
            int leaf = add_leaf(g, (int)pick(g, 2), a->dtype, a->rank - axis, a->dims + axis, 0);
            if (leaf < 0) return -1;
            operands[i] = leaf;
            a = &g->ref.nodes[x];
        }
        double bound = sqrt((double)width) + 1.0;
        return add_op(g, UFORM_SESSION_OP_LAYER_NORM, operands, count, attributes, 2, a->dtype, 0, NULL,
                      make_bound(-bound, bound));
    }
    }
}

static double decode_real(int dtype, const unsigned char *bytes) {
    switch (dtype) {
    case UFORM_SESSION_DTYPE_F32: { float v; memcpy(&v, bytes, 4); return v; }
    case UFORM_SESSION_DTYPE_F64: { double v; memcpy(&v, bytes, 8); return v; }
    case UFORM_SESSION_DTYPE_BF16: {
        uint32_t bits = (uint32_t)(bytes[0] | bytes[1] << 8) << 16;
        float v;
        memcpy(&v, &bits, 4);
        return v;
    }
    default: { // binary16 by its definition
        unsigned bits = (unsigned)(bytes[0] | bytes[1] << 8), exponent = (bits >> 10) & 31u, mantissa = bits & 1023u;
        double sign = bits & 0x8000u ? -1.0 : 1.0;
        if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
        if (exponent == 0) return sign * ldexp((double)mantissa, -24);
        return sign * ldexp(1024.0 + mantissa, (int)exponent - 25);
    }
    }
}

static int64_t decode_integer(int dtype, const unsigned char *bytes) {
    switch (dtype) {
    case UFORM_SESSION_DTYPE_I8: return (int8_t)bytes[0];
    case UFORM_SESSION_DTYPE_I32: { int32_t v; memcpy(&v, bytes, 4); return v; }
    case UFORM_SESSION_DTYPE_I64: { int64_t v; memcpy(&v, bytes, 8); return v; }
    default: return bytes[0];
    }
}


static void run_program(uform_session_t session, uint64_t seed, int index) {
    generator_t g;
    memset(&g, 0, sizeof g);
    g.rng = seed;
    g.special = seed % 4 == 0;
    CHECK_STATUS(uform_program_builder_init(&g.builder), UFORM_SESSION_OK);
    static const int dtypes[] = {UFORM_SESSION_DTYPE_F32, UFORM_SESSION_DTYPE_F32, UFORM_SESSION_DTYPE_F64, UFORM_SESSION_DTYPE_F16,
                                 UFORM_SESSION_DTYPE_BF16, UFORM_SESSION_DTYPE_I8, UFORM_SESSION_DTYPE_I32, UFORM_SESSION_DTYPE_I64,
                                 UFORM_SESSION_DTYPE_U8, UFORM_SESSION_DTYPE_BOOL};
    int dtype = dtypes[pick(&g, 10)];
    size_t base[REF_MAX_RANK];
    int rank = 1 + (int)pick(&g, 3);
    for (int d = 0; d < rank; ++d) base[d] = 1 + pick(&g, 6);
    int parameters = 1 + (int)pick(&g, 3), last = -1;
    for (int i = 0; i < parameters; ++i) {
        size_t dims[REF_MAX_RANK];
        memcpy(dims, base, sizeof dims);
        for (int d = 0; d < rank; ++d)
            if (i && pick(&g, 3) == 0) dims[d] = 1;
        last = add_leaf(&g, 0, dtype, rank, dims, (int)pick(&g, 2));
    }
    int operations = 1 + (int)pick(&g, 10);
    for (int i = 0, tries = 0; i < operations && tries < 200; ++tries) {
        int x = pick(&g, 3) ? last : (int)pick(&g, (uint64_t)g.ref.count);
        int y = grow(&g, x);
        if (g.failed) break;
        if (y >= 0) last = y, ++i;
    }
    g.ref.outputs[g.ref.output_count++] = last;
    if (pick(&g, 4) == 0) g.ref.outputs[g.ref.output_count++] = (int)pick(&g, (uint64_t)g.ref.count);
    if (pick(&g, 8) == 0) g.ref.outputs[g.ref.output_count++] = last;
    for (int k = 0; k < g.ref.output_count; ++k)
        CHECK_STATUS(uform_program_builder_output(g.builder, "y", (uint32_t)g.ref.outputs[k]), UFORM_SESSION_OK);

    if (getenv("DUMP"))
        for (int i = 0; i < g.ref.count; ++i) {
            const ref_node_t *n = &g.ref.nodes[i];
            fprintf(stderr, "value %d: kind %d opcode %d dtype %d rank %d operands", i, n->kind, n->opcode, n->dtype, n->rank);
            for (int j = 0; j < n->operand_count; ++j) fprintf(stderr, " %d", n->operands[j]);
            fprintf(stderr, " attributes");
            for (int j = 0; j < n->attribute_count; ++j) fprintf(stderr, " %lld", (long long)n->attributes[j]);
            fprintf(stderr, "\n");
        }
    char why[256] = "";
    int reference_ok = !g.failed && ref_evaluate(&g.ref, why, sizeof why) == 0;
    CHECK_MSG(reference_ok, "program %d (seed %llu): reference refused: %s", index, (unsigned long long)seed, why);
    const void *bytes = NULL;
    size_t length = 0;
    uform_program_t program;
    CHECK_STATUS(uform_program_builder_finish(g.builder, &bytes, &length), UFORM_SESSION_OK);
    uform_session_status_t status = uform_session_compile(session, bytes, length, &program);
    CHECK_MSG(status == UFORM_SESSION_OK, "program %d (seed %llu): compile %s: %s", index, (unsigned long long)seed,
              uform_session_status_name(status), uform_session_last_cause(session));
    if (status == UFORM_SESSION_OK && reference_ok) {
        const uform_descriptor_t *ins, *outs;
        size_t in_count, out_count;
        CHECK_STATUS(uform_session_inputs(session, program, &ins, &in_count), UFORM_SESSION_OK);
        CHECK_STATUS(uform_session_outputs(session, program, &outs, &out_count), UFORM_SESSION_OK);
        CHECK_EQ_INT(in_count, parameters + 0 * 0 + (in_count - (size_t)parameters)); // extra parameters come from grow()
        CHECK_EQ_INT(out_count, g.ref.output_count);
        const void *inputs[REF_MAX_NODES];
        void *copies[REF_MAX_NODES], *outputs[8];
        size_t input_sizes[REF_MAX_NODES], output_sizes[8];
        size_t p = 0;
        for (int i = 0; i < g.ref.count; ++i) {
            const ref_node_t *n = &g.ref.nodes[i];
            if (n->kind != REF_PARAMETER) continue;
            size_t size = ref_dtype_size(n->dtype);
            unsigned char *buffer = (unsigned char *)malloc(n->count * size);
            for (size_t e = 0; e < n->count; ++e) ref_encode(n, e, buffer + e * size);
            CHECK_EQ_INT(ins[p].byte_size, n->count * size);
            inputs[p] = buffer, input_sizes[p] = n->count * size;
            copies[p] = malloc(n->count * size);
            memcpy(copies[p], buffer, n->count * size);
            ++p;
        }
        CHECK_EQ_INT(p, in_count);
        int shapes_ok = 1;
        for (int k = 0; k < g.ref.output_count; ++k) {
            const ref_node_t *n = &g.ref.nodes[g.ref.outputs[k]];
            shapes_ok &= outs[k].dtype == (uform_session_dtype_t)n->dtype && outs[k].rank == (size_t)n->rank;
            for (int d = 0; shapes_ok && d < n->rank; ++d) shapes_ok &= outs[k].dims[d] == n->dims[d];
            output_sizes[k] = outs[k].byte_size;
            outputs[k] = malloc(outs[k].byte_size + 1);
            memset(outputs[k], 0xA5, outs[k].byte_size);
        }
        CHECK_MSG(shapes_ok, "program %d (seed %llu): output types differ from the reference", index, (unsigned long long)seed);
        size_t scratch_size = uform_session_scratch_size(session, program);
        unsigned char *scratch = (unsigned char *)malloc(scratch_size + 1);
        // An odd address on purpose: the session aligns inside the scratch it is given.
        status = uform_session_invoke(session, program, inputs, input_sizes, p, outputs, output_sizes,
                                      (size_t)g.ref.output_count, index % 2 ? scratch : NULL, scratch_size);
        CHECK_STATUS(status, UFORM_SESSION_OK);
        for (int k = 0; shapes_ok && status == UFORM_SESSION_OK && k < g.ref.output_count; ++k) {
            const ref_node_t *n = &g.ref.nodes[g.ref.outputs[k]];
            const bound_t *b = &g.bounds[g.ref.outputs[k]];
            size_t size = ref_dtype_size(n->dtype);
            size_t bad = 0;
            for (size_t e = 0; e < n->count && bad < 3; ++e) {
                const unsigned char *at = (const unsigned char *)outputs[k] + e * size;
                if (ref_is_float(n->dtype)) {
                    double got = decode_real(n->dtype, at), want = n->real[e];
                    int same = (isnan(got) && isnan(want)) || got == want ||
                               (!g.special && fabs(got - want) <= fmax(b->tol, tolerance(n->dtype)) * (fabs(want) + b->mag + 1e-3));
                    if (!same) {
                        ++bad;
                        CHECK_MSG(0, "program %d (seed %llu) output %d (%s) element %zu: got %.9g, expected %.9g", index,
                                  (unsigned long long)seed, k, n->kind == REF_OPERATION ? "op" : "leaf", e, got, want);
                    }
                } else {
                    int64_t got = decode_integer(n->dtype, at), want = n->integer[e];
                    if (got != want) {
                        ++bad;
                        CHECK_MSG(0, "program %d (seed %llu) output %d element %zu: got %lld, expected %lld", index,
                                  (unsigned long long)seed, k, e, (long long)got, (long long)want);
                    }
                }
            }
            if (!bad) CHECK(1);
        }
        for (size_t i = 0; i < p; ++i) {
            CHECK_MSG(memcmp(inputs[i], copies[i], input_sizes[i]) == 0, "program %d: input %zu changed", index, i);
            free((void *)inputs[i]);
            free(copies[i]);
        }
        for (int k = 0; k < g.ref.output_count; ++k) free(outputs[k]);
        free(scratch);
        CHECK_STATUS(uform_session_release(session, program), UFORM_SESSION_OK);
    }
    if (status == UFORM_SESSION_OK && !reference_ok) uform_session_release(session, program);
    ref_free(&g.ref);
    uform_program_builder_free(g.builder);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261129u;
    int programs = argc > 2 ? atoi(argv[2]) : 1500;
    /* A run for one class (UFORM_CPU_CLASS, as CTest's per-class entries set it) on a CPU without it
     * is reported as not exercised: the session would bind the CPU's own class instead. */
    const char *wanted = getenv("UFORM_CPU_CLASS");
    if (wanted && *wanted) {
        uform_cpu_class_t cpu_class = uform__cpu_class_parse(wanted);
        if (cpu_class == UFORM_CPU_CLASS_UNKNOWN) {
            fprintf(stderr, "UFORM_CPU_CLASS='%s' names no CPU class\n", wanted);
            return 2;
        }
        if (!uform_cpu_class_supported(cpu_class)) return check_skip_class(cpu_class);
    }
    printf("test_session_random: seed %llu, %d programs, CPU class %s (replay one with: test_session_random SEED 1)\n",
           (unsigned long long)seed, programs, uform_cpu_class_name(uform_cpu_class_detect()));
    uform_session_t session = NULL;
    CHECK_STATUS(uform_session_init(&session), UFORM_SESSION_OK);
    uint64_t state = seed;
    for (int i = 0; i < programs; ++i) {
        uint64_t program_seed = i == 0 ? seed : check_random_next(&state);
        size_t failed_before = check_failed_count;
        run_program(session, program_seed, i);
        if (check_failed_count != failed_before) fprintf(stderr, "  (replay: test_session_random %llu 1; DUMP=1 prints the program)\n", (unsigned long long)program_seed);
    }
    uform_session_free(session);
    return check_finish();
}
