/*
 * The answers that need no batch: GET /health, /v1/models, /metrics, the page (/) and the indexed
 * media (/media/ROW). /media serves only the files the index lists, by row number: no part of the
 * URL ever becomes a path.
 */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"

/* The page, built into the binary from tools/serve/page.html (page_html.c is generated). */
extern const unsigned char serve_page_html[];
extern const size_t serve_page_html_size;

static const char *const modality_names[4] = {"text", "image", "video", "audio"};

unsigned serve_health(serve_request_t *request) {
    serve_server_t *server = request->server;
    int state = atomic_load_explicit(&server->state, memory_order_acquire);
    if (state == SERVE_READY) {
        serve_buffer_text(&request->answer, "{\"status\": \"ok\", \"model\": ");
        serve_buffer_json_string(&request->answer, server->model.name, strlen(server->model.name));
        serve_buffer_text(&request->answer, "}\n");
        return 200;
    }
    serve_buffer_text(&request->answer, state == SERVE_LOADING ? "{\"status\": \"loading\"}\n" : "{\"status\": \"draining\"}\n");
    return 503;
}

static void write_model(serve_buffer_t *out, const serve_model_t *model) {
    const uform_model_description_t *d = &model->description;
    serve_buffer_text(out, "{\"id\": ");
    serve_buffer_json_string(out, model->name, strlen(model->name));
    serve_buffer_printf(out, ", \"object\": \"model\", \"created\": %lld, \"owned_by\": \"uform\", \"size\": ",
                        (long long)model->created);
    serve_buffer_json_string(out, d->size, strnlen(d->size, sizeof d->size));
    serve_buffer_printf(out, ", \"dimensions\": %zu, \"matryoshka\": [", d->embedding);
    for (size_t i = 0; i < d->matryoshka_count; ++i) serve_buffer_printf(out, "%s%zu", i ? ", " : "", d->matryoshka[i]);
    serve_buffer_text(out, "], \"modalities\": [");
    int first = 1;
    for (int m = 0; m < 4; ++m)
        if (d->modalities & (1u << m)) serve_buffer_printf(out, "%s\"%s\"", first ? "" : ", ", modality_names[m]), first = 0;
    serve_buffer_text(out, "], \"family\": ");
    serve_buffer_json_string(out, d->family, strnlen(d->family, sizeof d->family));
    serve_buffer_text(out, ", \"tokenizer\": ");
    serve_buffer_json_string(out, d->tokenizer, strnlen(d->tokenizer, sizeof d->tokenizer));
    serve_buffer_printf(out, ", \"text_tokens\": %zu", d->text_tokens);
    serve_buffer_printf(out, ", \"text_bytes\": %zu, \"parameters\": %llu, \"compute\": \"%s\", \"index\": ", d->text_bytes,
                        (unsigned long long)d->parameters,
                        d->compute == UFORM_COMPUTE_BF16 ? "bf16" : d->compute == UFORM_COMPUTE_I8 ? "i8" : "f32");
    if (model->index) {
        const uform_index_description_t *x = &model->index_description;
        static const char *const scalars[5] = {"f32", "f16", "bf16", "i8", "b1"};
        serve_buffer_printf(out, "{\"items\": %zu, \"dimensions\": %zu, \"scalar\": \"%s\", \"counts\": {\"text\": %zu, "
                                 "\"image\": %zu, \"video\": %zu, \"audio\": %zu}",
                            x->count, x->dimensions, (unsigned)x->scalar < 5 ? scalars[x->scalar] : "unknown", x->counts[0],
                            x->counts[1], x->counts[2], x->counts[3]);
        /* Which search /v1/search runs by default, and what its knobs can act on. */
        if (model->ann) {
            const uform_index_ann_description_t *a = &model->ann_description;
            serve_buffer_text(out, ", \"kind\": \"approximate\", \"recipe\": ");
            serve_buffer_json_string(out, a->recipe, strnlen(a->recipe, sizeof a->recipe));
            serve_buffer_printf(out, ", \"lists\": %zu, \"graph\": %s, \"train_rows\": %zu}", a->lists, a->graph ? "true" : "false",
                                a->train_rows);
        } else {
            serve_buffer_text(out, ", \"kind\": \"exact\", \"recipe\": null}");
        }
    } else {
        serve_buffer_text(out, "null");
    }
    serve_buffer_text(out, "}");
}

