/*
 * POST /v1/search over the server's --index: {"query": a text, or {"text"|"image"|"audio"|"video":
 * ...}, "top_k": K (default 10), "modality": a name or a list of names (default: all)}. Answers
 * {"object": "list", "data": [{"rank", "item", "score", "modality", "path", "caption" (with
 * --captions, when known), "media"}], "model",
 * "usage"}: the exact top K by cosine, best first, ties by item number (uform_index_search).
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"

enum { MAX_TOP = 1000 };

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
    const cJSON *json = request->json, *query = cJSON_GetObjectItemCaseSensitive(json, "query");
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
    serve_input_t input;
    if ((status = serve_read_input(request, query, "query", &input))) return status;
    size_t width = server->model.description.embedding, bound = serve_media_bound(&input);
    if (!(request->items = calloc(1, sizeof *request->items)) || !(request->outputs = malloc(width * sizeof(float))) ||
        !(request->hits = malloc((size_t)top * sizeof *request->hits)) || (bound && !(request->media = malloc(bound))))
        return serve_error(out, 503, "out_of_memory", NULL, "out of memory for a search");
    serve_item_t *item = request->items;
    item->job = &request->job, item->queue = input.modality, item->output = request->outputs;
    if (input.modality == UFORM_MODALITY_TEXT) {
        item->bytes = (const unsigned char *)input.value->valuestring, item->size = strlen(input.value->valuestring);
    } else {
        size_t size = 0;
        if ((status = serve_decode_media(request, &input, "query", request->media, &size))) return status;
        item->bytes = request->media, item->size = size;
    }
    request->query_modality = input.modality;
    request->tokens = serve_model_tokens(&server->model, input.modality, item->bytes, item->size);
    serve_job_t *job = &request->job;
    job->items = request->items, job->count = 1;
    job->search = 1, job->top = (size_t)top, job->modalities = modalities, job->hits = request->hits;
    return 0;
}

unsigned serve_search_answer(serve_request_t *request) {
    const serve_model_t *model = &request->server->model;
    serve_buffer_t *out = &request->answer;
    static const char *const names[4] = {"text", "image", "video", "audio"};
    serve_buffer_text(out, "{\"object\": \"list\", \"data\": [");
    for (size_t i = 0; i < request->job.hits_count; ++i) {
        const uform_index_hit_t *hit = &request->hits[i];
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
                        names[request->query_modality], request->tokens, request->tokens);
    return 200;
}
