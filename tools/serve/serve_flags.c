/*
 * The flags of `uform serve` as a table of the `uform` command line (tools/cli.h): the same parser,
 * value checks and --help writer as every other command. Only what a table cannot say lives here:
 * the ranges of a few values, flags that need each other, and reading --api-key-file.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "serve.h"

static void defaults(void *pointer) {
    serve_options_t *options = pointer;
    options->host = "127.0.0.1", options->port = 8080;
    options->max_batch = 32, options->max_wait_us = 0, options->spin_us = 250, options->max_queue = 4096;
    options->max_body = (size_t)32 << 20, options->timeout = 30, options->http_threads = 1;
    options->max_connections = 1024, options->model.decode_threads = 1;
}

#define O serve_options_t
static const cli_flag_t flags[] = {
    CLI_FLAG("--index", CLI_TEXT, O, index, "INDEX", "an index made by `uform index` with CKPT: /v1/search and the page"),
    CLI_SWITCH_FLAG("--exact", O, model.exact,
                    "search the index exactly even when INDEX's approximate structure\n"
                    "(X.index: X.faiss, from `uform index --ann`) lies beside it, which is\n"
                    "used otherwise, as `uform search` does (a .faiss of another index is\n"
                    "refused at start)"),
    CLI_FLAG("--captions", CLI_TEXT, O, captions, "FILE",
             "captions of the indexed files: a manifest in the training format, pairs\n"
             "{\"text\", \"image\" | \"video\" | \"audio\"} (paths relative to its folder),\n"
             "as `uform synth` writes them; search hits and the page show them"),
    CLI_FLAG("--host", CLI_TEXT, O, host, "HOST", "the address to listen on (default 127.0.0.1: this machine only)"),
    CLI_FLAG("--port", CLI_SIZE, O, port, "N", "the port (default 8080; 0: any free port, printed at start)"),
    CLI_THREADS(O, model.threads),
    CLI_FLAG("--decode-threads", CLI_SIZE, O, model.decode_threads, "N", "threads decoding media beside compute (default 1)"),
    CLI_INFERENCE_COMPUTE_FLAGS(O, model.compute),
    CLI_FLAG("--max-batch", CLI_POSITIVE, O, max_batch, "N", "items per batch (default 32)"),
    CLI_FLAG("--max-wait-us", CLI_U64, O, max_wait_us, "N",
             "how long a batch waits for more items after its first one\n"
             "(default 0: it takes what is queued when the executor is free)"),
    CLI_FLAG("--spin-us", CLI_U64, O, spin_us, "N",
             "how long the compute thread polls for the next request after a batch\n"
             "before it sleeps, yielding its core to anything else that runs\n"
             "(default 250; 0: sleep at once)"),
    CLI_FLAG("--max-queue", CLI_POSITIVE, O, max_queue, "N",
             "items waiting for a batch, all clients together; more answer 429\n"
             "(default 4096)"),
    CLI_FLAG("--max-body", CLI_BYTES, O, max_body, "BYTES",
             "the largest request body (default 32M; K, M and G suffixes); larger\n"
             "answer 413"),
    CLI_FLAG("--timeout", CLI_NUMBER, O, timeout, "S",
             "seconds a request may take before it answers 504, and the idle time\n"
             "after which a connection is closed (default 30; 0: none)"),
    CLI_FLAG("--api-key", CLI_TEXT, O, key_flag, "KEY", "require \"Authorization: Bearer KEY\" (not on /health, /metrics and /)"),
    CLI_FLAG("--api-key-file", CLI_TEXT, O, key_file, "FILE", "the same, the key being FILE's first line (keeps it out of `ps`)"),
    CLI_FLAG("--http-threads", CLI_POSITIVE, O, http_threads, "N", "threads parsing requests and writing answers (default 1)"),
    CLI_FLAG("--max-connections", CLI_POSITIVE, O, max_connections, "N", "open connections at once (default 1024)"),
    CLI_SWITCH_FLAG("--quiet", O, quiet, "no startup lines"),
    CLI_FLAGS_END,
};
#undef O

/* Runs nothing: uform-serve's main parses with this table and runs the server itself. */
static int no_run(void *options, const cli_parsed_t *parsed) {
    (void)options, (void)parsed;
    return 1;
}

