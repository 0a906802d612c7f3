#include "core/progress.h"

void uform__progress_begin(uform__progress_t *progress, const uform_progress_t *options, size_t total) {
    progress->callback = options ? options->callback : NULL;
    progress->state = options ? options->state : NULL;
    progress->steps = (options && options->steps) ? options->steps : 10;
    progress->total = total;
    progress->reported = 0;
    progress->cancelled = 0;
}

/* The units that must be done before report number `index` (1-based): ceil(index * total / steps). */
static size_t threshold(const uform__progress_t *progress, size_t index) {
    if (index >= progress->steps) return progress->total;
    __uint128_t scaled = (__uint128_t)index * progress->total;
    return (size_t)((scaled + progress->steps - 1) / progress->steps);
}

uform_continuation_t uform__progress_advance(uform__progress_t *progress, size_t completed) {
    if (progress->cancelled) return UFORM_CANCEL;
    if (!progress->callback || progress->reported >= progress->steps) return UFORM_CONTINUE;
    if (completed > progress->total) completed = progress->total;
    if (completed < threshold(progress, progress->reported + 1)) return UFORM_CONTINUE;
    /* Skip every threshold this advance crossed: one report for all of them. */
    size_t next = progress->reported + 1;
    while (next < progress->steps && completed >= threshold(progress, next + 1)) ++next;
    if (completed == progress->total) next = progress->steps;
    progress->reported = next;
    if (progress->callback(completed, progress->total, progress->state) == UFORM_CANCEL) {
        progress->cancelled = 1;
        return UFORM_CANCEL;
    }
    return UFORM_CONTINUE;
}
