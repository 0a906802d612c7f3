/*
 * The HTTP side of `uform serve` through libmicrohttpd: one listening socket bound here, the
 * daemon polling it with epoll on --http-threads threads, a connection's life with one request
 * (headers, body, the route table's handler, queued job, answer), authentication and limits. The
 * routes are routes.c's table; error bodies and status codes are http_status.c's. No HTTP is
 * parsed here: the library
 * does it, within a per-connection memory limit (headers beyond it answer 431) and an idle timeout.
 *
 * A request whose job is queued suspends its connection before the job is submitted (so the
 * batcher's `done` can never resume it before it was suspended); `done` resumes it, and the
 * daemon calls the handler again on an HTTP thread, which writes the answer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api.h"

/* Per connection: headers and the read buffer (the body is copied out as it arrives). 16 KiB:
 * libmicrohttpd zeroes the whole of it after every request, which at 32 KiB was ~2% of the CPU
 * of saturated tiny texts; headers past it answer 431 (nginx allows 4 × 8 KiB by default). */
enum { CONNECTION_MEMORY = 16 * 1024 };

/* ---- routes ------------------------------------------------------------------------------------ */

/*
 * A connection's state while one request is on it: the route's view (first, so that a route's
 * request pointer is its connection's), and what only the HTTP side tracks.
 */
typedef struct connection_t {
    serve_request_t request;
    uint64_t started_ns;
    size_t metric;              /* the route's /metrics slot (unmatched: SERVE_ROUTE_UNMATCHED) */
    int early;                  /* answered before reading the body (auth, method, state, size) */
    int waiting;                /* suspended while its job runs */
    int queued;                 /* the job was queued (its `done` resumes the connection) */
    char *body;                 /* the body read so far (request.body points here) */
    size_t capacity;
    int too_large;              /* the body passed --max-body */
    const char *allow;          /* a 405's Allow header */
} connection_t;

/* Compares the whole key whatever the first difference: the time depends on the key's length only. */
static int same_key(const char *given, size_t given_length, const char *key) {
    size_t key_length = strlen(key);
    volatile unsigned char difference = given_length != key_length;
    for (size_t i = 0; i < key_length; ++i) difference |= (unsigned char)(key[i] ^ (i < given_length ? given[i] : 0));
    return difference == 0;
}

/* 0 when the request carries the key (or none is required), else 401 with the error written. */
static unsigned authenticate(serve_request_t *request) {
    const char *key = request->server->options.api_key;
    if (!key) return 0;
    const char *header = MHD_lookup_connection_value(request->connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!header)
        return serve_error(&request->answer, 401, "missing_api_key", NULL,
                           "this server requires an API key: send the header 'Authorization: Bearer KEY'");
    while (*header == ' ') ++header;
    if (strncasecmp(header, "Bearer ", 7) != 0)
        return serve_error(&request->answer, 401, "invalid_api_key", NULL,
                           "the Authorization header must be 'Bearer KEY'");
    header += 7;
    while (*header == ' ') ++header;
    size_t length = strlen(header);
    while (length && header[length - 1] == ' ') --length;
    if (!same_key(header, length, key))
        return serve_error(&request->answer, 401, "invalid_api_key", NULL, "the API key is not this server's");
    return 0;
}

/*
 * A server bound to this machine only answers requests addressed to it: a Host header naming
 * another name is refused (403). A web page on another site can otherwise make a browser talk to
 * 127.0.0.1 under a name of its own that resolves there (DNS rebinding) and read the answers as
 * its own origin's. A request without Host (HTTP/1.0) is allowed.
 */
static unsigned check_host(serve_request_t *request) {
    serve_server_t *server = request->server;
    if (!server->loopback) return 0;
    const char *host = MHD_lookup_connection_value(request->connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!host) return 0;
    char name[256];
    size_t length = strlen(host);
    if (host[0] == '[') { /* [::1]:8080 */
        const char *close = strchr(host, ']');
        length = close ? (size_t)(close - host) + 1 : length;
    } else {
        const char *colon = strchr(host, ':');
        if (colon) length = (size_t)(colon - host);
    }
    if (length >= sizeof name) length = sizeof name - 1;
    memcpy(name, host, length);
    name[length] = 0;
    if (serve_host_is_loopback(name) || strcasecmp(name, server->options.host) == 0) return 0;
    return serve_error(&request->answer, 403, "forbidden_host", NULL,
                       "this server listens on %s and answers requests addressed to it only, not to '%s' (a name that "
                       "resolves to this machine from elsewhere is how DNS rebinding reaches it); start it with "
                       "--host to serve other names", server->options.host, name);
}

