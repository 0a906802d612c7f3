/*
 * Opening an approximate structure for an index (uform.h, uform_index_ann_open): map the .faiss
 * file, check its pairing record against the index and FAISS's bytes against the record's hash,
 * and only then let FAISS parse them (from the mapping, which is released afterwards: FAISS keeps
 * its own copy). Hostile bytes therefore reach FAISS's reader only when they hash as the record
 * says, which a damaged or foreign file does not.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash128.h"
#include "core/map_file.h"
#include "core/outcome.h"
#include "core/path.h"
#include "index/ann.h"

/* Version 2: the lists file named by the record, in the .faiss's folder, must be there, as long
 * as recorded and hash as recorded — the structure's own lists, not another build's or a damaged
 * copy — before FAISS maps it. Hashing reads it once, through a 1 MiB buffer rather than a mapping,
 * so the pages it reads stay in the page cache and out of the process's resident memory (the cost
 * of opening grows with the file, as with the index's rows). On success its path is in `*lists`
 * (the caller frees it). */
#define HASH_PIECE ((size_t)1 << 20)
static uform_status_t check_lists(const char *path, const uform__ann_record_t *record, char **lists,
                                  uform_outcome_t *outcome, const char *function) {
    *lists = NULL;
    char *folder = uform__path_folder(path);
    char *joined = folder ? malloc(strlen(folder) + strlen(record->lists_name) + 2) : NULL;
    unsigned char *piece = joined ? malloc(HASH_PIECE) : NULL;
    if (!piece) {
        free(folder), free(joined);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a path and a read buffer");
    }
    sprintf(joined, "%s/%s", folder, record->lists_name);
    free(folder);
    uform_status_t status = UFORM_OK;
    struct stat facts;
    int descriptor = open(joined, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0 || fstat(descriptor, &facts) != 0) {
        status = uform__fail(outcome, UFORM_IO, function, "cannot open the lists file '%s' of '%s': %s", joined, path,
                             strerror(errno));
    } else if (!S_ISREG(facts.st_mode)) {
        status = uform__fail(outcome, UFORM_IO, function, "the lists file '%s' of '%s' is not a regular file", joined, path);
    } else if ((uint64_t)facts.st_size != record->lists_bytes) {
        status = uform__fail(outcome, UFORM_FORMAT, function,
                             "the lists file '%s' has %lld bytes, the pairing record of '%s' says %llu (cut short, or "
                             "another structure's lists: rebuild it)", joined, (long long)facts.st_size, path,
                             (unsigned long long)record->lists_bytes);
    } else {
        uform__hash128_t hasher;
        uform__hash128_init(&hasher);
        for (uint64_t at = 0; status == UFORM_OK && at < record->lists_bytes;) {
            size_t wanted = record->lists_bytes - at < HASH_PIECE ? (size_t)(record->lists_bytes - at) : HASH_PIECE;
            ssize_t got = pread(descriptor, piece, wanted, (off_t)at);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0)
                status = uform__fail(outcome, UFORM_IO, function, "cannot read the lists file '%s' of '%s': %s", joined, path,
                                     got < 0 ? strerror(errno) : "it ended early");
            else uform__hash128_update(&hasher, piece, (size_t)got), at += (uint64_t)got;
        }
        unsigned char digest[16];
        uform__hash128_digest(&hasher, digest);
        if (status == UFORM_OK && memcmp(digest, record->lists_hash, sizeof digest) != 0)
            status = uform__fail(outcome, UFORM_FORMAT, function,
                                 "the lists file '%s' does not hash as the pairing record of '%s' says (another "
                                 "structure's lists of the same size, or damaged: rebuild it)", joined, path);
    }
    if (descriptor >= 0) close(descriptor);
    free(piece);
    if (status != UFORM_OK) free(joined);
    else *lists = joined;
    return status;
}

