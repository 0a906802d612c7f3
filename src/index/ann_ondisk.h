/*
 * Inverted lists kept on disk (uform_index_ann_options_t.ondisk; docs/indexes.md, "On-disk lists"):
 * an IVF build writes its lists out as it goes, so the process never holds more than one batch of
 * adds of them (its own, or one another member sent), and at the end lays them out as FAISS's
 * OnDiskInvertedLists file beside the .faiss. Private to src/index/.
 *
 *   start    names the files (X.faiss → X.ivfdata), opens a scratch file of runs beside them
 *            (unlinked at once: nothing is left behind by a crash);
 *   take     appends the lists FAISS holds in memory (of the structure itself, or of a member's
 *            part) to the runs as one run, each run followed by its nlist list sizes, and empties
 *            them;
 *   append   appends one run made by another process (a member's batch, in the same layout:
 *            uform__ann_ondisk_pack) from its bytes, and counts its vectors in the structure;
 *   finish   copies the runs into the lists file under a temporary name — list by list, each list's
 *            codes then its ids, the runs in the order of their first items, which is item order
 *            (a members' build takes them round by round, not in that order) — while it is
 *            hashed, syncs it, and gives the structure FAISS's description of it;
 *   commit   renames it over X.ivfdata (uform__ann_write runs it just before its own rename);
 *   end      frees everything and removes the temporary file if it was not committed.
 */
#ifndef UFORM_INDEX_ANN_ONDISK_H
#define UFORM_INDEX_ANN_ONDISK_H

#include "index/ann.h"

typedef struct uform__ann_ondisk_t {
    const uform__faiss_api_t *api;
    char *path;      /* the lists file, beside the .faiss */
    char *temporary; /* its temporary name until commit, or NULL */
    char name[UFORM__ANN_LISTS_NAME_CAPACITY];
    int runs;        /* the scratch file's descriptor, −1 when none */
    uint64_t runs_bytes;
    size_t lists, code_size;
    uint64_t *sizes;  /* [lists] the run being taken, then scratch */
    uint64_t *totals; /* [lists] entries of every list over all runs */
    struct uform__ann_run_t {
        uint64_t first;      /* the number of the run's first item: runs are laid out in this order */
        uint64_t start, end; /* where the run begins and its sizes end in the scratch file */
    } *run_list;             /* [run_capacity] */
    size_t run_count, run_capacity;
} uform__ann_ondisk_t;

/* Prepares the lists of `faiss` (a mergeable IVF, trained) for the .faiss at `faiss_path`.
 * UFORM_INVALID_ARGUMENT (a lists file name longer than 215 bytes); UFORM_IO (the scratch file,
 * with the folder and the system's reason); UFORM_OUT_OF_MEMORY. `ondisk` needs end() either way. */
uform_status_t uform__ann_ondisk_start(uform__ann_ondisk_t *ondisk, const uform__faiss_api_t *api,
                                       const uform__faiss_t *faiss, const char *faiss_path, uform_outcome_t *outcome,
                                       const char *function);

/* Moves the lists of `from` (the structure itself, or a member's part to be counted in `into`) to
 * the runs, as the run of items first, first + 1, ... UFORM_IO; FAISS's refusal (incompatible
 * parts); UFORM_OUT_OF_MEMORY. */
uform_status_t uform__ann_ondisk_take(uform__ann_ondisk_t *ondisk, uform__faiss_t *into, uform__faiss_t *from, uint64_t first,
                                      uform_outcome_t *outcome, const char *function);

/* Another process's side of take: writes the lists of `faiss` (a copy of the same trained structure)
 * through `write` as one run — each list's codes then its ids, then the `lists` sizes as uint64 —
 * and empties them. `sizes` is [lists] scratch. UFORM_IO (the errno in the message); FAISS's refusal. */
uform_status_t uform__ann_ondisk_pack(const uform__faiss_api_t *api, uform__faiss_t *faiss, size_t lists, uint64_t *sizes,
                                      int (*write)(void *state, const void *bytes, size_t size), void *state,
                                      uform_outcome_t *outcome, const char *function);

/* Appends a run that pack made elsewhere, `size` bytes, as the run of items first, first + 1, ...,
 * and counts its vectors in `into`. UFORM_FORMAT (bytes that are not such a run: its sizes do not
 * account for its length); UFORM_IO; UFORM_OUT_OF_MEMORY; FAISS's refusal. */
uform_status_t uform__ann_ondisk_append(uform__ann_ondisk_t *ondisk, uform__faiss_t *into, const unsigned char *bytes,
                                        size_t size, uint64_t first, uform_outcome_t *outcome, const char *function);

/* Writes the lists file (temporary name), fills record->lists_name, lists_bytes and lists_hash, and
 * gives `faiss` its on-disk description. UFORM_IO; UFORM_OUT_OF_MEMORY; FAISS's refusal. */
uform_status_t uform__ann_ondisk_finish(uform__ann_ondisk_t *ondisk, uform__faiss_t *faiss, uform__ann_record_t *record,
                                        uform_outcome_t *outcome, const char *function);

/* The rename over the lists file's name (a uform__ann_before_rename_t's run; `state` is the ondisk). */
uform_status_t uform__ann_ondisk_commit(void *state, uform_outcome_t *outcome, const char *function);

/* Frees; removes the temporary lists file unless committed. A zeroed or started ondisk. */
void uform__ann_ondisk_end(uform__ann_ondisk_t *ondisk);

#endif
