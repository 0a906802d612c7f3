/*
 * `uform serve --captions MANIFEST.jsonl`: a caption for indexed files, read from a manifest in the
 * training format (one JSON object a line, {"text": caption, "image" | "video" | "audio" | "path":
 * a path relative to the manifest's folder}), such as the held-out manifest of `make demo`.
 * Files are matched to the index's items by their resolved paths (realpath), so the index may
 * name them relative to another folder. Search hits then carry "caption" and the page shows it.
 */
#ifndef UFORM_TOOLS_SERVE_CAPTIONS_H
#define UFORM_TOOLS_SERVE_CAPTIONS_H

#include <stddef.h>

#include "uform/uform.h"

typedef struct serve_captions_t {
    const char **by_item;  /* [count]: the caption of item i, or NULL */
    size_t count;          /* the index's items */
    size_t matched;        /* items with a caption */
    char *texts;           /* the captions, end to end (by_item points into it) */
} serve_captions_t;

/* Reads `manifest` and matches its files to the index's items. Answers 0, or -1 with the reason
 * (an unreadable manifest, a line that is not JSON) in `error`. Lines without a text or a path,
 * and files that do not exist, are skipped. */
int serve_captions_load(const char *manifest, uform_index_t index, serve_captions_t *captions, char *error, size_t capacity);
void serve_captions_free(serve_captions_t *captions);

#endif
