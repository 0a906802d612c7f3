/* Counters and their Prometheus rendering (metrics.h). */
#include "metrics.h"

static const unsigned statuses[SERVE_STATUS_SLOTS - 1] = {200, 206, 400, 401, 403, 404, 405, 413, 416, 422, 429, 431, 500, 503, 504};
static const double latency_bounds[SERVE_LATENCY_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                             0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,     10};
static const double batch_bounds[SERVE_BATCH_BUCKETS] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};

void serve_metrics_request(serve_metrics_t *metrics, size_t route, unsigned status, double seconds) {
    if (!metrics || route >= SERVE_METRIC_ROUTES) return;
    size_t slot = SERVE_STATUS_SLOTS - 1; /* "other" */
    for (size_t i = 0; i < SERVE_STATUS_SLOTS - 1; ++i)
        if (statuses[i] == status) slot = i;
    atomic_fetch_add_explicit(&metrics->requests[route][slot], 1, memory_order_relaxed);
    size_t bucket = 0;
    while (bucket < SERVE_LATENCY_BUCKETS && seconds > latency_bounds[bucket]) ++bucket;
    atomic_fetch_add_explicit(&metrics->latency[route][bucket], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&metrics->latency_us[route], (uint64_t)(seconds * 1e6 + 0.5), memory_order_relaxed);
}

void serve_metrics_batch(serve_metrics_t *metrics, int queue, size_t items, double seconds) {
    if (!metrics || (unsigned)queue >= SERVE_METRIC_QUEUES) return;
    size_t bucket = 0;
    while (bucket < SERVE_BATCH_BUCKETS && items > batch_bounds[bucket]) ++bucket;
    atomic_fetch_add_explicit(&metrics->batches[queue][bucket], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&metrics->batch_items[queue], items, memory_order_relaxed);
    atomic_fetch_add_explicit(&metrics->items[queue], items, memory_order_relaxed);
    atomic_fetch_add_explicit(&metrics->batch_us[queue], (uint64_t)(seconds * 1e6 + 0.5), memory_order_relaxed);
}

static uint64_t load(const _Atomic uint64_t *value) { return atomic_load_explicit(value, memory_order_relaxed); }

/* One series of a histogram: `buckets` counts per bucket (`count` bounds, then +Inf), written
 * cumulative as Prometheus wants, with the sum and the count. Skipped while empty when `sparse`. */
static void histogram(serve_buffer_t *out, const char *name, const char *label, const char *value,
                      const _Atomic uint64_t *buckets, const double *bounds, size_t count, double sum, int sparse) {
    uint64_t total = 0;
    for (size_t b = 0; b <= count; ++b) total += load(&buckets[b]);
    if (sparse && !total) return;
    uint64_t cumulative = 0;
    for (size_t b = 0; b < count; ++b) {
        cumulative += load(&buckets[b]);
        serve_buffer_printf(out, "%s_bucket{%s=\"%s\",le=\"%g\"} %llu\n", name, label, value, bounds[b],
                            (unsigned long long)cumulative);
    }
    serve_buffer_printf(out, "%s_bucket{%s=\"%s\",le=\"+Inf\"} %llu\n", name, label, value, (unsigned long long)total);
    serve_buffer_printf(out, "%s_sum{%s=\"%s\"} %.6g\n", name, label, value, sum);
    serve_buffer_printf(out, "%s_count{%s=\"%s\"} %llu\n", name, label, value, (unsigned long long)total);
}

void serve_metrics_render(const serve_metrics_t *metrics, const serve_metrics_labels_t *labels, int ready, serve_buffer_t *out) {
    const size_t routes = labels->route_count < SERVE_METRIC_ROUTES ? labels->route_count : SERVE_METRIC_ROUTES;
    const size_t queues = labels->queue_count < SERVE_METRIC_QUEUES ? labels->queue_count : SERVE_METRIC_QUEUES;
    serve_buffer_text(out, "# HELP uform_ready Whether the model is loaded and requests are served (0 while loading or draining).\n"
                           "# TYPE uform_ready gauge\n");
    serve_buffer_printf(out, "uform_ready %d\n", ready);
    serve_buffer_text(out, "# HELP uform_requests_total Requests answered, by route and HTTP status.\n"
                           "# TYPE uform_requests_total counter\n");
    for (size_t route = 0; route < routes; ++route)
        for (int slot = 0; slot < SERVE_STATUS_SLOTS; ++slot) {
            uint64_t count = load(&metrics->requests[route][slot]);
            if (!count) continue;
            if (slot < SERVE_STATUS_SLOTS - 1)
                serve_buffer_printf(out, "uform_requests_total{route=\"%s\",status=\"%u\"} %llu\n", labels->routes[route],
                                    statuses[slot], (unsigned long long)count);
            else
                serve_buffer_printf(out, "uform_requests_total{route=\"%s\",status=\"other\"} %llu\n",
                                    labels->routes[route], (unsigned long long)count);
        }
    serve_buffer_text(out, "# HELP uform_request_duration_seconds Time from a request's headers to its answer, by route.\n"
                           "# TYPE uform_request_duration_seconds histogram\n");
    for (size_t route = 0; route < routes; ++route)
        histogram(out, "uform_request_duration_seconds", "route", labels->routes[route], metrics->latency[route],
                  latency_bounds, SERVE_LATENCY_BUCKETS, (double)load(&metrics->latency_us[route]) * 1e-6, 1);
    serve_buffer_text(out, "# HELP uform_items_total Inputs encoded (or chosen over), by queue.\n"
                           "# TYPE uform_items_total counter\n");
    for (size_t queue = 0; queue < queues; ++queue)
        serve_buffer_printf(out, "uform_items_total{queue=\"%s\"} %llu\n", labels->queues[queue],
                            (unsigned long long)load(&metrics->items[queue]));
    serve_buffer_text(out, "# HELP uform_batch_size Items per batch run on the executor, by queue.\n"
                           "# TYPE uform_batch_size histogram\n");
    for (size_t queue = 0; queue < queues; ++queue)
        histogram(out, "uform_batch_size", "queue", labels->queues[queue], metrics->batches[queue], batch_bounds,
                  SERVE_BATCH_BUCKETS, (double)load(&metrics->batch_items[queue]), 0);
    serve_buffer_text(out, "# HELP uform_batch_seconds_total Time batches spent on the executor, by queue.\n"
                           "# TYPE uform_batch_seconds_total counter\n");
    for (size_t queue = 0; queue < queues; ++queue)
        serve_buffer_printf(out, "uform_batch_seconds_total{queue=\"%s\"} %.6f\n", labels->queues[queue],
                            (double)load(&metrics->batch_us[queue]) * 1e-6);
    serve_buffer_text(out, "# HELP uform_queue_depth Items waiting for a batch, by queue.\n"
                           "# TYPE uform_queue_depth gauge\n");
    for (size_t queue = 0; queue < queues; ++queue)
        serve_buffer_printf(out, "uform_queue_depth{queue=\"%s\"} %zu\n", labels->queues[queue], labels->depths ? labels->depths[queue] : 0);
    serve_buffer_text(out, "# HELP uform_in_flight_requests Requests received and not yet answered.\n"
                           "# TYPE uform_in_flight_requests gauge\n");
    serve_buffer_printf(out, "uform_in_flight_requests %lld\n",
                        (long long)atomic_load_explicit(&metrics->in_flight, memory_order_relaxed));
}
