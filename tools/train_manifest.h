/*
 * The training manifest of `uform train` (JSON lines; tools/uform_train.c documents the format)
 * and its batch sampler: lines in a reshuffled order per epoch, a batch never holding a line twice
 * and avoiding two lines with the same text.
 */
#ifndef UFORM_TOOLS_TRAIN_MANIFEST_H
#define UFORM_TOOLS_TRAIN_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

typedef struct manifest_line_t {
    char *text;
    size_t text_length;
    int modality;          /* 1 image, 2 video, 3 audio (uform_modality_t) for a pair; 0 for a choice example */
    char *path;            /* a pair's media file, joined with the manifest's folder */
    char *choices;         /* a choice example's legal next bytes */
    size_t choices_length;
    unsigned char target;
    size_t number;         /* 1-based line number in the file */
    uint64_t text_hash;
} manifest_line_t;

typedef struct manifest_t {
    char *path;
    manifest_line_t *lines;
    size_t count;
} manifest_t;

/* Reads a manifest. On failure answers -1 with a one-line reason in `error` naming the line and
 * the field ("train.jsonl:7: 'image' must be a string (a file path)"). */
int manifest_read(const char *path, manifest_t *manifest, char *error, size_t capacity);
void manifest_free(manifest_t *manifest);

typedef struct sampler_t {
    const manifest_t *manifest;
    uint64_t seed;
    uint64_t epoch;
    size_t *order;           /* [count] this epoch's order */
    size_t position;         /* next unused slot of `order` */
    unsigned char *bad;      /* [count] lines dropped (--skip-bad) */
    uint64_t batches;        /* batches drawn so far */
    int twins_unavoidable;   /* set once a batch had to hold two lines with the same text */
} sampler_t;

/* 0, or -1 without memory. */
int sampler_init(sampler_t *sampler, const manifest_t *manifest, uint64_t seed);
void sampler_free(sampler_t *sampler);

/* Draws the next batch of up to `batch` line indices into `lines` and answers how many (all the
 * usable lines, in manifest order, when `batch` is at least their number). */
size_t sampler_next(sampler_t *sampler, size_t batch, size_t *lines);

#endif
