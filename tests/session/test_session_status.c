/*
 * Every session status reached on purpose: the full table, stale handles after release, each
 * buffer rule of invoke, a newer wire version, each kind of malformed program (truncated at every
 * byte, bad magic, ids out of range, forward references and cycles, shapes that do not check,
 * payloads of the wrong size, unknown dtypes and opcodes), a plan above the byte limit
 * (COMPILE_FAILED), OUT_OF_MEMORY at every allocation of the builder, compile and invoke (through
 * the session's allocation hook), and a kernel that refuses (LAUNCH_FAILED, through the internal
 * stages) or cannot allocate (OUT_OF_MEMORY). Also: descriptors, outputs that are parameters (copied, inputs unchanged), the
 * planner's fusion and buffer reuse as seen through scratch_size, and a slice with a huge step.
 * The last cause is checked to change only for failures that go through the error mapping.
 */
#include <stdint.h>
#include <stdio.h>

#include "session/programs.h"
#include "session/session.h" /* uform__session_fail_allocations_after */

static const size_t dims_23[2] = {2, 3}, dims_3[1] = {3}, dims_4[1] = {4};

/* Finishes `builder` into a private copy of its bytes. */
static unsigned char *finish(uform_program_builder_t builder, size_t *length) {
    const void *bytes = NULL;
    CHECK_STATUS(uform_program_builder_finish(builder, &bytes, length), UFORM_SESSION_OK);
    unsigned char *copy = (unsigned char *)malloc(*length + 16);
    memcpy(copy, bytes, *length);
    return copy;
}

/* y = neg(x) over f32 [2, 3]: the smallest useful program. */
static unsigned char *small_program(size_t *length) {
    uform_program_builder_t b = NULL;
    uint32_t x, y;
    uform_program_builder_init(&b);
    uform_program_builder_parameter(b, "x", UFORM_SESSION_DTYPE_F32, 2, dims_23, &x);
    uform_program_builder_operation(b, UFORM_SESSION_OP_NEG, &x, 1, NULL, 0, 0, UFORM_SESSION_INFER, NULL, &y);
    uform_program_builder_output(b, "y", y);
    unsigned char *bytes = finish(b, length);
    uform_program_builder_free(b);
    return bytes;
}

/* Compiles and expects `status` with a cause containing `needle`. */
static void expect_compile(uform_session_t session, const void *bytes, size_t length, uform_session_status_t status,
                           const char *needle, const char *what) {
    uform_program_t program;
    uform_session_status_t got = uform_session_compile(session, bytes, length, &program);
    CHECK_MSG(got == status, "%s: got %s, expected %s (cause: %s)", what, uform_session_status_name(got),
              uform_session_status_name(status), uform_session_last_cause(session));
    if (got == UFORM_SESSION_OK) uform_session_release(session, program);
    else if (needle) CHECK_CONTAINS(uform_session_last_cause(session), needle);
}

static void test_names(void) {
    const char *seen[9];
    for (int s = 0; s <= 8; ++s) {
        seen[s] = uform_session_status_name((uform_session_status_t)s);
        CHECK(strcmp(seen[s], "unknown") != 0);
        for (int t = 0; t < s; ++t) CHECK(strcmp(seen[s], seen[t]) != 0);
    }
    CHECK(strcmp(uform_session_status_name((uform_session_status_t)9), "unknown") == 0);
    CHECK_EQ_INT(UFORM_SESSION_LAUNCH_FAILED, 8);
    CHECK_EQ_INT(UFORM_SESSION_MAX_PROGRAMS, 64);
}

