/*
 * libFuzzer target for the request bodies of `uform serve`'s API routes (tools/serve/inputs.c,
 * embeddings.c, search.c, choose.c): any bytes are the body of POST /v1/embeddings, /v1/search and
 * /v1/choose in turn, handed to each route's `begin` directly (no socket, no batch run), as http.c
 * hands a body it has read. A route answers 0 with a job whose items point into the request, or an
 * HTTP status with an OpenAI-style JSON error; never a crash, a leak or an over-read. The server
 * behind it is the tiny checkpoint (UFORM_FUZZ_TINY, a CTest fixture) with an index of two texts
 * and its HNSW structure.
 * Seeds (replay.h): bodies each route accepts (texts, data: URIs in base64 and %-escapes, every option,
 * the approximate search's ef, rerank and exact: the index has an HNSW structure beside it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "replay.h"

const char *const replay_extension = ".json";

static serve_server_t server;
static int ready;

static void close_server(void) { serve_model_close(&server.model); }

/* An index of two short texts, so that search has one (its rows are never searched here). */
static int make_index(serve_model_t *model) {
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    if (uform_arena_for_host(&arena, &outcome) != UFORM_OK) return 0;
    static const char texts[] = "onetwo", paths[] = "t0t1";
    size_t offsets[3] = {0, 3, 6}, path_offsets[3] = {0, 2, 4};
    uform_text_encode_t batch = {model->model, NULL, UFORM_COMPLETION_BLOCKING, {texts, offsets, 2}, UFORM_OUTPUTS_EMBEDDINGS, arena};
    uform_tape_t path_tape = {paths, path_offsets, 2};
    uform_index_builder_t builder = NULL;
    char path[256];
    const char *directory = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/uform-serve-fuzz-%d.index", directory && *directory ? directory : "/tmp", (int)getpid());
    int ok = uform_text_encode(&batch) == UFORM_OK &&
             uform_index_builder_create(model->model, model->description.embedding, UFORM_SCALAR_F32, &builder, &outcome) == UFORM_OK &&
             uform_index_builder_add(builder, UFORM_MODALITY_TEXT, &batch.encoded.embeddings, &path_tape, &outcome) == UFORM_OK &&
             uform_index_builder_write(builder, path, NULL, 0, &outcome) == UFORM_OK &&
             uform_index_open(path, model->model, &model->index, &outcome) == UFORM_OK;
    /* An HNSW structure beside it, so that the approximate knobs (ef, rerank) are accepted and
     * the route's approximate branch is fuzzed; the paths name it in refusals, as `--index` does. */
    char ann_path[256];
    snprintf(ann_path, sizeof ann_path, "%.*s.faiss", (int)(strlen(path) - 6), path);
    uform_index_ann_options_t recipe = {0};
    ok = ok && uform_index_ann_build(model->index, ann_path, &recipe, &outcome) == UFORM_OK &&
         uform_index_ann_open(model->index, ann_path, &model->ann, &outcome) == UFORM_OK &&
         (model->index_path = strdup(path)) && (model->ann_path = strdup(ann_path));
    if (ok) uform_index_ann_describe(model->ann, &model->ann_description);
    unlink(ann_path);
    if (!ok) fprintf(stderr, "serve_body_fuzz: the index: %s%s\n", outcome.message, batch.outcome.message);
    uform_index_builder_free(builder);
    uform_arena_free(arena);
    unlink(path);
    return ok;
}

static void open_server(void) {
    if (ready) return;
    const char *checkpoint = getenv("UFORM_TEST_CHECKPOINT");
    serve_model_options_t options = {checkpoint && *checkpoint ? checkpoint : UFORM_FUZZ_TINY, 1, 1, -1};
    char error[1024];
    server.options.model = options;
    server.options.max_queue = 64;
    if (serve_model_open(&options, NULL, &server.model, error, sizeof error) != 0) {
        fprintf(stderr, "serve_body_fuzz: %s\n", error);
        abort(); /* no model: nothing to fuzz, and the test must fail */
    }
    atexit(close_server);
    if (!make_index(&server.model)) abort();
    ready = 1;
}

typedef unsigned (*begin_fn)(serve_request_t *request);
static const begin_fn routes[3] = {serve_embeddings_begin, serve_search_begin, serve_choose_begin};

/* A refusal is a 4xx or 5xx with {"error": {"message": ...}}; an acceptance a job of items that
 * point into the request, with outputs. */
