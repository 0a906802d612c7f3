/*
 * libFuzzer target for the tensor-program session: feeds arbitrary bytes to
 * uform_session_compile and, when they compile into a program of modest size, invokes it on
 * deterministic inputs and releases it. Crashes, sanitizer reports and broken invariants (a
 * status outside the table, a failure without a cause, a release that fails) are findings.
 * The same entry point is driven by test_session_replay in ordinary builds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uform/uform.h"

#define FUZZ_INVOKE_LIMIT ((size_t)4 << 20)

static void require(int condition) {
    if (!condition) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uform_session_t session = NULL;
    if (!session && uform_session_init(&session) != UFORM_SESSION_OK) return 0;
    uform_program_t program;
    // Compile from an exactly sized copy, so any over-read lands outside the allocation.
    uint8_t *bytes = (uint8_t *)malloc(size ? size : 1);
    if (!bytes) return 0;
    if (size) memcpy(bytes, data, size);
    uform_session_status_t status = uform_session_compile(session, bytes, size, &program);
    free(bytes);
    require((int)status >= 0 && (int)status <= 8);
    if (status != UFORM_SESSION_OK) {
        require(status == UFORM_SESSION_TOO_MANY_PROGRAMS || uform_session_last_cause(session)[0] != 0);
        return 0;
    }
    const uform_descriptor_t *inputs, *outputs;
    size_t input_count = 0, output_count = 0, total = uform_session_scratch_size(session, program);
    require(uform_session_inputs(session, program, &inputs, &input_count) == UFORM_SESSION_OK);
    require(uform_session_outputs(session, program, &outputs, &output_count) == UFORM_SESSION_OK);
    for (size_t i = 0; i < input_count; ++i) total += inputs[i].byte_size;
    for (size_t i = 0; i < output_count; ++i) total += outputs[i].byte_size;
    if (total <= FUZZ_INVOKE_LIMIT && input_count <= 64 && output_count <= 64) {
        const void *in[64];
        void *out[64];
        size_t in_sizes[64], out_sizes[64];
        int ok = 1;
        for (size_t i = 0; i < input_count; ++i) {
            unsigned char *buffer = (unsigned char *)malloc(inputs[i].byte_size);
            ok &= buffer != NULL;
            if (buffer)
                for (size_t b = 0; b < inputs[i].byte_size; ++b) buffer[b] = (unsigned char)(size ? data[b % size] + b : b);
            in[i] = buffer, in_sizes[i] = inputs[i].byte_size;
        }
        for (size_t i = 0; i < output_count; ++i) {
            out[i] = malloc(outputs[i].byte_size);
            ok &= out[i] != NULL;
            out_sizes[i] = outputs[i].byte_size;
        }
        if (ok) require(uform_session_invoke(session, program, in, in_sizes, input_count, out, out_sizes, output_count,
                                             NULL, 0) == UFORM_SESSION_OK);
        for (size_t i = 0; i < input_count; ++i) free((void *)in[i]);
        for (size_t i = 0; i < output_count; ++i) free(out[i]);
    }
    require(uform_session_release(session, program) == UFORM_SESSION_OK);
    require(uform_session_release(session, program) == UFORM_SESSION_INVALID_HANDLE);
    return 0;
}