static void test_table_and_handles(uform_session_t session) {
    size_t length;
    unsigned char *bytes = small_program(&length);
    uform_program_t programs[UFORM_SESSION_MAX_PROGRAMS], extra;
    // A malformed program sets the cause; the full table must leave it as it is.
    expect_compile(session, "UFTQ", 4, UFORM_SESSION_INVALID_PROGRAM, "magic", "bad magic");
    for (int i = 0; i < UFORM_SESSION_MAX_PROGRAMS; ++i)
        CHECK_STATUS(uform_session_compile(session, bytes, length, &programs[i]), UFORM_SESSION_OK);
    char before[512];
    snprintf(before, sizeof before, "%s", uform_session_last_cause(session));
    CHECK_STATUS(uform_session_compile(session, bytes, length, &extra), UFORM_SESSION_TOO_MANY_PROGRAMS);
    CHECK(strcmp(before, uform_session_last_cause(session)) == 0);
    CHECK_EQ_INT(extra.generation, 0);

    // Release one: its handle goes stale everywhere, and the slot takes a new program.
    uform_program_t stale = programs[17];
    CHECK_STATUS(uform_session_release(session, stale), UFORM_SESSION_OK);
    CHECK_STATUS(uform_session_release(session, stale), UFORM_SESSION_INVALID_HANDLE);
    CHECK_STATUS(uform_session_compile(session, bytes, length, &programs[17]), UFORM_SESSION_OK);
    CHECK_EQ_INT(programs[17].index, stale.index);
    CHECK(programs[17].generation != stale.generation);
    const uform_descriptor_t *d;
    size_t count;
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6];
    const void *in[1] = {x};
    void *out[1] = {y};
    size_t in_size[1] = {sizeof x}, out_size[1] = {sizeof y};
    CHECK_STATUS(uform_session_inputs(session, stale, &d, &count), UFORM_SESSION_INVALID_HANDLE);
    CHECK_STATUS(uform_session_outputs(session, stale, &d, &count), UFORM_SESSION_INVALID_HANDLE);
    CHECK_STATUS(uform_session_invoke(session, stale, in, in_size, 1, out, out_size, 1, NULL, 0), UFORM_SESSION_INVALID_HANDLE);
    CHECK_EQ_INT(uform_session_scratch_size(session, stale), 0);
    CHECK_STATUS(uform_session_invoke(session, programs[17], in, in_size, 1, out, out_size, 1, NULL, 0), UFORM_SESSION_OK);
    CHECK_NEAR(y[5], -6.0, 0, 0);
    uform_program_t zeroed = {0, 0}, outside = {64, 1};
    CHECK_STATUS(uform_session_release(session, zeroed), UFORM_SESSION_INVALID_HANDLE);
    CHECK_STATUS(uform_session_release(session, outside), UFORM_SESSION_INVALID_HANDLE);
    CHECK_STATUS(uform_session_inputs(NULL, programs[0], &d, &count), UFORM_SESSION_INVALID_HANDLE);
    CHECK_STATUS(uform_session_inputs(session, programs[0], NULL, &count), UFORM_SESSION_INVALID_HANDLE);
    CHECK(strcmp(before, uform_session_last_cause(session)) == 0); // direct failures leave the cause
    for (int i = 0; i < UFORM_SESSION_MAX_PROGRAMS; ++i) CHECK_STATUS(uform_session_release(session, programs[i]), UFORM_SESSION_OK);
    CHECK_STATUS(uform_session_compile(NULL, bytes, length, &extra), UFORM_SESSION_INVALID_HANDLE);
    CHECK_STATUS(uform_session_compile(session, NULL, length, &extra), UFORM_SESSION_INVALID_PROGRAM);
    CHECK_STATUS(uform_session_compile(session, bytes, length, NULL), UFORM_SESSION_INVALID_PROGRAM);
    CHECK_STATUS(uform_session_init(NULL), UFORM_SESSION_INVALID_HANDLE);
    free(bytes);
}

