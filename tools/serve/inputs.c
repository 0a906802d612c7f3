/* Reading requests: the JSON body, inputs, data: URIs, integers and the model's name (api.h). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "base64.h"

static const char *const modality_names[4] = {"text", "image", "video", "audio"};

int serve_modality_named(const char *name) {
    for (int m = 0; m < 4; ++m)
        if (name && strcmp(name, modality_names[m]) == 0) return m;
    return -1;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

unsigned serve_parse_body(serve_request_t *request) {
    serve_buffer_t *out = &request->answer;
    const char *body = request->body;
    size_t length = request->length;
    if (!body || length == 0)
        return serve_error(out, 400, "invalid_json", NULL, "the body is empty: send a JSON object");
    const char *nul = memchr(body, 0, length);
    if (nul) return serve_error(out, 400, "invalid_json", NULL, "the body holds a NUL byte at byte %zu", (size_t)(nul - body));
    size_t bad = 0;
    if (!serve_utf8_valid((const unsigned char *)body, length, &bad))
        return serve_error(out, 400, "invalid_utf8", NULL, "the body is not valid UTF-8 (byte %zu)", bad);
    /* cJSON keeps strings NUL-terminated, so "\u0000" would silently cut a text short. */
    for (const char *at = memchr(body, '\\', length); at && at + 1 < body + length;
         at = memchr(at + 2, '\\', (size_t)(body + length - (at + 2)))) {
        size_t i = (size_t)(at - body);
        if (body[i + 1] == 'u' && i + 5 < length && hex_value(body[i + 2]) == 0 && hex_value(body[i + 3]) == 0 &&
            hex_value(body[i + 4]) == 0 && hex_value(body[i + 5]) == 0)
            return serve_error(out, 400, "invalid_json", NULL, "strings may not hold NUL (\\u0000, byte %zu)", i);
        if (at + 2 >= body + length) break; /* the escaped character is the last byte */
    }
    const char *end = NULL;
    request->call.json = cJSON_ParseWithLengthOpts(body, length, &end, 0);
    if (!request->call.json) {
        size_t at = end && end >= body && end <= body + length ? (size_t)(end - body) : 0;
        return serve_error(out, 400, "invalid_json", NULL,
                           "the body is not valid JSON (or is nested deeper than %d levels): the parser stopped at byte %zu",
                           CJSON_NESTING_LIMIT, at);
    }
    while (end && end < body + length && isspace((unsigned char)*end)) ++end;
    if (end && end < body + length)
        return serve_error(out, 400, "invalid_json", NULL, "the body holds more after its JSON value (byte %zu)",
                           (size_t)(end - body));
    if (!cJSON_IsObject(request->call.json))
        return serve_error(out, 400, "invalid_json", NULL, "the body must be a JSON object");
    return 0;
}

unsigned serve_read_input(serve_request_t *request, const cJSON *value, const char *where, serve_input_t *input) {
    serve_buffer_t *out = &request->answer;
    const serve_model_t *model = &request->server->model;
    input->value = NULL, input->modality = -1;
    if (cJSON_IsString(value)) {
        input->modality = UFORM_MODALITY_TEXT, input->value = value;
    } else if (cJSON_IsObject(value)) {
        for (const cJSON *member = value->child; member; member = member->next) {
            int modality = serve_modality_named(member->string);
            if (modality < 0)
                return serve_error(out, 400, "invalid_input", where,
                                   "%s has the key '%s'; an input object holds one of \"text\", \"image\", \"audio\", \"video\"",
                                   where, member->string ? member->string : "");
            if (input->value)
                return serve_error(out, 400, "invalid_input", where, "%s holds more than one of \"text\", \"image\", \"audio\", \"video\"",
                                   where);
            if (!cJSON_IsString(member))
                return serve_error(out, 400, "invalid_type", where, "%s.%s must be a string%s", where, member->string,
                                   modality ? " (a data: URI)" : "");
            input->modality = modality, input->value = member;
        }
        if (!input->value)
            return serve_error(out, 400, "invalid_input", where, "%s is an empty object; give one of \"text\", \"image\", \"audio\", \"video\"",
                               where);
    } else if (cJSON_IsArray(value) && value->child && cJSON_IsNumber(value->child)) {
        return serve_error(out, 400, "unsupported_input", where,
                           "%s is a token array: this model reads the bytes of a text, so send the text itself", where);
    } else {
        return serve_error(out, 400, "invalid_type", where,
                           "%s must be a string or an object like {\"image\": \"data:image/png;base64,...\"}", where);
    }
    if (!(model->description.modalities & (1u << input->modality)))
        return serve_error(out, 400, "unsupported_input", where, "%s is %s, and the model '%s' has no %s encoder", where,
                           input->modality == UFORM_MODALITY_IMAGE ? "an image" : input->modality == UFORM_MODALITY_AUDIO ? "a recording"
                           : input->modality == UFORM_MODALITY_VIDEO ? "a video" : "a text",
                           model->name, modality_names[input->modality]);
    if (input->modality == UFORM_MODALITY_TEXT) {
        size_t bad = 0, length = strlen(input->value->valuestring);
        if (!serve_utf8_valid((const unsigned char *)input->value->valuestring, length, &bad))
            return serve_error(out, 400, "invalid_utf8", where, "%s is not valid UTF-8 (byte %zu)", where, bad);
    }
    return 0;
}

