/* The choice between exact and approximate search, and the knobs' refusals (ann_choice.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ann_choice.h"

char *ann_choice_path(const char *index_path) {
    size_t length = strlen(index_path);
    char *path = malloc(length + 7);
    if (!path) return NULL;
    if (length > 6 && strcmp(index_path + length - 6, ".index") == 0) sprintf(path, "%.*s.faiss", (int)(length - 6), index_path);
    else sprintf(path, "%s.faiss", index_path);
    return path;
}

int ann_choice_approximate(const char *ann_path, int exact) {
    /* Existence alone decides; whether the file belongs to the index is the library's to say when
     * it is opened (uform_index_ann_open), so a foreign one is refused, never silently skipped. */
    return !exact && access(ann_path, F_OK) == 0;
}

int ann_choice_check_path(unsigned knobs, int approximate, int exact, const char *ann_path, const char *index_path,
                          const char *prefix, char *why, size_t capacity) {
    if (!knobs || approximate) return 0;
    if (exact) snprintf(why, capacity, "%snprobe, %sef and %srerank tune approximate search, not %sexact", prefix, prefix, prefix, prefix);
    else
        snprintf(why, capacity, "%snprobe, %sef and %srerank need %s (uform index --ann --from %s)", prefix, prefix, prefix,
                 ann_path, index_path);
    return 1;
}

int ann_choice_check_kind(unsigned knobs, const uform_index_ann_description_t *description, const char *prefix, char *why,
                          size_t capacity) {
    /* FAISS would ignore these silently; a knob that cannot act is more likely a mistake about
     * which structure lies beside the index than a wish, so it is refused. */
    if ((knobs & ANN_KNOB_NPROBE) && description->lists == 0) {
        snprintf(why, capacity, "%snprobe chooses among an IVF's inverted lists; this index's structure (%s) has none", prefix,
                 description->recipe);
        return 1;
    }
    if ((knobs & ANN_KNOB_EF) && !description->graph) {
        snprintf(why, capacity, "%sef sizes an HNSW graph's search; this index's structure (%s) has no graph", prefix,
                 description->recipe);
        return 1;
    }
    return 0;
}

size_t ann_choice_rerank(unsigned knobs, size_t rerank) {
    return (knobs & ANN_KNOB_RERANK) && rerank == 0 ? UFORM_INDEX_ANN_RERANK_NONE : rerank;
}