static void test_buffers(uform_session_t session) {
    // Template 1: inputs x [m, k], w [n, k] (f32 chosen by the seed below), outputs p and logits.
    uform_program_builder_t b = NULL;
    uform_program_builder_init(&b);
    uint32_t x, w, z, p;
    size_t dx[2] = {4, 3}, dw[2] = {5, 3};
    int64_t t[2] = {0, 1}, axis = 1;
    uform_program_builder_parameter(b, "x", UFORM_SESSION_DTYPE_F32, 2, dx, &x);
    uform_program_builder_parameter(b, "w", UFORM_SESSION_DTYPE_F32, 2, dw, &w);
    uint32_t ops[2] = {x, w};
    uform_program_builder_operation(b, UFORM_SESSION_OP_MATMUL, ops, 2, t, 2, 0, UFORM_SESSION_INFER, NULL, &z);
    uform_program_builder_operation(b, UFORM_SESSION_OP_SOFTMAX, &z, 1, &axis, 1, 0, UFORM_SESSION_INFER, NULL, &p);
    uform_program_builder_output(b, "p", p);
    uform_program_builder_output(b, "logits", z);
    size_t length;
    unsigned char *bytes = finish(b, &length);
    uform_program_builder_free(b);
    uform_program_t program;
    CHECK_STATUS(uform_session_compile(session, bytes, length, &program), UFORM_SESSION_OK);
    free(bytes);
    const uform_descriptor_t *d;
    size_t count;
    CHECK_STATUS(uform_session_outputs(session, program, &d, &count), UFORM_SESSION_OK);
    CHECK_EQ_INT(count, 2);
    CHECK_EQ_INT(d[0].rank, 2);
    CHECK_EQ_INT(d[0].dims[0], 4);
    CHECK_EQ_INT(d[0].dims[1], 5);
    CHECK_EQ_INT(d[0].byte_size, 80);
    CHECK_EQ_INT(d[0].alignment, 4);
    CHECK_EQ_INT(d[0].dtype, UFORM_SESSION_DTYPE_F32);

    float *arena = (float *)aligned_alloc(64, 4096);
    for (int i = 0; i < 1024; ++i) arena[i] = (float)(i % 7) * 0.25f;
    float *xs = arena, *ws = arena + 16, *ps = arena + 64, *ls = arena + 128;
    const void *in[2] = {xs, ws};
    void *out[2] = {ps, ls};
    size_t in_size[2] = {48, 60}, out_size[2] = {80, 80};
    CHECK_STATUS(uform_session_invoke(session, program, in, in_size, 2, out, out_size, 2, NULL, 0), UFORM_SESSION_OK);
    float sum = 0;
    for (int j = 0; j < 5; ++j) sum += ps[j];
    CHECK_NEAR(sum, 1.0, 1e-6, 0);
    double logit = 0;
    for (int k = 0; k < 3; ++k) logit += (double)xs[k] * ws[3 + k];
    CHECK_NEAR(ls[1], logit, 1e-6, 1e-6);

    const char *cause_before = "";
    char before[512];
    snprintf(before, sizeof before, "%s", uform_session_last_cause(session));
    (void)cause_before;
    ps[0] = -7.0f;
    CHECK_STATUS(uform_session_invoke(session, program, in, in_size, 1, out, out_size, 2, NULL, 0), UFORM_SESSION_INVALID_BUFFER);
    CHECK_STATUS(uform_session_invoke(session, program, in, in_size, 3, out, out_size, 2, NULL, 0), UFORM_SESSION_INVALID_BUFFER);
    CHECK_STATUS(uform_session_invoke(session, program, in, in_size, 2, out, out_size, 1, NULL, 0), UFORM_SESSION_INVALID_BUFFER);
    size_t short_in[2] = {47, 60}, long_out[2] = {80, 84};
    CHECK_STATUS(uform_session_invoke(session, program, in, short_in, 2, out, out_size, 2, NULL, 0), UFORM_SESSION_INVALID_BUFFER);
    CHECK_STATUS(uform_session_invoke(session, program, in, in_size, 2, out, long_out, 2, NULL, 0), UFORM_SESSION_INVALID_BUFFER);
    const void *misaligned_in[2] = {(const char *)xs + 2, ws};
    CHECK_STATUS(uform_session_invoke(session, program, misaligned_in, in_size, 2, out, out_size, 2, NULL, 0), UFORM_SESSION_INVALID_BUFFER);
    const void *null_in[2] = {NULL, ws};
    CHECK_STATUS(uform_session_invoke(session, program, null_in, in_size, 2, out, out_size, 2, NULL, 0), UFORM_SESSION_INVALID_BUFFER);
    CHECK_STATUS(uform_session_invoke(session, program, NULL, in_size, 2, out, out_size, 2, NULL, 0), UFORM_SESSION_INVALID_BUFFER);
    void *onto_input[2] = {arena + 8, ls}; // p would overlap x's last bytes
    CHECK_STATUS(uform_session_invoke(session, program, in, in_size, 2, onto_input, out_size, 2, NULL, 0), UFORM_SESSION_INVALID_BUFFER);
    void *onto_output[2] = {ps, ps + 19}; // logits would share one float with p
    CHECK_STATUS(uform_session_invoke(session, program, in, in_size, 2, onto_output, out_size, 2, NULL, 0), UFORM_SESSION_INVALID_BUFFER);
    size_t need = uform_session_scratch_size(session, program);
    CHECK(need > 0);
    unsigned char *scratch = (unsigned char *)malloc(need);
    CHECK_STATUS(uform_session_invoke(session, program, in, in_size, 2, out, out_size, 2, scratch, need - 1), UFORM_SESSION_INVALID_BUFFER);
    CHECK_STATUS(uform_session_invoke(session, program, in, in_size, 2, out, out_size, 2, arena + 130, need), UFORM_SESSION_INVALID_BUFFER);
    CHECK_NEAR(ps[0], -7.0, 0, 0); // no failed call wrote an output
    CHECK(strcmp(before, uform_session_last_cause(session)) == 0);
    CHECK_STATUS(uform_session_invoke(session, program, in, in_size, 2, out, out_size, 2, scratch, need), UFORM_SESSION_OK);
    CHECK(ps[0] > 0.0f);
    free(scratch);
    free(arena);
    CHECK_STATUS(uform_session_release(session, program), UFORM_SESSION_OK);
}

