/*
 * The public session: 64 program slots with generations, compile (decode → check → plan),
 * descriptors, invoke with the buffer checks, release and the last cause.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "session/session.h"

typedef struct slot_t {
    uform__session_plan_t *plan; /* NULL when free */
    uint32_t generation;         /* never 0, so a zeroed handle is never valid */
} slot_t;

struct uform_session_s {
    slot_t slots[UFORM_SESSION_MAX_PROGRAMS];
    char last_cause[UFORM__SESSION_CAUSE_CAPACITY];
    unsigned char *scratch; /* the session's own scratch, used when invoke gets none */
    size_t scratch_capacity;
};

const char *uform_session_status_name(uform_session_status_t status) {
    switch (status) {
    case UFORM_SESSION_OK: return "ok";
    case UFORM_SESSION_INVALID_PROGRAM: return "invalid_program";
    case UFORM_SESSION_UNSUPPORTED_VERSION: return "unsupported_version";
    case UFORM_SESSION_INVALID_HANDLE: return "invalid_handle";
    case UFORM_SESSION_INVALID_BUFFER: return "invalid_buffer";
    case UFORM_SESSION_TOO_MANY_PROGRAMS: return "too_many_programs";
    case UFORM_SESSION_OUT_OF_MEMORY: return "out_of_memory";
    case UFORM_SESSION_COMPILE_FAILED: return "compile_failed";
    case UFORM_SESSION_LAUNCH_FAILED: return "launch_failed";
    default: return "unknown";
    }
}

uform_session_status_t uform_session_init(uform_session_t *session) {
    if (!session) return UFORM_SESSION_INVALID_HANDLE;
    *session = (uform_session_t)uform__session_calloc(1, sizeof **session);
    if (!*session) return UFORM_SESSION_OUT_OF_MEMORY;
    for (unsigned i = 0; i < UFORM_SESSION_MAX_PROGRAMS; ++i) (*session)->slots[i].generation = 1;
    return UFORM_SESSION_OK;
}

void uform_session_free(uform_session_t session) {
    if (!session) return;
    for (unsigned i = 0; i < UFORM_SESSION_MAX_PROGRAMS; ++i)
        if (session->slots[i].plan) {
            uform__session_plan_free(session->slots[i].plan);
            free(session->slots[i].plan);
        }
    free(session->scratch);
    free(session);
}

static uform__session_plan_t *lookup(uform_session_t session, uform_program_t program) {
    if (!session || program.index >= UFORM_SESSION_MAX_PROGRAMS) return NULL;
    slot_t *slot = &session->slots[program.index];
    return slot->plan && slot->generation == program.generation ? slot->plan : NULL;
}

static uform_session_status_t remember(uform_session_t session, const uform__session_error_t *error) {
    memcpy(session->last_cause, error->cause, sizeof session->last_cause);
    session->last_cause[sizeof session->last_cause - 1] = 0;
    return error->status;
}

uform_session_status_t uform_session_compile(uform_session_t session, const void *bytes, size_t length,
                                             uform_program_t *program) {
    if (!session) return UFORM_SESSION_INVALID_HANDLE;
    uform__session_error_t error;
    memset(&error, 0, sizeof error);
    if (program) memset(program, 0, sizeof *program);
    if (!program || !bytes) {
        uform__session_error(&error, UFORM_SESSION_INVALID_PROGRAM, "NULL %s", program ? "bytes" : "program out-pointer");
        return remember(session, &error);
    }
    unsigned index = 0;
    while (index < UFORM_SESSION_MAX_PROGRAMS && session->slots[index].plan) ++index;
    if (index == UFORM_SESSION_MAX_PROGRAMS) return UFORM_SESSION_TOO_MANY_PROGRAMS;

    uform__session_ir_t ir;
    if (uform__session_decode(bytes, length, &ir, &error) != UFORM_SESSION_OK) return remember(session, &error);
    if (uform__session_check(&ir, &error) != UFORM_SESSION_OK) {
        uform__session_ir_free(&ir);
        return remember(session, &error);
    }
    uform__session_plan_t *plan = (uform__session_plan_t *)uform__session_calloc(1, sizeof *plan);
    if (!plan) {
        uform__session_ir_free(&ir);
        uform__session_error(&error, UFORM_SESSION_OUT_OF_MEMORY, "no memory for a plan");
        return remember(session, &error);
    }
    if (uform__session_plan(&ir, plan, &error) != UFORM_SESSION_OK) {
        free(plan);
        return remember(session, &error);
    }
    session->slots[index].plan = plan;
    program->index = index;
    program->generation = session->slots[index].generation;
    return UFORM_SESSION_OK;
}

static uform_session_status_t describe(uform_session_t session, uform_program_t program, int outputs,
                                       const uform_descriptor_t **descriptors, size_t *count) {
    uform__session_plan_t *plan = lookup(session, program);
    if (!plan || !descriptors || !count) return UFORM_SESSION_INVALID_HANDLE;
    *descriptors = outputs ? plan->output_descriptors : plan->input_descriptors;
    *count = outputs ? plan->ir.output_count : plan->ir.parameter_count;
    return UFORM_SESSION_OK;
}

