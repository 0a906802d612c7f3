/* The flags of `uform serve` and its --help (serve.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

static const char usage_line[] =
    "usage: uform serve CKPT [--index INDEX] [--host 127.0.0.1] [--port 8080] [--threads N] [--bf16 | --f32 | --int8]\n"
    "                   [--max-batch N] [--max-wait-us N] [--max-queue N] [--max-body BYTES] [--timeout S]\n"
    "                   [--api-key KEY | --api-key-file FILE] [options]\n";

static const char usage_text[] =
    "\n"
    "Serves CKPT over HTTP: OpenAI-compatible embeddings, search over INDEX, next-byte choices, a\n"
    "search page at / and Prometheus metrics. Requests of all clients are batched on one executor.\n"
    "\n"
    "routes (docs/serve.md):\n"
    "  POST /v1/embeddings   {\"input\": \"text\" | [\"text\", {\"image\": \"data:...\"}, ...], \"model\",\n"
    "                        \"encoding_format\": \"float\"|\"base64\", \"dimensions\"}\n"
    "  POST /v1/search       {\"query\": \"text\" | {\"image\": \"data:...\"}, \"top_k\", \"modality\",\n"
    "                        \"nprobe\", \"ef\", \"rerank\", \"exact\"}\n"
    "  POST /v1/choose       {\"text\": \"yes or n\", \"choices\": \"oa\"}\n"
    "  GET  /health  /v1/models  /metrics  /  /media/ROW\n"
    "\n"
    "options:\n"
    "  --index INDEX          an index made by `uform index` with CKPT: /v1/search and the page\n"
    "  --exact                search the index exactly even when INDEX's approximate structure\n"
    "                         (X.index: X.faiss, from `uform index --ann`) lies beside it, which is\n"
    "                         used otherwise, as `uform search` does (a .faiss of another index is\n"
    "                         refused at start)\n"
    "  --captions FILE        captions of the indexed files: a manifest in the training format, pairs\n"
    "                         {\"text\", \"image\" | \"video\" | \"audio\"} (paths relative to its folder),\n"
    "                         as `uform synth` writes them; search hits and the page show them\n"
    "  --host HOST            the address to listen on (default 127.0.0.1: this machine only)\n"
    "  --port N               the port (default 8080; 0: any free port, printed at start)\n"
    "  --threads N            compute threads (default 0: the library's choice)\n"
    "  --decode-threads N     threads decoding media beside compute (default 1)\n"
    "  --bf16, --f32          the compute (default F32, as every command; BF16 is ~1e-2 relative from\n"
    "                         F32)\n"
    "  --int8                 I8 compute: the trunk's products in int8 (fastest; docs/int8.md)\n"
    "  --max-batch N          items per batch (default 32)\n"
    "  --max-wait-us N        how long a batch waits for more items after its first one\n"
    "                         (default 0: it takes what is queued when the executor is free)\n"
    "  --spin-us N            how long the compute thread polls for the next request after a batch\n"
    "                         before it sleeps, yielding its core to anything else that runs\n"
    "                         (default 250; 0: sleep at once)\n"
    "  --max-queue N          items waiting for a batch, all clients together; more answer 429\n"
    "                         (default 4096)\n"
    "  --max-body BYTES       the largest request body (default 32M; K, M and G suffixes); larger\n"
    "                         answer 413\n"
    "  --timeout S            seconds a request may take before it answers 504, and the idle time\n"
    "                         after which a connection is closed (default 30; 0: none)\n"
    "  --api-key KEY          require \"Authorization: Bearer KEY\" (not on /health, /metrics and /)\n"
    "  --api-key-file FILE    the same, the key being FILE's first line (keeps it out of `ps`)\n"
    "  --http-threads N       threads parsing requests and writing answers (default 1)\n"
    "  --max-connections N    open connections at once (default 1024)\n"
    "  --quiet                no startup lines\n"
    "\n"
    "SIGINT or SIGTERM stops accepting, answers every request in flight and exits 0 (a second\n"
    "signal exits at once).\n"
    "\n"
    "exit status: 0 stopped by a signal after draining; 1 failed (the port is taken, the checkpoint\n"
    "or index cannot be loaded: the reason is printed); 2 usage error.\n";

static int usage_error(const char *format, const char *detail) {
    fputs(usage_line, stderr);
    fprintf(stderr, "uform serve: ");
    fprintf(stderr, format, detail);
    fprintf(stderr, " (see uform serve --help)\n");
    return 2;
}

/* A non-negative decimal integer, nothing else. */
static int parse_count(const char *text, uint64_t *value) {
    if (!text || !isdigit((unsigned char)*text)) return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long parsed = strtoull(text, &end, 10);
    if (errno || *end) return -1;
    *value = parsed;
    return 0;
}