/* Decides what can be decided from the request line and headers alone. */
static void begin(connection_t *connection, const char *url, const char *method) {
    serve_request_t *request = &connection->request;
    serve_server_t *server = request->server;
    int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    const serve_route_t *route = serve_route_find(url, request->tail, sizeof request->tail);
    int takes_post = route && strcmp(route->method, MHD_HTTP_METHOD_POST) == 0;
    request->route = route;
    connection->metric = route ? route->metric : SERVE_ROUTE_UNMATCHED;
    int state = atomic_load_explicit(&server->state, memory_order_acquire);
    unsigned status = check_host(request);
    if (!status && !route) {
        status = serve_error(&request->answer, 404, "not_found", NULL,
                             "no route %s: the routes are POST /v1/embeddings, /v1/search, /v1/choose and GET /health, "
                             "/v1/models, /metrics, /, /media/ROW", url);
    } else if (!status && (takes_post ? strcmp(method, MHD_HTTP_METHOD_POST) != 0 : !get)) {
        connection->allow = takes_post ? "POST" : "GET, HEAD";
        status = serve_error(&request->answer, 405, "method_not_allowed", NULL, "%s takes %s, not %s", route->path,
                             route->method, method);
    } else if (!status && state != SERVE_READY && !(route->access & SERVE_ROUTE_ALWAYS)) {
        status = state == SERVE_DRAINING
                     ? serve_error(&request->answer, 503, "shutting_down", NULL, "the server is shutting down")
                     : serve_error(&request->answer, 503, "loading", NULL, "the model is still loading; try again shortly");
    } else if (!status && !(route->access & SERVE_ROUTE_OPEN)) {
        status = authenticate(request);
    }
    if (!status && takes_post) {
        const char *declared = MHD_lookup_connection_value(request->connection, MHD_HEADER_KIND,
                                                           MHD_HTTP_HEADER_CONTENT_LENGTH);
        char *end = NULL;
        unsigned long long length = declared ? strtoull(declared, &end, 10) : 0;
        if (declared && (length > server->options.max_body || (end && *end))) {
            connection->too_large = 1;
            status = serve_error(&request->answer, 413, "request_too_large", NULL,
                                 "the body holds %s bytes; this server takes at most %zu (--max-body)", declared,
                                 server->options.max_body);
        }
    }
    if (status) connection->early = 1, request->status = status;
}

/* ---- answering ----------------------------------------------------------------------------------- */

static enum MHD_Result respond(connection_t *connection) {
    serve_request_t *request = &connection->request;
    serve_server_t *server = request->server;
    if (request->answer.failed) {
        serve_buffer_free(&request->answer);
        request->status = 500;
        serve_buffer_text(&request->answer, "{\"error\": {\"message\": \"out of memory writing the answer\", \"type\": "
                                            "\"server_error\", \"param\": null, \"code\": \"out_of_memory\"}}\n");
        if (request->answer.failed) return MHD_NO;
    }
    size_t length = 0;
    char *body = serve_buffer_take(&request->answer, &length);
    struct MHD_Response *response = MHD_create_response_from_buffer(length, body ? body : (char *)"",
                                                                    body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!response) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                            request->content_type ? request->content_type : "application/json");
    MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
    if (request->status == 401) MHD_add_response_header(response, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (request->status == 429 || request->status == 503) MHD_add_response_header(response, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (request->status == 405 && connection->allow) MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, connection->allow);
    if (atomic_load_explicit(&server->state, memory_order_acquire) == SERVE_DRAINING || connection->too_large)
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result queued = MHD_queue_response(request->connection, request->status, response);
    MHD_destroy_response(response);
    return queued;
}

static void job_done(serve_job_t *job) {
    connection_t *connection = job->context;
    MHD_resume_connection(connection->request.connection);
}

/* Queues the request's job (the connection is suspended first); answers 0 or the status of the
 * error it wrote for the batcher's refusal. */
static unsigned submit(connection_t *connection) {
    serve_request_t *request = &connection->request;
    serve_server_t *server = request->server;
    serve_job_t *job = &request->call.job;
    job->done = job_done, job->context = connection;
    job->deadline_ns = server->options.timeout > 0 ? connection->started_ns + (uint64_t)(server->options.timeout * 1e9) : 0;
    uform_status_t status = serve_batcher_submit(server->batcher, job);
    if (status == UFORM_OK) {
        connection->queued = 1;
        return 0;
    }
    /* The batcher's reason, said in the server's terms (its flags). */
    if (status == UFORM_CONTENDED)
        return serve_status_error(&request->answer, status, NULL,
                                  "the server's queue is full (%zu items, --max-queue); retry after a moment",
                                  server->options.max_queue);
    if (status == UFORM_CANCELLED) return serve_status_error(&request->answer, status, NULL, "the server is shutting down");
    return serve_status_error(&request->answer, status, "input", "%s (--max-queue)", job->message);
}

