/*
 * Datasets (uform.h, "Data"; docs/data.md): manifests, folders and WebDataset shards, the samplers
 * that draw training batches from them, the cursor that resumes a sampler exactly, the loader that
 * decodes batches ahead of the trainer, recall, and the index pipeline. Private to libuform.
 *
 *   dataset.c        open, describe, free; the sample handed between the sampler and the loader
 *   manifest.c       JSON-lines manifests into lines
 *   folder.c         folder walks into lines (files, and samples grouped by key)
 *   shard_list.c     shard lists: brace ranges, "::" lists
 *   shard_read.c     one shard streamed through libarchive, members grouped into samples by key
 *   lines_sampler.c  the epoch sampler of manifests and folders (every line in memory)
 *   stream.c         the sampler of shards: per-epoch shard order, partitions, the shuffle buffer
 *   cursor.c         the cursor: the samplers' state as JSON text, and back
 *   read.c           uform_dataset_read: items in stored order
 *   loader.c         uform_loader_*: batches for a trainer, decoded on a thread of their own
 *   fit.c            uform_trainer_fit: the training loop over a loader (fit_parts.c: its saves,
 *                    evaluations and callback; fit.h)
 *   recall.c         uform_recall, uform_evaluate
 *   index_build.c    uform_index_build (with index_reader.c, its reader thread)
 */
#ifndef UFORM_DATA_DATA_H
#define UFORM_DATA_DATA_H

#include <pthread.h>
#include <stdint.h>

#include "uform/uform.h"
#include "core/fnv.h"
#include "core/random.h"

#define UFORM__DATA_DEFAULT_BUFFER 2000
#define UFORM__DATA_DEFAULT_MAX_BYTES ((size_t)1 << 30)

/* ---- errors ---- */

/* Fills `error` (may be NULL) with a failure's place and reason; zero-fills the text fields. */
void uform__data_error_set(uform_data_error_t *error, uform_status_t status, size_t line, size_t shard,
                           const char *source, const char *key, const char *format, ...)
    __attribute__((format(printf, 7, 8)));
/* A cleared error: status OK, no place. */
void uform__data_error_clear(uform_data_error_t *error);
/* "source:line", "shard 'x.tar', sample 'k'" ... : the place of an error in words, for messages. */
void uform__data_error_place(const uform_data_error_t *error, char *buffer, size_t capacity);

/* The start of the data layer's FNV-1a hashes (core/fnv.h) in fingerprints and cursors: not FNV's
 * offset basis (it lacks that number's last digit), and kept as it is, since every cursor written
 * so far carries hashes that start from it. */
#define UFORM__DATA_HASH_SEED 1469598103934665603ull

/* ---- lines: manifests and folders, held whole ---- */

typedef enum uform__line_kind_t {
    UFORM__LINE_PAIR = 0,   /* a text and one medium: a training pair (an item: the medium) */
    UFORM__LINE_CHOICE = 1, /* a text with its legal next bytes and target (not an item) */
    UFORM__LINE_FILE = 2,   /* a file to index ({"path"} or a folder's file); its modality may be unknown */
    UFORM__LINE_TEXT = 3,   /* a text to index ({"text", "id"}) */
    UFORM__LINE_BAD = 4     /* malformed (kept with skip_bad, so a read lists it in place) */
} uform__line_kind_t;

typedef struct uform__line_t {
    uform__line_kind_t kind;
    int modality;            /* PAIR: the medium's; FILE: the manifest's "modality", or -1 to probe */
    char *text;              /* NUL-terminated; PAIR, CHOICE, TEXT */
    size_t text_length;
    uint64_t text_hash;
    char *path;              /* PAIR and FILE: the file (joined with the manifest's folder) */
    char *choices;           /* CHOICE */
    size_t choices_length;
    unsigned char target;
    char *key;               /* how an index names the item */
    size_t number;           /* MANIFEST: the 1-based line; 0 for folders */
    const char *source;      /* the manifest or folder it came from (owned by the lines) */
    char *message;           /* BAD: why */
} uform__line_t;