size_t serve_media_bound(const serve_input_t *input) {
    return input->modality == UFORM_MODALITY_TEXT ? 0 : strlen(input->value->valuestring) + 4;
}

unsigned serve_decode_media(serve_request_t *request, const serve_input_t *input, const char *where, unsigned char *target,
                            size_t *size) {
    serve_buffer_t *out = &request->answer;
    const char *text = input->value->valuestring, *name = modality_names[input->modality];
    if (strncasecmp(text, "data:", 5) != 0) {
        if (strstr(text, "://"))
            return serve_error(out, 400, "unsupported_url", where,
                               "%s.%s is a URL: uform serve fetches nothing from the network; send the file itself as a "
                               "data: URI (data:%s/...;base64,...)", where, name, name);
        return serve_error(out, 400, "invalid_input", where, "%s.%s must be a data: URI (data:%s/...;base64,...)", where,
                           name, name);
    }
    const char *comma = strchr(text + 5, ',');
    if (!comma) return serve_error(out, 400, "invalid_input", where, "%s.%s is a data: URI without a ','", where, name);
    const char *payload = comma + 1;
    size_t header = (size_t)(comma - text), length = strlen(payload);
    if (length == 0) return serve_error(out, 400, "invalid_input", where, "%s.%s is an empty data: URI", where, name);
    if (header >= 12 && strncasecmp(comma - 7, ";base64", 7) == 0) {
        size_t bad = 0;
        if (serve_base64_decode(payload, length, target, size, &bad) != 0)
            return serve_error(out, 400, "invalid_base64", where,
                               "%s.%s: the data: URI's base64 is not valid at character %zu of its data", where, name, bad);
        return 0;
    }
    size_t written = 0; /* percent-encoded bytes (RFC 2397 without ;base64) */
    for (size_t i = 0; i < length; ++i) {
        if (payload[i] != '%') {
            target[written++] = (unsigned char)payload[i];
            continue;
        }
        int high = i + 2 < length ? hex_value(payload[i + 1]) : -1, low = i + 2 < length ? hex_value(payload[i + 2]) : -1;
        if (high < 0 || low < 0)
            return serve_error(out, 400, "invalid_input", where, "%s.%s: a bad %%-escape at character %zu of its data", where,
                               name, i);
        target[written++] = (unsigned char)(high * 16 + low);
        i += 2;
    }
    *size = written;
    return 0;
}

unsigned serve_read_integer(serve_request_t *request, const cJSON *object, const char *name, long long low, long long high,
                            long long *value) {
    const cJSON *member = cJSON_GetObjectItemCaseSensitive(object, name);
    if (!member || cJSON_IsNull(member)) return 0;
    double number = member->valuedouble;
    if (!cJSON_IsNumber(member) || !isfinite(number) || number != floor(number) || number < (double)low ||
        number > (double)high)
        return serve_error(&request->answer, 400, "invalid_value", name, "\"%s\" must be an integer from %lld to %lld", name,
                           low, high);
    *value = (long long)number;
    return 0;
}

unsigned serve_check_model(serve_request_t *request) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(request->call.json, "model");
    if (!model || cJSON_IsNull(model)) return 0;
    if (!cJSON_IsString(model))
        return serve_error(&request->answer, 400, "invalid_type", "model", "\"model\" must be a string");
    const char *name = request->server->model.name;
    if (strcmp(model->valuestring, name) != 0)
        return serve_error(&request->answer, 404, "model_not_found", "model",
                           "the model '%s' is not served here: this server serves '%s' (GET /v1/models)", model->valuestring,
                           name);
    return 0;
}

void serve_call_free(serve_call_t *call) {
    cJSON_Delete(call->json);
    free(call->items), free(call->outputs), free(call->media), free(call->hits);
    memset(call, 0, sizeof *call);
}