/* The answer of a route whose job is done: its failure, or what the route writes. */
static unsigned answer_job(serve_request_t *request) {
    serve_job_t *job = &request->call.job;
    uform_status_t failed = (uform_status_t)atomic_load_explicit(&job->status, memory_order_acquire);
    if (failed != UFORM_OK) return serve_status_error(&request->answer, failed, NULL, "%s", job->message);
    return request->route->handler.answer(request);
}

/* Under load the HTTP threads run as SCHED_BATCH: a request or a resume that wakes one then does
 * not preempt a compute thread on its CPU; the HTTP thread runs when compute blocks or its slice
 * ends, and serves every connection that is ready at once. At 64 clients that takes the context
 * switches per request from ~0.75 to ~0.04 and tiny texts 4–14% further per CPU-second. A lone
 * request (one in flight) keeps SCHED_OTHER, whose wakeups do preempt: with other processes busy
 * on its CPU, a SCHED_BATCH thread would wait out their slices, milliseconds per answer. Each
 * thread sets its own policy at a handler call when the load crosses that line (the daemon starts
 * its threads itself) or completes a request; failing to set it changes nothing else. */
static void http_thread_policy(const serve_server_t *server) {
    static _Thread_local int batch;
    int wanted = atomic_load_explicit(&server->metrics.in_flight, memory_order_relaxed) > 1;
    if (wanted == batch) return;
    batch = wanted;
    const struct sched_param parameters = {0};
    (void)pthread_setschedparam(pthread_self(), wanted ? SCHED_BATCH : SCHED_OTHER, &parameters);
}

static enum MHD_Result handle(void *context, struct MHD_Connection *mhd, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **state) {
    serve_server_t *server = context;
    connection_t *connection = *state;
    (void)version;
    http_thread_policy(server);
    if (!connection) { /* the headers are in */
        if (!(connection = calloc(1, sizeof *connection))) return MHD_NO;
        connection->request.server = server, connection->request.connection = mhd;
        connection->started_ns = serve_now_ns();
        atomic_fetch_add_explicit(&server->metrics.in_flight, 1, memory_order_relaxed);
        *state = connection;
        begin(connection, url, method);
        /* An oversized body is refused before it is read (a client that sent "Expect: 100-continue"
         * sends none of it); other refusals read the body first, so the connection stays usable. */
        if (connection->too_large) return respond(connection);
        return MHD_YES;
    }
    serve_request_t *request = &connection->request;
    if (*upload_data_size) {
        size_t size = *upload_data_size;
        *upload_data_size = 0;
        if (connection->early) return MHD_YES; /* read and dropped */
        size_t limit = server->options.max_body;
        if (request->length + size > limit) {
            /* A chunked body that grew past the limit: the answer can only follow its end. */
            if (!connection->too_large)
                connection->too_large = 1, connection->early = 1,
                request->status = serve_error(&request->answer, 413, "request_too_large", NULL,
                                              "the body holds more than %zu bytes (--max-body)", limit);
            return MHD_YES;
        }
        if (request->length + size + 1 > connection->capacity) {
            size_t wanted = connection->capacity ? connection->capacity : 4096;
            while (wanted < request->length + size + 1) wanted *= 2;
            if (wanted > limit + 1) wanted = limit + 1;
            char *grown = realloc(connection->body, wanted);
            if (!grown) return MHD_NO;
            connection->body = grown, connection->capacity = wanted, request->body = grown;
        }
        memcpy(connection->body + request->length, upload_data, size);
        request->length += size;
        connection->body[request->length] = 0;
        return MHD_YES;
    }
    if (connection->waiting) { /* resumed: the job is done, or it was never queued */
        connection->waiting = 0;
        if (connection->queued) request->status = answer_job(request);
        return respond(connection);
    }
    if (connection->early) return respond(connection);
    const serve_handler_t *handler = &request->route->handler;
    unsigned status = handler->begin(request);
    if (!handler->answer) {
        if (status == 0) return MHD_YES; /* the route queued its own response */
        request->status = status;
        return respond(connection);
    }
    if (status) {
        request->status = status;
        return respond(connection);
    }
    /* Suspend first: the job may be done before this returns. */
    connection->waiting = 1;
    MHD_suspend_connection(mhd);
    if ((status = submit(connection))) {
        request->status = status;
        MHD_resume_connection(mhd); /* answered when the handler is called again */
    }
    return MHD_YES;
}