typedef struct uform__lines_t {
    uform__line_t *items;
    size_t count, capacity;
    char **sources;          /* the manifests' or folders' paths */
    size_t source_count;
} uform__lines_t;

void uform__lines_free(uform__lines_t *lines);
/* Appends a zeroed line; NULL without memory. */
uform__line_t *uform__lines_add(uform__lines_t *lines);

/* Reads a manifest into `lines`. A malformed line becomes a BAD line (skip_bad) or fails the call
 * with UFORM_FORMAT and `error` filled. */
uform_status_t uform__manifest_read(const char *path, int skip_bad, uform__lines_t *lines, uform_data_error_t *error,
                                    uform_outcome_t *outcome, const char *function);

/* Walks a folder (or takes a file) into FILE lines, names sorted byte-wise at each level. */
uform_status_t uform__folder_walk(const char *path, int hidden, uform__lines_t *lines, uform_outcome_t *outcome,
                                  const char *function);
/* Groups a folder's FILE lines into training samples by key (photos/17.jpg + photos/17.txt): PAIR
 * lines in `samples` (texts read now); a key without text or with two media is a BAD line (skip_bad)
 * or fails. */
uform_status_t uform__folder_samples(const uform__lines_t *files, int skip_bad, size_t max_bytes, uform__lines_t *samples,
                                     uform_data_error_t *error, uform_outcome_t *outcome, const char *function);

/* The medium's modality of a member or file name by its extension ("a/1.JPG" image), or -1. */
int uform__data_modality_of_name(const char *name, size_t length);

/* ---- shards ---- */

/* Expands an OpenCLIP shard list ("a/{000..009}.tar::b.tar.gz") into paths, appended to *paths. */
uform_status_t uform__shard_list_expand(const char *spec, char ***paths, size_t *count, uform_outcome_t *outcome,
                                        const char *function);

/* A sample read from a shard: its members grouped by key. */
typedef struct uform__shard_sample_t {
    size_t shard, ordinal;      /* the shard's index in the list; the sample's position in the shard */
    char *key;                  /* owned */
    char *member;               /* the medium member's name (or the text member's), owned */
    int modality;               /* the medium's uform_modality_t, or -1 without one */
    unsigned char *bytes;       /* the medium (owned), NULL when none or not read */
    size_t size;
    char *text;                 /* the caption, NUL-terminated (owned), or NULL */
    size_t text_length;
    uint64_t text_hash;
    uform_status_t status;      /* UFORM_OK, or why the sample is bad (message) */
    char *message;              /* owned, or NULL */
} uform__shard_sample_t;

void uform__shard_sample_free(uform__shard_sample_t *sample);

typedef struct uform__shard_reader_t {
    const struct uform__archive_t *api; /* libarchive's functions, loaded on first use (archive_api.h) */
    void *archive;              /* struct archive * */
    void *entry;                /* struct archive_entry *: our own, checked (see shard_read.c) */
    int descriptor;             /* the shard's file, read through our own callbacks */
    unsigned char *block;       /* the read callback's buffer */
    const char *path;
    size_t shard;
    size_t next_ordinal;        /* of the next sample */
    size_t max_bytes;
    int pending;                /* a header is read whose member starts the next sample */
    char *pending_name;
    int ended;                  /* end of the archive, or broken */
    uform_status_t broken;      /* UFORM_OK, or why the shard could not be read on (message) */
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    uint64_t bytes_read;
    double seconds;             /* spent reading */
} uform__shard_reader_t;

/* Opens a shard for streaming; answers UFORM_IO (naming it) when it cannot be opened. */
uform_status_t uform__shard_open(uform__shard_reader_t *reader, const char *path, size_t shard, size_t max_bytes,
                                 uform_outcome_t *outcome, const char *function);
/*
 * Reads the next sample (with its members' bytes when `with_bytes`, else only its key and member
 * names). Answers 1 with a sample (its own status says whether it is usable), 0 at the end, or -1
 * when the shard broke (truncated, corrupt: reader->broken and reader->message; the samples before
 * were whole). An allocation failure is -1 with broken UFORM_OUT_OF_MEMORY.
 */