uform_session_status_t uform_session_inputs(uform_session_t session, uform_program_t program,
                                            const uform_descriptor_t **descriptors, size_t *count) {
    return describe(session, program, 0, descriptors, count);
}

uform_session_status_t uform_session_outputs(uform_session_t session, uform_program_t program,
                                             const uform_descriptor_t **descriptors, size_t *count) {
    return describe(session, program, 1, descriptors, count);
}

size_t uform_session_scratch_size(uform_session_t session, uform_program_t program) {
    uform__session_plan_t *plan = lookup(session, program);
    return plan ? plan->scratch_size : 0;
}

static int overlap(const void *a, size_t a_size, const void *b, size_t b_size) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a_size && b_size && x < y + b_size && y < x + a_size;
}

static int buffer_fits(const void *buffer, size_t size, const uform_descriptor_t *descriptor) {
    return buffer && size == descriptor->byte_size && (uintptr_t)buffer % descriptor->alignment == 0;
}

uform_session_status_t uform_session_invoke(uform_session_t session, uform_program_t program,
                                            const void *const *inputs, const size_t *input_sizes, size_t input_count,
                                            void *const *outputs, const size_t *output_sizes, size_t output_count,
                                            void *scratch, size_t scratch_size) {
    uform__session_plan_t *plan = lookup(session, program);
    if (!plan) return UFORM_SESSION_INVALID_HANDLE;
    size_t P = plan->ir.parameter_count, Q = plan->ir.output_count;
    if (input_count != P || output_count != Q) return UFORM_SESSION_INVALID_BUFFER;
    if ((P && (!inputs || !input_sizes)) || !outputs || !output_sizes) return UFORM_SESSION_INVALID_BUFFER;
    for (size_t i = 0; i < P; ++i)
        if (!buffer_fits(inputs[i], input_sizes[i], &plan->input_descriptors[i])) return UFORM_SESSION_INVALID_BUFFER;
    for (size_t k = 0; k < Q; ++k) {
        if (!buffer_fits(outputs[k], output_sizes[k], &plan->output_descriptors[k])) return UFORM_SESSION_INVALID_BUFFER;
        for (size_t i = 0; i < P; ++i)
            if (overlap(outputs[k], output_sizes[k], inputs[i], input_sizes[i])) return UFORM_SESSION_INVALID_BUFFER;
        for (size_t j = 0; j < k; ++j)
            if (overlap(outputs[k], output_sizes[k], outputs[j], output_sizes[j])) return UFORM_SESSION_INVALID_BUFFER;
    }
    if (scratch) {
        if (scratch_size < plan->scratch_size) return UFORM_SESSION_INVALID_BUFFER;
        for (size_t i = 0; i < P; ++i)
            if (overlap(scratch, scratch_size, inputs[i], input_sizes[i])) return UFORM_SESSION_INVALID_BUFFER;
        for (size_t k = 0; k < Q; ++k)
            if (overlap(scratch, scratch_size, outputs[k], output_sizes[k])) return UFORM_SESSION_INVALID_BUFFER;
    } else {
        if (session->scratch_capacity < plan->scratch_size) {
            unsigned char *grown = (unsigned char *)uform__session_malloc(plan->scratch_size);
            if (!grown) {
                uform__session_error_t error;
                uform__session_error(&error, UFORM_SESSION_OUT_OF_MEMORY, "no memory for %zu bytes of scratch",
                                     plan->scratch_size);
                return remember(session, &error);
            }
            free(session->scratch);
            session->scratch = grown;
            session->scratch_capacity = plan->scratch_size;
        }
        scratch = session->scratch;
    }
    unsigned char *aligned = (unsigned char *)(((uintptr_t)scratch + 63u) & ~(uintptr_t)63u);
    uform_session_status_t status = uform__session_run(plan, inputs, outputs, aligned);
    if (status != UFORM_SESSION_OK) {
        uform__session_error_t error;
        uform__session_error(&error, status, status == UFORM_SESSION_OUT_OF_MEMORY
                                                 ? "a kernel cannot allocate what it needs (the matmul's packing buffers)"
                                                 : "a kernel refused to run");
        return remember(session, &error);
    }
    return UFORM_SESSION_OK;
}

uform_session_status_t uform_session_release(uform_session_t session, uform_program_t program) {
    uform__session_plan_t *plan = lookup(session, program);
    if (!plan) return UFORM_SESSION_INVALID_HANDLE;
    slot_t *slot = &session->slots[program.index];
    uform__session_plan_free(plan);
    free(plan);
    slot->plan = NULL;
    if (++slot->generation == 0) slot->generation = 1;
    return UFORM_SESSION_OK;
}

const char *uform_session_last_cause(uform_session_t session) { return session ? session->last_cause : ""; }
