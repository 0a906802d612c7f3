/*
 * Error answers (api.h): the OpenAI-style error body, and the one place where a library status
 * becomes an HTTP answer: the batcher, the searches and every library call a route makes answer a
 * uform_status_t with a message, and this table alone says which HTTP status and error code each
 * one is.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api.h"

unsigned serve_error(serve_buffer_t *out, unsigned status, const char *code, const char *param, const char *format, ...) {
    const char *type = status == 401   ? "authentication_error"
                       : status == 429 ? "rate_limit_error"
                       : status >= 500 ? "server_error"
                                       : "invalid_request_error";
    char message[1024];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(message, sizeof message, format, arguments);
    va_end(arguments);
    out->length = 0;
    serve_buffer_text(out, "{\"error\": {\"message\": ");
    serve_buffer_json_string(out, message, strlen(message));
    serve_buffer_text(out, ", \"type\": \"");
    serve_buffer_text(out, type);
    serve_buffer_text(out, "\", \"param\": ");
    if (param) serve_buffer_json_string(out, param, strlen(param));
    else serve_buffer_text(out, "null");
    serve_buffer_text(out, ", \"code\": \"");
    serve_buffer_text(out, code);
    serve_buffer_text(out, "\"}}\n");
    return status;
}

typedef struct http_mapping_t {
    uform_status_t status;
    unsigned http;
    const char *code;
} http_mapping_t;

/* Inputs are checked before a job is queued, so a library failure is the server's trouble (5xx),
 * except where the status itself names the client's input or a limit it ran into. */
static const http_mapping_t mappings[] = {
    {UFORM_INVALID_ARGUMENT, 400, "invalid_value"},     /* a value the call refused (a search knob) */
    {UFORM_FORMAT, 422, "undecodable_input"},           /* an input's bytes do not decode */
    {UFORM_UNSUPPORTED, 422, "undecodable_input"},      /* an input in a format this build cannot decode */
    {UFORM_CONTENDED, 429, "queue_full"},               /* the batcher's queues are full now */
    {UFORM_OUT_OF_MEMORY, 503, "out_of_memory"},
    {UFORM_CANCELLED, 503, "shutting_down"},            /* the batcher is stopping */
    {UFORM_TIMEOUT, 504, "timeout"},                    /* the request's deadline (--timeout) passed */
};

unsigned serve_status_error(serve_buffer_t *out, uform_status_t status, const char *param, const char *format, ...) {
    unsigned http = 500;
    const char *code = "internal_error";
    for (size_t i = 0; i < sizeof mappings / sizeof *mappings; ++i)
        if (mappings[i].status == status) http = mappings[i].http, code = mappings[i].code;
    char message[1024];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(message, sizeof message, format, arguments);
    va_end(arguments);
    return serve_error(out, http, code, param, "%s", message);
}