int uform__shard_next(uform__shard_reader_t *reader, int with_bytes, uform__shard_sample_t *sample);
void uform__shard_close(uform__shard_reader_t *reader);

/* ---- samplers ---- */

/* The sampler of lines (manifests, folders): a reshuffled order per epoch. */
typedef struct uform__lines_sampler_t {
    const uform__lines_t *lines;
    uint64_t seed, epoch;
    size_t *order;            /* [count] this epoch's order */
    size_t position;          /* the next unused slot of `order` */
    unsigned char *bad;       /* [count] lines left out (skip_bad) */
    unsigned char *usable;    /* [count] lines that are samples (PAIR, CHOICE) */
    size_t usable_count;
    size_t *swaps;            /* this epoch's swaps of `order` (pairs), so a cursor restores it */
    size_t swap_count, swap_capacity;
    int sequential;
} uform__lines_sampler_t;

uform_status_t uform__lines_sampler_init(uform__lines_sampler_t *sampler, const uform__lines_t *lines, uint64_t seed,
                                         int sequential);
void uform__lines_sampler_free(uform__lines_sampler_t *sampler);
/* Sets `order` to epoch `sampler->epoch`'s shuffle (the identity when sequential), at position 0
 * with no swaps: the one definition of an epoch's order, which a restored cursor rebuilds too. */
void uform__lines_sampler_shuffle(uform__lines_sampler_t *sampler);
/* Draws up to `batch` usable line indices into `picked` (avoiding `taken[0..taken_count)` and text
 * twins while it can; *twins set when it could not). Sequential: the next ones in order, fewer at the
 * end. Answers how many; -1 without memory. */
long uform__lines_sampler_draw(uform__lines_sampler_t *sampler, size_t batch, const size_t *taken, size_t taken_count,
                               size_t *picked, int *twins);

/* A bad sample found while reading (skip_bad): the loader lists it. */
typedef void (*uform__data_bad_fn)(void *context, const uform_data_error_t *error);

/* One partition of a shard stream. */
typedef struct uform__stream_t {
    const struct uform_dataset_s *dataset;
    size_t partition, partitions;
    uform__data_bad_fn on_bad;
    void *bad_context;
    size_t *sequence;         /* this epoch's shards for this partition (indices into the list) */
    size_t sequence_count;
    int by_sample;            /* fewer shards than partitions: every partition reads every shard */
    uint64_t epoch;
    size_t at;                /* position in this epoch's shard sequence of the shard being read */
    size_t counter;           /* samples seen this epoch (fewer shards than partitions: the filter) */
    uint64_t rng;             /* the shuffle buffer's random state */
    uform__shard_sample_t *buffer;
    size_t buffer_count, buffer_capacity;
    uform__shard_reader_t reader;
    int reading;              /* the reader is open */
    int exhausted;            /* this epoch's shards are all read (the buffer drains) */
    size_t epoch_samples;     /* samples this partition took into the buffer this epoch */
    uint64_t bytes_read;      /* members read, over every shard so far */
    double read_seconds;
} uform__stream_t;

/* Makes partition `partition` of `partitions` of the dataset's shard stream (seeded from the dataset). */
uform_status_t uform__stream_init(uform__stream_t *stream, const struct uform_dataset_s *dataset, size_t partition,
                                  size_t partitions, uform__data_bad_fn on_bad, void *bad_context);
void uform__stream_free(uform__stream_t *stream);
/*
 * Draws the next sample of the partition into `sample` (moved out of the buffer: free it), avoiding
 * the texts of `picked[0..count)` while the buffer offers another (*twins set when it cannot).
 * Answers 1, 0 when a sequential pass has ended, or -1 with `error` and the outcome filled (a bad
 * sample or shard without skip_bad, a partition without samples, memory).
 */
int uform__stream_draw(uform__stream_t *stream, uform__shard_sample_t *const *picked, size_t count,
                       uform__shard_sample_t *sample, int *twins, uform_data_error_t *error, uform_outcome_t *outcome,
                       const char *function);

