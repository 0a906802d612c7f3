/* Opening a file a reader parses in place, by path or from borrowed bytes (open_mapped.h). */
#include "io/open_mapped.h"

#include <stdlib.h>
#include <string.h>

#include "core/map_file.h"
#include "core/outcome.h"
#include "io/safetensors_text.h"

/* Tells a failed parse's message again under the reader's function, after the quoted path when
 * there is one, so that a message from a lower layer (the archive, the pickle machine) reads like
 * the reader's own. */
static uform_status_t restamp(const uform__io_reader_t *reader, uform_outcome_t *outcome, uform_status_t status,
                              const char *path) {
    if (!outcome) return status;
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY], quoted[UFORM__SAFETENSORS_PATH_CAPACITY];
    memcpy(message, outcome->message, sizeof message);
    message[sizeof message - 1] = 0;
    if (!path) return uform__fail(outcome, status, reader->function, "%s", message);
    return uform__fail(outcome, status, reader->function, "%s: %s", uform__safetensors_quote_path(quoted, path), message);
}

/* Allocates the record over `source` and parses it; owns the mapping from here on, also when the
 * record cannot be allocated. */
static uform_status_t adopt(const uform__io_reader_t *reader, uform__io_source_t source, const char *path, void **record,
                            uform_outcome_t *outcome, const char *function) {
    uform__io_source_t *result = calloc(1, reader->record_size);
    if (!result) {
        uform__unmap_file(source.mapping, source.size);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a file record");
    }
    *result = source;
    uform_status_t status = reader->parse(result, outcome);
    if (status != UFORM_OK) {
        reader->close(result);
        return restamp(reader, outcome, status, path);
    }
    *record = result;
    return uform__succeed(outcome, function);
}

uform_status_t uform__io_open_path(const uform__io_reader_t *reader, const char *path, void **record,
                                   uform_outcome_t *outcome, const char *function) {
    if (!record) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "`file` is NULL");
    *record = NULL;
    if (!path) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "`path` is NULL");
    char quoted[UFORM__SAFETENSORS_PATH_CAPACITY];
    uform__safetensors_quote_path(quoted, path);
    const void *bytes = NULL;
    size_t size = 0;
    uform_status_t mapped = uform__map_file(path, quoted, &bytes, &size, outcome, function);
    if (mapped != UFORM_OK) return mapped;
    uform__io_source_t source = {.bytes = bytes, .size = size, .mapping = (void *)bytes};
    return adopt(reader, source, path, record, outcome, function);
}

uform_status_t uform__io_open_bytes(const uform__io_reader_t *reader, const void *bytes, size_t size, void **record,
                                    uform_outcome_t *outcome, const char *function) {
    if (!record) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "`file` is NULL");
    *record = NULL;
    if (!bytes && size)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "`bytes` is NULL but `size` is %zu", size);
    uform__io_source_t source = {.bytes = bytes, .size = size, .mapping = NULL};
    return adopt(reader, source, NULL, record, outcome, function);
}
