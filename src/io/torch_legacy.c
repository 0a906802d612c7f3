/*
 * The legacy torch.save format (PyTorch before 1.6, or _use_new_zipfile_serialization=False;
 * torch/serialization.py's _legacy_save and _legacy_load), as old `pytorch_model.bin` files on the
 * Hugging Face hub still have it. The file is five pickles one after the other, then raw storages:
 *
 *     pickle of the magic number 0x1950a86a20f9469cfc6c
 *     pickle of the protocol version, 1001
 *     pickle of {'protocol_version': 1001, 'little_endian': True, 'type_sizes': {...}}
 *     pickle of the object; persistent ids ('storage', <type>, key, location, numel, view)
 *     pickle of the storage keys, sorted
 *     per key, in that order: the element count (int64, little-endian), then the elements
 *
 * Every pickle runs on the same weights-only machine as the zip format's data.pkl, the object's
 * with legacy persistent ids. A storage's bytes are found by walking the counts, each checked
 * against the file's end; each key must be used by the object and appear once.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "io/torch_pickle.h"

static const char function[] = "uform__torch_open";
static const char magic_source[] = "the legacy format's magic-number pickle";
static const char version_source[] = "the legacy format's version pickle";
static const char system_source[] = "the legacy format's system pickle";
static const char object_source[] = "the legacy format's object pickle";
static const char keys_source[] = "the legacy format's storage-key pickle";

/* The version _legacy_save writes and _legacy_load insists on. */
#define LEGACY_PROTOCOL 1001

/* Runs the pickle starting at file byte `at` on a zeroed `machine`. */
static uform_status_t run_at(uform__torch_machine_t *machine, const uint8_t *bytes, size_t size, size_t at,
                             const char *source, uform_outcome_t *outcome) {
    machine->origin = at;
    return uform__torch_pickle_run(machine, bytes + at, size - at, source, outcome);
}

/* The value under string key `name` of dict `dict`, or UINT32_MAX. */
static uint32_t lookup(const uform__torch_machine_t *machine, uint32_t dict, const char *name) {
    const uform__torch_value_t *owner = &machine->values[dict];
    size_t length = strlen(name);
    for (uint32_t node = owner->as.chain.head; node != UINT32_MAX && machine->nodes[node].next != UINT32_MAX;
         node = machine->nodes[machine->nodes[node].next].next) {
        const uform__torch_value_t *key = &machine->values[machine->nodes[node].value];
        if (key->kind == UFORM__TORCH_STRING && key->count == length && !memcmp(machine->bytes + key->as.offset, name, length))
            return machine->nodes[machine->nodes[node].next].value;
    }
    return UINT32_MAX;
}

/* The three pickles before the object: magic, version, system. Answers where the object starts. */
static uform_status_t read_preamble(const uint8_t *bytes, size_t size, size_t *at, uform_outcome_t *outcome) {
    uform__torch_machine_t machine;
    memset(&machine, 0, sizeof machine);
    uform_status_t status = run_at(&machine, bytes, size, 0, magic_source, outcome);
    *at = machine.end;
    uform__torch_pickle_free(&machine);
    if (status == UFORM_OK) status = run_at(&machine, bytes, size, *at, version_source, outcome);
    if (status == UFORM_OK) {
        const uform__torch_value_t *version = &machine.values[machine.root];
        if (version->kind != UFORM__TORCH_INT || version->as.integer != LEGACY_PROTOCOL)
            status = uform__fail(outcome, UFORM_UNSUPPORTED, function,
                                 "%s (file byte %zu) holds %s %" PRId64 ", not the version %d this reader knows",
                                 version_source, *at, uform__torch_kind_name(version->kind),
                                 version->kind == UFORM__TORCH_INT ? version->as.integer : 0, LEGACY_PROTOCOL);
        *at += machine.end;
    }
    uform__torch_pickle_free(&machine);
    if (status == UFORM_OK) status = run_at(&machine, bytes, size, *at, system_source, outcome);
    if (status == UFORM_OK) {
        /* The storages are in the byte order of the machine that saved them. */
        uint32_t little = machine.values[machine.root].kind == UFORM__TORCH_DICT
                              ? lookup(&machine, machine.root, "little_endian")
                              : UINT32_MAX;
        if (little == UINT32_MAX || machine.values[little].kind != UFORM__TORCH_BOOL || !machine.values[little].as.integer)
            status = uform__fail(outcome, UFORM_UNSUPPORTED, function,
                                 "%s (file byte %zu) does not say little_endian: True; only little-endian files are read",
                                 system_source, *at);
        *at += machine.end;
    }
    uform__torch_pickle_free(&machine);
    return status;
}

typedef struct order_t {
    const uform__torch_machine_t *machine;
    const uint32_t *order;
} order_t;

static int compare_bytes(const uint8_t *a, uint32_t a_length, const uint8_t *b, uint32_t b_length) {
    int order = memcmp(a, b, a_length < b_length ? a_length : b_length);
    return order ? order : (a_length > b_length) - (a_length < b_length);
}

static int compare_storages(const void *left, const void *right, void *context) {
    const uform__torch_machine_t *machine = context;
    const uform__torch_storage_t *a = &machine->storages[*(const uint32_t *)left];
    const uform__torch_storage_t *b = &machine->storages[*(const uint32_t *)right];
    return compare_bytes(machine->bytes + a->key_offset, a->key_length, machine->bytes + b->key_offset, b->key_length);
}

