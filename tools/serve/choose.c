/*
 * POST /v1/choose: constrained next-byte choice (uform_text_choose). {"text": a prefix, "choices":
 * the legal next bytes, "group": a temperature group (default 0)}, or {"input": [such objects]}.
 * "choices" is a string (each of its UTF-8 bytes is one choice), an array of byte values 0-255,
 * or an array of one-byte strings; they must be distinct. Answers {"object": "list", "data":
 * [{"index", "choices": [{"byte", "text", "probability"}]}], "model", "usage"}, probabilities in
 * the order the choices were given, summing to 1 per text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

/* Reads one {"text", "choices", "group"} object into `item` (its choices copied to `bytes`, room
 * for 256); answers 0 or the status of the error it wrote. */
static unsigned read_one(serve_request_t *request, const cJSON *object, const char *where, serve_item_t *item,
                         unsigned char *bytes) {
    serve_buffer_t *out = &request->answer;
    const serve_model_t *model = &request->server->model;
    if (!cJSON_IsObject(object))
        return serve_error(out, 400, "invalid_type", where, "%s must be an object {\"text\", \"choices\"}", where);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(object, "text");
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(object, "choices");
    if (!cJSON_IsString(text)) return serve_error(out, 400, "invalid_type", where, "%s.text must be a string", where);
    size_t bad = 0, length = strlen(text->valuestring);
    if (!serve_utf8_valid((const unsigned char *)text->valuestring, length, &bad))
        return serve_error(out, 400, "invalid_utf8", where, "%s.text is not valid UTF-8 (byte %zu)", where, bad);
    size_t count = 0;
    if (cJSON_IsString(choices)) {
        count = strlen(choices->valuestring);
        if (count > 256) count = 257;
        else memcpy(bytes, choices->valuestring, count);
    } else if (cJSON_IsArray(choices)) {
        for (const cJSON *choice = choices->child; choice; choice = choice->next, ++count) {
            if (count == 256) {
                count = 257;
                break;
            }
            if (cJSON_IsNumber(choice) && choice->valuedouble >= 0 && choice->valuedouble <= 255 &&
                choice->valuedouble == (double)(int)choice->valuedouble)
                bytes[count] = (unsigned char)choice->valuedouble;
            else if (cJSON_IsString(choice) && strlen(choice->valuestring) == 1)
                bytes[count] = (unsigned char)choice->valuestring[0];
            else
                return serve_error(out, 400, "invalid_value", where,
                                   "%s.choices[%zu] must be a byte value (0-255) or a one-byte string", where, count);
        }
    } else {
        return serve_error(out, 400, "invalid_type", where, "%s.choices must be a string or an array of bytes", where);
    }
    if (count == 0 || count > 256)
        return serve_error(out, 400, "invalid_value", where, "%s.choices must list 1 to 256 bytes", where);
    unsigned char seen[256] = {0};
    for (size_t c = 0; c < count; ++c) {
        if (seen[bytes[c]])
            return serve_error(out, 400, "invalid_value", where, "%s.choices lists the byte %u twice", where, bytes[c]);
        seen[bytes[c]] = 1;
    }
    long long group = 0;
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(object, "group");
    if (groups && !cJSON_IsNull(groups)) {
        double value = groups->valuedouble;
        if (!cJSON_IsNumber(groups) || !(value >= 0 && value < (double)model->description.temperature_groups) ||
            value != (double)(long long)value)
            return serve_error(out, 400, "invalid_value", where, "%s.group must be an integer from 0 to %zu", where,
                               model->description.temperature_groups ? model->description.temperature_groups - 1 : 0);
        group = (long long)value;
    }
    item->queue = SERVE_QUEUE_CHOOSE;
    item->bytes = (const unsigned char *)text->valuestring, item->size = length;
    item->choices = bytes, item->choices_size = count, item->group = (size_t)group;
    /* The prefix's tokens as the library counts them, and the position of the byte being chosen. */
    request->call.tokens += serve_model_tokens(model, UFORM_MODALITY_TEXT, item->bytes, item->size) + 1;
    return 0;
}

