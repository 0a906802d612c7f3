/*
 * libFuzzer target for the safetensors reader: any bytes go to the from-memory open, which must
 * answer UFORM_OK or UFORM_FORMAT (with a message) and never read outside the input. An accepted
 * file is walked completely, and its promises are checked: a broken one traps, which the fuzzer
 * (or the replay driver, replay_main.c) reports as a crash. The allocation-free JSON checker must
 * agree with cJSON on the header bytes (it decides between a malformed header and an allocation
 * that failed, json.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "io/json.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const uform__safetensors_t *file, const uint8_t *data, size_t size) {
    size_t file_size = 0, data_start = 0;
    if (uform__safetensors_bytes(file, &file_size, &data_start) != data || file_size != size || data_start > size)
        __builtin_trap();
    volatile uint8_t sink = 0;
    size_t count = uform__safetensors_count(file);
    for (size_t index = 0; index < count; ++index) {
        const uform__safetensors_tensor_t *tensor = uform__safetensors_at(file, index);
        uint64_t elements = 1;
        if (tensor->rank > UFORM__SAFETENSORS_MAX_RANK) __builtin_trap();
        for (uint32_t axis = 0; axis < tensor->rank; ++axis) elements *= tensor->shape[axis];
        if (elements != tensor->element_count) __builtin_trap();
        if (tensor->length != elements * uform__safetensors_dtype_size(tensor->dtype)) __builtin_trap();
        if (tensor->offset > size - data_start || tensor->length > size - data_start - tensor->offset) __builtin_trap();
        if ((const uint8_t *)tensor->data != data + data_start + tensor->offset) __builtin_trap();
        if (uform__safetensors_find(file, tensor->name) != tensor) __builtin_trap();
        if (index && strcmp(uform__safetensors_at(file, index - 1)->name, tensor->name) >= 0) __builtin_trap();
        if (tensor->length) { /* the first and last bytes: an out-of-range pointer faults under ASan */
            sink ^= ((const uint8_t *)tensor->data)[0];
            sink ^= ((const uint8_t *)tensor->data)[tensor->length - 1];
        }
    }
    for (size_t index = 0; index < uform__safetensors_metadata_count(file); ++index) {
        const char *key = NULL, *value = NULL;
        if (!uform__safetensors_metadata_at(file, index, &key, &value)) __builtin_trap();
        if (uform__safetensors_metadata_find(file, key) != value) __builtin_trap();
        sink ^= (uint8_t)strlen(value);
    }
    (void)sink;
}

/* A run of more than 63 number characters, where cJSON versions differ and the checker is lenient. */
static int long_number_run(const char *text, size_t length) {
    size_t run = 0;
    for (size_t i = 0; i < length; ++i) {
        char c = text[i];
        run = (c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'e' || c == 'E' || c == '.' ? run + 1 : 0;
        if (run > 63) return 1;
    }
    return 0;
}

/* cJSON accepts a value at the start of `text` exactly when uform__json_check says so. */
static void check_json_agreement(const char *text, size_t length) {
    cJSON *parsed = cJSON_ParseWithLengthOpts(text, length, NULL, 0);
    int checked = uform__json_check(text, length, NULL);
    if (parsed && !checked) __builtin_trap();
    if (!parsed && checked && !long_number_run(text, length)) __builtin_trap();
    cJSON_Delete(parsed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 8) {
        uint64_t header = 0;
        for (int byte = 7; byte >= 0; --byte) header = header << 8 | data[byte];
        check_json_agreement((const char *)data + 8, header < size - 8 ? (size_t)header : size - 8);
    }
    check_json_agreement((const char *)data, size);
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform__safetensors_t *file = NULL;
    uform_status_t status = uform__safetensors_open_memory(data, size, &file, &outcome);
    if (status == UFORM_OK) {
        if (!file) __builtin_trap();
        walk(file, data, size);
    } else if (status != UFORM_FORMAT || file || !outcome.message[0]) {
        __builtin_trap();
    }
    uform__safetensors_close(file);
    return 0;
}
