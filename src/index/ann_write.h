/* Writing a .faiss file (ann.h's layout) atomically. Private to src/index/. */
#ifndef UFORM_INDEX_ANN_WRITE_H
#define UFORM_INDEX_ANN_WRITE_H

#include "index/ann.h"

/* Writes `faiss` through the module's serialiser, then `record` (its faiss_bytes and faiss_hash
 * filled here; with record->lists_name set, version 2's lists block before it), to `path`
 * atomically. `before_rename` (NULL: none) runs once everything is written and synced, just before
 * the rename, and a failure there abandons the file: the on-disk lists' own rename (ann_ondisk.c),
 * so the two files change together but for the moment between two renames. UFORM_IO with the path
 * and the system's reason (an older file at `path` is untouched); UFORM_INVALID_ARGUMENT for a path
 * that names no file; UFORM_OUT_OF_MEMORY; FAISS's refusal as the module answers it. */
typedef struct uform__ann_before_rename_t {
    uform_status_t (*run)(void *state, uform_outcome_t *outcome, const char *function);
    void *state;
} uform__ann_before_rename_t;
uform_status_t uform__ann_write(const uform__faiss_api_t *api, const uform__faiss_t *faiss, const char *path,
                                uform__ann_record_t *record, const uform__ann_before_rename_t *before_rename,
                                uform_outcome_t *outcome, const char *function);

#endif