static void test_malformed(uform_session_t session) {
    size_t length;
    unsigned char *bytes = small_program(&length);
    expect_compile(session, bytes, length, UFORM_SESSION_OK, NULL, "the valid program");
    for (size_t cut = 0; cut < length; ++cut) { // every truncation, from an exactly sized copy
        unsigned char *copy = (unsigned char *)malloc(cut ? cut : 1);
        memcpy(copy, bytes, cut);
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu bytes", cut);
        expect_compile(session, copy, cut, UFORM_SESSION_INVALID_PROGRAM, cut >= 4 ? "truncated" : NULL, what);
        free(copy);
    }
    bytes[length] = 0;
    expect_compile(session, bytes, length + 1, UFORM_SESSION_INVALID_PROGRAM, "follow", "a trailing byte");
    bytes[0] = 'X';
    expect_compile(session, bytes, length, UFORM_SESSION_INVALID_PROGRAM, "magic", "bad magic");
    bytes[0] = 'U';
    uint32_t version = 2;
    memcpy(bytes + 4, &version, 4);
    expect_compile(session, bytes, length, UFORM_SESSION_UNSUPPORTED_VERSION, "newer", "version 2");
    version = 0xFFFFFFFFu;
    memcpy(bytes + 4, &version, 4);
    expect_compile(session, bytes, length, UFORM_SESSION_UNSUPPORTED_VERSION, "newer", "version 2^32-1");
    version = 0;
    memcpy(bytes + 4, &version, 4);
    expect_compile(session, bytes, length, UFORM_SESSION_INVALID_PROGRAM, "version 0", "version 0");
    version = 1;
    memcpy(bytes + 4, &version, 4);
    bytes[28] = 9; // value 0's dtype byte: header is 4 + 4 + 5 * 4 = 28 bytes
    expect_compile(session, bytes, length, UFORM_SESSION_INVALID_PROGRAM, "unknown dtype", "dtype 9");
    bytes[28] = 0;
    bytes[29] = 9; // rank 9
    expect_compile(session, bytes, length, UFORM_SESSION_INVALID_PROGRAM, "rank", "rank 9");
    free(bytes);

    // Programs the builder writes on purpose with explicit (unchecked) types.
    struct {
        const char *what, *needle;
        int variant;
    } cases[] = {
        {"operand id out of range", "out of range", 0},  {"output id out of range", "out of range", 1},
        {"forward reference", "forward reference", 2},  {"two-operation cycle", "cycle", 3},
        {"shapes that do not broadcast", "broadcast", 4}, {"declared type disagrees", "declared", 5},
        {"payload one byte short", "payload", 6},         {"unknown opcode", "unknown opcode", 7},
        {"matmul inner dims", "inner", 8},                {"slice past the end", "slice", 9},
        {"transpose not a permutation", "permutation", 10}, {"layer_norm weight dims", "weight", 11},
        {"reduce lists an axis twice", "twice", 12},      {"a zero dimension", "dimension", 13},
        {"select with a non-bool condition", "bool", 14}, {"no outputs", "output", 15},
        {"dtype mismatch", "dtype", 16},                  {"reshape count", "reshape", 17},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        uform_program_builder_t b = NULL;
        uform_program_builder_init(&b);
        uint32_t x, y, z, w, ops[3];
        uform_program_builder_parameter(b, "x", UFORM_SESSION_DTYPE_F32, 2, dims_23, &x);
        float payload[3] = {1, 2, 3};
        const uform_session_dtype_t f = UFORM_SESSION_DTYPE_F32;
        switch (cases[c].variant) {
        case 0: ops[0] = x, ops[1] = 99; uform_program_builder_operation(b, UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, f, 2, dims_23, &y); break;
        case 1: y = 7; break;
        case 2: // operation 0 reads the result of operation 1
            ops[0] = x, ops[1] = 2;
            uform_program_builder_operation(b, UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, f, 2, dims_23, &y);
            uform_program_builder_operation(b, UFORM_SESSION_OP_NEG, &x, 1, NULL, 0, f, 2, dims_23, &y);
            break;
        case 3: // a = neg(b), b = neg(a)
            z = 2;
            uform_program_builder_operation(b, UFORM_SESSION_OP_NEG, &z, 1, NULL, 0, f, 2, dims_23, &y);
            uform_program_builder_operation(b, UFORM_SESSION_OP_NEG, &y, 1, NULL, 0, f, 2, dims_23, &y);
            break;
        case 4:
            uform_program_builder_parameter(b, "z", f, 1, dims_4, &z);
            ops[0] = x, ops[1] = z;
            uform_program_builder_operation(b, UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, f, 2, dims_23, &y);
            break;
        case 5: uform_program_builder_operation(b, UFORM_SESSION_OP_NEG, &x, 1, NULL, 0, f, 1, dims_3, &y); break;
        case 6:
            uform_program_builder_constant(b, f, 1, dims_3, payload, 11, &z);
            ops[0] = x, ops[1] = z;
            uform_program_builder_operation(b, UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, f, 2, dims_23, &y);
            break;
        case 7: uform_program_builder_operation(b, (uform_session_opcode_t)99, &x, 1, NULL, 0, f, 2, dims_23, &y); break;
        case 8: {
            int64_t t[2] = {0, 0};
            ops[0] = x, ops[1] = x;
            size_t dims_22[2] = {2, 3};
            uform_program_builder_operation(b, UFORM_SESSION_OP_MATMUL, ops, 2, t, 2, f, 2, dims_22, &y);
            break;
        }
        case 9: {
            int64_t s[6] = {0, 3, 1, 0, 3, 1};
            uform_program_builder_operation(b, UFORM_SESSION_OP_SLICE, &x, 1, s, 6, f, 2, dims_23, &y);
            break;
        }
        case 10: {
            int64_t perm[2] = {1, 1};
            uform_program_builder_operation(b, UFORM_SESSION_OP_TRANSPOSE, &x, 1, perm, 2, f, 2, dims_23, &y);
            break;
        }
        case 11: {
            int64_t a[2] = {1, 0};
            uform_program_builder_parameter(b, "w", f, 1, dims_4, &w);
            ops[0] = x, ops[1] = w;
            uform_program_builder_operation(b, UFORM_SESSION_OP_LAYER_NORM, ops, 2, a, 2, f, 2, dims_23, &y);
            break;
        }
        case 12: {
            int64_t a[3] = {0, 1, 1};
            size_t two[1] = {2};
            uform_program_builder_operation(b, UFORM_SESSION_OP_REDUCE_SUM, &x, 1, a, 3, f, 1, two, &y);
            break;
        }
        case 13: {
            size_t zero[2] = {2, 0};
            uform_program_builder_parameter(b, "z", f, 2, zero, &y);
            break;
        }
        case 14:
            ops[0] = x, ops[1] = x, ops[2] = x;
            uform_program_builder_operation(b, UFORM_SESSION_OP_SELECT, ops, 3, NULL, 0, f, 2, dims_23, &y);
            break;
        case 15: y = UINT32_MAX; break;
        case 16:
            uform_program_builder_parameter(b, "z", UFORM_SESSION_DTYPE_F64, 2, dims_23, &z);
            ops[0] = x, ops[1] = z;
            uform_program_builder_operation(b, UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, f, 2, dims_23, &y);
            break;
        default: uform_program_builder_operation(b, UFORM_SESSION_OP_RESHAPE, &x, 1, NULL, 0, f, 1, dims_4, &y); break;
        }
        if (y != UINT32_MAX) uform_program_builder_output(b, "y", y);
        size_t n;
        unsigned char *wire = finish(b, &n);
        expect_compile(session, wire, n, UFORM_SESSION_INVALID_PROGRAM, cases[c].needle, cases[c].what);
        free(wire);
        uform_program_builder_free(b);
    }

    // A valid program whose parameter alone exceeds the 2^40-byte limit: compile refuses to plan it.
    uform_program_builder_t b = NULL;
    uform_program_builder_init(&b);
    size_t huge[2] = {(size_t)1 << 21, (size_t)1 << 21};
    uint32_t x, y;
    uform_program_builder_parameter(b, "x", UFORM_SESSION_DTYPE_F32, 2, huge, &x);
    uform_program_builder_operation(b, UFORM_SESSION_OP_NEG, &x, 1, NULL, 0, 0, UFORM_SESSION_INFER, NULL, &y);
    uform_program_builder_output(b, "y", y);
    size_t n;
    unsigned char *wire = finish(b, &n);
    expect_compile(session, wire, n, UFORM_SESSION_COMPILE_FAILED, "limit", "a 16 TiB parameter");
    free(wire);
    uform_program_builder_free(b);
}