/* Checks the mapped file against `index`; on success FAISS's structure is in `*faiss`. */
static uform_status_t check_and_read(const unsigned char *bytes, size_t size, uform_index_t index, const char *path,
                                     const uform__faiss_api_t **api, uform__ann_record_t *record, uform__faiss_t **faiss,
                                     uform_outcome_t *outcome, const char *function) {
    char why[UFORM_OUTCOME_MESSAGE_CAPACITY - 128];
    if (size < UFORM__ANN_RECORD_BYTES)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "'%s' has %zu bytes, fewer than a pairing record's %d: not an approximate structure UForm wrote",
                           path, size, UFORM__ANN_RECORD_BYTES);
    uform_status_t status = uform__ann_record_decode(bytes + size - UFORM__ANN_RECORD_BYTES, record, why, sizeof why);
    if (status != UFORM_OK)
        return uform__fail(outcome, status, function, "'%s': %s%s", path, why,
                           status == UFORM_FORMAT ? " (cut short, not written by UForm, or saved again by FAISS: "
                                                    "rebuild it with uform_index_ann_build)" : "");
    size_t trailer = UFORM__ANN_RECORD_BYTES;
    if (record->version == 2) {
        trailer += UFORM__ANN_LISTS_BYTES;
        if (size < trailer)
            return uform__fail(outcome, UFORM_FORMAT, function, "'%s' has %zu bytes, fewer than a pairing record and lists block's %zu",
                               path, size, trailer);
        status = uform__ann_lists_decode(bytes + size - trailer, record, why, sizeof why);
        if (status != UFORM_OK) return uform__fail(outcome, status, function, "'%s': %s", path, why);
    }
    if (record->faiss_bytes != size - trailer)
        return uform__fail(outcome, UFORM_FORMAT, function, "'%s': its record says %llu bytes of FAISS, the file holds %zu",
                           path, (unsigned long long)record->faiss_bytes, size - trailer);
    uform__ann_identity_t mine;
    uform__ann_identity_of(index, &mine);
    if (uform__ann_identity_differs(&mine, &record->identity, why, sizeof why))
        return uform__fail(outcome, UFORM_CONFIG_MISMATCH, function, "'%s' does not belong to this index: %s", path, why);
    unsigned char digest[16];
    uform__hash128_t hasher;
    uform__hash128_init(&hasher);
    uform__hash128_update(&hasher, bytes, (size_t)record->faiss_bytes);
    uform__hash128_digest(&hasher, digest);
    if (memcmp(digest, record->faiss_hash, sizeof digest) != 0)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "'%s': FAISS's %llu bytes do not hash as its record says (the file is damaged)", path,
                           (unsigned long long)record->faiss_bytes);
    char *lists = NULL;
    if (record->version == 2 && (status = check_lists(path, record, &lists, outcome, function)) != UFORM_OK) return status;
    status = uform__faiss_load(api, outcome, function);
    if (status == UFORM_OK) {
        status = (*api)->deserialize(bytes, (size_t)record->faiss_bytes, lists, record->lists_bytes, faiss, why, sizeof why);
        if (status != UFORM_OK) uform__fail(outcome, status, function, "'%s': FAISS cannot read it: %s", path, why);
    }
    free(lists);
    if (status != UFORM_OK) return status;
    uform__faiss_facts_t facts;
    (*api)->describe(*faiss, &facts);
    if (facts.count != index->count || facts.dimensions != index->dims || !facts.metric_inner_product)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "'%s': FAISS's structure holds %llu vectors × %llu dims (%s), its record says %zu × %zu for "
                           "inner products", path, (unsigned long long)facts.count, (unsigned long long)facts.dimensions,
                           facts.metric_inner_product ? "inner products" : "another metric", index->count, index->dims);
    return UFORM_OK;
}

UFORM_API uform_status_t uform_index_ann_open(uform_index_t index, const char *path, uform_index_ann_t *ann,
                                              uform_outcome_t *outcome) {
    const char *function = __func__;
    if (ann) *ann = NULL;
    if (!index || !path || !ann)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", !index ? "index" : !path ? "path" : "ann");
    char shown[64 + UFORM_OUTCOME_MESSAGE_CAPACITY / 4];
    snprintf(shown, sizeof shown, "'%s'", path);
    const void *mapping = NULL;
    size_t size = 0;
    uform_status_t mapped = uform__map_file(path, shown, &mapping, &size, outcome, function);
    if (mapped != UFORM_OK) return mapped;
    const uform__faiss_api_t *api = NULL;
    uform__faiss_t *faiss = NULL;
    uform__ann_record_t record;
    uform_status_t status = check_and_read(mapping, size, index, path, &api, &record, &faiss, outcome, function);
    uform__unmap_file(mapping, size);
    if (status != UFORM_OK) {
        if (faiss) api->free(faiss);
        return status;
    }
    struct uform_index_ann_s *made = calloc(1, sizeof *made);
    if (!made) {
        api->free(faiss);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the structure's handle");
    }
    made->index = index, made->api = api, made->faiss = faiss, made->train_rows = record.train_rows;
    api->describe(faiss, &made->facts);
    memcpy(made->recipe, record.recipe, sizeof made->recipe);
    *ann = made;
    return uform__succeed(outcome, function);
}

UFORM_API void uform_index_ann_free(uform_index_ann_t ann) {
    if (!ann) return;
    ann->api->free(ann->faiss);
    free(ann);
}

UFORM_API uform_status_t uform_index_ann_describe(uform_index_ann_t ann, uform_index_ann_description_t *description) {
    if (!description) return UFORM_INVALID_ARGUMENT;
    memset(description, 0, sizeof *description);
    if (!ann) return UFORM_INVALID_ARGUMENT;
    description->count = (size_t)ann->facts.count, description->dimensions = (size_t)ann->facts.dimensions;
    description->lists = (size_t)ann->facts.lists, description->code_bytes = (size_t)ann->facts.code_bytes;
    description->train_rows = (size_t)ann->train_rows, description->graph = ann->facts.graph;
    memcpy(description->recipe, ann->recipe, sizeof description->recipe);
    return UFORM_OK;
}