static void check_answer(const serve_request_t *request, unsigned status) {
    if (status) {
        if (status < 400 || status > 599 || !request->answer.data) __builtin_trap();
        cJSON *error = cJSON_ParseWithLength(request->answer.data, request->answer.length);
        const cJSON *message = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(error, "error"), "message");
        int ok = cJSON_IsString(message) && message->valuestring[0];
        cJSON_Delete(error);
        if (!ok) __builtin_trap();
        return;
    }
    const serve_job_t *job = &request->call.job;
    if (job->count == 0 || job->count > server.options.max_queue || !job->items) __builtin_trap();
    for (size_t i = 0; i < job->count; ++i) {
        const serve_item_t *item = &job->items[i];
        if (item->job != job || !item->output || (item->size && !item->bytes)) __builtin_trap();
        volatile unsigned char sink = item->size ? item->bytes[0] ^ item->bytes[item->size - 1] : 0;
        (void)sink;
    }
}

/* Runs `route` on the body; answers its status (0: accepted). */
static unsigned run_route(int route, const uint8_t *data, size_t size) {
    serve_request_t request;
    memset(&request, 0, sizeof request);
    request.server = &server;
    request.body = (char *)data, request.length = size; /* http.c's body: `length` bytes, not terminated */
    unsigned status = routes[route](&request);
    check_answer(&request, status);
    cJSON_Delete(request.call.json);
    free(request.call.items), free(request.call.outputs), free(request.call.media), free(request.call.hits);
    serve_buffer_free(&request.answer);
    return status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    open_server();
    for (int route = 0; route < 3; ++route) run_route(route, data, size);
    return 0;
}

/* Accepted by some route (each seed is written for one). */
int replay_accepts(const uint8_t *data, size_t size) {
    open_server();
    int accepted = 0;
    for (int route = 0; route < 3; ++route) accepted |= run_route(route, data, size) == 0;
    return accepted;
}

size_t replay_seeds(replay_seed_t *seeds, size_t capacity) {
    open_server();
    const uform_model_description_t *d = &server.model.description;
    char dimensions[64] = "";
    if (d->matryoshka_count) snprintf(dimensions, sizeof dimensions, ", \"dimensions\": %zu", d->matryoshka[0]);
    const char *image = d->modalities & (1u << UFORM_MODALITY_IMAGE) ? "image" : "text";
    char bodies[12][512];
    size_t count = 0;
    snprintf(bodies[count++], 512, "{\"input\": \"a red square\"}");
    snprintf(bodies[count++], 512, "{\"input\": [\"one\", \"two \\u00e9\\n\", {\"text\": \"three\"}], \"model\": \"%s\", "
             "\"encoding_format\": \"base64\"%s}", server.model.name, dimensions);
    snprintf(bodies[count++], 512, "{\"input\": [{\"%s\": \"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB\"}, "
             "{\"%s\": \"data:image/jpeg,%%FF%%D8%%FFab\"}], \"encoding_format\": \"float\"}", image, image);
    snprintf(bodies[count++], 512, "{\"query\": \"a bird\", \"top_k\": 3, \"modality\": [\"text\", \"image\"]}");
    snprintf(bodies[count++], 512, "{\"query\": {\"%s\": \"data:image/webp;base64,UklGRg==\"}, \"modality\": \"text\", "
             "\"model\": null}", image);
    snprintf(bodies[count++], 512, "{\"query\": \"a fish\", \"top_k\": 2, \"ef\": 16, \"rerank\": 2, \"exact\": false, "
             "\"nprobe\": null}");
    snprintf(bodies[count++], 512, "{\"query\": \"a fish\", \"exact\": true, \"modality\": \"text\"}");
    snprintf(bodies[count++], 512, "{\"text\": \"Is it red? Answer: \", \"choices\": \"YN\"}");
    snprintf(bodies[count++], 512, "{\"input\": [{\"text\": \"pick\", \"choices\": [65, 66, \"C\"], \"group\": 0}, "
             "{\"text\": \"\\u65e5\", \"choices\": \"0123456789\"}]}");
    if (count > capacity) return 0;
    for (size_t i = 0; i < count; ++i) {
        seeds[i].size = strlen(bodies[i]);
        if (!(seeds[i].bytes = malloc(seeds[i].size))) return 0;
        memcpy(seeds[i].bytes, bodies[i], seeds[i].size);
    }
    return count;
}
