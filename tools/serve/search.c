/*
 * POST /v1/search over the server's --index: {"query": a text, or {"text"|"image"|"audio"|"video":
 * ...}, "top_k": K (default 10), "modality": a name or a list of names (default: all), and for an
 * index with a .faiss beside it "nprobe", "ef", "rerank" (uform search's --nprobe, --ef, --rerank)
 * and "exact": true (--exact)}. Answers {"object": "list", "data": [{"rank", "item", "score",
 * "modality", "path", "caption" (with --captions, when known), "media"}], "model", "usage"}: the
 * top K by cosine, best first, ties by item number: exact (uform_index_search, exact_search.c:
 * the follow-up the batcher runs right after the batch that encoded the query, every query of the
 * batch in one call on the compute executor) or through the approximate structure
 * (uform_index_ann_search, here on the HTTP thread once the query is encoded, without an executor).
 * The batcher only encodes: both searches are this route's.
 */
#include <stdlib.h>
#include <string.h>

#include "../ann_choice.h"
#include "api.h"

enum { MAX_TOP = 1000 };
/* The largest rerank a request may ask: each candidate costs the call 12 bytes of scratch and one
 * exact score, so a bound keeps one request from holding the server (the CLI has no such bound). */
enum { MAX_RERANK = 100000 };

/* Reads "nprobe", "ef", "rerank" and "exact", and decides the search as `uform search` does
 * (tools/ann_choice.h): the same refusals, as 400s naming the field. */
static unsigned read_knobs(serve_request_t *request) {
    const serve_model_t *model = &request->server->model;
    const cJSON *json = request->call.json;
    serve_buffer_t *out = &request->answer;
    static const char *const names[3] = {"nprobe", "ef", "rerank"};
    const long long low[3] = {1, 1, 0}, high[3] = {(long long)1 << 40, (long long)1 << 30, MAX_RERANK};
    long long values[3] = {0, 0, 0};
    unsigned knobs = 0, status = 0;
    const char *first = NULL;
    for (int k = 0; k < 3; ++k) {
        const cJSON *member = cJSON_GetObjectItemCaseSensitive(json, names[k]);
        if (!member || cJSON_IsNull(member)) continue;
        if ((status = serve_read_integer(request, json, names[k], low[k], high[k], &values[k]))) return status;
        knobs |= 1u << k;
        if (!first) first = names[k];
    }
    const cJSON *exact = cJSON_GetObjectItemCaseSensitive(json, "exact");
    if (exact && !cJSON_IsNull(exact) && !cJSON_IsBool(exact))
        return serve_error(out, 400, "invalid_type", "exact", "\"exact\" must be true or false");
    int asked_exact = model->exact || cJSON_IsTrue(exact);
    int approximate = model->ann && !asked_exact;
    char why[1024];
    const char *ann_path = model->ann_path ? model->ann_path : "the index's .faiss";
    const char *index_path = model->index_path ? model->index_path : "INDEX";
    if (ann_choice_check_path(knobs, approximate, asked_exact, ann_path, index_path, "", why, sizeof why) ||
        (approximate && ann_choice_check_kind(knobs, &model->ann_description, "", why, sizeof why))) {
        /* The field named is the first knob the reason is about. */
        const char *param = first;
        if (approximate) param = (knobs & ANN_KNOB_NPROBE) && model->ann_description.lists == 0 ? "nprobe" : "ef";
        return serve_error(out, 400, "unsupported_parameter", param, "%s", why);
    }
    request->call.approximate = approximate;
    request->call.nprobe = (size_t)values[0], request->call.ef = (size_t)values[1];
    request->call.rerank = ann_choice_rerank(knobs, (size_t)values[2]);
    return 0;
}

unsigned serve_search_begin(serve_request_t *request) {
    serve_server_t *server = request->server;
    serve_buffer_t *out = &request->answer;
    if (!server->model.index)
        return serve_error(out, 404, "index_not_found", NULL,
                           "this server has no index: start it with `uform serve CKPT --index INDEX` (make one with "
                           "`uform index CKPT FOLDER --out INDEX`)");
    unsigned status = serve_parse_body(request);
    if (!status) status = serve_check_model(request);
    if (status) return status;
    const cJSON *json = request->call.json, *query = cJSON_GetObjectItemCaseSensitive(json, "query");
    if (!query)
        return serve_error(out, 400, "missing_query", "query",
                           "\"query\" is required: a text, or an object like {\"image\": \"data:image/png;base64,...\"}");
    long long top = 10;
    if ((status = serve_read_integer(request, json, "top_k", 1, MAX_TOP, &top))) return status;
    const cJSON *filter = cJSON_GetObjectItemCaseSensitive(json, "modality");
    unsigned modalities = 0;
    if (filter && !cJSON_IsNull(filter)) {
        const cJSON *names = cJSON_IsArray(filter) ? filter->child : filter;
        for (const cJSON *name = names; name; name = cJSON_IsArray(filter) ? name->next : NULL) {
            int modality = cJSON_IsString(name) ? serve_modality_named(name->valuestring) : -1;
            if (modality < 0)
                return serve_error(out, 400, "invalid_value", "modality",
                                   "\"modality\" is one of \"text\", \"image\", \"audio\", \"video\", or a list of them");
            modalities |= 1u << modality;
        }
    }
    if ((status = read_knobs(request))) return status;
    serve_input_t input;
    if ((status = serve_read_input(request, query, "query", &input))) return status;
    size_t width = server->model.description.embedding, bound = serve_media_bound(&input);
    if (!(request->call.items = calloc(1, sizeof *request->call.items)) || !(request->call.outputs = malloc(width * sizeof(float))) ||
        !(request->call.hits = malloc((size_t)top * sizeof *request->call.hits)) || (bound && !(request->call.media = malloc(bound))))
        return serve_status_error(out, UFORM_OUT_OF_MEMORY, NULL, "out of memory for a search");
    serve_item_t *item = request->call.items;
    item->job = &request->call.job, item->queue = input.modality, item->output = request->call.outputs;
    if (input.modality == UFORM_MODALITY_TEXT) {
        item->bytes = (const unsigned char *)input.value->valuestring, item->size = strlen(input.value->valuestring);
    } else {
        size_t size = 0;
        if ((status = serve_decode_media(request, &input, "query", request->call.media, &size))) return status;
        item->bytes = request->call.media, item->size = size;
    }
    request->call.query_modality = input.modality;
    request->call.tokens = serve_model_tokens(&server->model, input.modality, item->bytes, item->size);
    request->call.top = (size_t)top, request->call.modalities = modalities;
    /* The batcher encodes the query; an exact search follows in its batch, an approximate one in
     * serve_search_answer. */
    request->call.job.items = request->call.items, request->call.job.count = 1;
    if (!request->call.approximate) request->call.job.followup = &server->search.followup;
    return 0;
}

