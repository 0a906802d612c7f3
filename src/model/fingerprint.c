/*
 * The checkpoint's fingerprint: 128 bits that change whenever anything the encoder reads changes
 * (any value of the config, any tensor's name, dtype, shape or bytes), so an index built by one
 * checkpoint is refused by another instead of answering nonsense. The config is hashed as
 * uform__model_config_print writes it, not as the file stores it: the same config written with
 * other spacing, key order or unknown keys keeps its fingerprint (docs/model.md#fingerprint). Training state (`optimizer.*` tensors) is
 * left out: a checkpoint exported without it keeps its fingerprint.
 *
 * The hash is this project's own: four 64-bit lanes each absorb one 8-byte word of every 32-byte
 * stripe (v = rotl(v ^ w·K1, 29)·K2, independent lanes so the multiplies overlap), a ragged tail is
 * zero-padded with its length mixed in, and the lanes fold through a splitmix64-style finaliser
 * into two outputs. Not cryptographic: it guards against mix-ups, not adversaries. It streams at
 * memory speed (a `small` checkpoint's 44 MiB in a few milliseconds), computed once per model
 * on first use and kept.
 */
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "model/model.h"

#define K1 0x9E3779B97F4A7C15ull
#define K2 0xC2B2AE3D27D4EB4Full
#define K3 0x165667B19E3779F9ull

typedef struct hasher_t {
    uint64_t lanes[4];
    unsigned char pending[32];
    size_t pending_bytes;
    uint64_t length;
} hasher_t;

static uint64_t rotl(uint64_t value, int bits) { return (value << bits) | (value >> (64 - bits)); }

static uint64_t load64(const unsigned char *bytes) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = value << 8 | bytes[i]; /* little-endian on every host */
    return value;
}

static void absorb_stripe(hasher_t *hasher, const unsigned char *stripe) {
    for (int lane = 0; lane < 4; ++lane)
        hasher->lanes[lane] = rotl(hasher->lanes[lane] ^ load64(stripe + 8 * lane) * K1, 29) * K2;
}

static void hasher_init(hasher_t *hasher) {
    memset(hasher, 0, sizeof *hasher);
    for (int lane = 0; lane < 4; ++lane) hasher->lanes[lane] = K3 * (uint64_t)(lane + 1);
}

static void hasher_update(hasher_t *hasher, const void *data, size_t size) {
    const unsigned char *bytes = data;
    hasher->length += size;
    if (hasher->pending_bytes) {
        size_t take = 32 - hasher->pending_bytes < size ? 32 - hasher->pending_bytes : size;
        memcpy(hasher->pending + hasher->pending_bytes, bytes, take);
        hasher->pending_bytes += take, bytes += take, size -= take;
        if (hasher->pending_bytes < 32) return;
        absorb_stripe(hasher, hasher->pending);
        hasher->pending_bytes = 0;
    }
    for (; size >= 32; bytes += 32, size -= 32) absorb_stripe(hasher, bytes);
    memcpy(hasher->pending, bytes, size);
    hasher->pending_bytes = size;
}

static uint64_t finalise(uint64_t value) {
    value ^= value >> 30, value *= 0xBF58476D1CE4E5B9ull;
    value ^= value >> 27, value *= 0x94D049BB133111EBull;
    return value ^ (value >> 31);
}

static void hasher_digest(hasher_t *hasher, unsigned char digest[16]) {
    if (hasher->pending_bytes) {
        memset(hasher->pending + hasher->pending_bytes, 0, 32 - hasher->pending_bytes);
        absorb_stripe(hasher, hasher->pending);
    }
    uint64_t a = hasher->lanes[0] ^ rotl(hasher->lanes[2], 17) ^ hasher->length;
    uint64_t b = hasher->lanes[1] ^ rotl(hasher->lanes[3], 41) ^ (hasher->length * K2);
    uint64_t high = finalise(a ^ finalise(b)), low = finalise(b + high * K1);
    for (int i = 0; i < 8; ++i) digest[i] = (unsigned char)(high >> (56 - 8 * i)), digest[8 + i] = (unsigned char)(low >> (56 - 8 * i));
}

