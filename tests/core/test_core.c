/* Statuses, outcomes, CPU classes, tapes, progress: the pieces every verb stands on. */
#include <stdlib.h>

#include "common/check.h"
#include "core/cpu.h"
#include "core/outcome.h"
#include "core/progress.h"
#include "core/tape.h"

static void test_status_names(void) {
    static const char *const expected[] = {"ok", "deferred", "cancelled", "contended", "invalid_argument",
                                           "io", "format", "unsupported", "out_of_memory", "device",
                                           "config_mismatch", "timeout", "peer_lost", "internal"};
    for (int status = 0; status <= 13; ++status) CHECK(strcmp(uform_status_name(status), expected[status]) == 0);
    CHECK(strcmp(uform_status_name((uform_status_t)14), "unknown") == 0);
    CHECK(strcmp(uform_status_name((uform_status_t)-1), "unknown") == 0);
    /* The numbers the reference documents fix. */
    CHECK_EQ_INT(UFORM_INTERNAL, 13);
    CHECK_EQ_INT(UFORM_PEER_LOST, 12);
    CHECK_EQ_INT(UFORM_CPU_CLASS_MONOVERSIONED, 18);
    CHECK_EQ_INT(UFORM_CPU_CLASS_AMD_GENOA, 6);
    CHECK_EQ_INT(UFORM_GPU_CLASS_APPLE_METAL10, 12);
    CHECK_EQ_INT(UFORM_SCALAR_B1, 4);
    CHECK_EQ_INT(UFORM_OUTPUTS_STATES, 4);
    CHECK_EQ_INT(UFORM_MODALITY_AUDIO, 3);
}

static void test_outcome_format(void) {
    uform_outcome_t outcome;
    memset(&outcome, 0x5A, sizeof outcome); /* garbage in every byte: the library must overwrite it all */
    uform_status_t status = uform__fail(&outcome, UFORM_IO, "uform_model_load_ram",
                                        "cannot open '%s': %s", "missing.safetensors", "No such file or directory");
    CHECK_STATUS(status, UFORM_IO);
    CHECK_STATUS(uform_outcome_status(&outcome), UFORM_IO);
    char line[512];
    size_t length = uform_outcome_format(&outcome, line, sizeof line);
    const char *expected =
        "UForm: io [uform_model_load_ram]: cannot open 'missing.safetensors': No such file or directory";
    CHECK(strcmp(line, expected) == 0);
    CHECK_EQ_INT(length, strlen(expected));
    /* No uninitialised (here: leftover) bytes after the text. */
    size_t message_length = strlen(outcome.message), dirty = 0;
    for (size_t i = message_length; i < sizeof outcome.message; ++i) dirty += outcome.message[i] != 0;
    CHECK_EQ_INT(dirty, 0);
    /* Truncation answers the full length, like snprintf. */
    char small[10];
    CHECK_EQ_INT(uform_outcome_format(&outcome, small, sizeof small), strlen(expected));
    CHECK(strcmp(small, "UForm: io") == 0);
    CHECK_EQ_INT(uform_outcome_format(&outcome, NULL, 0), strlen(expected));
    /* A message longer than the buffer is cut, still terminated. */
    char long_text[1000];
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = 0;
    uform__fail(&outcome, UFORM_FORMAT, "f", "%s", long_text);
    CHECK_EQ_INT(strlen(outcome.message), UFORM_OUTCOME_MESSAGE_CAPACITY - 1);
    /* Success and zeroed outcomes. */
    uform_outcome_t zeroed = {0};
    CHECK_STATUS(uform_outcome_status(&zeroed), UFORM_OK);
    CHECK_STATUS(uform_outcome_wait(&zeroed), UFORM_OK);
    uform_outcome_format(&zeroed, line, sizeof line);
    CHECK(strcmp(line, "UForm: ok") == 0);
    uform__succeed(&outcome, "g");
    CHECK_STATUS(uform_outcome_status(&outcome), UFORM_OK);
    CHECK_EQ_INT(outcome.message[0], 0);
    CHECK_STATUS(uform_outcome_status(NULL), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform_outcome_wait(NULL), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__fail(NULL, UFORM_TIMEOUT, "h", "nobody listens"), UFORM_TIMEOUT);
    int major = 0, minor = -1, patch = -1;
    uform_version(&major, &minor, &patch);
    CHECK_EQ_INT(major, 4);
    CHECK(minor >= 0 && patch >= 0);
    uform_version(NULL, NULL, NULL);
}

