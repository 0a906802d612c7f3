/*
 * Approximate structures over an index (uform.h, "Approximate search"): what ann_build.c writes,
 * ann_open.c reads and ann_search.c searches. Private to libuform.
 *
 * A .faiss file is FAISS's own bytes (write_index) followed by a 256-byte pairing record,
 * little-endian:
 *
 *   offset  bytes  field
 *        0      8  "UFORMANN"
 *        8      4  record version (1)
 *       12      4  record bytes (256)
 *       16      8  FAISS's bytes: the file's size − 256
 *       24     16  hash128 of FAISS's bytes
 *       40     32  the index's checkpoint fingerprint, 32 hex digits
 *       72      8  the index's count
 *       80      8  its dims
 *       88      4  its scalar (uform_scalar_kind_t)
 *       92      4  0
 *       96     16  the index's row hash (uform__ann_identity_of)
 *      112      8  training rows
 *      120    128  the recipe, NUL-padded (at most 127 bytes)
 *      248      8  "UFORMANN"
 *
 * FAISS's reader stops at the end of its own bytes, so Python's faiss.read_index opens the file
 * as it is; libuform checks the record and the hash before FAISS parses anything.
 *
 * Record version 2: the structure's inverted lists are in a file of their own beside the .faiss
 * (FAISS's OnDiskInvertedLists, ann_ondisk.c), and a 256-byte lists block stands between FAISS's
 * bytes and the record (which then says FAISS's bytes are the file's size − 512):
 *
 *   offset  bytes  field
 *        0      8  "UFORMIVF"
 *        8      8  the lists file's size
 *       16     16  hash128 of the lists file's bytes
 *       32    216  the lists file's name, NUL-padded (at most 215 bytes, no '/'): it lies in the
 *                  .faiss's folder, so the folder can be moved
 *      248      8  "UFORMIVF"
 *
 * A libuform that reads only version 1 refuses such a file (UFORM_UNSUPPORTED), rather than let
 * FAISS map the lists file by the name in its bytes, relative to the working folder.
 */
#ifndef UFORM_INDEX_ANN_H
#define UFORM_INDEX_ANN_H

#include "index/faiss_load.h"
#include "index/index.h"

#define UFORM__ANN_RECORD_BYTES 256
#define UFORM__ANN_RECORD_VERSION 2 /* the newest this libuform reads and writes (1: lists inside) */
#define UFORM__ANN_RECIPE_CAPACITY 128
#define UFORM__ANN_LISTS_BYTES 256 /* version 2's lists block */
#define UFORM__ANN_LISTS_NAME_CAPACITY 216

/* What pairs a structure with its index. */
typedef struct uform__ann_identity_t {
    char fingerprint[UFORM_FINGERPRINT_CAPACITY];
    uint64_t count, dims;
    uint32_t scalar;
    unsigned char rows_hash[16];
} uform__ann_identity_t;

typedef struct uform__ann_record_t {
    uint32_t version;
    uint64_t faiss_bytes;
    unsigned char faiss_hash[16];
    uform__ann_identity_t identity;
    uint64_t train_rows;
    char recipe[UFORM__ANN_RECIPE_CAPACITY];
    /* Version 2: the lists file beside the .faiss ("" for version 1, lists inside FAISS's bytes). */
    char lists_name[UFORM__ANN_LISTS_NAME_CAPACITY];
    uint64_t lists_bytes;
    unsigned char lists_hash[16];
} uform__ann_record_t;

struct uform_index_ann_s {
    uform_index_t index;
    const uform__faiss_api_t *api;
    uform__faiss_t *faiss;
    uform__faiss_facts_t facts;
    uint64_t train_rows;
    char recipe[UFORM__ANN_RECIPE_CAPACITY];
};

/* The identity of an open index: its fingerprint, count, dims, scalar, and hash128 over the
 * modality bytes (one field) and each modality's rows in modality order (one field each). Streams
 * the rows once. */
void uform__ann_identity_of(uform_index_t index, uform__ann_identity_t *identity);

/* The record's 256 bytes: version 2 when record->lists_name is set, else 1. */
void uform__ann_record_encode(const uform__ann_record_t *record, unsigned char bytes[UFORM__ANN_RECORD_BYTES]);

