/*
 * `uform serve`: one process that loads a checkpoint (and optionally an index), batches the
 * requests of many clients on one executor (batcher.h) and answers over HTTP (libmicrohttpd):
 * OpenAI-compatible embeddings, search, choices, health, models, Prometheus metrics, a search
 * page and the indexed media. docs/serve.md describes the API and the decisions behind it.
 *
 * Files: serve_main.c (the command: start, signals, drain), serve_flags.c (the flag table),
 * model.c (executors, checkpoint, index: every model-loading option in one place), http.c (the
 * daemon, a connection's life, authentication, limits), routes.c (the route table: method, path,
 * handler, per-route state), http_status.c (error answers; library statuses to HTTP, one table),
 * inputs.c (JSON inputs, data: URIs), embeddings.c, search.c (the exact and approximate searches),
 * choose.c (the API routes), info.c (health, models, metrics, the page, media), captions.c
 * (--captions, through the library's dataset reader), batcher.c and batcher_run.c (dynamic
 * batching: encodes only, library statuses), metrics.c, buffer.c, base64.c.
 */
#ifndef UFORM_TOOLS_SERVE_SERVE_H
#define UFORM_TOOLS_SERVE_SERVE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "batcher.h"
#include "buffer.h"
#include "captions.h"
#include "metrics.h"
#include "uform/uform.h"

/* How the checkpoint is loaded and computed: every such option lives here, named in the flag
 * table (serve_flags.c) and applied by serve_model_open (a new one, such as --int8, is added in
 * those two places only). */
typedef struct serve_model_options_t {
    const char *checkpoint;
    size_t threads;        /* --threads: compute threads (0: the library's default) */
    size_t decode_threads; /* --decode-threads: media decoding threads beside compute */
    int compute;           /* --f32, --bf16 or --int8 (a uform_compute_t); -1: uform_compute_best (F32), as every command */
    int exact;             /* --exact: search the index exactly even when its .faiss lies beside it */
} serve_model_options_t;

typedef struct serve_options_t {
    serve_model_options_t model;
    const char *index;          /* --index, or NULL */
    const char *captions;       /* --captions, or NULL */
    const char *host;           /* --host (default 127.0.0.1) */
    size_t port;                /* --port (default 8080; 0: any free port) */
    size_t max_batch;           /* --max-batch */
    uint64_t max_wait_us;       /* --max-wait-us */
    uint64_t spin_us;           /* --spin-us */
    size_t max_queue;           /* --max-queue */
    size_t max_body;            /* --max-body, bytes */
    double timeout;             /* --timeout, seconds (0: none) */
    const char *key_flag;       /* --api-key as given (borrowed from argv) */
    const char *key_file;       /* --api-key-file */
    char *api_key;              /* either's key (owned), or NULL */
    size_t http_threads;        /* --http-threads */
    size_t max_connections;     /* --max-connections */
    int quiet;                  /* --quiet: no startup lines */
} serve_options_t;

/* Parses argv (argv[0] is "serve") through the `uform` commands' flag table and parser (tools/cli.h);
 * answers -1 to go on, or the exit status (0 after --help, 2 for a usage error, whose line was
 * printed, 1 when memory ran out). */
int serve_options_parse(int argc, char **argv, serve_options_t *options);
void serve_options_free(serve_options_t *options);

/* What the model side of a server holds once loaded. */
typedef struct serve_model_t {
    uform_executor_t compute, decode;
    uform_model_t model;
    uform_model_description_t description;
    uform_index_t index;               /* NULL without --index */
    uform_index_description_t index_description;
    /* The index's approximate structure, chosen as `uform search` chooses it (tools/ann_choice.h):
     * NULL without a .faiss beside the index or with --exact. The paths name it in refusals. */
    uform_index_ann_t ann;
    uform_index_ann_description_t ann_description;
    char *index_path, *ann_path;       /* NULL without --index */
    int exact;                         /* --exact was given */
    char name[128];                    /* the checkpoint's file name without ".safetensors" */
    int64_t created;                   /* the checkpoint's modification time (Unix seconds) */
} serve_model_t;

/* Loads executors, the checkpoint and the index; answers 0, or -1 with the reason in `error`. */
int serve_model_open(const serve_model_options_t *options, const char *index_path, serve_model_t *model, char *error,
                     size_t capacity);
void serve_model_close(serve_model_t *model);

/* Tokens one input costs, as the library counts them (uform_model_tokens): a text's tokens as its
 * text tower runs them ([CLS] and its first text_bytes bytes for a UForm checkpoint, the
 * tokenizer's ids for a published folder), a media item's patch, class and register rows. */
size_t serve_model_tokens(const serve_model_t *model, int modality, const unsigned char *bytes, size_t size);

/* The exact search of /v1/search, run as a follow-up of the batch that encoded its queries
 * (exact_search.c): one uform_index_search per batch on the compute executor. Its buffers are made
 * once for batches of max_batch items. */
typedef struct serve_exact_search_t {
    serve_followup_t followup;  /* first: the batcher hands this pointer back to `run` */
    uform_index_t index;        /* NULL without --index */
    size_t width, dims;         /* the model's embedding, the index's columns */
    float *queries;             /* [max_batch · dims] */
    uform_arena_t arena;
} serve_exact_search_t;

/* Makes the buffers (nothing without an index); answers 0, or -1 with the reason in `error`. */
int serve_exact_search_open(serve_exact_search_t *search, const serve_model_t *model, size_t max_batch, char *error,
                            size_t capacity);
void serve_exact_search_close(serve_exact_search_t *search);

typedef enum serve_state_t { SERVE_LOADING = 0, SERVE_READY = 1, SERVE_DRAINING = 2 } serve_state_t;

typedef struct serve_server_t {
    serve_options_t options;
    struct MHD_Daemon *daemon;
    int listen_socket;
    unsigned port;                     /* the bound port */
    int loopback;                      /* bound to this machine only: Host headers must name it */
    atomic_int state;                  /* serve_state_t */
    serve_metrics_t metrics;
    serve_model_t model;               /* valid once READY */
    serve_batcher_t *batcher;          /* valid once READY */
    serve_exact_search_t search;       /* valid once READY */
    serve_captions_t captions;         /* --captions (empty without) */
} serve_server_t;

/* The HTTP side (http.c): binds, starts the daemon (answering 503 until READY), stops accepting,
 * stops. */
int serve_http_start(serve_server_t *server, char *error, size_t capacity);
void serve_http_quiesce(serve_server_t *server);
void serve_http_stop(serve_server_t *server);

/* Whether `host` names only this machine (127.0.0.0/8, ::1, localhost). */
int serve_host_is_loopback(const char *host);

/* `uform serve ...` (serve_main.c); argv[0] is "serve". Answers the exit status. */
int uform_command_serve(int argc, char **argv);

#endif
