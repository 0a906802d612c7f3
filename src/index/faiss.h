/*
 * The approximate indexes' only door to FAISS (Debian's libfaiss-dev, a static libfaiss.a): a
 * handful of extern "C" functions implemented in faiss.cpp, built into their own module,
 * libuform-faiss.so.4 — the only binary that links FAISS, BLAS, OpenMP and libstdc++ — which
 * libuform opens with dlopen the first time an approximate structure is built or opened
 * (faiss_load.h). These declarations are the module's exports, looked up by name; libuform calls
 * them through the table in faiss_load.h, never directly. Private to src/index/.
 *
 * No C++ exception crosses them: each catches everything and answers a status with FAISS's words
 * in `message` (`capacity` bytes, always NUL-terminated): UFORM_OUT_OF_MEMORY for std::bad_alloc
 * (also when FAISS caught one inside an OpenMP region and threw its own "... interrupted with:
 * std::bad_alloc"), otherwise the status the function names for FAISS's refusals. What a call
 * made is freed when it fails: the structures of the default recipes are made and read by the
 * shim with every part owned (FAISS 1.7.3's IndexHNSWFlat constructor and read_index leak on a
 * failed allocation); other recipes go through index_factory and read_index as they are. Nothing here prints: the module
 * lowers the k-means "too few training points" threshold that would make FAISS write a warning to
 * stderr (uform__faiss_train says how).
 *
 * Every structure is made for inner-product similarity (METRIC_INNER_PRODUCT): higher is closer,
 * as in exact search. Vector numbers (FAISS's ids) are the order of addition, which libuform makes
 * the index's item numbers.
 */
#ifndef UFORM_INDEX_FAISS_H
#define UFORM_INDEX_FAISS_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The module exports these names (and nothing else); libuform's objects keep them hidden. */
#if defined(UFORM_BUILDING_FAISS_MODULE)
#define UFORM__FAISS_EXPORT __attribute__((visibility("default")))
#else
#define UFORM__FAISS_EXPORT
#endif

/* libuform's ABI major in the high 16 bits, a revision of this header in the low 16: bump it
 * whenever a declaration here changes, so a stale module left in a library folder is refused. */
#define UFORM__FAISS_ABI ((UFORM_VERSION_MAJOR << 16) | 4)

typedef struct uform__faiss_s uform__faiss_t;

/* What a structure is, for the loader's checks and uform_index_ann_describe. */
typedef struct uform__faiss_facts_t {
    uint64_t count;      /* vectors added (ntotal) */
    uint64_t dimensions; /* d */
    uint64_t lists;      /* the inverted lists of an IVF structure (nlist), 0 for others */
    uint64_t code_bytes; /* bytes that stand for one vector in the structure's codes (4·d for Flat storage) */
    int trained;         /* is_trained */
    int graph;           /* an HNSW graph (the ef knob applies to it or to its IVF quantiser) */
    int inverted;        /* an IVF structure (the nprobe knob applies) */
    int metric_inner_product;
    int mergeable;       /* inverted lists that FAISS's merge_from joins: an IVF with array lists, alone or
                          * under transforms (OPQ, PCA …); not refined, not fast-scan (uform__faiss_merge) */
} uform__faiss_facts_t;

/* Answers the UFORM__FAISS_ABI the module was built with; looked up first. */
UFORM__FAISS_EXPORT uint32_t uform__faiss_module_abi(void);

/* FAISS's version, "1.7.3" (the module's build). */
UFORM__FAISS_EXPORT const char *uform__faiss_version(void);

/*
 * Makes an empty structure of `dimensions` from an index_factory `recipe` for inner products.
 * UFORM_INVALID_ARGUMENT with FAISS's message when the recipe does not parse or does not fit the
 * dimensions; UFORM_OUT_OF_MEMORY.
 */
UFORM__FAISS_EXPORT uform_status_t uform__faiss_create(const char *recipe, size_t dimensions, uform__faiss_t **index,
                                                       char *message, size_t capacity);

