/*
 * Inverted lists kept on disk (ann_ondisk.h): the runs written as a build goes, then laid out as
 * FAISS's OnDiskInvertedLists file — for list j in list order, its codes [total_j, code_size] then
 * its ids [total_j] (int64), at offset Σ_{i<j} total_i·(code_size + 8), no gaps, no free slots —
 * which is what FAISS's own OnDiskInvertedLists::merge_from makes. FAISS's merge_from is not used:
 * it wants every part in memory (or mapped) at once, and it prints a line for every resize of the
 * file, which the library may not.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/write_whole.h"
#include "core/hash128.h"
#include "core/outcome.h"
#include "core/path.h"
#include "index/ann_ondisk.h"

/* Bytes copied per read: runs are copied and the finished file hashed through one such buffer. */
#define COPY_BYTES ((size_t)1 << 20)

/* pread or pwrite of exactly `size` bytes; a read that meets the end answers EIO (the scratch file
 * was cut under us). */
static int whole(int descriptor, void *bytes, size_t size, uint64_t offset, int writing) {
    unsigned char *at = bytes;
    while (size) {
        ssize_t done = writing ? pwrite(descriptor, at, size, (off_t)offset) : pread(descriptor, at, size, (off_t)offset);
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) return errno;
        if (done == 0) return EIO;
        at += done, size -= (size_t)done, offset += (uint64_t)done;
    }
    return 0;
}

static int copy_range(int from, uint64_t from_offset, int to, uint64_t to_offset, uint64_t size, unsigned char *buffer) {
    while (size) {
        size_t piece = size < COPY_BYTES ? (size_t)size : COPY_BYTES;
        int error = whole(from, buffer, piece, from_offset, 0);
        if (!error) error = whole(to, buffer, piece, to_offset, 1);
        if (error) return error;
        from_offset += piece, to_offset += piece, size -= piece;
    }
    return 0;
}

/* A temporary file beside `path`, "<folder>/.<base>.XXXXXX", mode 0644; its name in *temporary. */
static int temporary_beside(const char *path, char **temporary) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!(*temporary = malloc(strlen(path) + 16))) return -ENOMEM;
    sprintf(*temporary, "%.*s.%s.XXXXXX", (int)(base - path), path, base);
    int descriptor = mkostemp(*temporary, O_CLOEXEC);
    if (descriptor < 0) {
        int error = errno;
        free(*temporary), *temporary = NULL;
        return -error;
    }
    if (fchmod(descriptor, 0644) != 0) {
        int error = errno;
        close(descriptor), unlink(*temporary), free(*temporary), *temporary = NULL;
        return -error;
    }
    return descriptor;
}

uform_status_t uform__ann_ondisk_start(uform__ann_ondisk_t *ondisk, const uform__faiss_api_t *api,
                                       const uform__faiss_t *faiss, const char *faiss_path, uform_outcome_t *outcome,
                                       const char *function) {
    memset(ondisk, 0, sizeof *ondisk);
    ondisk->api = api, ondisk->runs = -1;
    uform__faiss_facts_t facts;
    api->describe(faiss, &facts);
    ondisk->lists = (size_t)facts.lists, ondisk->code_size = (size_t)facts.code_bytes;
    /* X.faiss → X.ivfdata (FAISS's own name for such files); any other name gets .ivfdata appended. */
    const char *slash = strrchr(faiss_path, '/');
    const char *base = slash ? slash + 1 : faiss_path;
    size_t stem = strlen(base);
    if (stem > 6 && !strcmp(base + stem - 6, ".faiss")) stem -= 6;
    if (stem + 8 >= UFORM__ANN_LISTS_NAME_CAPACITY)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "the lists file's name for '%s' would have %zu bytes; at most %d (a shorter .faiss name)",
                           faiss_path, stem + 8, UFORM__ANN_LISTS_NAME_CAPACITY - 1);
    snprintf(ondisk->name, sizeof ondisk->name, "%.*s.ivfdata", (int)stem, base);
    size_t folder = (size_t)(base - faiss_path);
    ondisk->path = malloc(folder + strlen(ondisk->name) + 1);
    ondisk->sizes = calloc(ondisk->lists ? ondisk->lists : 1, sizeof *ondisk->sizes);
    ondisk->totals = calloc(ondisk->lists ? ondisk->lists : 1, sizeof *ondisk->totals);
    if (!ondisk->path || !ondisk->sizes || !ondisk->totals)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the sizes of %zu lists", ondisk->lists);
    sprintf(ondisk->path, "%.*s%s", (int)folder, faiss_path, ondisk->name);
    char *scratch = NULL;
    int descriptor = temporary_beside(ondisk->path, &scratch);
    if (descriptor == -ENOMEM) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a path");
    if (descriptor < 0)
        return uform__fail(outcome, UFORM_IO, function, "cannot create a scratch file for the lists next to '%s': %s",
                           ondisk->path, strerror(-descriptor));
    /* Read back through the descriptor only: unlinked now, so nothing outlives the process. */
    unlink(scratch), free(scratch);
    ondisk->runs = descriptor;
    return UFORM_OK;
}

