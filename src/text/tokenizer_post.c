/*
 * Post-processors of tokenizer.json, reduced to what they do to one sequence's ids: the special
 * ids put before it and after it. BertProcessing and RobertaProcessing put "cls" before and "sep"
 * after; TemplateProcessing puts what its "single" template says around "$A" (each special token's
 * "ids" from "special_tokens"; the "pair" template is not read: one sequence is encoded at a
 * time); ByteLevel only trims offsets; Sequence applies its processors in turn, each wrapping the
 * result of the previous one.
 */
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "text/tokenizer_internal.h"

typedef struct specials_t {
    uform__text_ids_t before, after;
} specials_t;

static uform_status_t out_of_memory(const char *path, uform_outcome_t *outcome) {
    return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", path);
}

/* A ["[SEP]", 102] pair of BertProcessing and RobertaProcessing. */
static uform_status_t token_pair(const cJSON *json, const char *key, const char *path, uint32_t *id,
                                 uform_outcome_t *outcome) {
    char where[UFORM__TEXT_PATH];
    uform__text_path(where, path, key);
    const cJSON *pair = uform__text_json_member(json, key);
    if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2 || !cJSON_IsString(pair->child))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected [\"token\", id]", where,
                           cJSON_IsArray(pair) ? "an array of another shape" : uform__json_kind(pair));
    char id_path[UFORM__TEXT_PATH];
    uint64_t value;
    uform__text_path_index(id_path, where, 1);
    uform_status_t status = uform__text_json_uint_value(pair->child->next, id_path, UINT32_MAX - 1, &value, outcome);
    *id = (uint32_t)value;
    return status;
}

/* Appends the ids of special token `name` of a TemplateProcessing. */
static uform_status_t template_special(const cJSON *json, const char *path, const char *name, uform__text_ids_t *ids,
                                       uform_outcome_t *outcome) {
    char where[UFORM__TEXT_PATH];
    uform__text_path(where, path, "special_tokens");
    const cJSON *map = uform__text_json_member(json, "special_tokens");
    const cJSON *entry = uform__text_json_member(map, name);
    if (!cJSON_IsObject(entry))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                           "%s: the template names the special token \"%.64s\", which %s has not", path, name, where);
    char entry_path[UFORM__TEXT_PATH], list_path[UFORM__TEXT_PATH];
    uform__text_path(entry_path, where, name);
    uform__text_path(list_path, entry_path, "ids");
    const cJSON *list = uform__text_json_member(entry, "ids");
    if (!cJSON_IsArray(list))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected an array of ids",
                           list_path, uform__json_kind(list));
    size_t index = 0;
    for (const cJSON *item = list->child; item; item = item->next, ++index) {
        char item_path[UFORM__TEXT_PATH];
        uint64_t id;
        uform__text_path_index(item_path, list_path, index);
        uform_status_t status = uform__text_json_uint_value(item, item_path, UINT32_MAX - 1, &id, outcome);
        if (status != UFORM_OK) return status;
        if (uform__text_ids_append(ids, (uint32_t)id) != 0) return out_of_memory(path, outcome);
    }
    return UFORM_OK;
}

/* One piece of a template: 1 for the sequence ("$A", {"Sequence": {"id": "A"}}), 2 for the pair's
 * second sequence (ignored), 0 for a special token whose name goes to `name`. */
/* The string form of a piece (`length` bytes): "$A", "$B", "$0", "$A:1", "[CLS]", "[CLS]:0". */
static void piece_from_text(const char *text, size_t length, char name[256], int *sequence) {
    size_t end = length;
    while (end > 0 && text[end - 1] != ':') --end;
    if (end > 0) length = end - 1; /* drop the ":type_id" */
    *sequence = 0;
    if (length > 0 && text[0] == '$') {
        *sequence = length == 1 || text[1] == 'A' || text[1] == '0' ? 1 : 2;
        return;
    }
    snprintf(name, 256, "%.*s", (int)(length < 255 ? length : 255), text);
}