static void completed(void *context, struct MHD_Connection *mhd, void **state, enum MHD_RequestTerminationCode code) {
    serve_server_t *server = context;
    connection_t *connection = *state;
    (void)mhd;
    if (!connection) return;
    *state = NULL;
    serve_request_t *request = &connection->request;
    double seconds = (double)(serve_now_ns() - connection->started_ns) * 1e-9;
    /* A request that ended without an answer (the client went away) counts as status 0 ("other"). */
    serve_metrics_request(&server->metrics, connection->metric, code == MHD_REQUEST_TERMINATED_COMPLETED_OK ? request->status : 0,
                          seconds);
    atomic_fetch_sub_explicit(&server->metrics.in_flight, 1, memory_order_release);
    http_thread_policy(server); /* back to SCHED_OTHER as the load ends, before the next wakeup */
    serve_call_free(&request->call);
    free(connection->body);
    serve_buffer_free(&request->answer);
    free(connection);
}

static void log_line(void *context, const char *format, va_list arguments) {
    serve_server_t *server = context;
    if (server->options.quiet) return;
    fprintf(stderr, "uform serve: ");
    vfprintf(stderr, format, arguments);
}

/* ---- the daemon ---------------------------------------------------------------------------------- */

static int bind_socket(serve_server_t *server, char *error, size_t capacity) {
    struct addrinfo hints = {0}, *found = NULL;
    hints.ai_family = AF_UNSPEC, hints.ai_socktype = SOCK_STREAM, hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char port[8];
    snprintf(port, sizeof port, "%zu", server->options.port);
    int code = getaddrinfo(server->options.host, port, &hints, &found);
    if (code != 0) {
        snprintf(error, capacity, "cannot resolve --host '%s': %s", server->options.host, gai_strerror(code));
        return -1;
    }
    int fd = -1, saved = 0;
    for (struct addrinfo *at = found; at && fd < 0; at = at->ai_next) {
        fd = socket(at->ai_family, at->ai_socktype | SOCK_CLOEXEC, at->ai_protocol);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, at->ai_addr, at->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
            saved = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    if (fd < 0) {
        snprintf(error, capacity, "cannot listen on %s port %zu: %s", server->options.host, server->options.port,
                 strerror(saved ? saved : EADDRNOTAVAIL));
        return -1;
    }
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    getsockname(fd, (struct sockaddr *)&address, &length);
    server->port = address.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&address)->sin6_port)
                                                 : ntohs(((struct sockaddr_in *)&address)->sin_port);
    server->listen_socket = fd;
    return 0;
}

int serve_http_start(serve_server_t *server, char *error, size_t capacity) {
    server->listen_socket = -1;
    if (bind_socket(server, error, capacity)) return -1;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    unsigned timeout = server->options.timeout > 0 ? (unsigned)(server->options.timeout + 0.999) : 0;
    struct MHD_OptionItem pool[] = {
        {server->options.http_threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END,
         (intptr_t)server->options.http_threads, NULL},
        {MHD_OPTION_END, 0, NULL}};
    server->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, handle, server, MHD_OPTION_EXTERNAL_LOGGER, log_line, server,
        MHD_OPTION_LISTEN_SOCKET, server->listen_socket,
        MHD_OPTION_NOTIFY_COMPLETED, completed, server, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)server->options.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, timeout,
        MHD_OPTION_ARRAY, pool, MHD_OPTION_END);
    if (!server->daemon) {
        snprintf(error, capacity, "cannot start the HTTP daemon on port %u", server->port);
        close(server->listen_socket);
        server->listen_socket = -1;
        return -1;
    }
    return 0;
}

void serve_http_quiesce(serve_server_t *server) {
    if (!server->daemon) return;
    /* No more connections: the socket leaves the daemon's poll set; shutting it down makes the
     * kernel refuse connection attempts instead of queueing them in the backlog. */
    MHD_quiesce_daemon(server->daemon);
    if (server->listen_socket >= 0) shutdown(server->listen_socket, SHUT_RDWR);
}

void serve_http_stop(serve_server_t *server) {
    if (server->daemon) MHD_stop_daemon(server->daemon);
    server->daemon = NULL;
    if (server->listen_socket >= 0) close(server->listen_socket);
    server->listen_socket = -1;
}
