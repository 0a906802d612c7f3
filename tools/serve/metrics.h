/*
 * What /metrics reports, in Prometheus's text format (version 0.0.4): requests by route and
 * status, request latency by route, items and batch sizes by queue, queue depth and requests in
 * flight. Every counter is a relaxed atomic that the HTTP threads and the batcher bump without a
 * lock and without allocating; rendering reads them while they move (each value is exact, the set
 * is not a snapshot, as with every Prometheus client).
 */
#ifndef UFORM_TOOLS_SERVE_METRICS_H
#define UFORM_TOOLS_SERVE_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "buffer.h"

/* Routes as /metrics labels them. */
typedef enum serve_route_t {
    SERVE_ROUTE_EMBEDDINGS = 0,
    SERVE_ROUTE_SEARCH,
    SERVE_ROUTE_CHOOSE,
    SERVE_ROUTE_HEALTH,
    SERVE_ROUTE_MODELS,
    SERVE_ROUTE_METRICS,
    SERVE_ROUTE_PAGE,
    SERVE_ROUTE_MEDIA,
    SERVE_ROUTE_OTHER,
    SERVE_ROUTE_COUNT
} serve_route_t;

/* The batcher's queues: one per modality (numbered as uform_modality_t) and one for text_choose. */
enum { SERVE_QUEUE_CHOOSE = 4, SERVE_QUEUE_COUNT = 5 };

enum { SERVE_STATUS_SLOTS = 16, SERVE_LATENCY_BUCKETS = 16, SERVE_BATCH_BUCKETS = 10 };

typedef struct serve_metrics_t {
    _Atomic uint64_t requests[SERVE_ROUTE_COUNT][SERVE_STATUS_SLOTS];
    _Atomic uint64_t latency[SERVE_ROUTE_COUNT][SERVE_LATENCY_BUCKETS + 1]; /* per bucket; the last is +Inf */
    _Atomic uint64_t latency_us[SERVE_ROUTE_COUNT];                          /* sum, microseconds */
    _Atomic uint64_t items[SERVE_QUEUE_COUNT];
    _Atomic uint64_t batches[SERVE_QUEUE_COUNT][SERVE_BATCH_BUCKETS + 1];
    _Atomic uint64_t batch_items[SERVE_QUEUE_COUNT];
    _Atomic uint64_t batch_us[SERVE_QUEUE_COUNT]; /* time on the executor, microseconds */
    _Atomic int64_t in_flight;                    /* requests received and not yet answered */
} serve_metrics_t;

const char *serve_route_name(serve_route_t route);
const char *serve_queue_name(int queue);

/* Counts one answered request (any status) that took `seconds`. */
void serve_metrics_request(serve_metrics_t *metrics, serve_route_t route, unsigned status, double seconds);
/* Counts one batch of `items` items of `queue` that ran `seconds` on the executor. */
void serve_metrics_batch(serve_metrics_t *metrics, int queue, size_t items, double seconds);

/* Writes every metric; `depths` holds the items queued per queue now. */
void serve_metrics_render(const serve_metrics_t *metrics, const size_t depths[SERVE_QUEUE_COUNT], int ready,
                          serve_buffer_t *out);

#endif
