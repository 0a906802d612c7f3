/*
 * The checkpoint's fingerprint: 128 bits that change whenever anything the encoder reads changes
 * (any value of the config, any tensor's name, dtype, shape or bytes), so an index built by one
 * checkpoint is refused by another instead of answering nonsense. The config is hashed as
 * uform__model_config_print writes it, not as the file stores it: the same config written with
 * other spacing, key order or unknown keys keeps its fingerprint (docs/model.md#fingerprint). Training state (`optimizer.*` tensors) is
 * left out: a checkpoint exported without it keeps its fingerprint.
 *
 * The hash is this project's own (core/hash128.h). It streams at memory speed (a `small` checkpoint's 44 MiB in a few milliseconds), computed once per model
 * on first use and kept.
 */
#include <stdio.h>
#include <string.h>

#include "core/hash128.h"
#include "core/outcome.h"
#include "model/model.h"

static void hash_tensor(void *state, const uform__safetensors_tensor_t *tensor) {
    uform__hash128_t *hasher = state;
    if (strncmp(tensor->name, "optimizer.", 10) == 0) return;
    uform__hash128_field(hasher, tensor->name, strlen(tensor->name));
    uint64_t shape[UFORM__SAFETENSORS_MAX_RANK + 2] = {(uint64_t)tensor->dtype, tensor->rank};
    memcpy(shape + 2, tensor->shape, tensor->rank * sizeof(uint64_t));
    uform__hash128_field(hasher, shape, (2 + tensor->rank) * sizeof(uint64_t));
    uform__hash128_field(hasher, tensor->data, tensor->length);
}

/* The digest of `config` (text) and every tensor but the optimizer's. A published folder's
 * "config" is the text of every JSON file its towers were built from. */
static void compute(const uform_model_t model, const char *config, unsigned char digest[16]) {
    uform__hash128_t hasher;
    uform__hash128_init(&hasher);
    uform__hash128_field(&hasher, config ? config : "", config ? strlen(config) : 0);
    if (model->each_tensor) {
        model->each_tensor(model, hash_tensor, &hasher);
    } else {
        size_t count = uform__safetensors_count(model->file);
        for (size_t i = 0; i < count; ++i) /* name order: the file's own sort */
            hash_tensor(&hasher, uform__safetensors_at(model->file, i));
    }
    uform__hash128_digest(&hasher, digest);
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