/* Version 2's lists block (its 256 bytes) from record->lists_*, and back: UFORM_FORMAT (no magic at
 * either end, an unterminated or empty name, a name with '/' or that is "." or ".."), `why` says which. */
void uform__ann_lists_encode(const uform__ann_record_t *record, unsigned char bytes[UFORM__ANN_LISTS_BYTES]);
uform_status_t uform__ann_lists_decode(const unsigned char bytes[UFORM__ANN_LISTS_BYTES], uform__ann_record_t *record,
                                       char *why, size_t capacity);

/* Reads a record: UFORM_OK; UFORM_FORMAT (no magic at either end, a wrong size, an unterminated
 * recipe or fingerprint); UFORM_UNSUPPORTED (a newer version). `why` says which. */
uform_status_t uform__ann_record_decode(const unsigned char bytes[UFORM__ANN_RECORD_BYTES], uform__ann_record_t *record,
                                        char *why, size_t capacity);

/* The first difference between two identities, as "the index's X is A, the structure's is B", into
 * `why`; answers 0 when they are equal. */
int uform__ann_identity_differs(const uform__ann_identity_t *index, const uform__ann_identity_t *structure, char *why,
                                size_t capacity);

/* The recipe uform_index_ann_build uses when none is named, for `count` items of `dims` (ann_build.c
 * says the rule; tests/index/test_index_ann_recipe.c checks it around the switch at 1,000,000). */
void uform__ann_default_recipe(size_t count, size_t dims, char recipe[UFORM__ANN_RECIPE_CAPACITY]);

/* Candidates that uform_index_ann_search rescores for a request's `rerank` and `top` at `nprobe`
 * (uform.h): R > 0 as asked, UFORM_INDEX_ANN_RERANK_NONE none, 0 the structure's default —
 * ann_search.c says the rule and the measurements behind it. Answers 0 for "no rescoring";
 * otherwise at least `top`. */
size_t uform__ann_rerank(const uform__faiss_facts_t *facts, size_t rerank, size_t top, size_t nprobe);

/* Item `item`'s row widened to F32 [dims] (F16, BF16 exactly, I8 as x/127). Not for B1. */
void uform__ann_widen_row(uform_index_t index, size_t item, float *out);
/* The same for a row of `scalar` held anywhere (a builder's, ann_members.c). */
void uform__ann_widen(uform_scalar_kind_t scalar, size_t dims, const unsigned char *row, float *out);

/* The training sample's items: `wanted` of items 0 … count − 1 by selection sampling (Knuth's
 * Algorithm S) over a fixed splitmix64 stream, in ascending order. The choice of item i depends on
 * count, wanted and the draws before it only — never on the rows — so members of a mesh that each
 * run the whole walk and keep the items of their own block take together exactly the items one
 * process takes (ann_members.c). */
typedef struct uform__ann_sampler_t {
    uint64_t state;
    size_t count, wanted, item, taken;
} uform__ann_sampler_t;
void uform__ann_sampler_start(uform__ann_sampler_t *sampler, size_t count, size_t wanted);
/* The next item taken, or SIZE_MAX once `wanted` are taken. */
size_t uform__ann_sampler_next(uform__ann_sampler_t *sampler);

/* The structure for `recipe` (NULL or "": the default rule for count × dims) made empty through
 * the module, with its training-sample size: 0 when it needs no training, else options->train_rows
 * (0: min(count, 256 per centroid), or PLAIN_SAMPLE rows for recipes without centroids) capped at
 * count. The checks of uform_index_ann_build (recipe length, FAISS's refusal, OPQ's minimum) fail
 * `outcome` on behalf of `function`; on failure `*faiss` is NULL. `recipe_out` receives the recipe. */
uform_status_t uform__ann_prepare(const uform__faiss_api_t *api, size_t count, size_t dims,
                                  const uform_index_ann_options_t *options, char recipe_out[UFORM__ANN_RECIPE_CAPACITY],
                                  uform__faiss_t **faiss, size_t *train_rows, uform_outcome_t *outcome,
                                  const char *function);

#endif