/* Where a partition's stream stands: what a cursor records of it besides its buffer. */
typedef struct uform__stream_state_t {
    uint64_t epoch, rng;
    size_t at, counter, epoch_samples;
    size_t ordinal;           /* the next sample of the shard being read (when reading) */
    int reading, exhausted;
} uform__stream_state_t;

void uform__stream_state(const uform__stream_t *stream, uform__stream_state_t *state);
/* Puts a fresh stream where `state` says, its buffer holding the samples `entries` name (pairs of
 * shard index and ordinal, in slot order), read again from their shards. */
uform_status_t uform__stream_restore(uform__stream_t *stream, const uform__stream_state_t *state, const size_t *entries,
                                     size_t entry_count, uform_outcome_t *outcome, const char *function);

/* ---- the cursor (cursor.c) ---- */

/* A cursor's top-level facts: what it must agree with. */
typedef struct uform__cursor_head_t {
    uform_dataset_source_t source;
    uint64_t fingerprint, seed;
    size_t batch, partitions, skipped, batches;
} uform__cursor_head_t;

/* Writes a cursor: the head, then the line sampler's state (lines) or every stream's (streams,
 * count of them). Answers malloc'ed text, or NULL without memory. */
char *uform__cursor_write(const uform__cursor_head_t *head, const uform__lines_sampler_t *lines,
                          const uform__stream_t *const *streams, size_t count);
/* Whether `text` (NUL-terminated, may be NULL) is a cursor this library wrote, of any version: the
 * one place that knows how a cursor begins, so no caller sniffs the format (uform_trainer_fit). */
int uform__cursor_is(const char *text);
/* Reads a cursor into `head` and restores the line sampler or the streams whose partitions it
 * holds (streams[i] of partition streams[i]->partition). UFORM_INVALID_ARGUMENT for malformed text,
 * UFORM_CONFIG_MISMATCH when it does not match `expected`. */
uform_status_t uform__cursor_read(const char *text, const uform__cursor_head_t *expected, uform__cursor_head_t *head,
                                  uform__lines_sampler_t *lines, uform__stream_t *const *streams, size_t count,
                                  uform_outcome_t *outcome, const char *function);

/* ---- the dataset ---- */

struct uform_dataset_s {
    uform_dataset_options_t options;
    char *path_copy;
    uform__lines_t lines;       /* MANIFEST and FOLDER: items in stored order */
    uform__lines_t samples;     /* FOLDER: the training samples by key; MANIFEST: unused (lines are samples) */
    char **shards;              /* SHARDS: the expanded list */
    size_t shard_count;
    uint64_t fingerprint;
    size_t open_bad;            /* lines found bad at open */
    int busy;                   /* a loader or a build reads it */
    /* uform_dataset_read's position and buffers */
    size_t read_next;           /* the next item's ordinal */
    size_t read_line;           /* lines: the next line */
    uform__shard_reader_t read_reader;
    int read_reading;
    size_t read_shard;
    uform__shard_sample_t read_sample;
    unsigned char *read_bytes;  /* the current item's bytes (lines) */
    char *read_key;
};

/* Puts uform_dataset_read back at the first item. */
void uform__dataset_rewind(struct uform_dataset_s *dataset);

/* The lines a training sampler draws from: a folder's samples, else the lines. */
const uform__lines_t *uform__dataset_training_lines(const struct uform_dataset_s *dataset);

/* The shard order of `epoch` (a permutation of 0..count-1; identity when sequential). */
void uform__stream_shard_order(const struct uform_dataset_s *dataset, uint64_t epoch, size_t *order);

/* Opens a file and reads it whole into a malloc'ed buffer (at most max_bytes); on failure fills
 * `error` (IO or FORMAT) and answers NULL. */
unsigned char *uform__data_read_file(const char *path, size_t max_bytes, size_t *size, uform_status_t *status,
                                     char *message, size_t capacity);

/* The "caption" (else "text") string of a JSON object's bytes (a shard's KEY.json, a folder's
 * KEY.json), malloc'ed; NULL when there is none, with *memory set when that is for lack of memory. */
char *uform__data_json_caption(const unsigned char *bytes, size_t size, int *memory);

#endif
