/*
 * One HTTP request as the routes see it (http.c owns its life), and the routes' handlers (the
 * table in routes.c names them). An API route parses the body, allocates the job with its items
 * and outputs (the batcher allocates nothing), and once the job is done writes the answer on an
 * HTTP thread.
 */
#ifndef UFORM_TOOLS_SERVE_API_H
#define UFORM_TOOLS_SERVE_API_H

#include <cJSON.h>

#include "routes.h"
#include "serve.h"

/* One API call's state, apart from the connection that carries it: what a route parsed, the job
 * it queued with its items and results, and what its answer needs. Freed by serve_call_free. */
typedef struct serve_call_t {
    cJSON *json;
    serve_job_t job;
    serve_item_t *items;
    float *outputs;
    unsigned char *media;       /* decoded data: URIs */
    uform_index_hit_t *hits;    /* search: [top] */
    size_t top, hits_count;     /* search: asked, found */
    unsigned modalities;        /* search: the modality filter (bits; 0: all) */
    size_t tokens;              /* usage */
    int base64;                 /* embeddings: encoding_format "base64" */
    size_t dimensions;          /* embeddings: 0, or a Matryoshka prefix */
    int query_modality;         /* search */
    int approximate;            /* search: through the index's .faiss, else exact */
    size_t nprobe, ef, rerank;  /* search: the approximate knobs (0: the library's defaults; a
                                * request's "rerank": 0 is UFORM_INDEX_ANN_RERANK_NONE) */
} serve_call_t;

void serve_call_free(serve_call_t *call);

/* What a route sees of one request. The connection's own state (the body being received, the key
 * check, suspension, the response's headers) stays in http.c. */
struct serve_request_t {
    serve_server_t *server;
    struct MHD_Connection *connection;  /* for a route that queues its own response (/media) */
    const serve_route_t *route;         /* NULL: none matched */
    const char *body;                   /* the whole body, `length` bytes (NUL after them) */
    size_t length;
    char tail[96];                      /* the URL after a prefix route's path (/media/ROW, /v1/models/NAME) */
    unsigned status;                    /* the answer's HTTP status, once known */
    serve_buffer_t answer;              /* the answer's body */
    const char *content_type;           /* of `answer` (JSON when NULL) */
    serve_call_t call;                  /* the API routes' state */
};

/* Writes an OpenAI-style error {"error": {"message", "type", "param", "code"}} into `out` and
 * answers `status` (the type follows from it). `param` may be NULL. */
unsigned serve_error(serve_buffer_t *out, unsigned status, const char *code, const char *param, const char *format, ...)
    __attribute__((format(printf, 5, 6)));

/* Writes the error a library status stands for (http_status.c: the one table from uform_status_t
 * to HTTP status and error code) and answers that HTTP status. */
unsigned serve_status_error(serve_buffer_t *out, uform_status_t status, const char *param, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

/* API routes: `begin` parses the body and queues the job (answers 0: the request waits for its
 * `done`), or writes an error and answers its status; `answer` writes the finished job's answer
 * and answers its status. */
unsigned serve_embeddings_begin(serve_request_t *request);
unsigned serve_embeddings_answer(serve_request_t *request);
unsigned serve_search_begin(serve_request_t *request);
unsigned serve_search_answer(serve_request_t *request);
unsigned serve_choose_begin(serve_request_t *request);
unsigned serve_choose_answer(serve_request_t *request);

/* Answers that need no batch (info.c): each writes `answer` (and `content_type`) and answers the
 * status. /media answers through its own response (a file): it answers 0 after queueing it. */
unsigned serve_health(serve_request_t *request);
unsigned serve_models(serve_request_t *request);
unsigned serve_metrics_page(serve_request_t *request);
unsigned serve_page(serve_request_t *request);
unsigned serve_media(serve_request_t *request);

/* Inputs (inputs.c). */

/* Parses the body as JSON (UTF-8, no NUL, one value and white space); answers 0 with
 * request->call.json set, or the status of the error it wrote. */
unsigned serve_parse_body(serve_request_t *request);

/* One input: a JSON string (text) or an object with one of "text", "image", "audio", "video",
 * whose media value is a data: URI. */
typedef struct serve_input_t {
    int modality;
    const cJSON *value;         /* the string */
} serve_input_t;

/* Reads one input (an element of "input", or "query"); `where` names it in messages ("input[3]").
 * Answers 0, or the status of the error it wrote. Checks the model has the modality and the text
 * is valid UTF-8; media is decoded later (serve_decode_media). */
unsigned serve_read_input(serve_request_t *request, const cJSON *value, const char *where, serve_input_t *input);

/* Bytes that decoding the media value of `input` may need (an upper bound); 0 for a text. */
size_t serve_media_bound(const serve_input_t *input);
/* Decodes a data: URI into `out` (room for serve_media_bound); answers 0 with `*size`, or the
 * status of the error it wrote (400: not a data: URI, a URL, bad base64). */
unsigned serve_decode_media(serve_request_t *request, const serve_input_t *input, const char *where,
                            unsigned char *out, size_t *size);

/* Reads an integer member in [low, high]; answers 0 (absent members leave `*value`), or the
 * status of the error it wrote. */
unsigned serve_read_integer(serve_request_t *request, const cJSON *object, const char *name, long long low,
                            long long high, long long *value);

/* Checks the optional "model" member against the served model: another name is 404
 * model_not_found. */
unsigned serve_check_model(serve_request_t *request);

/* "image", "text" ...: the modality named, or -1. */
int serve_modality_named(const char *name);

#endif