/* Bytes with an optional K, M or G (powers of 1024). */
static int parse_bytes(const char *text, uint64_t *value) {
    if (!text || !isdigit((unsigned char)*text)) return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long parsed = strtoull(text, &end, 10);
    if (errno) return -1;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10, ++end;
    else if (*end == 'M' || *end == 'm') shift = 20, ++end;
    else if (*end == 'G' || *end == 'g') shift = 30, ++end;
    if (*end == 'B' || *end == 'b') ++end;
    if (*end || parsed > (UINT64_MAX >> shift)) return -1;
    *value = (uint64_t)parsed << shift;
    return 0;
}

int serve_model_flag(serve_model_options_t *options, const char *flag, const char *value) {
    uint64_t number = 0;
    const char *const compute_flags[3] = {"--f32", "--bf16", "--int8"}; /* by uform_compute_t */
    int wanted = -1;
    for (int c = 0; c < 3; ++c)
        if (strcmp(flag, compute_flags[c]) == 0) wanted = c;
    if (wanted >= 0) {
        if (options->compute >= 0 && options->compute != wanted) {
            fputs(usage_line, stderr);
            fprintf(stderr, "uform serve: %s and %s exclude each other (one compute per model) (see uform serve --help)\n",
                    compute_flags[options->compute], flag);
            return -2;
        }
        options->compute = wanted;
        return 0;
    }
    if (strcmp(flag, "--exact") == 0) {
        options->exact = 1;
        return 0;
    }
    if (strcmp(flag, "--threads") == 0 || strcmp(flag, "--decode-threads") == 0) {
        if (parse_count(value, &number) || number > 4096) {
            usage_error("%s takes a number of threads", flag);
            return -2;
        }
        if (flag[2] == 't') options->threads = (size_t)number;
        else options->decode_threads = number ? (size_t)number : 1;
        return 1;
    }
    return -1;
}

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