unsigned serve_models(serve_request_t *request) {
    const serve_model_t *model = &request->server->model;
    if (request->tail[0]) {
        if (strcmp(request->tail, model->name) != 0)
            return serve_error(&request->answer, 404, "model_not_found", NULL, "the model '%s' is not served here: this server serves '%s'",
                               request->tail, model->name);
        write_model(&request->answer, model);
        serve_buffer_text(&request->answer, "\n");
        return 200;
    }
    serve_buffer_text(&request->answer, "{\"object\": \"list\", \"data\": [");
    write_model(&request->answer, model);
    serve_buffer_text(&request->answer, "]}\n");
    return 200;
}

unsigned serve_metrics_page(serve_request_t *request) {
    serve_server_t *server = request->server;
    size_t depths[SERVE_QUEUE_COUNT] = {0};
    int state = atomic_load_explicit(&server->state, memory_order_acquire), ready = state == SERVE_READY;
    /* The batcher is set before the state leaves LOADING (release), and freed only after the daemon stopped. */
    if (state != SERVE_LOADING && server->batcher) serve_batcher_depths(server->batcher, depths);
    const char *queues[SERVE_QUEUE_COUNT];
    for (int q = 0; q < SERVE_QUEUE_COUNT; ++q) queues[q] = serve_queue_name(q);
    serve_metrics_labels_t labels = {serve_route_labels, SERVE_ROUTE_SLOTS, queues, SERVE_QUEUE_COUNT, depths};
    serve_metrics_render(&server->metrics, &labels, ready, &request->answer);
    request->content_type = "text/plain; version=0.0.4; charset=utf-8";
    return 200;
}

unsigned serve_page(serve_request_t *request) {
    serve_buffer_append(&request->answer, serve_page_html, serve_page_html_size);
    request->content_type = "text/html; charset=utf-8";
    return 200;
}

/* ---- /media/ROW -------------------------------------------------------------------------------- */

static int starts(const unsigned char *bytes, size_t size, size_t at, const char *magic) {
    size_t length = strlen(magic);
    return size >= at + length && memcmp(bytes + at, magic, length) == 0;
}

/* A browser's content type from a file's first bytes (never its name); `modality` as indexed
 * tells audio from video in containers that hold either. */
static const char *content_type(const unsigned char *b, size_t n, uform_modality_t modality) {
    int audio = modality == UFORM_MODALITY_AUDIO;
    if (starts(b, n, 0, "\x89PNG")) return "image/png";
    if (starts(b, n, 0, "\xFF\xD8\xFF")) return "image/jpeg";
    if (starts(b, n, 0, "GIF8")) return "image/gif";
    if (starts(b, n, 0, "RIFF") && starts(b, n, 8, "WEBP")) return "image/webp";
    if (starts(b, n, 0, "RIFF") && starts(b, n, 8, "WAVE")) return "audio/wav";
    if (starts(b, n, 0, "RIFF") && starts(b, n, 8, "AVI ")) return "video/x-msvideo";
    if (starts(b, n, 0, "BM")) return "image/bmp";
    if (starts(b, n, 0, "fLaC")) return "audio/flac";
    if (starts(b, n, 0, "OggS")) return audio ? "audio/ogg" : "video/ogg";
    if (starts(b, n, 0, "ID3")) return "audio/mpeg";
    if (starts(b, n, 4, "ftyp")) return audio ? "audio/mp4" : "video/mp4";
    if (starts(b, n, 0, "\x1A\x45\xDF\xA3")) return audio ? "audio/webm" : "video/webm";
    if (n >= 2 && b[0] == 0xFF && (b[1] & 0xF6) == 0xF0) return "audio/aac";
    if (n >= 2 && b[0] == 0xFF && (b[1] & 0xE0) == 0xE0) return "audio/mpeg";
    if (modality == UFORM_MODALITY_TEXT) return "text/plain; charset=utf-8";
    return "application/octet-stream";
}

/* A row number: decimal digits only, no sign, no leading zero, below 2^63. */
static int parse_row(const char *text, uint64_t *row) {
    size_t length = strlen(text);
    if (length == 0 || length > 18 || (length > 1 && text[0] == '0')) return -1;
    uint64_t value = 0;
    for (size_t i = 0; i < length; ++i) {
        if (text[i] < '0' || text[i] > '9') return -1;
        value = value * 10 + (uint64_t)(text[i] - '0');
    }
    *row = value;
    return 0;
}