static int runs_write(void *state, const void *bytes, size_t size) {
    uform__ann_ondisk_t *ondisk = state;
    if (!size) return 0;
    int error = uform__write_whole(ondisk->runs, bytes, size);
    if (!error) ondisk->runs_bytes += size;
    return error;
}

/* Room for one more run's record, made before the run is written so that a record that cannot be
 * kept never leaves an unrecorded run behind. */
static uform_status_t room_for_a_run(uform__ann_ondisk_t *ondisk, uform_outcome_t *outcome, const char *function) {
    if (ondisk->run_count < ondisk->run_capacity) return UFORM_OK;
    size_t capacity = ondisk->run_capacity ? 2 * ondisk->run_capacity : 16;
    struct uform__ann_run_t *grown = realloc(ondisk->run_list, capacity * sizeof *grown);
    if (!grown) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu runs' records", capacity);
    ondisk->run_list = grown, ondisk->run_capacity = capacity;
    return UFORM_OK;
}

/* The run just written (from `start` to the scratch file's end, its sizes in ondisk->sizes). */
static void close_run(uform__ann_ondisk_t *ondisk, uint64_t first, uint64_t start) {
    for (size_t j = 0; j < ondisk->lists; ++j) ondisk->totals[j] += ondisk->sizes[j];
    ondisk->run_list[ondisk->run_count++] = (struct uform__ann_run_t){first, start, ondisk->runs_bytes};
}

uform_status_t uform__ann_ondisk_take(uform__ann_ondisk_t *ondisk, uform__faiss_t *into, uform__faiss_t *from, uint64_t first,
                                      uform_outcome_t *outcome, const char *function) {
    uform_status_t status = room_for_a_run(ondisk, outcome, function);
    if (status != UFORM_OK) return status;
    uint64_t start = ondisk->runs_bytes;
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    int error = 0;
    status = ondisk->api->lists_take(into, from, runs_write, ondisk, ondisk->sizes, &error, message, sizeof message);
    if (status == UFORM_IO)
        return uform__fail(outcome, UFORM_IO, function, "cannot write the lists' scratch file next to '%s': %s", ondisk->path,
                           strerror(error));
    if (status != UFORM_OK)
        return uform__fail(outcome, status, function, "FAISS could not hand over its lists for '%s': %s", ondisk->path, message);
    if ((error = runs_write(ondisk, ondisk->sizes, ondisk->lists * sizeof *ondisk->sizes)) != 0)
        return uform__fail(outcome, UFORM_IO, function, "cannot write the lists' scratch file next to '%s': %s", ondisk->path,
                           strerror(error));
    close_run(ondisk, first, start);
    return UFORM_OK;
}

