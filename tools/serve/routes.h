/*
 * The routes of `uform serve` as one table (routes.c): each is a method, a path, its handler and
 * its per-route state (its /metrics slot and who may call it). http.c matches a request against
 * the table and calls the handler; nothing else in the server lists the routes.
 */
#ifndef UFORM_TOOLS_SERVE_ROUTES_H
#define UFORM_TOOLS_SERVE_ROUTES_H

#include <stddef.h>

typedef struct serve_request_t serve_request_t;

/*
 * A route's handler. `begin` runs once the whole body is in. A route that queues work (`answer`
 * non-NULL) answers 0 from `begin` with request->call.job ready to submit, and `answer` writes the
 * answer once the job is done; a route without `answer` writes its answer in `begin` and answers
 * its HTTP status (0: it queued its own response, as /media does with a file). Either answers the
 * HTTP status of the error it wrote.
 */
typedef struct serve_handler_t {
    unsigned (*begin)(serve_request_t *request);
    unsigned (*answer)(serve_request_t *request);
} serve_handler_t;

/* Per-route access: served without the API key; served while the model loads or the server drains. */
enum { SERVE_ROUTE_OPEN = 1u, SERVE_ROUTE_ALWAYS = 2u };

typedef struct serve_route_t {
    const char *method;       /* "POST", or "GET" (which answers HEAD too) */
    const char *path;         /* exact, or a prefix when it ends with '/' (the rest is the request's tail) */
    serve_handler_t handler;
    /* Per-route state, shared by every request of the route. */
    size_t metric;            /* its slot in /metrics (two paths of one route share one) */
    unsigned access;          /* SERVE_ROUTE_OPEN, SERVE_ROUTE_ALWAYS */
} serve_route_t;

/* The /metrics slots: one per route, and one for requests that matched none. */
enum { SERVE_ROUTE_SLOTS = 9, SERVE_ROUTE_UNMATCHED = 8 };
extern const char *const serve_route_labels[SERVE_ROUTE_SLOTS];

/* The route `url` names, with what follows a prefix route's path copied into `tail` (NUL-terminated,
 * empty for an exact route); NULL when none matches or the tail does not fit `capacity`. */
const serve_route_t *serve_route_find(const char *url, char *tail, size_t capacity);

#endif
