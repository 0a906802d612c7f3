/*
 * The bottom of the data layer: what every source of items shares, and the one interface through
 * which the dataset (dataset.c) opens them. Private to libuform.
 *
 * The dependencies run one way only:
 *
 *   source.c                         errors, lines, names and paths, whole files, JSON captions
 *     ↑
 *   manifest.c  folder.c  shard_list.c  shard_read.c (shard.h)     the sources: each one includes
 *     ↑                                                            source.h and no other source
 *   dataset.c                        open, describe, free: calls the sources through their tables
 *     ↑
 *   read.c  lines_sampler.c  stream.c  cursor.c  loader.c  recall.c  index_build.c  index_reader.c
 *
 * This header includes no source's header and source.c calls no source, so a source can be read,
 * tested or replaced without the layers above it.
 */
#ifndef UFORM_DATA_SOURCE_H
#define UFORM_DATA_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"
#include "core/fnv.h"

#define UFORM__DATA_DEFAULT_BUFFER 2000
#define UFORM__DATA_DEFAULT_MAX_BYTES ((size_t)1 << 30)

/* The start of the data layer's FNV-1a hashes (core/fnv.h) in fingerprints and cursors: not FNV's
 * offset basis (it lacks that number's last digit), and kept as it is, since every cursor written
 * so far carries hashes that start from it. */
#define UFORM__DATA_HASH_SEED 1469598103934665603ull

/* ---- errors ---- */

/* Fills `error` (may be NULL) with a failure's place and reason; zero-fills the text fields. */
void uform__data_error_set(uform_data_error_t *error, uform_status_t status, size_t line, size_t shard,
                           const char *source, const char *key, const char *format, ...)
    __attribute__((format(printf, 7, 8)));
/* A cleared error: status OK, no place. */
void uform__data_error_clear(uform_data_error_t *error);
/* "source:line", "shard 'x.tar', sample 'k'" ... : the place of an error in words, for messages. */
void uform__data_error_place(const uform_data_error_t *error, char *buffer, size_t capacity);

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
/* Appends a zeroed line (modality -1); NULL without memory. */
uform__line_t *uform__lines_add(uform__lines_t *lines);
/* Frees what a line owns and zeroes it, keeping its number and source (a line about to become BAD). */
void uform__line_clear(uform__line_t *line);
/* Appends a copy of `path` to the lines' sources and answers it (the lines own it); NULL without memory. */
const char *uform__lines_add_source(uform__lines_t *lines, const char *path);

/* ---- names, paths and files ---- */

/* The medium's modality of a member or file name by its extension ("a/1.JPG" image), or -1. */
int uform__data_modality_of_name(const char *name, size_t length);

/* The key of a shard member's or a folder file's name, as WebDataset groups them into samples: its
 * length up to the first dot of the file name ("a/000012.jpg" → "a/000012"), the whole without one. */
size_t uform__data_key_length(const char *name);
/* Whether the name's last extension after its key is `extension`, in any case ("17.TXT", "txt"). */
int uform__data_has_extension(const char *name, size_t key, const char *extension);

/* `name` under the folder `folder[0..folder_length)` (a separator added unless the folder ends in
 * one), malloc'ed; an absolute `name`, or an empty folder, gives `name` itself. NULL without memory. */
char *uform__data_path_join(const char *folder, size_t folder_length, const char *name);

/* Opens a file and reads it whole into a malloc'ed buffer (at most max_bytes); on failure sets
 * *status (UFORM_IO, UFORM_FORMAT for a file over max_bytes, UFORM_OUT_OF_MEMORY), writes why into
 * `message` and answers NULL. */
unsigned char *uform__data_read_file(const char *path, size_t max_bytes, size_t *size, uform_status_t *status,
                                     char *message, size_t capacity);

/* The "caption" (else "text") string of a JSON object's bytes (a shard's KEY.json, a folder's
 * KEY.json), malloc'ed; NULL when there is none, with *memory set when that is for lack of memory. */
char *uform__data_json_caption(const unsigned char *bytes, size_t size, int *memory);

/* ---- the sources, as the dataset opens them ---- */

/* What a dataset's sources hold once opened: lines (manifests, folders) or shard paths. */
typedef struct uform__data_items_t {
    uform__lines_t lines;    /* MANIFEST and FOLDER: items in stored order */
    uform__lines_t samples;  /* FOLDER: the training samples by key; MANIFEST: unused (lines are samples) */
    char **shards;           /* SHARDS: the expanded list */
    size_t shard_count;
} uform__data_items_t;

/* One kind of source (uform_dataset_source_t), as a table: the dataset calls `add` for each of its
 * paths in order, then `finish` once; the sources call nothing above this header. */
typedef struct uform__data_source_t {
    /* Adds what `path` holds to `items`. `options` are the dataset's, defaults filled in. A failure
     * answers its status with the outcome (and `error`, where it has a place) filled. */
    uform_status_t (*add)(const char *path, const uform_dataset_options_t *options, uform__data_items_t *items,
                          uform_data_error_t *error, uform_outcome_t *outcome, const char *function);
    /* What the kind derives from all its paths together (a folder's samples by key), or NULL. */
    uform_status_t (*finish)(const uform_dataset_options_t *options, uform__data_items_t *items,
                             uform_data_error_t *error, uform_outcome_t *outcome, const char *function);
} uform__data_source_t;

extern const uform__data_source_t uform__data_source_manifest; /* manifest.c */
extern const uform__data_source_t uform__data_source_folder;   /* folder.c */
extern const uform__data_source_t uform__data_source_shards;   /* shard_list.c */

#endif