static const cli_command_t serve_command = {
    .name = "serve",
    .summary = "embeddings, search and choices over HTTP (OpenAI-compatible), with a page",
    .usage = "CKPT [--index INDEX] [--host 127.0.0.1] [--port 8080] [--threads N] [--bf16 | --f32 | --int8]\n"
             "                   [--max-batch N] [--max-wait-us N] [--max-queue N] [--max-body BYTES] [--timeout S]\n"
             "                   [--api-key KEY | --api-key-file FILE] [options]",
    .description =
        "Serves CKPT over HTTP: OpenAI-compatible embeddings, search over INDEX, next-byte choices, a\n"
        "search page at / and Prometheus metrics. Requests of all clients are batched on one executor.\n"
        "\n"
        "routes (docs/serve.md):\n"
        "  POST /v1/embeddings   {\"input\": \"text\" | [\"text\", {\"image\": \"data:...\"}, ...], \"model\",\n"
        "                        \"encoding_format\": \"float\"|\"base64\", \"dimensions\"}\n"
        "  POST /v1/search       {\"query\": \"text\" | {\"image\": \"data:...\"}, \"top_k\", \"modality\",\n"
        "                        \"nprobe\", \"ef\", \"rerank\", \"exact\"}\n"
        "  POST /v1/choose       {\"text\": \"yes or n\", \"choices\": \"oa\"}\n"
        "  GET  /health  /v1/models  /metrics  /  /media/ROW\n",
    .epilogue = "SIGINT or SIGTERM stops accepting, answers every request in flight and exits 0 (a second\n"
                "signal exits at once).\n",
    .statuses = "0 stopped by a signal after draining; 1 failed (the port is taken, the checkpoint\n"
                "or index cannot be loaded: the reason is printed); 2 usage error.",
    .flags = flags,
    .options_size = sizeof(serve_options_t),
    .defaults = defaults,
    .positional_min = 1,
    .positional_max = 1,
    .run = no_run,
    .program = "uform-serve",
};

static char *read_key_file(const char *path) {
    FILE *file = fopen(path, "r");
    if (!file) {
        fprintf(stderr, "uform serve: cannot read --api-key-file '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    char line[4096];
    char *got = fgets(line, sizeof line, file);
    fclose(file);
    if (!got) line[0] = 0;
    size_t length = strcspn(line, "\r\n");
    line[length] = 0;
    while (length && isspace((unsigned char)line[length - 1])) line[--length] = 0;
    char *start = line;
    while (isspace((unsigned char)*start)) ++start;
    if (!*start) {
        fprintf(stderr, "uform serve: --api-key-file '%s' holds no key on its first line\n", path);
        return NULL;
    }
    return strdup(start);
}

/* The ranges a table cannot state; answers 0, or 2 after printing the usage error. */
static int check_ranges(const serve_options_t *options) {
    const cli_command_t *c = &serve_command;
    if (options->port > 65535) return cli_usage_error(c, "--port takes a port number (0-65535), not %zu", options->port);
    if (options->model.threads > 4096) return cli_usage_error(c, "--threads takes a number of threads (at most 4096)");
    if (options->model.decode_threads > 4096) return cli_usage_error(c, "--decode-threads takes a number of threads (at most 4096)");
    if (options->max_batch > 65536) return cli_usage_error(c, "--max-batch takes a number of items (1-65536), not %zu", options->max_batch);
    if (options->max_wait_us > 60000000)
        return cli_usage_error(c, "--max-wait-us takes microseconds (at most 60 s), not %llu", (unsigned long long)options->max_wait_us);
    if (options->spin_us > 1000000)
        return cli_usage_error(c, "--spin-us takes microseconds (at most 1 s), not %llu", (unsigned long long)options->spin_us);
    if (options->max_queue > 100000000)
        return cli_usage_error(c, "--max-queue takes a number of items (1-100000000), not %zu", options->max_queue);
    if (options->max_body < 64 || options->max_body > ((size_t)4 << 30))
        return cli_usage_error(c, "--max-body takes bytes (64 to 4G, with K, M or G), not %zu", options->max_body);
    if (!(options->timeout >= 0 && options->timeout <= 86400))
        return cli_usage_error(c, "--timeout takes seconds (0 to 86400), not %g", options->timeout);
    if (options->http_threads > 256) return cli_usage_error(c, "--http-threads takes a number of threads (1-256), not %zu", options->http_threads);
    if (options->max_connections > 1000000) return cli_usage_error(c, "--max-connections takes a count (1-1000000), not %zu", options->max_connections);
    return 0;
}

int serve_options_parse(int argc, char **argv, serve_options_t *options) {
    cli_parsed_t parsed;
    int status = cli_parse(&serve_command, argc, argv, options, &parsed);
    if (status != -1) return status;
    options->model.checkpoint = parsed.positional[0];
    cli_parsed_free(&serve_command, options, &parsed);
    /* Asking for no decode threads means the least there is: one. */
    if (options->model.decode_threads == 0) options->model.decode_threads = 1;
    if ((status = check_ranges(options))) return status;
    const cli_command_t *c = &serve_command;
    if (options->model.exact && !options->index)
        return cli_usage_error(c, "--exact chooses how an index is searched: give --index too");
    if (options->captions && !options->index) return cli_usage_error(c, "--captions names the files of an index: give --index too");
    if (options->key_flag && options->key_file) return cli_usage_error(c, "give --api-key or --api-key-file, not both");
    if (options->key_flag && !*options->key_flag) return cli_usage_error(c, "--api-key is empty");
    if (options->key_flag && !(options->api_key = strdup(options->key_flag)))
        return fprintf(stderr, "uform serve: out of memory\n"), 1;
    if (options->key_file && !(options->api_key = read_key_file(options->key_file))) return 2;
    return -1;
}

void serve_options_free(serve_options_t *options) {
    if (options->api_key) {
        memset(options->api_key, 0, strlen(options->api_key));
        free(options->api_key);
    }
    options->api_key = NULL;
}
