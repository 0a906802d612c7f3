/*
 * Names for the tensors of an unpickled checkpoint (torch_pickle.h): the result must be a dict
 * (a state dict, or a checkpoint dict holding one), and every tensor reachable from it through
 * nested dicts is named by the keys on the way, joined with '.':
 *
 *     {"state_dict": {"fc.weight": T1}, "epoch": 3, "ema": [T2]}  ->  "state_dict.fc.weight" = T1
 *
 * What is skipped, not refused: values that are neither tensors nor dicts (numbers, strings,
 * None, lists and tuples even of tensors, torch.Size, devices), entries whose key is neither a
 * string nor an int, and an OrderedDict's attributes (BUILD already dropped `_metadata`). A
 * dict reached twice through different keys (one object saved under two names) gives both
 * names; a dict that contains itself is UFORM_FORMAT, as is a path of more than
 * UFORM__TORCH_MAX_DEPTH dicts. The walk keeps its own stack and counts every entry it visits, so a
 * pickle of shared dicts cannot make it run longer than UFORM__TORCH_MAX_NODES steps.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/torch_pickle.h"

#define NIL UINT32_MAX

typedef struct frame_t {
    uint32_t dict, node; /* the dict being walked and its next key's node */
    size_t prefix;       /* bytes of the path (its keys and dots) before this dict's keys */
} frame_t;

typedef struct text_t {
    char *bytes;
    size_t length, capacity;
} text_t;

/* Appends `length` bytes to `text`; 0 when memory runs out. */
static int append(text_t *text, const void *bytes, size_t length) {
    if (text->capacity - text->length < length) {
        size_t next = text->capacity ? text->capacity * 2 : 4096;
        while (next - text->length < length) next *= 2;
        char *bigger = realloc(text->bytes, next);
        if (!bigger) return 0;
        text->bytes = bigger;
        text->capacity = next;
    }
    memcpy(text->bytes + text->length, bytes, length);
    text->length += length;
    return 1;
}