int serve_options_parse(int argc, char **argv, serve_options_t *options) {
    memset(options, 0, sizeof *options);
    options->host = "127.0.0.1", options->port = 8080;
    options->max_batch = 32, options->max_wait_us = 0, options->spin_us = 250, options->max_queue = 4096;
    options->max_body = (size_t)32 << 20, options->timeout = 30, options->http_threads = 1;
    options->max_connections = 1024, options->model.decode_threads = 1, options->model.compute = -1;
    const char *key = NULL, *key_file = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t number = 0;
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            fputs(usage_line, stdout);
            fputs(usage_text, stdout);
            serve_options_free(options);
            return 0;
        }
        int used = serve_model_flag(&options->model, flag, value);
        if (used == -2) return serve_options_free(options), 2;
        if (used >= 0) {
            i += used;
            continue;
        }
        /* The compute flags, which take no value, were taken by serve_model_flag above. */
        if (flag[0] == '-' && flag[1] == '-' && strcmp(flag, "--quiet") != 0 && !value)
            return serve_options_free(options), usage_error("%s needs a value", flag);
        if (strcmp(flag, "--index") == 0) options->index = argv[++i];
        else if (strcmp(flag, "--captions") == 0) options->captions = argv[++i];
        else if (strcmp(flag, "--host") == 0) options->host = argv[++i];
        else if (strcmp(flag, "--port") == 0) {
            if (parse_count(argv[++i], &number) || number > 65535)
                return serve_options_free(options), usage_error("--port takes a port number (0-65535), not '%s'", argv[i]);
            options->port = (unsigned)number;
        } else if (strcmp(flag, "--max-batch") == 0) {
            if (parse_count(argv[++i], &number) || number == 0 || number > 65536)
                return serve_options_free(options), usage_error("--max-batch takes a number of items (1-65536), not '%s'", argv[i]);
            options->max_batch = (size_t)number;
        } else if (strcmp(flag, "--max-wait-us") == 0) {
            if (parse_count(argv[++i], &number) || number > 60000000)
                return serve_options_free(options), usage_error("--max-wait-us takes microseconds (at most 60 s), not '%s'", argv[i]);
            options->max_wait_us = number;
        } else if (strcmp(flag, "--spin-us") == 0) {
            if (parse_count(argv[++i], &number) || number > 1000000)
                return serve_options_free(options), usage_error("--spin-us takes microseconds (at most 1 s), not '%s'", argv[i]);
            options->spin_us = number;
        } else if (strcmp(flag, "--max-queue") == 0) {
            if (parse_count(argv[++i], &number) || number == 0 || number > 100000000)
                return serve_options_free(options), usage_error("--max-queue takes a number of items (1-100000000), not '%s'", argv[i]);
            options->max_queue = (size_t)number;
        } else if (strcmp(flag, "--max-body") == 0) {
            if (parse_bytes(argv[++i], &number) || number < 64 || number > ((uint64_t)4 << 30))
                return serve_options_free(options), usage_error("--max-body takes bytes (64 to 4G, with K, M or G), not '%s'", argv[i]);
            options->max_body = (size_t)number;
        } else if (strcmp(flag, "--timeout") == 0) {
            char *end = NULL;
            double seconds = strtod(argv[++i], &end);
            if (!end || *end || end == argv[i] || !isfinite(seconds) || seconds < 0 || seconds > 86400)
                return serve_options_free(options), usage_error("--timeout takes seconds (0 to 86400), not '%s'", argv[i]);
            options->timeout = seconds;
        } else if (strcmp(flag, "--api-key") == 0) key = argv[++i];
        else if (strcmp(flag, "--api-key-file") == 0) key_file = argv[++i];
        else if (strcmp(flag, "--http-threads") == 0) {
            if (parse_count(argv[++i], &number) || number == 0 || number > 256)
                return serve_options_free(options), usage_error("--http-threads takes a number of threads (1-256), not '%s'", argv[i]);
            options->http_threads = (size_t)number;
        } else if (strcmp(flag, "--max-connections") == 0) {
            if (parse_count(argv[++i], &number) || number == 0 || number > 1000000)
                return serve_options_free(options), usage_error("--max-connections takes a count, not '%s'", argv[i]);
            options->max_connections = (size_t)number;
        } else if (strcmp(flag, "--quiet") == 0) options->quiet = 1;
        else if (flag[0] == '-') return serve_options_free(options), usage_error("unknown flag %s", flag);
        else if (!options->model.checkpoint) options->model.checkpoint = flag;
        else return serve_options_free(options), usage_error("one checkpoint per server; '%s' is a second", flag);
    }
    if (!options->model.checkpoint) return serve_options_free(options), usage_error("missing CKPT%s", "");
    if (options->model.exact && !options->index)
        return serve_options_free(options), usage_error("--exact chooses how an index is searched: give --index too%s", "");
    if (options->captions && !options->index)
        return serve_options_free(options), usage_error("--captions names the files of an index: give --index too%s", "");
    if (key && key_file) return serve_options_free(options), usage_error("give --api-key or --api-key-file, not both%s", "");
    if (key && !*key) return serve_options_free(options), usage_error("--api-key is empty%s", "");
    if (key) options->api_key = strdup(key);
    if (key_file && !(options->api_key = read_key_file(key_file))) return serve_options_free(options), 2;
    return -1;
}

void serve_options_free(serve_options_t *options) {
    if (options->api_key) {
        memset(options->api_key, 0, strlen(options->api_key));
        free(options->api_key);
    }
    options->api_key = NULL;
}
