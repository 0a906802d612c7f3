/* Helpers the sweep's run functions share (sweep.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

void sweep_answer_status(sweep_answer_t *answer, uform_status_t status, const uform_outcome_t *outcome) {
    answer->ok = status == UFORM_OK;
    answer->out_of_memory = status == UFORM_OUT_OF_MEMORY;
    snprintf(answer->status, sizeof answer->status, "%s", uform_status_name(status));
    answer->message[0] = 0;
    if (outcome && status != UFORM_OK)
        snprintf(answer->message, sizeof answer->message, "[%.*s] %.*s", (int)sizeof outcome->function, outcome->function,
                 (int)sizeof outcome->message, outcome->message);
}

void sweep_answer_session(sweep_answer_t *answer, uform_session_status_t status, const char *cause) {
    answer->ok = status == UFORM_SESSION_OK;
    answer->out_of_memory = status == UFORM_SESSION_OUT_OF_MEMORY;
    snprintf(answer->status, sizeof answer->status, "session %s", uform_session_status_name(status));
    snprintf(answer->message, sizeof answer->message, "%s", status == UFORM_SESSION_OK || !cause ? "" : cause);
}

uint64_t sweep_digest(uint64_t digest, const void *bytes, size_t size) {
    if (!digest) digest = 1469598103934665603ull;
    const unsigned char *p = bytes;
    for (size_t i = 0; i < size; ++i) digest = (digest ^ p[i]) * 1099511628211ull;
    return digest;
}

uint64_t sweep_digest_matrix(uint64_t digest, const uform_matrix_t *view) {
    size_t row_bytes = uform_scalar_row_bytes(view->scalar, view->columns);
    for (size_t row = 0; row < view->rows; ++row) {
        const void *pointer = NULL;
        if (uform_matrix_row(view, row, &pointer) != UFORM_OK) return 0;
        digest = sweep_digest(digest, pointer, row_bytes);
    }
    return sweep_digest(digest, &view->rows, sizeof view->rows);
}

uint64_t sweep_digest_rows(uint64_t digest, const uform_rows_t *view) {
    if (view->offsets) digest = sweep_digest(digest, view->offsets, (view->count + 1) * sizeof *view->offsets);
    return sweep_digest_matrix(digest, &view->matrix);
}

/* Files are read on first use, which is the unarmed first run of the row that names them. */
typedef struct media_entry_t {
    char name[64];
    sweep_bytes_t bytes;
} media_entry_t;

static media_entry_t media_cache[64];
static size_t media_cached;

const sweep_bytes_t *sweep_media(const sweep_fixture_t *fixture, const char *name) {
    for (size_t i = 0; i < media_cached; ++i)
        if (strcmp(media_cache[i].name, name) == 0) return &media_cache[i].bytes;
    if (media_cached == sizeof media_cache / sizeof media_cache[0]) return NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", fixture->fixtures, name);
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    media_entry_t *entry = &media_cache[media_cached];
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    entry->bytes.data = size > 0 ? malloc((size_t)size) : NULL;
    int complete = entry->bytes.data && fread(entry->bytes.data, 1, (size_t)size, file) == (size_t)size;
    fclose(file);
    if (!complete) {
        free(entry->bytes.data);
        entry->bytes.data = NULL;
        return NULL;
    }
    entry->bytes.size = (size_t)size;
    snprintf(entry->name, sizeof entry->name, "%s", name);
    media_cached += 1;
    return &entry->bytes;
}

uform_tape_t sweep_tape(const void *bytes, size_t size, size_t offsets[2]) {
    offsets[0] = 0, offsets[1] = size;
    uform_tape_t tape = {bytes, offsets, 1};
    return tape;
}

uform_executor_t sweep_executor(sweep_fixture_t *fixture) {
    if (!fixture->executor && uform_executor_for_ram(NULL, 2, 0, &fixture->executor, NULL) != UFORM_OK) fixture->executor = NULL;
    return fixture->executor;
}
