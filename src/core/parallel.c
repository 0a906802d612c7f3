#include "core/parallel.h"

void uform__parallel_for(const uform__parallel_t *parallel, size_t n, uform__prong_fn fn, void *context) {
    if (n == 0) return;
    if (!parallel || parallel->threads <= 1 || n == 1 || !parallel->for_n) {
        for (size_t prong = 0; prong < n; ++prong) fn(context, 0, prong);
        return;
    }
    parallel->for_n(parallel->self, n, fn, context);
}

size_t uform__parallel_threads(const uform__parallel_t *parallel) {
    return (parallel && parallel->threads > 1) ? parallel->threads : 1;
}

void uform__split_range(size_t count, size_t prongs, size_t prong, size_t *begin, size_t *end) {
    if (prongs == 0) prongs = 1;
    size_t base = count / prongs, extra = count % prongs;
    size_t start = prong * base + (prong < extra ? prong : extra);
    *begin = start;
    *end = start + base + (prong < extra ? 1 : 0);
}
