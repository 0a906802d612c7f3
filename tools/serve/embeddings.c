/*
 * POST /v1/embeddings, OpenAI's shape: {"input": a string, or an array of strings; beyond OpenAI,
 * objects {"text"|"image"|"audio"|"video": ...} with media as data: URIs, "model", "encoding_format":
 * "float" | "base64" (little-endian float32 bytes), "dimensions": a Matryoshka prefix the model
 * was trained for}. Answers {"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
 * "model", "usage": {"prompt_tokens", "total_tokens"}}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base64.h"

unsigned serve_embeddings_begin(serve_request_t *request) {
    unsigned status = serve_parse_body(request);
    if (!status) status = serve_check_model(request);
    if (status) return status;
    serve_server_t *server = request->server;
    const serve_model_t *model = &server->model;
    serve_buffer_t *out = &request->answer;
    const cJSON *json = request->call.json, *input = cJSON_GetObjectItemCaseSensitive(json, "input");
    if (!input) return serve_error(out, 400, "missing_input", "input", "\"input\" is required: a string or an array of inputs");
    size_t count = cJSON_IsArray(input) ? (size_t)cJSON_GetArraySize(input) : 1;
    if (cJSON_IsArray(input) && count == 0) return serve_error(out, 400, "invalid_input", "input", "\"input\" is an empty array");
    if (cJSON_IsArray(input) && cJSON_IsNumber(input->child))
        return serve_error(out, 400, "unsupported_input", "input",
                           "\"input\" is a token array: this model reads the bytes of a text, so send the text itself");
    if (count > server->options.max_queue)
        return serve_error(out, 413, "too_many_inputs", "input", "the request holds %zu inputs; this server queues at most %zu (--max-queue)",
                           count, server->options.max_queue);

    const cJSON *format = cJSON_GetObjectItemCaseSensitive(json, "encoding_format");
    if (format && !cJSON_IsNull(format)) {
        if (!cJSON_IsString(format) || (strcmp(format->valuestring, "float") && strcmp(format->valuestring, "base64")))
            return serve_error(out, 400, "invalid_value", "encoding_format", "\"encoding_format\" is \"float\" or \"base64\"");
        request->call.base64 = strcmp(format->valuestring, "base64") == 0;
    }
    size_t width = model->description.embedding;
    long long dimensions = 0;
    if ((status = serve_read_integer(request, json, "dimensions", 1, (long long)width, &dimensions))) return status;
    if (dimensions) {
        int advertised = 0;
        char list[128] = "";
        for (size_t i = 0; i < model->description.matryoshka_count; ++i) {
            advertised |= model->description.matryoshka[i] == (size_t)dimensions;
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%zu", i ? ", " : "", model->description.matryoshka[i]);
        }
        if (!advertised)
            return serve_error(out, 400, "invalid_dimensions", "dimensions",
                               "\"dimensions\" %lld is not a prefix the model was trained for: %s", dimensions, list);
        request->call.dimensions = (size_t)dimensions;
    }

    serve_input_t *inputs = calloc(count, sizeof *inputs);
    if (!inputs) return serve_status_error(out, UFORM_OUT_OF_MEMORY, NULL, "out of memory reading %zu inputs", count);
    size_t media_bytes = 0, i = 0;
    char where[32];
    for (const cJSON *element = cJSON_IsArray(input) ? input->child : input; element && !status;
         element = cJSON_IsArray(input) ? element->next : NULL, ++i) {
        snprintf(where, sizeof where, "input[%zu]", i);
        status = serve_read_input(request, element, cJSON_IsArray(input) ? where : "input", &inputs[i]);
        if (!status) media_bytes += serve_media_bound(&inputs[i]);
    }
    if (!status && (!(request->call.items = calloc(count, sizeof *request->call.items)) ||
                    !(request->call.outputs = malloc(count * width * sizeof(float))) ||
                    (media_bytes && !(request->call.media = malloc(media_bytes)))))
        status = serve_status_error(out, UFORM_OUT_OF_MEMORY, NULL, "out of memory for %zu inputs", count);
    size_t used = 0;
    for (i = 0; i < count && !status; ++i) {
        serve_item_t *item = &request->call.items[i];
        item->job = &request->call.job, item->index = i, item->queue = inputs[i].modality;
        item->output = request->call.outputs + i * width;
        if (inputs[i].modality == UFORM_MODALITY_TEXT) {
            item->bytes = (const unsigned char *)inputs[i].value->valuestring;
            item->size = strlen(inputs[i].value->valuestring);
        } else {
            snprintf(where, sizeof where, "input[%zu]", i);
            size_t size = 0;
            if ((status = serve_decode_media(request, &inputs[i], cJSON_IsArray(input) ? where : "input", request->call.media + used,
                                             &size)))
                break;
            item->bytes = request->call.media + used, item->size = size;
            used += size;
        }
        request->call.tokens += serve_model_tokens(model, item->queue, item->bytes, item->size);
    }
    free(inputs);
    if (status) return status;
    request->call.job.items = request->call.items, request->call.job.count = count;
    return 0;
}

unsigned serve_embeddings_answer(serve_request_t *request) {
    const serve_model_t *model = &request->server->model;
    serve_buffer_t *out = &request->answer;
    size_t width = model->description.embedding, columns = request->call.dimensions ? request->call.dimensions : width;
    size_t count = request->call.job.count;
    serve_buffer_reserve(out, count * (request->call.base64 ? columns * 4 / 3 + 64 : columns * 13 + 64) + 256);
    serve_buffer_text(out, "{\"object\": \"list\", \"data\": [");
    float row[columns > 0 ? columns : 1];
    char *encoded = request->call.base64 ? malloc(serve_base64_encoded_length(columns * sizeof(float))) : NULL;
    if (request->call.base64 && !encoded) out->failed = 1;
    for (size_t i = 0; i < count && !out->failed; ++i) {
        /* A prefix is renormalised by the library, as every caller of uform_embedding_truncate
         * gets it (the whole width is copied as it is). */
        if (uform_embedding_truncate(request->call.items[i].output, width, columns, row, NULL) != UFORM_OK) out->failed = 1;
        serve_buffer_text(out, i ? ", {\"object\": \"embedding\", \"index\": " : "{\"object\": \"embedding\", \"index\": ");
        serve_buffer_size(out, i);
        serve_buffer_text(out, ", \"embedding\": ");
        if (request->call.base64) {
            /* float32, little-endian: this machine's own order (x86-64 and ARM64 are little-endian). */
            size_t length = serve_base64_encode((const unsigned char *)row, columns * sizeof(float), encoded);
            serve_buffer_append(out, "\"", 1);
            serve_buffer_append(out, encoded, length);
            serve_buffer_append(out, "\"}", 2);
        } else {
            serve_buffer_floats(out, row, columns);
            serve_buffer_append(out, "}", 1);
        }
    }
    free(encoded);
    serve_buffer_text(out, "], \"model\": ");
    serve_buffer_json_string(out, model->name, strlen(model->name));
    serve_buffer_text(out, ", \"usage\": {\"prompt_tokens\": ");
    serve_buffer_size(out, request->call.tokens);
    serve_buffer_text(out, ", \"total_tokens\": ");
    serve_buffer_size(out, request->call.tokens);
    serve_buffer_text(out, "}}\n");
    return 200;
}