uform_status_t uform__ann_ondisk_pack(const uform__faiss_api_t *api, uform__faiss_t *faiss, size_t lists, uint64_t *sizes,
                                      int (*write)(void *state, const void *bytes, size_t size), void *state,
                                      uform_outcome_t *outcome, const char *function) {
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    int error = 0;
    uform_status_t status = api->lists_take(faiss, faiss, write, state, sizes, &error, message, sizeof message);
    if (status == UFORM_OK && (error = write(state, sizes, lists * sizeof *sizes)) != 0) status = UFORM_IO;
    if (status == UFORM_IO && error == ENOMEM)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a buffer for a batch of %zu inverted lists",
                           lists);
    if (status == UFORM_IO)
        return uform__fail(outcome, UFORM_IO, function, "cannot write a batch of inverted lists: %s", strerror(error));
    if (status != UFORM_OK) return uform__fail(outcome, status, function, "FAISS could not hand over its lists: %s", message);
    return UFORM_OK;
}

uform_status_t uform__ann_ondisk_append(uform__ann_ondisk_t *ondisk, uform__faiss_t *into, const unsigned char *bytes,
                                        size_t size, uint64_t first, uform_outcome_t *outcome, const char *function) {
    /* The run's own sizes must account for every byte before it: codes and an id per entry. */
    const uint64_t sizes_bytes = (uint64_t)ondisk->lists * sizeof *ondisk->sizes, entry = ondisk->code_size + 8;
    uint64_t entries = 0, body = 0;
    int fits = size >= sizes_bytes;
    if (fits) memcpy(ondisk->sizes, bytes + size - sizes_bytes, (size_t)sizes_bytes);
    for (size_t j = 0; fits && j < ondisk->lists; ++j) {
        uint64_t n = ondisk->sizes[j];
        if (n > (UINT64_MAX - body) / entry) fits = 0;
        else entries += n, body += n * entry;
    }
    if (!fits || body != size - sizes_bytes)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "a member's batch of inverted lists (%zu bytes) is not what this build sends: its sizes do not "
                           "account for its length", size);
    uform_status_t status = room_for_a_run(ondisk, outcome, function);
    if (status != UFORM_OK) return status;
    uint64_t start = ondisk->runs_bytes;
    int error = runs_write(ondisk, bytes, size);
    if (error)
        return uform__fail(outcome, UFORM_IO, function, "cannot write the lists' scratch file next to '%s': %s", ondisk->path,
                           strerror(error));
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    status = ondisk->api->lists_count(into, entries, message, sizeof message);
    if (status != UFORM_OK)
        return uform__fail(outcome, status, function, "FAISS could not count a member's %llu vectors: %s",
                           (unsigned long long)entries, message);
    close_run(ondisk, first, start);
    return UFORM_OK;
}

static int by_first_item(const void *a, const void *b) {
    uint64_t x = ((const struct uform__ann_run_t *)a)->first, y = ((const struct uform__ann_run_t *)b)->first;
    return (x > y) - (x < y);
}

/* Copies every run into `out` at its lists' places; `offsets` and `cursors` are [lists] scratch. */
static int lay_out(uform__ann_ondisk_t *ondisk, int out, uint64_t *offsets, uint64_t *cursors, unsigned char *buffer) {
    const uint64_t code = ondisk->code_size, sizes_bytes = (uint64_t)ondisk->lists * sizeof *ondisk->sizes;
    /* Runs hold disjoint ranges of items, so their order by first item is item order. */
    qsort(ondisk->run_list, ondisk->run_count, sizeof *ondisk->run_list, by_first_item);
    for (size_t r = 0; r < ondisk->run_count; ++r) {
        uint64_t at = ondisk->run_list[r].start, end = ondisk->run_list[r].end - sizes_bytes;
        int error = whole(ondisk->runs, ondisk->sizes, (size_t)sizes_bytes, end, 0);
        if (error) return error;
        for (size_t j = 0; j < ondisk->lists; ++j) {
            uint64_t n = ondisk->sizes[j];
            if (!n) continue;
            if (cursors[j] + n > ondisk->totals[j] || at + n * (code + 8) > end) return EIO; /* not what take wrote */
            if ((error = copy_range(ondisk->runs, at, out, offsets[j] + cursors[j] * code, n * code, buffer)) != 0) return error;
            at += n * code;
            if ((error = copy_range(ondisk->runs, at, out, offsets[j] + ondisk->totals[j] * code + cursors[j] * 8, n * 8,
                                    buffer)) != 0)
                return error;
            at += n * 8, cursors[j] += n;
        }
    }
    return 0;
}

