/*
 * One WebDataset shard read as a stream of samples (shard_read.c): a source below the dataset,
 * used by the dataset's own read (read.c) and the shard sampler (stream.c). Private to libuform.
 */
#ifndef UFORM_DATA_SHARD_H
#define UFORM_DATA_SHARD_H

#include "data/source.h"

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

#endif
