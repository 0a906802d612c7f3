/* The route table of `uform serve` (routes.h). */
#include "routes.h"

#include <stdio.h>
#include <string.h>

#include "api.h"

/* Metric slots, in the order /metrics lists the routes. */
enum { EMBEDDINGS, SEARCH, CHOOSE, HEALTH, MODELS, METRICS, PAGE, MEDIA };

const char *const serve_route_labels[SERVE_ROUTE_SLOTS] = {"/v1/embeddings", "/v1/search", "/v1/choose", "/health",
                                                           "/v1/models",     "/metrics",   "/",          "/media",
                                                           "other"};

static const serve_route_t routes[] = {
    {"POST", "/v1/embeddings", {serve_embeddings_begin, serve_embeddings_answer}, EMBEDDINGS, 0},
    {"POST", "/v1/search", {serve_search_begin, serve_search_answer}, SEARCH, 0},
    {"POST", "/v1/choose", {serve_choose_begin, serve_choose_answer}, CHOOSE, 0},
    {"GET", "/health", {serve_health, NULL}, HEALTH, SERVE_ROUTE_OPEN | SERVE_ROUTE_ALWAYS},
    {"GET", "/v1/models", {serve_models, NULL}, MODELS, 0},
    {"GET", "/v1/models/", {serve_models, NULL}, MODELS, 0},
    {"GET", "/metrics", {serve_metrics_page, NULL}, METRICS, SERVE_ROUTE_OPEN | SERVE_ROUTE_ALWAYS},
    {"GET", "/", {serve_page, NULL}, PAGE, SERVE_ROUTE_OPEN},
    {"GET", "/index.html", {serve_page, NULL}, PAGE, SERVE_ROUTE_OPEN},
    {"GET", "/media/", {serve_media, NULL}, MEDIA, 0},
};

const serve_route_t *serve_route_find(const char *url, char *tail, size_t capacity) {
    for (size_t i = 0; i < sizeof routes / sizeof *routes; ++i) {
        size_t length = strlen(routes[i].path);
        int prefix = length > 1 && routes[i].path[length - 1] == '/';
        if (prefix ? strncmp(url, routes[i].path, length) == 0 && url[length] : strcmp(url, routes[i].path) == 0) {
            if (prefix && strlen(url + length) >= capacity) return NULL; /* no row or model name is that long */
            snprintf(tail, capacity, "%s", prefix ? url + length : "");
            return &routes[i];
        }
    }
    return NULL;
}