uform_status_t uform__ann_ondisk_finish(uform__ann_ondisk_t *ondisk, uform__faiss_t *faiss, uform__ann_record_t *record,
                                        uform_outcome_t *outcome, const char *function) {
    size_t lists = ondisk->lists ? ondisk->lists : 1;
    uint64_t *offsets = calloc(lists, sizeof *offsets), *cursors = calloc(lists, sizeof *cursors);
    unsigned char *buffer = malloc(COPY_BYTES);
    uform_status_t status = UFORM_OK;
    int out = -1;
    if (!offsets || !cursors || !buffer) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the lists' layout (%zu lists)", lists);
        goto done;
    }
    uint64_t total = 0;
    for (size_t j = 0; j < ondisk->lists; ++j) offsets[j] = total, total += ondisk->totals[j] * (ondisk->code_size + 8);
    out = temporary_beside(ondisk->path, &ondisk->temporary);
    if (out < 0) {
        status = out == -ENOMEM ? uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a path")
                                : uform__fail(outcome, UFORM_IO, function, "cannot create a temporary file next to '%s': %s",
                                              ondisk->path, strerror(-out));
        goto done;
    }
    int error = ftruncate(out, (off_t)total) != 0 ? errno : lay_out(ondisk, out, offsets, cursors, buffer);
    /* The hash is of the file as written, read back in order (as opening reads it). */
    uform__hash128_t hasher;
    uform__hash128_init(&hasher);
    for (uint64_t at = 0; !error && at < total; at += COPY_BYTES) {
        size_t piece = total - at < COPY_BYTES ? (size_t)(total - at) : COPY_BYTES;
        if (!(error = whole(out, buffer, piece, at, 0))) uform__hash128_update(&hasher, buffer, piece);
    }
    if (!error && fsync(out) != 0) error = errno;
    int closed = close(out);
    out = -1;
    if (!error && closed != 0) error = errno;
    if (error) {
        status = uform__fail(outcome, UFORM_IO, function, "cannot write the lists file '%s': %s", ondisk->path, strerror(error));
        goto done;
    }
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    status = ondisk->api->lists_describe(faiss, ondisk->totals, ondisk->name, message, sizeof message);
    if (status != UFORM_OK) {
        status = uform__fail(outcome, status, function, "FAISS could not describe the lists file '%s': %s", ondisk->path, message);
        goto done;
    }
    memcpy(record->lists_name, ondisk->name, sizeof record->lists_name);
    record->lists_bytes = total;
    uform__hash128_digest(&hasher, record->lists_hash);
done:
    if (out >= 0) close(out);
    free(offsets), free(cursors), free(buffer);
    return status;
}

uform_status_t uform__ann_ondisk_commit(void *state, uform_outcome_t *outcome, const char *function) {
    uform__ann_ondisk_t *ondisk = state;
    if (rename(ondisk->temporary, ondisk->path) != 0)
        return uform__fail(outcome, UFORM_IO, function, "cannot rename the temporary file over '%s': %s", ondisk->path,
                           strerror(errno));
    free(ondisk->temporary), ondisk->temporary = NULL;
    /* The folder's own sync follows with the .faiss's rename, in the same folder (ann_write.c). */
    return UFORM_OK;
}

void uform__ann_ondisk_end(uform__ann_ondisk_t *ondisk) {
    if (ondisk->api && ondisk->runs >= 0) close(ondisk->runs);
    if (ondisk->temporary) unlink(ondisk->temporary);
    free(ondisk->temporary), free(ondisk->path), free(ondisk->sizes), free(ondisk->totals), free(ondisk->run_list);
    memset(ondisk, 0, sizeof *ondisk);
}
