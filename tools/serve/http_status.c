/*
 * The one place where a library status becomes an HTTP answer (api.h): the batcher, the
 * searches and every library call a route makes answer a uform_status_t with a message, and this
 * table alone says which HTTP status and OpenAI-style error code each one is.
 */
#include <stdarg.h>
#include <stdio.h>

#include "api.h"

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
