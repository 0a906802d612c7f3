/*
 * The PyTorch reader under failing allocations (tests/reliability/failing_alloc.c): opening the
 * sample archive and the legacy sample with the N-th allocation failing, for every N (once transiently, once for good),
 * answers UFORM_OUT_OF_MEMORY with a message that says what could not be allocated — never
 * another status — leaks nothing, and once allocations succeed reads the same tensors.
 */
#include "common/check.h"
#include "io/torch_file.h"
#include "reliability/failing_alloc.h"
#include "torch_sample.h"

/* A digest of the open file's names and bytes, to compare runs. */
static uint64_t digest(const uform__torch_file_t *file) {
    uint64_t hash = 1469598103934665603ull;
    for (size_t index = 0; index < uform__torch_count(file); ++index) {
        const uform__safetensors_tensor_t *tensor = uform__torch_at(file, index);
        for (const char *at = tensor->name; *at; ++at) hash = (hash ^ (uint8_t)*at) * 1099511628211ull;
        for (uint64_t at = 0; at < tensor->length; ++at) hash = (hash ^ ((const uint8_t *)tensor->data)[at]) * 1099511628211ull;
    }
    return hash;
}

/* Opens `archive` with every allocation failing in turn, transiently and for good. */
static void sweep(const sample_bytes_t *archive, const char *label, size_t expected_count) {
    uform__torch_file_t *file = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__torch_open_memory(archive->data, archive->size, &file, &outcome), UFORM_OK);
    uint64_t expected = digest(file);
    CHECK_EQ_INT(uform__torch_count(file), expected_count);
    uform__torch_close(file);
    for (int mode = 0; mode < 2; ++mode) {
        const char *kind = mode ? "persistent" : "transient";
        size_t runs = 0, refused = 0;
        for (size_t n = 1;; ++n, ++runs) {
            long live = failing_alloc_live();
            memset(&outcome, 0, sizeof outcome);
            file = NULL;
            failing_alloc_arm(n, mode ? FAILING_ALLOC_PERSISTENT : FAILING_ALLOC_TRANSIENT);
            uform_status_t status = uform__torch_open_memory(archive->data, archive->size, &file, &outcome);
            size_t failed = failing_alloc_disarm();
            if (status == UFORM_OK) {
                CHECK_MSG(digest(file) == expected, "%s, allocation %zu (%s): other tensors", label, n, kind);
            } else {
                ++refused;
                CHECK_MSG(status == UFORM_OUT_OF_MEMORY && file == NULL && strstr(outcome.message, "allocate"),
                          "%s, allocation %zu (%s): status %s: %s", label, n, kind, uform_status_name(status),
                          outcome.message);
            }
            uform__torch_close(file);
            CHECK_MSG(failing_alloc_live() == live, "%s, allocation %zu (%s): %ld blocks leaked", label, n, kind,
                      failing_alloc_live() - live);
            if (!failed) break; /* every allocation of the call succeeded: all were tried */
        }
        printf("%s, %s: %zu allocations failed in turn, %zu refused\n", label, kind, runs, refused);
        CHECK(runs >= 10 && refused >= 10);
    }
}

int main(void) {
    /* The first arming loads libgcc_s for backtraces: done here, outside the leak count. */
    failing_alloc_arm(SIZE_MAX, FAILING_ALLOC_TRANSIENT);
    failing_alloc_disarm();
    sample_bytes_t pickle = {0}, archive = {0}, legacy = {0};
    sample_state_pickle(&pickle);
    sample_archive(&archive, &pickle, (sample_zip_options_t){1, 0, NULL});
    sample_legacy(&legacy, NULL, 0);
    sweep(&archive, "zip archive", 4);
    sweep(&legacy, "legacy file", 3);
    free(pickle.data);
    free(archive.data);
    free(legacy.data);
    return check_finish();
}