/* Outputs that are parameters (or reshapes of them) are copied; the inputs never change. */
static void test_outputs_of_inputs(uform_session_t session) {
    uform_program_builder_t b = NULL;
    uform_program_builder_init(&b);
    uint32_t x, r, y;
    size_t flat[1] = {6};
    uform_program_builder_parameter(b, "x", UFORM_SESSION_DTYPE_I32, 2, dims_23, &x);
    uform_program_builder_operation(b, UFORM_SESSION_OP_RESHAPE, &x, 1, NULL, 0, UFORM_SESSION_DTYPE_I32, 1, flat, &r);
    uform_program_builder_operation(b, UFORM_SESSION_OP_NEG, &r, 1, NULL, 0, 0, UFORM_SESSION_INFER, NULL, &y);
    uform_program_builder_output(b, "x", x);
    uform_program_builder_output(b, "flat", r);
    uform_program_builder_output(b, "neg", y);
    uform_program_builder_output(b, "neg again", y);
    size_t n;
    unsigned char *wire = finish(b, &n);
    uform_program_builder_free(b);
    uform_program_t program;
    CHECK_STATUS(uform_session_compile(session, wire, n, &program), UFORM_SESSION_OK);
    free(wire);
    int32_t in[6] = {1, -2, 3, INT32_MIN, 5, 6}, keep[6], o[4][6];
    memcpy(keep, in, sizeof in);
    const void *ins[1] = {in};
    size_t in_sizes[1] = {sizeof in}, out_sizes[4] = {24, 24, 24, 24};
    void *outs[4] = {o[0], o[1], o[2], o[3]};
    CHECK_STATUS(uform_session_invoke(session, program, ins, in_sizes, 1, outs, out_sizes, 4, NULL, 0), UFORM_SESSION_OK);
    CHECK(memcmp(in, keep, sizeof in) == 0);
    for (int i = 0; i < 6; ++i) {
        CHECK_EQ_INT(o[0][i], in[i]);
        CHECK_EQ_INT(o[1][i], in[i]);
        CHECK_EQ_INT(o[2][i], (int32_t)(0u - (uint32_t)in[i])); // INT32_MIN wraps to itself
        CHECK_EQ_INT(o[3][i], o[2][i]);
    }
    CHECK_STATUS(uform_session_release(session, program), UFORM_SESSION_OK);
}

