/*
 * `uform serve --captions MANIFEST.jsonl`: a caption for indexed files, read from a manifest in the
 * training format through the library's dataset reader (docs/data.md: the pairs {"text": caption,
 * "image" | "video" | "audio": a path relative to the manifest's folder}), such as the held-out
 * manifest of `make demo`. Files are matched to the index's items by their resolved paths
 * (realpath), so the index may name them relative to another folder. Search hits then carry
 * "caption" and the page shows it.
 */
#ifndef UFORM_TOOLS_SERVE_CAPTIONS_H
#define UFORM_TOOLS_SERVE_CAPTIONS_H

#include <stddef.h>

#include "uform/uform.h"

typedef struct serve_captions_t {
    const char **by_item;  /* [count]: the caption of item i, or NULL */
    size_t count;          /* the index's items */
    size_t matched;        /* items with a caption */
    size_t left_out;       /* manifest lines the library left out as malformed (no text, not JSON) */
    char *texts;           /* the captions, end to end (by_item points into it) */
} serve_captions_t;

/* Reads `manifest` and matches its files to the index's items. Answers 0, or -1 with the reason
 * (an unreadable manifest, memory) in `error`. Malformed lines (no text, not JSON) are left out and
 * counted in `left_out`; texts without a medium and files that do not exist name no caption. */
int serve_captions_load(const char *manifest, uform_index_t index, serve_captions_t *captions, char *error, size_t capacity);
void serve_captions_free(serve_captions_t *captions);

#endif
