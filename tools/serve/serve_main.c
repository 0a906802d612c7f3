/*
 * uform serve CKPT [--index INDEX] [--host H] [--port N] [...]   (uform serve --help)
 *
 * Binds first (so a taken port fails at once), answers 503 while the model loads, then serves
 * until SIGINT or SIGTERM: it stops accepting, answers every request in flight, and exits 0. A
 * second signal exits at once (130 or 143).
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

int serve_host_is_loopback(const char *host) {
    if (strcasecmp(host, "localhost") == 0 || strcmp(host, "::1") == 0 || strcmp(host, "[::1]") == 0) return 1;
    struct in_addr address;
    return inet_pton(AF_INET, host, &address) == 1 && (ntohl(address.s_addr) >> 24) == 127;
}

/* Waits up to `seconds` for the requests in flight to be answered; a signal meanwhile exits. */
static void wait_for_answers(serve_server_t *server, const sigset_t *signals, double seconds) {
    uint64_t until = serve_now_ns() + (uint64_t)(seconds * 1e9);
    while (atomic_load_explicit(&server->metrics.in_flight, memory_order_acquire) > 0 && serve_now_ns() < until) {
        struct timespec pause = {0, 5 * 1000 * 1000};
        int caught = sigtimedwait(signals, NULL, &pause);
        if (caught == SIGINT || caught == SIGTERM) {
            fprintf(stderr, "uform serve: %s again: exiting without waiting for the requests in flight\n",
                    caught == SIGINT ? "SIGINT" : "SIGTERM");
            _exit(128 + caught);
        }
    }
}

int uform_command_serve(int argc, char **argv) {
    serve_server_t *server = calloc(1, sizeof *server);
    if (!server) return fprintf(stderr, "uform serve: out of memory\n"), 1;
    int status = serve_options_parse(argc, argv, &server->options);
    if (status >= 0) {
        free(server);
        return status;
    }
    const serve_options_t *options = &server->options;
    /* Every thread started from here on (the daemon's, the executors', the batcher's) inherits a
     * mask without SIGINT and SIGTERM: only this thread takes them, in sigwait. */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    char error[1024];
    const char *open_bracket = strchr(options->host, ':') ? "[" : "", *close_bracket = *open_bracket ? "]" : "";
    if (serve_http_start(server, error, sizeof error)) {
        fprintf(stderr, "uform serve: %s\n", error);
        serve_options_free(&server->options);
        free(server);
        return 1;
    }
    if (!options->quiet)
        fprintf(stderr, "uform serve: listening on http://%s%s%s:%u/ (loading %s)\n", open_bracket, options->host, close_bracket,
                server->port, options->model.checkpoint);
    server->loopback = serve_host_is_loopback(options->host);
    if (!server->loopback && !options->api_key)
        fprintf(stderr, "uform serve: warning: --host %s without --api-key: anyone who can reach port %u can use this "
                        "server (give --api-key-file FILE to require a key)\n", options->host, server->port);
    double started = (double)serve_now_ns() * 1e-9;
    status = 0;
    if (serve_model_open(&options->model, options->index, &server->model, error, sizeof error) != 0) {
        fprintf(stderr, "uform serve: %s\n", error);
        status = 1;
    }
    if (status == 0 && options->captions) {
        if (serve_captions_load(options->captions, server->model.index, &server->captions, error, sizeof error) != 0) {
            fprintf(stderr, "uform serve: %s\n", error);
            status = 1;
        } else if (!options->quiet) {
            fprintf(stderr, "uform serve: captions for %zu of %zu indexed items from %s", server->captions.matched,
                    server->captions.count, options->captions);
            if (server->captions.left_out)
                fprintf(stderr, " (%zu malformed lines left out)", server->captions.left_out);
            fputc('\n', stderr);
        }
    }
    if (status == 0) {
        serve_batcher_config_t config = {0};
        config.model = server->model.model, config.compute = server->model.compute, config.decode = server->model.decode;
        config.max_batch = options->max_batch, config.max_wait_us = options->max_wait_us;
        config.spin_us = options->spin_us;
        config.max_queue = options->max_queue, config.metrics = &server->metrics;
        if (serve_exact_search_open(&server->search, &server->model, options->max_batch, error, sizeof error) != 0 ||
            serve_batcher_start(&config, &server->batcher, error, sizeof error) != 0) {
            fprintf(stderr, "uform serve: %s\n", error);
            status = 1;
        }
    }
    if (status != 0) {
        serve_http_quiesce(server);
        serve_http_stop(server);
        serve_exact_search_close(&server->search);
        serve_captions_free(&server->captions);
        serve_model_close(&server->model);
        serve_options_free(&server->options);
        free(server);
        return status;
    }
    atomic_store_explicit(&server->state, SERVE_READY, memory_order_release);
    if (!options->quiet) {
        const uform_model_description_t *d = &server->model.description;
        fprintf(stderr, "uform serve: ready in %.2f s: model '%s' (%s, %zu dimensions, %s compute, %zu compute threads)",
                (double)serve_now_ns() * 1e-9 - started, server->model.name, d->size[0] ? d->size : "unnamed", d->embedding,
                d->compute == UFORM_COMPUTE_BF16 ? "bf16" : d->compute == UFORM_COMPUTE_I8 ? "i8" : "f32", uform_executor_threads(server->model.compute));
        if (server->model.index) fprintf(stderr, ", index of %zu items", server->model.index_description.count);
        if (server->model.ann) fprintf(stderr, " (approximate: %s)", server->model.ann_description.recipe);
        fprintf(stderr, "; batches of up to %zu; http://%s%s%s:%u/\n", options->max_batch, open_bracket, options->host,
                close_bracket, server->port);
    }

    int caught = 0;
    sigwait(&signals, &caught);
    if (!options->quiet)
        fprintf(stderr, "uform serve: %s: no new connections; answering the requests in flight\n",
                caught == SIGINT ? "SIGINT" : "SIGTERM");
    atomic_store_explicit(&server->state, SERVE_DRAINING, memory_order_release);
    serve_http_quiesce(server);
    /* Queued jobs run at once (no batch waits for company now); their connections then answer.
     * Requests still being read are served too. The wait is bounded by the request timeout (jobs
     * past it answer 504) and a margin for the last batch and the writes. */
    serve_batcher_flush(server->batcher);
    wait_for_answers(server, &signals, (options->timeout > 0 ? options->timeout : 60) + 10);
    serve_batcher_stop(server->batcher); /* anything still queued runs now: every suspended connection resumes */
    wait_for_answers(server, &signals, 5);
    serve_http_stop(server);             /* no handler runs after this: the batcher can go */
    serve_batcher_free(server->batcher);
    server->batcher = NULL;
    serve_exact_search_close(&server->search);
    serve_captions_free(&server->captions);
    serve_model_close(&server->model);
    long long answered = 0;
    for (int route = 0; route < SERVE_METRIC_ROUTES; ++route)
        for (int slot = 0; slot < SERVE_STATUS_SLOTS; ++slot) answered += (long long)server->metrics.requests[route][slot];
    if (!options->quiet) fprintf(stderr, "uform serve: stopped after %lld requests\n", answered);
    serve_options_free(&server->options);
    free(server);
    return 0;
}