static void test_cpu_classes(void) {
    CHECK(uform_cpu_class_supported(UFORM_CPU_CLASS_SERIAL));
    CHECK(!uform_cpu_class_supported(UFORM_CPU_CLASS_UNKNOWN));
    CHECK(!uform_cpu_class_supported(UFORM_CPU_CLASS_WASM32_V128));
    uform_cpu_class_t best = uform_cpu_class_detect();
    CHECK(uform_cpu_class_supported(best));
    CHECK(strcmp(uform_cpu_class_name(UFORM_CPU_CLASS_AMD_GENOA), "amd_genoa") == 0);
    CHECK(strcmp(uform_cpu_class_name((uform_cpu_class_t)99), "unknown") == 0);
    CHECK_EQ_INT(uform__cpu_class_parse("genoa"), UFORM_CPU_CLASS_AMD_GENOA);
    CHECK_EQ_INT(uform__cpu_class_parse("INTEL_HASWELL"), UFORM_CPU_CLASS_INTEL_HASWELL);
    CHECK_EQ_INT(uform__cpu_class_parse("4"), UFORM_CPU_CLASS_INTEL_SKYLAKE);
    CHECK_EQ_INT(uform__cpu_class_parse("19"), UFORM_CPU_CLASS_UNKNOWN);
    CHECK_EQ_INT(uform__cpu_class_parse("pentium"), UFORM_CPU_CLASS_UNKNOWN);
    /* The classes form a chain on x86: each supported class implies the ones it builds on. */
    if (uform_cpu_class_supported(UFORM_CPU_CLASS_AMD_GENOA)) CHECK(uform_cpu_class_supported(UFORM_CPU_CLASS_INTEL_ICELAKE));
    if (uform_cpu_class_supported(UFORM_CPU_CLASS_INTEL_ICELAKE)) CHECK(uform_cpu_class_supported(UFORM_CPU_CLASS_INTEL_SKYLAKE));
    if (uform_cpu_class_supported(UFORM_CPU_CLASS_INTEL_SKYLAKE)) CHECK(uform_cpu_class_supported(UFORM_CPU_CLASS_INTEL_HASWELL));
    /* Cross-check with the compiler's own view of CPUID (which also consults XGETBV). */
    __builtin_cpu_init();
    CHECK_EQ_INT(uform_cpu_class_supported(UFORM_CPU_CLASS_INTEL_HASWELL) != 0,
                 __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
    CHECK_EQ_INT(uform_cpu_class_supported(UFORM_CPU_CLASS_INTEL_SKYLAKE) != 0,
                 __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                     __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                     __builtin_cpu_supports("avx512cd"));
    size_t count = 99;
    CHECK_STATUS(uform_gpu_devices(NULL, 0, &count), UFORM_OK);
    CHECK_EQ_INT(count, 0);
}

static void test_tapes(void) {
    const char data[] = "abcdefghijklmnopqrstuvwxyz";
    size_t offsets[20];
    for (size_t i = 0; i < 20; ++i) offsets[i] = i;
    uform_tape_t tape = {data, offsets, 19};
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_tape_validate(&tape, &outcome), UFORM_OK);
    offsets[17] = 12, offsets[16] = 15;
    CHECK_STATUS(uform_tape_validate(&tape, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "offsets[17] < offsets[16] (12 < 15)");
    CHECK(strcmp(outcome.function, "uform_tape_validate") == 0);
    CHECK_STATUS(uform__tape_check(&tape, "texts", &outcome, "uform_text_encode"), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "texts.offsets[17] < offsets[16]");
    offsets[16] = 16, offsets[17] = 17;
    uform_tape_t no_offsets = {data, NULL, 3};
    CHECK_STATUS(uform_tape_validate(&no_offsets, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "offsets is NULL but count is 3");
    uform_tape_t no_data = {NULL, offsets, 3};
    CHECK_STATUS(uform_tape_validate(&no_data, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "data is NULL but the items hold 3 bytes");
    size_t empty_offsets[3] = {5, 5, 5};
    uform_tape_t empty_items = {NULL, empty_offsets, 2}; /* empty items need no data */
    CHECK_STATUS(uform_tape_validate(&empty_items, &outcome), UFORM_OK);
    uform_tape_t none = {NULL, NULL, 0};
    CHECK_STATUS(uform_tape_validate(&none, &outcome), UFORM_OK);
    CHECK_STATUS(uform_tape_validate(NULL, &outcome), UFORM_INVALID_ARGUMENT);
    size_t length;
    const unsigned char *item = uform__tape_item(&tape, 3, &length);
    CHECK(item[0] == 'd' && length == 1);
}

typedef struct recorded_t {
    size_t completed[64], total[64], count;
    size_t cancel_at;
} recorded_t;

static uform_continuation_t record(size_t completed, size_t total, void *state) {
    recorded_t *recorded = state;
    recorded->completed[recorded->count] = completed;
    recorded->total[recorded->count] = total;
    recorded->count += 1;
    return recorded->count == recorded->cancel_at ? UFORM_CANCEL : UFORM_CONTINUE;
}

static void test_progress(void) {
    /* At most `steps` reports, the last at completion, for many totals and steps. */
    for (size_t steps = 0; steps <= 12; ++steps)
        for (size_t total = 0; total <= 40; ++total) {
            recorded_t recorded = {{0}, {0}, 0, 0};
            uform_progress_t options = {record, &recorded, steps};
            uform__progress_t progress;
            uform__progress_begin(&progress, &options, total);
            if (total == 0) uform__progress_advance(&progress, 0);
            for (size_t done = 1; done <= total; ++done) uform__progress_advance(&progress, done);
            size_t limit = steps ? steps : 10;
            CHECK_MSG(recorded.count >= 1 && recorded.count <= limit, "steps %zu total %zu: %zu reports", steps, total,
                      recorded.count);
            CHECK_MSG(recorded.count && recorded.completed[recorded.count - 1] == total, "steps %zu total %zu", steps, total);
            size_t monotonic = 1;
            for (size_t i = 1; i < recorded.count; ++i) monotonic &= recorded.completed[i] > recorded.completed[i - 1];
            CHECK(monotonic);
            if (total >= limit) CHECK_EQ_INT(recorded.count, limit);
        }
    /* Cancel sticks and stops further reports. */
    recorded_t recorded = {{0}, {0}, 0, 2};
    uform_progress_t options = {record, &recorded, 5};
    uform__progress_t progress;
    uform__progress_begin(&progress, &options, 100);
    size_t cancelled_at = 0;
    for (size_t done = 1; done <= 100 && !cancelled_at; ++done)
        if (uform__progress_advance(&progress, done) == UFORM_CANCEL) cancelled_at = done;
    CHECK_EQ_INT(cancelled_at, 40);
    CHECK_EQ_INT(uform__progress_advance(&progress, 100), UFORM_CANCEL);
    CHECK_EQ_INT(recorded.count, 2);
    /* No handler: nothing to call, never cancels. */
    uform__progress_begin(&progress, NULL, 10);
    CHECK_EQ_INT(uform__progress_advance(&progress, 10), UFORM_CONTINUE);
}

int main(void) {
    test_status_names();
    test_outcome_format();
    test_cpu_classes();
    test_tapes();
    test_progress();
    return check_finish();
}