unsigned serve_choose_begin(serve_request_t *request) {
    unsigned status = serve_parse_body(request);
    if (!status) status = serve_check_model(request);
    if (status) return status;
    serve_server_t *server = request->server;
    serve_buffer_t *out = &request->answer;
    if (!(server->model.description.modalities & 1u))
        return serve_error(out, 400, "unsupported_input", NULL, "the model '%s' has no text encoder, so no choice head",
                           server->model.name);
    const cJSON *json = request->call.json, *input = cJSON_GetObjectItemCaseSensitive(json, "input");
    if (input && !cJSON_IsArray(input))
        return serve_error(out, 400, "invalid_type", "input", "\"input\" must be an array of {\"text\", \"choices\"} objects");
    size_t count = input ? (size_t)cJSON_GetArraySize(input) : 1;
    if (count == 0) return serve_error(out, 400, "invalid_input", "input", "\"input\" is an empty array");
    if (count > server->options.max_queue)
        return serve_error(out, 413, "too_many_inputs", "input", "the request holds %zu inputs; this server queues at most %zu (--max-queue)",
                           count, server->options.max_queue);
    if (!(request->call.items = calloc(count, sizeof *request->call.items)) || !(request->call.media = malloc(count * 256)))
        return serve_status_error(out, UFORM_OUT_OF_MEMORY, NULL, "out of memory for %zu inputs", count);
    size_t i = 0, total = 0;
    char where[32];
    for (const cJSON *element = input ? input->child : json; element; element = input ? element->next : NULL, ++i) {
        if (input) snprintf(where, sizeof where, "input[%zu]", i);
        else snprintf(where, sizeof where, "the body");
        serve_item_t *item = &request->call.items[i];
        item->job = &request->call.job, item->index = i;
        if ((status = read_one(request, element, where, item, request->call.media + i * 256))) return status;
        total += item->choices_size;
    }
    if (!(request->call.outputs = malloc(total * sizeof(float))))
        return serve_status_error(out, UFORM_OUT_OF_MEMORY, NULL, "out of memory for %zu choices", total);
    total = 0;
    for (i = 0; i < count; ++i) request->call.items[i].output = request->call.outputs + total, total += request->call.items[i].choices_size;
    request->call.job.items = request->call.items, request->call.job.count = count;
    return 0;
}

unsigned serve_choose_answer(serve_request_t *request) {
    const serve_model_t *model = &request->server->model;
    serve_buffer_t *out = &request->answer;
    serve_buffer_text(out, "{\"object\": \"list\", \"data\": [");
    for (size_t i = 0; i < request->call.job.count; ++i) {
        const serve_item_t *item = &request->call.items[i];
        serve_buffer_printf(out, "%s{\"index\": %zu, \"choices\": [", i ? ", " : "", i);
        for (size_t c = 0; c < item->choices_size; ++c) {
            unsigned byte = item->choices[c];
            serve_buffer_printf(out, "%s{\"byte\": %u, \"text\": ", c ? ", " : "", byte);
            if (byte < 0x80) {
                char text = (char)byte;
                serve_buffer_json_string(out, &text, 1);
            } else {
                serve_buffer_text(out, "null");
            }
            serve_buffer_text(out, ", \"probability\": ");
            serve_buffer_float(out, item->output[c]);
            serve_buffer_text(out, "}");
        }
        serve_buffer_text(out, "]}");
    }
    serve_buffer_text(out, "], \"model\": ");
    serve_buffer_json_string(out, model->name, strlen(model->name));
    serve_buffer_printf(out, ", \"usage\": {\"prompt_tokens\": %zu, \"total_tokens\": %zu}}\n", request->call.tokens, request->call.tokens);
    return 200;
}