/* One "bytes=" range of a file of `size` bytes: 1 with [first, last], 0 when absent or not one
 * simple range (the whole file is sent), -1 when it cannot be satisfied. */
static int parse_range(const char *header, uint64_t size, uint64_t *first, uint64_t *last) {
    if (!header || strncmp(header, "bytes=", 6) != 0 || strchr(header, ',')) return 0;
    const char *at = header + 6;
    char *end = NULL;
    if (*at == '-') { /* the last N bytes */
        unsigned long long suffix = strtoull(at + 1, &end, 10);
        if (end == at + 1 || *end) return 0;
        if (suffix == 0 || size == 0) return -1;
        *first = suffix >= size ? 0 : size - suffix, *last = size - 1;
        return 1;
    }
    if (*at < '0' || *at > '9') return 0;
    unsigned long long start = strtoull(at, &end, 10);
    if (*end != '-') return 0;
    const char *rest = end + 1;
    unsigned long long stop = size ? size - 1 : 0;
    if (*rest) {
        if (*rest < '0' || *rest > '9') return 0;
        stop = strtoull(rest, &end, 10);
        if (*end || stop < start) return 0;
        if (stop >= size) stop = size ? size - 1 : 0;
    }
    if (start >= size) return -1;
    *first = start, *last = stop;
    return 1;
}

unsigned serve_media(serve_request_t *request) {
    const serve_model_t *model = &request->server->model;
    serve_buffer_t *out = &request->answer;
    uint64_t row = 0;
    if (!model->index)
        return serve_error(out, 404, "index_not_found", NULL, "this server has no index, so no media (start it with --index)");
    if (parse_row(request->tail, &row) || row >= model->index_description.count)
        return serve_error(out, 404, "not_found", NULL, "no media row '%s': rows are 0 to %zu, as /v1/search names them",
                           request->tail, model->index_description.count ? model->index_description.count - 1 : 0);
    const char *stored = NULL;
    size_t length = 0;
    uform_modality_t modality = UFORM_MODALITY_TEXT;
    char path[4096];
    if (uform_index_item(model->index, (size_t)row, &modality, &stored, &length) != UFORM_OK || length == 0 ||
        length >= sizeof path || memchr(stored, 0, length))
        return serve_error(out, 404, "not_found", NULL, "row %llu of the index names no file", (unsigned long long)row);
    memcpy(path, stored, length);
    path[length] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat info;
    if (fd < 0 || fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        int error = fd < 0 ? errno : 0;
        if (fd >= 0) close(fd);
        return serve_error(out, 404, "not_found", NULL, "row %llu's file cannot be served: %s", (unsigned long long)row,
                           error ? strerror(error) : "not a regular file");
    }
    unsigned char head[64];
    ssize_t got = pread(fd, head, sizeof head, 0);
    const char *type = content_type(head, got > 0 ? (size_t)got : 0, modality);
    uint64_t size = (uint64_t)info.st_size, first = 0, last = size ? size - 1 : 0;
    int range = parse_range(MHD_lookup_connection_value(request->connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE), size,
                            &first, &last);
    if (range < 0) {
        close(fd);
        request->status = 416;
        struct MHD_Response *response = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!response) return serve_error(out, 500, "internal_error", NULL, "cannot make a response");
        char value[64];
        snprintf(value, sizeof value, "bytes */%llu", (unsigned long long)size);
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_RANGE, value);
        MHD_queue_response(request->connection, 416, response);
        MHD_destroy_response(response);
        return 0;
    }
    uint64_t bytes = size ? last - first + 1 : 0;
    struct MHD_Response *response = MHD_create_response_from_fd_at_offset64(bytes, fd, first);
    if (!response) {
        close(fd);
        return serve_error(out, 500, "internal_error", NULL, "cannot make a response for row %llu", (unsigned long long)row);
    }
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(response, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "private, max-age=3600");
    request->status = range ? 206 : 200;
    if (range) {
        char value[96];
        snprintf(value, sizeof value, "bytes %llu-%llu/%llu", (unsigned long long)first, (unsigned long long)last,
                 (unsigned long long)size);
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_RANGE, value);
    }
    MHD_queue_response(request->connection, request->status, response);
    MHD_destroy_response(response);
    return 0;
}
