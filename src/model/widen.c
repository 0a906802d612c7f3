/* Checkpoint floats widened to F32 (model.h). */
#include <string.h>

#include "kernels/nn.h"
#include "model/model.h"

void uform__model_widen(uform__safetensors_dtype_t dtype, const void *bytes, size_t count, float *values) {
    const unsigned char *at = bytes;
    /* Element by element through memcpy: a tensor's data is only as aligned as the file made it. */
    for (size_t i = 0; i < count; ++i) {
        if (dtype == UFORM__SAFETENSORS_F32) {
            memcpy(&values[i], at + 4 * i, 4);
        } else {
            uint16_t half;
            memcpy(&half, at + 2 * i, 2);
            values[i] = dtype == UFORM__SAFETENSORS_BF16 ? uform__nn_bf16_to_f32_one(half) : uform__nn_f16_to_f32_one(half);
        }
    }
}