/* Hashes a length-prefixed field, so adjacent fields cannot trade bytes. */
static void hash_field(hasher_t *hasher, const void *data, uint64_t size) {
    unsigned char prefix[8];
    for (int i = 0; i < 8; ++i) prefix[i] = (unsigned char)(size >> (8 * i));
    hasher_update(hasher, prefix, 8);
    hasher_update(hasher, data, (size_t)size);
}

static void hash_tensor(void *state, const uform__safetensors_tensor_t *tensor) {
    hasher_t *hasher = state;
    if (strncmp(tensor->name, "optimizer.", 10) == 0) return;
    hash_field(hasher, tensor->name, strlen(tensor->name));
    uint64_t shape[UFORM__SAFETENSORS_MAX_RANK + 2] = {(uint64_t)tensor->dtype, tensor->rank};
    memcpy(shape + 2, tensor->shape, tensor->rank * sizeof(uint64_t));
    hash_field(hasher, shape, (2 + tensor->rank) * sizeof(uint64_t));
    hash_field(hasher, tensor->data, tensor->length);
}

/* The digest of `config` (text) and every tensor but the optimizer's. A published folder's
 * "config" is the text of every JSON file its towers were built from. */
static void compute(const uform_model_t model, const char *config, unsigned char digest[16]) {
    hasher_t hasher;
    hasher_init(&hasher);
    hash_field(&hasher, config ? config : "", config ? strlen(config) : 0);
    if (model->each_tensor) {
        model->each_tensor(model, hash_tensor, &hasher);
    } else {
        size_t count = uform__safetensors_count(model->file);
        for (size_t i = 0; i < count; ++i) /* name order: the file's own sort */
            hash_tensor(&hasher, uform__safetensors_at(model->file, i));
    }
    hasher_digest(&hasher, digest);
}

static void hex_of(const unsigned char digest[16], char fingerprint[UFORM_FINGERPRINT_CAPACITY]);

UFORM_API uform_status_t uform_model_fingerprint(uform_model_t model, char fingerprint[UFORM_FINGERPRINT_CAPACITY],
                                                 uform_outcome_t *outcome) {
    if (!model || !fingerprint)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "%s is NULL", model ? "fingerprint" : "model");
    unsigned char digest[16];
    if (__atomic_load_n(&model->fingerprint_state, __ATOMIC_ACQUIRE) == 2) {
        memcpy(digest, model->fingerprint, sizeof digest);
    } else {
        compute(model, model->config_text, digest);
        /* The first thread to finish publishes; a thread that loses the race keeps its own, equal, digest. */
        uint32_t expected = 0;
        if (__atomic_compare_exchange_n(&model->fingerprint_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            memcpy(model->fingerprint, digest, sizeof digest);
            __atomic_store_n(&model->fingerprint_state, 2, __ATOMIC_RELEASE);
        }
    }
    hex_of(digest, fingerprint);
    return uform__succeed(outcome, __func__);
}

static void hex_of(const unsigned char digest[16], char fingerprint[UFORM_FINGERPRINT_CAPACITY]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) fingerprint[2 * i] = digits[digest[i] >> 4], fingerprint[2 * i + 1] = digits[digest[i] & 15];
    fingerprint[32] = 0;
}

int uform__model_fingerprint_matches(uform_model_t model, const char *fingerprint) {
    char mine[UFORM_FINGERPRINT_CAPACITY];
    if (uform_model_fingerprint(model, mine, NULL) != UFORM_OK) return 0;
    if (strcmp(mine, fingerprint) == 0) return 1;
    /* Before the config was hashed as printed, the stored text was: where the two differ, the index
     * may carry that older fingerprint of this same checkpoint. */
    if (!model->file) return 0;
    const char *stored = uform__safetensors_metadata_find(model->file, "uform.config");
    if (!stored || strcmp(stored, model->config_text) == 0) return 0;
    unsigned char digest[16];
    compute(model, stored, digest);
    hex_of(digest, mine);
    return strcmp(mine, fingerprint) == 0;
}
