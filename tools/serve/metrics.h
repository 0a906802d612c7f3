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

/* How many routes and queues the counters hold. Their owners number and name them: the route
 * table (routes.h) its routes, the batcher (batcher.h) its queues; /metrics gets the names when it
 * renders (serve_metrics_labels_t). */
enum { SERVE_METRIC_ROUTES = 16, SERVE_METRIC_QUEUES = 8 };

enum { SERVE_STATUS_SLOTS = 16, SERVE_LATENCY_BUCKETS = 16, SERVE_BATCH_BUCKETS = 10 };

typedef struct serve_metrics_t {
    _Atomic uint64_t requests[SERVE_METRIC_ROUTES][SERVE_STATUS_SLOTS];
    _Atomic uint64_t latency[SERVE_METRIC_ROUTES][SERVE_LATENCY_BUCKETS + 1]; /* per bucket; the last is +Inf */
    _Atomic uint64_t latency_us[SERVE_METRIC_ROUTES];                          /* sum, microseconds */
    _Atomic uint64_t items[SERVE_METRIC_QUEUES];
    _Atomic uint64_t batches[SERVE_METRIC_QUEUES][SERVE_BATCH_BUCKETS + 1];
    _Atomic uint64_t batch_items[SERVE_METRIC_QUEUES];
    _Atomic uint64_t batch_us[SERVE_METRIC_QUEUES]; /* time on the executor, microseconds */
    _Atomic int64_t in_flight;                    /* requests received and not yet answered */
} serve_metrics_t;

/* Counts one answered request (any status) of route number `route` that took `seconds`. */
void serve_metrics_request(serve_metrics_t *metrics, size_t route, unsigned status, double seconds);
/* Counts one batch of `items` items of queue number `queue` that ran `seconds` on the executor. */
void serve_metrics_batch(serve_metrics_t *metrics, int queue, size_t items, double seconds);

/* The names /metrics gives the numbered routes and queues, and the items queued per queue now. */
typedef struct serve_metrics_labels_t {
    const char *const *routes;  /* [route_count] */
    size_t route_count;         /* at most SERVE_METRIC_ROUTES */
    const char *const *queues;  /* [queue_count] */
    size_t queue_count;         /* at most SERVE_METRIC_QUEUES */
    const size_t *depths;       /* [queue_count] */
} serve_metrics_labels_t;

/* Writes every metric. */
void serve_metrics_render(const serve_metrics_t *metrics, const serve_metrics_labels_t *labels, int ready, serve_buffer_t *out);

#endif
