/* Sweep rows for the tensor-program session: the builder, compile, and invoke with the session's own
 * scratch. The program is a transformer block's MLP in small: y = softmax(layer_norm(gelu(x·wᵀ))),
 * big enough (K = 96) that the engine's GEMM packs its operands in a scratch it allocates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rows.h"

enum { rows_m = 8, rows_k = 96, rows_n = 40 };

/* Builds the program; answers its status, the bytes in a malloc'd copy on success. */
static uform_session_status_t build(unsigned char **copy, size_t *length, char cause[256]) {
    uform_program_builder_t builder = NULL;
    uform_session_status_t status = uform_program_builder_init(&builder);
    uint32_t x = 0, w = 0, product = 0, activated = 0, normed = 0, y = 0, operands[2];
    size_t x_dims[2] = {rows_m, rows_k}, w_dims[2] = {rows_n, rows_k};
    int64_t transposes[2] = {0, 1}, axis = 1;
    int64_t norm[2] = {1, 0};
    double eps = 1e-5;
    memcpy(&norm[1], &eps, sizeof eps);
    if (status == UFORM_SESSION_OK) status = uform_program_builder_parameter(builder, "x", UFORM_SESSION_DTYPE_F32, 2, x_dims, &x);
    if (status == UFORM_SESSION_OK) status = uform_program_builder_parameter(builder, "w", UFORM_SESSION_DTYPE_F32, 2, w_dims, &w);
    operands[0] = x, operands[1] = w;
    if (status == UFORM_SESSION_OK)
        status = uform_program_builder_operation(builder, UFORM_SESSION_OP_MATMUL, operands, 2, transposes, 2, UFORM_SESSION_DTYPE_F32,
                                                 UFORM_SESSION_INFER, NULL, &product);
    if (status == UFORM_SESSION_OK)
        status = uform_program_builder_operation(builder, UFORM_SESSION_OP_GELU, &product, 1, NULL, 0, UFORM_SESSION_DTYPE_F32,
                                                 UFORM_SESSION_INFER, NULL, &activated);
    if (status == UFORM_SESSION_OK)
        status = uform_program_builder_operation(builder, UFORM_SESSION_OP_LAYER_NORM, &activated, 1, norm, 2, UFORM_SESSION_DTYPE_F32,
                                                 UFORM_SESSION_INFER, NULL, &normed);
    if (status == UFORM_SESSION_OK)
        status = uform_program_builder_operation(builder, UFORM_SESSION_OP_SOFTMAX, &normed, 1, &axis, 1, UFORM_SESSION_DTYPE_F32,
                                                 UFORM_SESSION_INFER, NULL, &y);
    if (status == UFORM_SESSION_OK) status = uform_program_builder_output(builder, "y", y);
    const void *bytes = NULL;
    if (status == UFORM_SESSION_OK) status = uform_program_builder_finish(builder, &bytes, length);
    if (status == UFORM_SESSION_OK && copy) {
        *copy = malloc(*length);
        if (*copy) memcpy(*copy, bytes, *length);
        else status = UFORM_SESSION_OUT_OF_MEMORY; /* the test's own copy */
        if (!*copy) snprintf(cause, 256, "cannot allocate a copy of %zu wire bytes", *length);
    } else if (status != UFORM_SESSION_OK)
        snprintf(cause, 256, "%s", builder ? uform_program_builder_cause(builder) : "the builder itself could not be allocated");
    uform_program_builder_free(builder);
    return status;
}

void sweep_run_session_builder(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    unsigned char *bytes = NULL;
    size_t length = 0;
    char cause[256] = "";
    uform_session_status_t status = build(&bytes, &length, cause);
    sweep_answer_session(answer, status, cause);
    if (status == UFORM_SESSION_OK) answer->digest = sweep_digest(0, bytes, length);
    free(bytes);
}

/* The program's wire bytes, built on the unarmed first run and kept. */
static const unsigned char *program_bytes(size_t *length) {
    static unsigned char *bytes;
    static size_t size;
    char cause[256];
    if (!bytes && build(&bytes, &size, cause) != UFORM_SESSION_OK) return NULL;
    *length = size;
    return bytes;
}

/* The session's last cause; uform_session_init has no channel but its status, so a session that
 * could not be made is described here. */
static const char *session_cause(uform_session_t session) {
    return session ? uform_session_last_cause(session) : "uform_session_init: out of memory for the session itself";
}