/* Fills `facts`. */
UFORM__FAISS_EXPORT void uform__faiss_describe(const uform__faiss_t *index, uform__faiss_facts_t *facts);

/*
 * The fewest training rows the structure's k-means accept (the largest number of centroids any of
 * its quantisers has: nlist, 2^nbits per PQ, and for OPQ the 256 of its rotation's PQ; 0 when
 * nothing needs training). FAISS's own threshold for quality is 39 rows per centroid; the caller
 * decides how many to give.
 */
UFORM__FAISS_EXPORT uint64_t uform__faiss_centroids(const uform__faiss_t *index);

/*
 * Trains the quantisers on `rows` F32 vectors [rows, d], on `threads` OpenMP threads (0: OpenMP's
 * default; the caller's thread count is restored afterwards). Sets every reachable k-means's
 * min_points_per_centroid to 1 so FAISS never prints its too-few-points warning (quality is the
 * caller's sample rule's job). UFORM_INVALID_ARGUMENT with FAISS's message when FAISS refuses (fewer
 * rows than centroids …); UFORM_OUT_OF_MEMORY.
 */
UFORM__FAISS_EXPORT uform_status_t uform__faiss_train(uform__faiss_t *index, size_t rows, const float *vectors,
                                                      size_t threads, char *message, size_t capacity);

/* Adds `rows` F32 vectors [rows, d]; they get the next numbers. Statuses as train. */
UFORM__FAISS_EXPORT uform_status_t uform__faiss_add(uform__faiss_t *index, size_t rows, const float *vectors,
                                                    size_t threads, char *message, size_t capacity);

/* Adds `rows` F32 vectors [rows, d] numbered first_id, first_id + 1 … (FAISS's add_with_ids), so
 * a member of a mesh adds its block of the items under their numbers in the whole index. Only
 * for mergeable structures (facts.mergeable); statuses as train. */
UFORM__FAISS_EXPORT uform_status_t uform__faiss_add_numbered(uform__faiss_t *index, size_t rows, const float *vectors,
                                                             uint64_t first_id, size_t threads, char *message,
                                                             size_t capacity);

/*
 * Moves every vector of `from` into `into` with FAISS's merge_from (Index::merge_from, which for an
 * IVF appends each of `from`'s inverted lists to the same list of `into`, ids unchanged, and empties
 * `from`). Both must be mergeable structures trained alike — the same trained bytes — which FAISS
 * checks (check_compatible_for_merge). UFORM_INVALID_ARGUMENT with FAISS's message when it refuses;
 * UFORM_OUT_OF_MEMORY.
 */
UFORM__FAISS_EXPORT uform_status_t uform__faiss_merge(uform__faiss_t *into, uform__faiss_t *from, char *message,
                                                      size_t capacity);

/*
 * Serialises the structure in FAISS's own file format (write_index) through `write`, called with
 * consecutive pieces; `write` answers 0 to go on or an errno value to stop (the answer is then
 * UFORM_IO with that value in `*error`). UFORM_INTERNAL with FAISS's message if FAISS refuses.
 */
UFORM__FAISS_EXPORT uform_status_t uform__faiss_serialize(const uform__faiss_t *index,
                                                          int (*write)(void *state, const void *bytes, size_t size),
                                                          void *state, int *error, char *message, size_t capacity);

/*
 * Reads a structure from `size` bytes in FAISS's format (read_index), which must be consumed
 * exactly. With `lists_path` NULL the lists must be in the bytes: a structure whose bytes name an
 * on-disk lists file ("ilod") is refused unread. With `lists_path`, they must name one: its
 * description (every list inside the file, no free slots, sizes adding up to the count, a size of
 * `lists_bytes`) is checked against the file at `lists_path` — not the name FAISS's bytes carry —,
 * which is then mapped read-only for the structure's life. UFORM_FORMAT with FAISS's message (or
 * the check's) when they are not a FAISS index, are cut short, leave bytes over or describe lists
 * the file does not hold; UFORM_OUT_OF_MEMORY.
 */