static uform_status_t template_piece(const cJSON *piece, const char *path, char name[256], int *sequence,
                                     uform_outcome_t *outcome) {
    *sequence = 0;
    if (cJSON_IsString(piece)) {
        piece_from_text(piece->valuestring, strlen(piece->valuestring), name, sequence);
        return UFORM_OK;
    }
    const cJSON *special = uform__text_json_member(piece, "SpecialToken");
    const cJSON *sequence_piece = uform__text_json_member(piece, "Sequence");
    const char *id;
    uform_status_t status;
    if (sequence_piece) {
        char where[UFORM__TEXT_PATH];
        uform__text_path(where, path, "Sequence");
        if ((status = uform__text_json_string(sequence_piece, "id", where, 1, &id, outcome)) != UFORM_OK) return status;
        *sequence = strcmp(id, "A") == 0 ? 1 : 2;
        return UFORM_OK;
    }
    if (special) {
        char where[UFORM__TEXT_PATH];
        uform__text_path(where, path, "SpecialToken");
        if ((status = uform__text_json_string(special, "id", where, 1, &id, outcome)) != UFORM_OK) return status;
        snprintf(name, 256, "%s", id);
        return UFORM_OK;
    }
    return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                       "%s is %s, expected {\"SpecialToken\": ...} or {\"Sequence\": ...}", path,
                       uform__json_kind(piece));
}

static uform_status_t parse(const cJSON *json, const char *path, specials_t *specials, uform_outcome_t *outcome);

/* A Sequence of processors being read: what they add so far, and the Sequence's path for messages. */
typedef struct sequence_t {
    specials_t *specials;
    const char *path;
} sequence_t;

/* One processor of a Sequence. Each wraps what the ones before it produced: its own tokens go
 * before theirs and after theirs. */
static uform_status_t parse_wrapping(void *context, size_t index, const cJSON *item, const char *item_path,
                                     uform_outcome_t *outcome) {
    (void)index;
    sequence_t *sequence = context;
    specials_t *specials = sequence->specials;
    specials_t inner = {{0}, {0}};
    uform_status_t status = parse(item, item_path, &inner, outcome);
    for (size_t i = 0; status == UFORM_OK && i < specials->before.count; ++i)
        if (uform__text_ids_append(&inner.before, specials->before.data[i]) != 0)
            status = out_of_memory(sequence->path, outcome);
    for (size_t i = 0; status == UFORM_OK && i < inner.after.count; ++i)
        if (uform__text_ids_append(&specials->after, inner.after.data[i]) != 0)
            status = out_of_memory(sequence->path, outcome);
    uform__text_ids_free(&specials->before);
    specials->before = inner.before;
    uform__text_ids_free(&inner.after);
    return status;
}