/* The planner as seen through scratch_size: a fused chain keeps no intermediate buffers, and a
 * chain of transposes reuses dead buffers instead of holding every intermediate. */
static void test_plan_sizes(uform_session_t session) {
    const size_t count = 1 << 18; // 1 MiB of f32
    uform_program_builder_t b = NULL;
    uform_program_builder_init(&b);
    uint32_t v;
    size_t dims[1] = {count};
    uform_program_builder_parameter(b, "x", UFORM_SESSION_DTYPE_F32, 1, dims, &v);
    static const uform_session_opcode_t chain[] = {UFORM_SESSION_OP_TANH, UFORM_SESSION_OP_EXP, UFORM_SESSION_OP_NEG,
                                                   UFORM_SESSION_OP_SIGMOID, UFORM_SESSION_OP_GELU, UFORM_SESSION_OP_ABS};
    for (int i = 0; i < 6; ++i)
        uform_program_builder_operation(b, chain[i], &v, 1, NULL, 0, 0, UFORM_SESSION_INFER, NULL, &v);
    uform_program_builder_output(b, "y", v);
    size_t n;
    unsigned char *wire = finish(b, &n);
    uform_program_builder_free(b);
    uform_program_t program;
    CHECK_STATUS(uform_session_compile(session, wire, n, &program), UFORM_SESSION_OK);
    free(wire);
    size_t fused = uform_session_scratch_size(session, program);
    CHECK_MSG(fused < count * 4 / 8, "a fused chain of 6 over 1 MiB needs %zu bytes of scratch", fused);
    CHECK_STATUS(uform_session_release(session, program), UFORM_SESSION_OK);

    uform_program_builder_init(&b);
    size_t square[2] = {256, 256};
    int64_t perm[2] = {1, 0};
    uform_program_builder_parameter(b, "x", UFORM_SESSION_DTYPE_F32, 2, square, &v);
    for (int i = 0; i < 9; ++i)
        uform_program_builder_operation(b, UFORM_SESSION_OP_TRANSPOSE, &v, 1, perm, 2, 0, UFORM_SESSION_INFER, NULL, &v);
    uform_program_builder_output(b, "y", v);
    wire = finish(b, &n);
    uform_program_builder_free(b);
    CHECK_STATUS(uform_session_compile(session, wire, n, &program), UFORM_SESSION_OK);
    free(wire);
    size_t reused = uform_session_scratch_size(session, program), one = 256 * 256 * 4;
    CHECK_MSG(reused <= 2 * one + 4096, "9 transposes of 256 KiB need %zu bytes of scratch (at most 2 buffers expected)", reused);
    float *x = (float *)malloc(one), *y = (float *)malloc(one);
    for (size_t i = 0; i < 256 * 256; ++i) x[i] = (float)i;
    const void *ins[1] = {x};
    void *outs[1] = {y};
    size_t sizes[1] = {one};
    CHECK_STATUS(uform_session_invoke(session, program, ins, sizes, 1, outs, sizes, 1, NULL, 0), UFORM_SESSION_OK);
    CHECK_NEAR(y[1], 256.0, 0, 0); // an odd number of transposes: y = xᵀ
    CHECK_NEAR(y[256 * 3 + 7], 7 * 256 + 3, 0, 0);
    free(x);
    free(y);
    CHECK_STATUS(uform_session_release(session, program), UFORM_SESSION_OK);
}

/* Fails the n-th allocation for every n until the call succeeds: each failure must be
 * OUT_OF_MEMORY and leave nothing behind (the ASan build checks for leaks). */