/* The approximate search of the encoded query (request->call.outputs, the full embedding), on this
 * HTTP thread: FAISS runs inline (no executor), so the batcher's executor stays free. Answers 0, or
 * the status of the error it wrote. */
static unsigned search_approximate(serve_request_t *request) {
    const serve_model_t *model = &request->server->model;
    size_t dims = model->index_description.dimensions;
    /* The query as the exact search makes it, so both paths score the same query. */
    float *query = request->call.outputs;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_embedding_truncate(query, model->description.embedding, dims, query, &outcome);
    uform_arena_t arena = NULL;
    if (status == UFORM_OK) status = uform_arena_for_executor(NULL, &arena, &outcome);
    uform_index_ann_search_t search = {0};
    if (status == UFORM_OK) {
        search.ann = model->ann, search.arena = arena;
        search.queries = query, search.queries_count = 1, search.queries_columns = dims;
        search.top = request->call.top, search.modalities = request->call.modalities;
        search.nprobe = request->call.nprobe, search.ef = request->call.ef, search.rerank = request->call.rerank;
        status = uform_index_ann_search(&search);
        outcome = search.outcome;
    }
    if (status != UFORM_OK) {
        char line[600];
        uform_outcome_format(&outcome, line, sizeof line);
        uform_arena_free(arena);
        return serve_status_error(&request->answer, status, NULL, "approximate search: %s", line);
    }
    /* An IVF whose probed lists hold fewer eligible items ends the row early (item UINT64_MAX). */
    size_t count = 0;
    while (count < search.hits_per_query && count < request->call.top && search.hits[count].item != UINT64_MAX) ++count;
    memcpy(request->call.hits, search.hits, count * sizeof *request->call.hits);
    request->call.hits_count = count;
    uform_arena_free(arena);
    return 0;
}

unsigned serve_search_answer(serve_request_t *request) {
    const serve_model_t *model = &request->server->model;
    serve_buffer_t *out = &request->answer;
    static const char *const names[4] = {"text", "image", "video", "audio"};
    if (request->call.approximate) {
        unsigned status = search_approximate(request);
        if (status) return status;
    }
    serve_buffer_text(out, "{\"object\": \"list\", \"data\": [");
    for (size_t i = 0; i < request->call.hits_count; ++i) {
        const uform_index_hit_t *hit = &request->call.hits[i];
        const char *path = NULL;
        size_t length = 0;
        uform_modality_t modality = hit->modality;
        uform_index_item(model->index, (size_t)hit->item, &modality, &path, &length);
        serve_buffer_printf(out, "%s{\"rank\": %zu, \"item\": %llu, \"score\": ", i ? ", " : "", i + 1,
                            (unsigned long long)hit->item);
        serve_buffer_float(out, hit->score);
        serve_buffer_printf(out, ", \"modality\": \"%s\", \"path\": ", (unsigned)modality < 4 ? names[modality] : "unknown");
        serve_buffer_json_string(out, path ? path : "", path ? length : 0);
        const serve_captions_t *captions = &request->server->captions;
        if (captions->by_item && hit->item < captions->count && captions->by_item[hit->item]) {
            serve_buffer_text(out, ", \"caption\": ");
            serve_buffer_json_string(out, captions->by_item[hit->item], strlen(captions->by_item[hit->item]));
        }
        serve_buffer_printf(out, ", \"media\": \"/media/%llu\"}", (unsigned long long)hit->item);
    }
    serve_buffer_text(out, "], \"model\": ");
    serve_buffer_json_string(out, model->name, strlen(model->name));
    serve_buffer_printf(out, ", \"query\": {\"modality\": \"%s\"}, \"usage\": {\"prompt_tokens\": %zu, \"total_tokens\": %zu}}\n",
                        names[request->call.query_modality], request->call.tokens, request->call.tokens);
    return 200;
}