/* Fails naming the key path so far (`path[0..length)`). */
static uform_status_t fail_at(const uform__torch_machine_t *machine, uform_status_t status, const text_t *path,
                              size_t length, const char *what) {
    char where[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    return uform__fail(machine->outcome, status, "uform__torch_open", "%s: %s (under key path %s)", machine->source, what,
                       uform__torch_quote_bytes((const uint8_t *)path->bytes, length, where));
}

/* The text of a key: a string's bytes (checked) or an int in decimal; 0 to skip the entry. */
static int key_text(uform__torch_machine_t *machine, uint32_t key, const uint8_t **bytes, size_t *length, char digits[24],
                    uform_status_t *status) {
    const uform__torch_value_t *value = &machine->values[key];
    *status = UFORM_OK;
    if (value->kind == UFORM__TORCH_INT) {
        *length = (size_t)snprintf(digits, 24, "%" PRId64, value->as.integer);
        *bytes = (const uint8_t *)digits;
        return 1;
    }
    if (value->kind != UFORM__TORCH_STRING) return 0;
    *bytes = machine->bytes + value->as.offset;
    *length = value->count;
    size_t bad = 0;
    machine->opcode_at = (size_t)value->as.offset; /* the messages below point at the key's bytes */
    if (memchr(*bytes, 0, *length))
        *status = uform__torch_pickle_fail(machine, UFORM_FORMAT, "a key of the state dict holds a NUL byte");
    else if (!uform__safetensors_utf8_valid((const char *)*bytes, *length, &bad))
        *status = uform__torch_pickle_fail(machine, UFORM_FORMAT, "a key of the state dict is not valid UTF-8 at key byte %zu",
                                           bad);
    return *status == UFORM_OK;
}

uform_status_t uform__torch_flatten(uform__torch_machine_t *machine, uform__torch_entry_t **entries, size_t *count,
                                    char **names) {
    *entries = NULL;
    *count = 0;
    *names = NULL;
    const uform__torch_value_t *root = &machine->values[machine->root];
    if (root->kind != UFORM__TORCH_DICT)
        return uform__fail(machine->outcome, UFORM_UNSUPPORTED, "uform__torch_open",
                           "%s: the pickle holds %s, not a dict of tensors (a state dict)", machine->source,
                           uform__torch_kind_name(root->kind));
    frame_t frames[UFORM__TORCH_MAX_DEPTH];
    text_t path = {0}, block = {0};
    size_t entry_capacity = 0, visits = 0, depth = 1;
    uform_status_t status = UFORM_OK;
    frames[0] = (frame_t){machine->root, root->as.chain.head, 0};
    machine->values[machine->root].visiting = 1;
    while (depth && status == UFORM_OK) {
        frame_t *frame = &frames[depth - 1];
        uint32_t key_node = frame->node;
        if (key_node == NIL || machine->nodes[key_node].next == NIL) { /* a dict's chain holds whole pairs */
            machine->values[frame->dict].visiting = 0;
            --depth;
            continue;
        }
        uint32_t value_node = machine->nodes[key_node].next;
        uint32_t key = machine->nodes[key_node].value, value = machine->nodes[value_node].value;
        frame->node = machine->nodes[value_node].next;
        if (++visits > UFORM__TORCH_MAX_NODES) {
            status = fail_at(machine, UFORM_FORMAT, &path, frame->prefix, "the walk over nested dicts passes its step limit");
            break;
        }
        uform__torch_kind_t kind = (uform__torch_kind_t)machine->values[value].kind;
        if (kind != UFORM__TORCH_TENSOR && kind != UFORM__TORCH_DICT) continue;
        const uint8_t *text;
        size_t length;
        char digits[24];
        if (!key_text(machine, key, &text, &length, digits, &status)) continue; /* skipped, or status is set */
        if (block.length + frame->prefix + length + 1 > UFORM__TORCH_MAX_NAME_BYTES) {
            status = fail_at(machine, UFORM_FORMAT, &path, frame->prefix, "the names together pass 256 MiB");
            break;
        }
        path.length = frame->prefix;
        if (!append(&path, text, length) || !append(&path, kind == UFORM__TORCH_DICT ? "." : "", 1)) {
            status = fail_at(machine, UFORM_OUT_OF_MEMORY, &path, frame->prefix, "cannot allocate the key path");
            break;
        }
        if (kind == UFORM__TORCH_TENSOR) {
            if (*count == entry_capacity) {
                size_t next = entry_capacity ? entry_capacity * 2 : 256;
                uform__torch_entry_t *bigger = realloc(*entries, next * sizeof *bigger);
                if (!bigger) {
                    status = fail_at(machine, UFORM_OUT_OF_MEMORY, &path, path.length, "cannot allocate the list of names");
                    break;
                }
                *entries = bigger;
                entry_capacity = next;
            }
            (*entries)[*count] = (uform__torch_entry_t){block.length, machine->values[value].count};
            if (!append(&block, path.bytes, path.length)) { /* the path ends in the NUL appended above */
                status = fail_at(machine, UFORM_OUT_OF_MEMORY, &path, path.length, "cannot allocate the names");
                break;
            }
            *count += 1;
            continue;
        }
        if (machine->values[value].visiting) {
            status = fail_at(machine, UFORM_FORMAT, &path, path.length, "a dict contains itself");
            break;
        }
        if (depth >= UFORM__TORCH_MAX_DEPTH) {
            status = fail_at(machine, UFORM_FORMAT, &path, path.length, "dicts nest deeper than 64 levels");
            break;
        }
        machine->values[value].visiting = 1;
        frames[depth++] = (frame_t){value, machine->values[value].as.chain.head, path.length};
    }
    for (size_t index = 0; index < depth; ++index) machine->values[frames[index].dict].visiting = 0;
    free(path.bytes);
    *names = block.bytes;
    return status;
}