UFORM__FAISS_EXPORT uform_status_t uform__faiss_deserialize(const void *bytes, size_t size, const char *lists_path,
                                                            uint64_t lists_bytes, uform__faiss_t **index, char *message,
                                                            size_t capacity);

/*
 * On-disk lists, step 1 (ann_ondisk.c): writes every non-empty inverted list of `from` through
 * `write`, list by list in list order — the list's codes [size, code_size] then its ids [size] —,
 * sets sizes[list] (nlist of them) to its entries, and empties `from`'s lists, giving their memory
 * back. `into` is the structure the file is for: `from` itself (a build spilling its own adds), or
 * one it must be compatible with as for uform__faiss_merge (a member's part), whose vectors then
 * count in `into` and no longer in `from`. Only mergeable structures. UFORM_IO with the errno
 * `write` answered in `*error` (nothing emptied); UFORM_INVALID_ARGUMENT with FAISS's message;
 * UFORM_OUT_OF_MEMORY.
 */
UFORM__FAISS_EXPORT uform_status_t uform__faiss_lists_take(uform__faiss_t *into, uform__faiss_t *from,
                                                           int (*write)(void *state, const void *bytes, size_t size),
                                                           void *state, uint64_t *sizes, int *error, char *message,
                                                           size_t capacity);

/*
 * On-disk lists of a members' build, step 1b: `count` vectors that another copy of the same trained
 * structure (a member's, in another process) added and wrote out with uform__faiss_lists_take, and
 * whose bytes this process laid into its runs, now count in `index` as if it had added them — so
 * that step 2's sizes add up. Only mergeable structures; `count` below 2^63. UFORM_INVALID_ARGUMENT.
 */
UFORM__FAISS_EXPORT uform_status_t uform__faiss_lists_count(uform__faiss_t *index, uint64_t count, char *message,
                                                            size_t capacity);

/*
 * On-disk lists, step 2: replaces the structure's (emptied) lists by a description of FAISS's
 * OnDiskInvertedLists for a compact file named `name` whose list j holds sizes[j] entries at offset
 * Σ_{i<j} sizes[i]·(code_size + 8): its codes, then its ids. Nothing is mapped: the structure can be
 * serialised (FAISS's "ilod" section) but not searched. The sizes must add up to the vectors
 * added. UFORM_INVALID_ARGUMENT; UFORM_OUT_OF_MEMORY.
 */
UFORM__FAISS_EXPORT uform_status_t uform__faiss_lists_describe(uform__faiss_t *index, const uint64_t *sizes,
                                                               const char *name, char *message, size_t capacity);

/* One search: `queries` F32 rows [queries, d]; `k` results each into distances[queries, k] (inner
 * products) and labels[queries, k] (−1 where fewer were found), FAISS's order. `nprobe` and `ef`
 * (0: leave FAISS's value) set the IVF probes and the HNSW efSearch — of the graph, or of an IVF's
 * HNSW quantiser — for this call only (FAISS's SearchParameters: the structure is not changed, so
 * searches may run concurrently). With `allowed` (a byte per vector) only vectors whose byte's bit
 * is set in `mask` are considered (an IDSelector inside FAISS's scan). UFORM_INVALID_ARGUMENT with
 * FAISS's message when it refuses; UFORM_OUT_OF_MEMORY. */
typedef struct uform__faiss_search_t {
    size_t queries;
    const float *vectors;
    size_t k;
    size_t nprobe, ef;
    const uint8_t *allowed;
    unsigned mask;
    size_t threads;
    float *distances;
    int64_t *labels;
} uform__faiss_search_t;
UFORM__FAISS_EXPORT uform_status_t uform__faiss_search(const uform__faiss_t *index, const uform__faiss_search_t *search,
                                                       char *message, size_t capacity);

/* Frees a structure. NULL is a no-op. */
UFORM__FAISS_EXPORT void uform__faiss_free(uform__faiss_t *index);

#ifdef __cplusplus
}
#endif

#endif