void sweep_run_session_compile(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    size_t length = 0;
    const unsigned char *bytes = program_bytes(&length);
    uform_session_t session = NULL;
    uform_session_status_t status = bytes ? uform_session_init(&session) : UFORM_SESSION_INVALID_PROGRAM;
    uform_program_t program;
    if (status == UFORM_SESSION_OK) status = uform_session_compile(session, bytes, length, &program);
    sweep_answer_session(answer, status, session_cause(session));
    if (status == UFORM_SESSION_OK) {
        answer->digest = uform_session_scratch_size(session, program);
        /* The program's descriptors, read in place (nothing allocated). */
        const uform_descriptor_t *inputs = NULL, *outputs = NULL;
        size_t input_count = 0, output_count = 0;
        if (uform_session_inputs(session, program, &inputs, &input_count) == UFORM_SESSION_OK &&
            uform_session_outputs(session, program, &outputs, &output_count) == UFORM_SESSION_OK)
            answer->digest = sweep_digest(answer->digest, &input_count, sizeof input_count) + output_count;
        uform_session_release(session, program);
    }
    uform_session_free(session);
}

void sweep_run_session_invoke(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    static float x[rows_m * rows_k], w[rows_n * rows_k], y[rows_m * rows_n];
    for (size_t i = 0; i < rows_m * rows_k; ++i) x[i] = (float)((int)(i * 37 % 101) - 50) / 50.0f;
    for (size_t i = 0; i < rows_n * rows_k; ++i) w[i] = (float)((int)(i * 53 % 97) - 48) / 480.0f;
    size_t length = 0;
    const unsigned char *bytes = program_bytes(&length);
    uform_session_t session = NULL;
    uform_session_status_t status = bytes ? uform_session_init(&session) : UFORM_SESSION_INVALID_PROGRAM;
    uform_program_t program;
    if (status == UFORM_SESSION_OK) status = uform_session_compile(session, bytes, length, &program);
    const void *inputs[2] = {x, w};
    size_t input_sizes[2] = {sizeof x, sizeof w}, output_sizes[1] = {sizeof y};
    void *outputs[1] = {y};
    if (status == UFORM_SESSION_OK) {
        memset(y, 0, sizeof y);
        status = uform_session_invoke(session, program, inputs, input_sizes, 2, outputs, output_sizes, 1, NULL, 0);
    }
    sweep_answer_session(answer, status, session_cause(session));
    if (status == UFORM_SESSION_OK) answer->digest = sweep_digest(0, y, sizeof y);
    uform_session_free(session);
}

/* The builder's other entry points: a constant (its payload copied), an operation on it, the type the
 * builder inferred, and the finished bytes. */
void sweep_run_session_builder_constant(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    (void)fixture;
    uform_program_builder_t builder = NULL;
    uform_session_status_t status = uform_program_builder_init(&builder);
    static const float bias[6] = {1, 2, 3, 4, 5, 6};
    size_t dims[2] = {2, 3}, rank = 0, inferred[UFORM_SESSION_MAX_RANK];
    uint32_t x = 0, c = 0, sum = 0, operands[2];
    uform_session_dtype_t dtype = UFORM_SESSION_DTYPE_F32;
    if (status == UFORM_SESSION_OK) status = uform_program_builder_parameter(builder, "x", UFORM_SESSION_DTYPE_F32, 2, dims, &x);
    if (status == UFORM_SESSION_OK)
        status = uform_program_builder_constant(builder, UFORM_SESSION_DTYPE_F32, 2, dims, bias, sizeof bias, &c);
    operands[0] = x, operands[1] = c;
    if (status == UFORM_SESSION_OK)
        status = uform_program_builder_operation(builder, UFORM_SESSION_OP_ADD, operands, 2, NULL, 0, UFORM_SESSION_DTYPE_F32,
                                                 UFORM_SESSION_INFER, NULL, &sum);
    if (status == UFORM_SESSION_OK) status = uform_program_builder_type(builder, sum, &dtype, &rank, inferred);
    if (status == UFORM_SESSION_OK) status = uform_program_builder_output(builder, NULL, sum);
    const void *bytes = NULL;
    size_t length = 0;
    if (status == UFORM_SESSION_OK) status = uform_program_builder_finish(builder, &bytes, &length);
    sweep_answer_session(answer, status,
                         builder ? uform_program_builder_cause(builder) : "the builder itself could not be allocated");
    if (status == UFORM_SESSION_OK) {
        answer->digest = sweep_digest(0, bytes, length);
        answer->digest = sweep_digest(answer->digest, inferred, rank * sizeof inferred[0]);
    }
    uform_program_builder_free(builder);
}