static void test_out_of_memory(void) {
    uint64_t rng = 99;
    uform_program_builder_t builder = NULL;
    CHECK_STATUS(uform_program_builder_init(&builder), UFORM_SESSION_OK);
    CHECK(program_template(builder, 1, &rng)); // matmul + softmax, two outputs
    size_t length;
    unsigned char *bytes = finish(builder, &length);
    uform_program_builder_free(builder);

    long failures = 0;
    for (long n = 0; n < 10000; ++n) { // the builder
        uform__session_fail_allocations_after(n);
        uform_session_status_t statuses[6];
        uint32_t x = 0, c = 0, y = 0;
        float payload[3] = {1, 2, 3};
        const void *wire;
        size_t wire_length;
        builder = NULL;
        statuses[0] = uform_program_builder_init(&builder);
        statuses[1] = uform_program_builder_parameter(builder, "x", UFORM_SESSION_DTYPE_F32, 2, dims_23, &x);
        statuses[2] = uform_program_builder_constant(builder, UFORM_SESSION_DTYPE_F32, 1, dims_3, payload, 12, &c);
        uint32_t ops[2] = {x, c};
        statuses[3] = uform_program_builder_operation(builder, UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, 0, UFORM_SESSION_INFER, NULL, &y);
        statuses[4] = uform_program_builder_output(builder, "y", y);
        statuses[5] = uform_program_builder_finish(builder, &wire, &wire_length);
        uform__session_fail_allocations_after(-1);
        uform_program_builder_free(builder);
        int all_ok = 1;
        for (int i = 0; i < 6; ++i) {
            // A call after an earlier failure may also see a NULL builder or an unknown operand.
            if (statuses[i] != UFORM_SESSION_OK) all_ok = 0;
            CHECK(statuses[i] == UFORM_SESSION_OK || statuses[i] == UFORM_SESSION_OUT_OF_MEMORY ||
                  (statuses[i] == UFORM_SESSION_INVALID_PROGRAM && i > 0 && statuses[0] != UFORM_SESSION_OK) ||
                  (statuses[i] == UFORM_SESSION_INVALID_PROGRAM && i == 3));
        }
        if (all_ok) break;
        ++failures;
    }
    CHECK(failures >= 5);

    uform_session_t session = NULL;
    uform__session_fail_allocations_after(0);
    CHECK_STATUS(uform_session_init(&session), UFORM_SESSION_OUT_OF_MEMORY);
    CHECK(session == NULL);
    uform__session_fail_allocations_after(-1);
    CHECK_STATUS(uform_session_init(&session), UFORM_SESSION_OK);
    uform_program_t program;
    failures = 0;
    for (long n = 0; n < 10000; ++n) { // compile
        uform__session_fail_allocations_after(n);
        uform_session_status_t status = uform_session_compile(session, bytes, length, &program);
        uform__session_fail_allocations_after(-1);
        if (status == UFORM_SESSION_OK) break;
        ++failures;
        CHECK_STATUS(status, UFORM_SESSION_OUT_OF_MEMORY);
        CHECK_CONTAINS(uform_session_last_cause(session), "memory");
    }
    CHECK_MSG(failures >= 10, "compile made only %ld allocations", failures);
    // invoke with the session's own scratch, whose allocation fails
    const uform_descriptor_t *ins, *outs;
    size_t in_count, out_count;
    uform_session_inputs(session, program, &ins, &in_count);
    uform_session_outputs(session, program, &outs, &out_count);
    CHECK_EQ_INT(in_count, 2);
    CHECK_EQ_INT(out_count, 2);
    void *buffers[4];
    const void *in[2];
    void *out[2];
    size_t in_sizes[2], out_sizes[2];
    for (int i = 0; i < 2; ++i) {
        buffers[i] = calloc(1, ins[i].byte_size), in[i] = buffers[i], in_sizes[i] = ins[i].byte_size;
        buffers[2 + i] = calloc(1, outs[i].byte_size), out[i] = buffers[2 + i], out_sizes[i] = outs[i].byte_size;
    }
    uform__session_fail_allocations_after(0);
    CHECK_STATUS(uform_session_invoke(session, program, in, in_sizes, 2, out, out_sizes, 2, NULL, 0), UFORM_SESSION_OUT_OF_MEMORY);
    CHECK_CONTAINS(uform_session_last_cause(session), "scratch");
    uform__session_fail_allocations_after(-1);
    CHECK_STATUS(uform_session_invoke(session, program, in, in_sizes, 2, out, out_sizes, 2, NULL, 0), UFORM_SESSION_OK);
    for (int i = 0; i < 4; ++i) free(buffers[i]);
    uform_session_free(session);
    free(bytes);
}

