/*
 * libFuzzer target for the PyTorch reader (src/io/torch_file.h). The first byte picks what the
 * rest is: even, a whole archive; odd, a raw data.pkl, which the target wraps in the sample
 * archive (tests/io/torch_sample.h: a correct CRC, storage "0" of 24 floats) so that mutations
 * reach the pickle machine instead of dying at the CRC check. The open must answer UFORM_OK,
 * UFORM_FORMAT or UFORM_UNSUPPORTED (with a message), never read outside the input, and an
 * accepted file keeps every promise of torch_file.h: a broken one traps, which the fuzzer (or
 * the replay driver, replay_main.c) reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "io/safetensors_text.h"
#include "io/torch_file.h"
#include "io/torch_sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const uform__torch_file_t *file, const uint8_t *bytes, size_t size) {
    size_t file_size = 0;
    if (uform__torch_bytes(file, &file_size) != bytes || file_size != size) __builtin_trap();
    volatile uint8_t sink = 0;
    size_t count = uform__torch_count(file);
    for (size_t index = 0; index < count; ++index) {
        const uform__safetensors_tensor_t *tensor = uform__torch_at(file, index);
        if (tensor->rank > UFORM__SAFETENSORS_MAX_RANK) __builtin_trap();
        uint64_t elements = 1;
        for (uint32_t axis = 0; axis < tensor->rank; ++axis) elements *= tensor->shape[axis];
        for (uint32_t axis = tensor->rank; axis < UFORM__SAFETENSORS_MAX_RANK; ++axis)
            if (tensor->shape[axis]) __builtin_trap();
        if (elements != tensor->element_count) __builtin_trap();
        if (tensor->length != elements * uform__safetensors_dtype_size(tensor->dtype)) __builtin_trap();
        if (!uform__safetensors_dtype_name(tensor->dtype) || !tensor->data) __builtin_trap();
        if (uform__torch_find(file, tensor->name) != tensor) __builtin_trap();
        if (index && strcmp(uform__torch_at(file, index - 1)->name, tensor->name) >= 0) __builtin_trap();
        if (!uform__safetensors_utf8_valid(tensor->name, strlen(tensor->name), NULL)) __builtin_trap();
        if (uform__torch_mapped(file, tensor)) {
            if (tensor->offset > size || tensor->length > size - tensor->offset) __builtin_trap();
            if ((const uint8_t *)tensor->data != bytes + tensor->offset) __builtin_trap();
        } else if (tensor->offset != UINT64_MAX) {
            __builtin_trap();
        }
        if (tensor->length) { /* the first and last bytes: an out-of-range pointer faults under ASan */
            sink ^= ((const uint8_t *)tensor->data)[0];
            sink ^= ((const uint8_t *)tensor->data)[tensor->length - 1];
        }
    }
    (void)sink;
}

static void open_and_walk(const uint8_t *bytes, size_t size) {
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform__torch_file_t *file = NULL;
    uform_status_t status = uform__torch_open_memory(bytes, size, &file, &outcome);
    if (status == UFORM_OK) {
        if (!file) __builtin_trap();
        walk(file, bytes, size);
    } else if ((status != UFORM_FORMAT && status != UFORM_UNSUPPORTED) || file || !outcome.message[0]) {
        __builtin_trap();
    }
    uform__torch_close(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    if (!(data[0] & 1)) {
        open_and_walk(size > 1 ? data + 1 : NULL, size - 1);
        return 0;
    }
    sample_bytes_t pickle = {(uint8_t *)(uintptr_t)(data + 1), size - 1, size - 1}, archive = {0};
    sample_archive(&archive, &pickle, (sample_zip_options_t){0});
    open_and_walk(archive.data, archive.size);
    free(archive.data);
    return 0;
}
