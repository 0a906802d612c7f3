/*
 * Writing a .faiss file atomically (ann.h's layout): FAISS's bytes stream through a callback into
 * a temporary file in the destination's folder while they are hashed, the pairing record follows,
 * then fsync, rename over the destination and fsync of the folder — readers see the old file or
 * the new one, and a failure leaves the old one untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/write_whole.h"
#include "core/hash128.h"
#include "core/outcome.h"
#include "core/path.h"
#include "index/ann.h"
#include "index/ann_write.h"

typedef struct sink_t {
    int descriptor;
    uint64_t written;
    uform__hash128_t hasher;
} sink_t;

static int sink_write(void *state, const void *bytes, size_t size) {
    sink_t *sink = state;
    if (!size) return 0; /* FAISS writes an empty vector as (NULL, 0): nothing to write or hash */
    int error = uform__write_whole(sink->descriptor, bytes, size);
    if (error) return error;
    uform__hash128_update(&sink->hasher, bytes, size);
    sink->written += size;
    return 0;
}

uform_status_t uform__ann_write(const uform__faiss_api_t *api, const uform__faiss_t *faiss, const char *path,
                                uform__ann_record_t *record, const uform__ann_before_rename_t *before_rename,
                                uform_outcome_t *outcome, const char *function) {
    size_t length = strlen(path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "'%s' does not name a file", path);
    char *temporary = malloc(length + 16), *folder = uform__path_folder(path);
    if (!temporary || !folder) {
        free(temporary), free(folder);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a path");
    }
    sprintf(temporary, "%.*s.%s.XXXXXX", (int)(base - path), path, base);
    uform_status_t status = UFORM_OK;
    sink_t sink = {mkostemp(temporary, O_CLOEXEC), 0, {{0}}};
    uform__hash128_init(&sink.hasher);
    if (sink.descriptor < 0) {
        status = uform__fail(outcome, UFORM_IO, function, "cannot create a temporary file next to '%s': %s", path, strerror(errno));
        goto done;
    }
    if (fchmod(sink.descriptor, 0644) != 0) {
        status = uform__fail(outcome, UFORM_IO, function, "cannot set the mode of the temporary file for '%s': %s", path, strerror(errno));
        goto abandon;
    }
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    int error = 0;
    status = api->serialize(faiss, sink_write, &sink, &error, message, sizeof message);
    if (status == UFORM_IO) {
        status = uform__fail(outcome, UFORM_IO, function, "cannot write '%s': %s", path, strerror(error));
        goto abandon;
    }
    if (status != UFORM_OK) {
        status = uform__fail(outcome, status, function, "FAISS could not serialise the structure: %s", message);
        goto abandon;
    }
    record->faiss_bytes = sink.written;
    uform__hash128_digest(&sink.hasher, record->faiss_hash);
    unsigned char bytes[UFORM__ANN_RECORD_BYTES], lists[UFORM__ANN_LISTS_BYTES];
    uform__ann_record_encode(record, bytes);
    if (record->lists_name[0]) uform__ann_lists_encode(record, lists);
    if ((record->lists_name[0] && (error = uform__write_whole(sink.descriptor, lists, sizeof lists)) != 0) ||
        (error = uform__write_whole(sink.descriptor, bytes, sizeof bytes)) != 0 || (fsync(sink.descriptor) != 0 && (error = errno))) {
        status = uform__fail(outcome, UFORM_IO, function, "cannot write '%s': %s", path, strerror(error));
        goto abandon;
    }
    int closed = close(sink.descriptor);
    sink.descriptor = -1;
    if (closed != 0) {
        status = uform__fail(outcome, UFORM_IO, function, "cannot close the temporary file for '%s': %s", path, strerror(errno));
        goto abandon;
    }
    if (before_rename && (status = before_rename->run(before_rename->state, outcome, function)) != UFORM_OK) goto abandon;
    if (rename(temporary, path) != 0) {
        status = uform__fail(outcome, UFORM_IO, function, "cannot rename the temporary file over '%s': %s", path, strerror(errno));
        goto abandon;
    }
    int directory = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    error = directory < 0 ? errno : (fsync(directory) != 0 ? errno : 0);
    if (directory >= 0) close(directory);
    if (error && error != EINVAL) /* file systems that cannot sync a folder answer EINVAL */
        status = uform__fail(outcome, UFORM_IO, function, "'%s' is written, but flushing its folder failed: %s", path, strerror(error));
    goto done;
abandon:
    if (sink.descriptor >= 0) close(sink.descriptor);
    unlink(temporary);
done:
    free(temporary), free(folder);
    return status;
}