/* A slice whose step is INT64_MAX takes one element per axis (and must not overflow computing so). */
static void test_huge_step(uform_session_t session) {
    uform_program_builder_t b = NULL;
    uform_program_builder_init(&b);
    uint32_t x, y;
    int64_t s[6] = {1, 2, INT64_MAX, 1, 3, INT64_MAX};
    uform_program_builder_parameter(b, "x", UFORM_SESSION_DTYPE_F32, 2, dims_23, &x);
    CHECK_STATUS(uform_program_builder_operation(b, UFORM_SESSION_OP_SLICE, &x, 1, s, 6, 0, UFORM_SESSION_INFER, NULL, &y),
                 UFORM_SESSION_OK);
    uform_program_builder_output(b, "y", y);
    size_t n;
    unsigned char *wire = finish(b, &n);
    uform_program_builder_free(b);
    uform_program_t program;
    CHECK_STATUS(uform_session_compile(session, wire, n, &program), UFORM_SESSION_OK);
    free(wire);
    float in[6] = {0, 1, 2, 3, 4, 5}, out[1] = {-1};
    const void *ins[1] = {in};
    void *outs[1] = {out};
    size_t in_size[1] = {sizeof in}, out_size[1] = {sizeof out};
    CHECK_STATUS(uform_session_invoke(session, program, ins, in_size, 1, outs, out_size, 1, NULL, 0), UFORM_SESSION_OK);
    CHECK_NEAR(out[0], 4.0, 0, 0); // x[1][1]
    CHECK_STATUS(uform_session_release(session, program), UFORM_SESSION_OK);
}

static int refusing_matmul(const uform__session_kernels_t *self, size_t m, size_t n, size_t k, const float *x, size_t ldx,
                           const float *w, size_t ldw, float *y, size_t ldy, const float *bias, int gelu) {
    return -1; // a refusal for a reason other than memory
}

static int exhausted_matmul(const uform__session_kernels_t *self, size_t m, size_t n, size_t k, const float *x, size_t ldx,
                            const float *w, size_t ldw, float *y, size_t ldy, const float *bias, int gelu) {
    return UFORM__SESSION_KERNEL_OUT_OF_MEMORY; // what the engine's GEMM answers when its packing buffers cannot be allocated
}

/* LAUNCH_FAILED: a plan whose matmul kernel refuses, run through the internal stages (the public
 * invoke maps the same status and records a cause). */
static void test_launch_failed(void) {
    uint64_t rng = 7;
    uform_program_builder_t b = NULL;
    uform_program_builder_init(&b);
    CHECK(program_template(b, 1, &rng)); // matmul + softmax
    size_t n;
    unsigned char *wire = finish(b, &n);
    uform_program_builder_free(b);
    uform__session_ir_t ir;
    uform__session_error_t error;
    uform__session_plan_t plan;
    CHECK_STATUS(uform__session_decode(wire, n, &ir, &error), UFORM_SESSION_OK);
    CHECK_STATUS(uform__session_check(&ir, &error), UFORM_SESSION_OK);
    CHECK_STATUS(uform__session_plan(&ir, &plan, &error), UFORM_SESSION_OK);
    free(wire);
    unsigned char *memory[4];
    const void *in[2];
    void *out[2];
    for (int i = 0; i < 2; ++i) {
        memory[i] = (unsigned char *)calloc(1, plan.input_descriptors[i].byte_size), in[i] = memory[i];
        memory[2 + i] = (unsigned char *)calloc(1, plan.output_descriptors[i].byte_size), out[i] = memory[2 + i];
    }
    unsigned char *scratch = (unsigned char *)aligned_alloc(64, (plan.scratch_size + 63) & ~(size_t)63);
    CHECK_STATUS(uform__session_run(&plan, in, out, scratch), UFORM_SESSION_OK);
    plan.kernels.matmul_f32 = refusing_matmul;
    CHECK(plan.input_descriptors[0].dtype != UFORM_SESSION_DTYPE_F64); // F64 runs its own loop, not the kernel
    CHECK_STATUS(uform__session_run(&plan, in, out, scratch), UFORM_SESSION_LAUNCH_FAILED);
    plan.kernels.matmul_f32 = exhausted_matmul; // memory exhaustion is its own status, not a refusal
    CHECK_STATUS(uform__session_run(&plan, in, out, scratch), UFORM_SESSION_OUT_OF_MEMORY);
    for (int i = 0; i < 4; ++i) free(memory[i]);
    free(scratch);
    uform__session_plan_free(&plan);
}

int main(void) {
    uform_session_t session = NULL;
    CHECK_STATUS(uform_session_init(&session), UFORM_SESSION_OK);
    CHECK(strcmp(uform_session_last_cause(session), "") == 0);
    test_names();
    test_table_and_handles(session);
    test_buffers(session);
    test_malformed(session);
    test_outputs_of_inputs(session);
    test_plan_sizes(session);
    test_huge_step(session);
    test_launch_failed();
    test_out_of_memory();
    uform_session_free(session);
    uform_session_free(NULL);
    uform_program_builder_free(NULL);
    return check_finish();
}