/* Walks the storages after the key list, in its order, and places every storage of the object. */
static uform_status_t place_storages(const uint8_t *bytes, size_t size, size_t at, const uform__torch_machine_t *machine,
                                     const uform__torch_machine_t *keys, uint64_t *storage_data, uform_outcome_t *outcome) {
    char quoted[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    const uform__torch_value_t *list = &keys->values[keys->root];
    if (list->kind != UFORM__TORCH_LIST)
        return uform__fail(outcome, UFORM_FORMAT, function, "%s (file byte %zu) holds %s, not a list of keys", keys_source,
                           keys->origin, uform__torch_kind_name(list->kind));
    uint32_t count = machine->storage_count;
    uint32_t *order = malloc((count ? count : 1) * sizeof *order);
    if (!order) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the order of %u storages", count);
    for (uint32_t index = 0; index < count; ++index) order[index] = index, storage_data[index] = UINT64_MAX;
    qsort_r(order, count, sizeof *order, compare_storages, (void *)machine);
    uform_status_t status = UFORM_OK;
    for (uint32_t node = list->as.chain.head; node != UINT32_MAX && status == UFORM_OK; node = keys->nodes[node].next) {
        const uform__torch_value_t *key = &keys->values[keys->nodes[node].value];
        if (key->kind != UFORM__TORCH_STRING) {
            status = uform__fail(outcome, UFORM_FORMAT, function, "%s (file byte %zu) lists %s, not a key", keys_source,
                                 keys->origin, uform__torch_kind_name(key->kind));
            break;
        }
        const uint8_t *text = keys->bytes + key->as.offset;
        uform__torch_quote_bytes(text, key->count, quoted);
        /* The object's storages under this key: a run of `order`. */
        uint32_t low = 0, high = count;
        while (low < high) {
            uint32_t middle = low + (high - low) / 2;
            const uform__torch_storage_t *storage = &machine->storages[order[middle]];
            if (compare_bytes(machine->bytes + storage->key_offset, storage->key_length, text, key->count) < 0) low = middle + 1;
            else high = middle;
        }
        uint32_t end = low;
        while (end < count && !compare_bytes(machine->bytes + machine->storages[order[end]].key_offset,
                                             machine->storages[order[end]].key_length, text, key->count))
            ++end;
        if (end == low) {
            status = uform__fail(outcome, UFORM_FORMAT, function,
                                 "storage %s of the key list is named by no persistent id, so its size is unknown", quoted);
            break;
        }
        if (storage_data[order[low]] != UINT64_MAX) {
            status = uform__fail(outcome, UFORM_FORMAT, function, "storage %s appears twice in the key list", quoted);
            break;
        }
        size_t element = uform__torch_element_size(machine->storages[order[low]].dtype);
        uint64_t elements = 0, length = 0;
        if (size - at < 8) {
            status = uform__fail(outcome, UFORM_FORMAT, function,
                                 "storage %s: the file ends at byte %zu, before its 8-byte element count", quoted, size);
            break;
        }
        for (int byte = 7; byte >= 0; --byte) elements = elements << 8 | bytes[at + (size_t)byte];
        if (__builtin_mul_overflow(elements, (uint64_t)element, &length) || length > size - at - 8) {
            status = uform__fail(outcome, UFORM_FORMAT, function,
                                 "storage %s: %" PRIu64 " elements of %zu bytes from file byte %zu run past the end of the "
                                 "%zu-byte file",
                                 quoted, elements, element, at + 8, size);
            break;
        }
        for (uint32_t slot = low; slot < end; ++slot) {
            const uform__torch_storage_t *storage = &machine->storages[order[slot]];
            if (uform__torch_element_size(storage->dtype) != element) {
                status = uform__fail(outcome, UFORM_FORMAT, function,
                                     "storage %s is named with element sizes %zu and %zu", quoted, element,
                                     uform__torch_element_size(storage->dtype));
                break;
            }
            if (storage->first > elements || storage->numel > elements - storage->first) {
                status = uform__fail(outcome, UFORM_FORMAT, function,
                                     "%s, pickle byte %zu: the persistent id claims elements %" PRIu64 " to %" PRIu64
                                     " of storage %s, which holds %" PRIu64,
                                     object_source, storage->at, storage->first, storage->first + storage->numel, quoted,
                                     elements);
                break;
            }
            storage_data[order[slot]] = at + 8 + storage->first * element;
        }
        at += 8 + (size_t)length;
    }
    for (uint32_t index = 0; index < count && status == UFORM_OK; ++index) {
        const uform__torch_storage_t *storage = &machine->storages[index];
        if (storage_data[index] == UINT64_MAX)
            status = uform__fail(outcome, UFORM_FORMAT, function,
                                 "%s, pickle byte %zu: storage %s is not in the key list, so the file holds no bytes for it",
                                 object_source, storage->at,
                                 uform__torch_quote_bytes(machine->bytes + storage->key_offset, storage->key_length, quoted));
    }
    free(order);
    return status;
}

uform_status_t uform__torch_legacy_read(const uint8_t *bytes, size_t size, uform__torch_machine_t *machine,
                                        uint64_t **storage_data, uform_outcome_t *outcome) {
    *storage_data = NULL;
    size_t at = 0;
    uform_status_t status = read_preamble(bytes, size, &at, outcome);
    if (status != UFORM_OK) return status;
    machine->legacy = 1;
    status = run_at(machine, bytes, size, at, object_source, outcome);
    if (status != UFORM_OK) return status;
    at += machine->end;
    uform__torch_machine_t keys;
    memset(&keys, 0, sizeof keys);
    status = run_at(&keys, bytes, size, at, keys_source, outcome);
    if (status == UFORM_OK) {
        *storage_data = malloc((machine->storage_count ? machine->storage_count : 1) * sizeof **storage_data);
        if (!*storage_data)
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %u storage offsets",
                                 machine->storage_count);
        else
            status = place_storages(bytes, size, at + keys.end, machine, &keys, *storage_data, outcome);
    }
    uform__torch_pickle_free(&keys);
    return status;
}