static uform_status_t parse(const cJSON *json, const char *path, specials_t *specials, uform_outcome_t *outcome) {
    const char *type;
    uform_status_t status = uform__text_json_type(json, path, &type, outcome);
    if (status != UFORM_OK) return status;
    uint32_t cls, sep;
    if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0) {
        if ((status = token_pair(json, "cls", path, &cls, outcome)) != UFORM_OK ||
            (status = token_pair(json, "sep", path, &sep, outcome)) != UFORM_OK)
            return status;
        if (uform__text_ids_append(&specials->before, cls) != 0 || uform__text_ids_append(&specials->after, sep) != 0)
            return out_of_memory(path, outcome);
        return UFORM_OK;
    }
    if (strcmp(type, "ByteLevel") == 0) return UFORM_OK;
    if (strcmp(type, "TemplateProcessing") == 0) {
        char where[UFORM__TEXT_PATH];
        uform__text_path(where, path, "single");
        const cJSON *single = uform__text_json_member(json, "single");
        if (cJSON_IsString(single)) {
            /* "[CLS] $A [SEP]": pieces separated by spaces, the form Python's TemplateProcessing
             * constructor takes. Rust's deserializer refuses it inside a file (files it writes hold
             * the list form); it is read here as the list form it stands for. */
            int seen_sequence = 0;
            for (const char *at = single->valuestring; *at;) {
                while (*at == ' ') ++at;
                size_t length = strcspn(at, " ");
                if (!length) break;
                char name[256];
                int sequence;
                piece_from_text(at, length, name, &sequence);
                at += length;
                if (sequence == 1) {
                    if (seen_sequence)
                        return uform__fail(outcome, UFORM_UNSUPPORTED, uform__text_function,
                                           "%s: a single template holding the sequence twice is not supported", where);
                    seen_sequence = 1;
                } else if (sequence == 0) {
                    status = template_special(json, path, name, seen_sequence ? &specials->after : &specials->before,
                                              outcome);
                    if (status != UFORM_OK) return status;
                }
            }
            if (!seen_sequence)
                return uform__fail(outcome, UFORM_UNSUPPORTED, uform__text_function,
                                   "%s does not hold the sequence ($A): its text would be dropped", where);
            return UFORM_OK;
        }
        if (!cJSON_IsArray(single))
            return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected an array", where,
                               uform__json_kind(single));
        int seen_sequence = 0;
        size_t index = 0;
        for (const cJSON *piece = single->child; piece; piece = piece->next, ++index) {
            char piece_path[UFORM__TEXT_PATH], name[256];
            int sequence;
            uform__text_path_index(piece_path, where, index);
            if ((status = template_piece(piece, piece_path, name, &sequence, outcome)) != UFORM_OK) return status;
            if (sequence == 1) {
                if (seen_sequence)
                    return uform__fail(outcome, UFORM_UNSUPPORTED, uform__text_function,
                                       "%s: a single template holding the sequence twice is not supported", where);
                seen_sequence = 1;
                continue;
            }
            if (sequence == 2) continue;
            status = template_special(json, path, name, seen_sequence ? &specials->after : &specials->before, outcome);
            if (status != UFORM_OK) return status;
        }
        if (!seen_sequence)
            return uform__fail(outcome, UFORM_UNSUPPORTED, uform__text_function,
                               "%s does not hold the sequence ($A): its text would be dropped", where);
        return UFORM_OK;
    }
    if (strcmp(type, "Sequence") == 0) {
        char where[UFORM__TEXT_PATH];
        const cJSON *list = NULL;
        if ((status = uform__text_json_array(json, path, "processors", where, &list, outcome)) != UFORM_OK) return status;
        sequence_t sequence = {specials, path};
        return uform__text_json_each(list, where, parse_wrapping, &sequence, outcome);
    }
    return uform__fail(outcome, UFORM_UNSUPPORTED, uform__text_function,
                       "%s: post-processor type \"%.64s\" is not supported (BertProcessing, RobertaProcessing, "
                       "TemplateProcessing, ByteLevel, Sequence)",
                       path, type);
}

uform_status_t uform__text_post_parse(const cJSON *json, const char *path, uint32_t **ids, size_t *before,
                                      size_t *after, uform_outcome_t *outcome) {
    *ids = NULL, *before = 0, *after = 0;
    if (!json || cJSON_IsNull(json)) return UFORM_OK;
    specials_t specials = {{0}, {0}};
    uform_status_t status = parse(json, path, &specials, outcome);
    if (status == UFORM_OK && specials.before.count + specials.after.count > 0) {
        *ids = malloc((specials.before.count + specials.after.count) * sizeof **ids);
        if (!*ids) status = out_of_memory(path, outcome);
        else {
            if (specials.before.count) memcpy(*ids, specials.before.data, specials.before.count * sizeof **ids);
            if (specials.after.count)
                memcpy(*ids + specials.before.count, specials.after.data, specials.after.count * sizeof **ids);
            *before = specials.before.count, *after = specials.after.count;
        }
    }
    uform__text_ids_free(&specials.before);
    uform__text_ids_free(&specials.after);
    return status;
}
