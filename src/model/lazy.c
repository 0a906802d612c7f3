/*
 * Packing a published tower's weights on first use (model.h, uform__linear_t's `lazy`): a folder
 * loads without copying a weight (docs/checkpoints.md, "Weight files"), and the first call that runs
 * a layer on the model's CPU class packs it into that class's panels, which every later call reads.
 *
 * Several calls may run one model at once on different executors: the first to claim a layer
 * (lazy_state 0 → 1) packs it and publishes the panels (release store); a call that finds it being
 * packed runs that product from the unpacked weight instead of waiting, and gets the same result
 * (packing changes the order of nothing the products sum). A layer whose panels cannot be allocated
 * keeps running unpacked (state 3): slower, never wrong.
 */
#include <stdlib.h>

#include "core/huge_pages.h"
#include "model/encode.h"

typedef struct uform__lazy_packed_t {
    uform__gemm_packed_t packed;
    void *memory;
} uform__lazy_packed_t;

const uform__gemm_packed_t *uform__linear_lazy_packed(const uform__compute_t *compute, const uform__linear_t *layer,
                                                      int bf16) {
    uform__linear_t *mutable = (uform__linear_t *)layer; /* only the atomics below are written */
    const uform__lazy_packed_t *ready = __atomic_load_n(&mutable->lazy_packed, __ATOMIC_ACQUIRE);
    if (ready) return (ready->packed.panel_dtype == UFORM__GEMM_BF16) == bf16 ? &ready->packed : NULL;
    uint32_t expected = 0;
    if (!__atomic_compare_exchange_n(&mutable->lazy_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return NULL; /* another call packs it now, or packing failed */
    const uform__gemm_kernels_t *gemm = compute->gemm;
    size_t bytes = bf16 ? gemm->packed_size_bf16(layer->rows, layer->columns, layer->dtype)
                        : gemm->packed_size_f32(layer->rows, layer->columns, layer->dtype);
    uform__lazy_packed_t *made = calloc(1, sizeof *made);
    /* Panels of 2 MiB or more on 2 MiB pages (advice; quantize.c says why) */
    size_t huge = UFORM__HUGE_PAGE, alignment = bytes >= huge ? huge : 64;
    void *memory = made ? aligned_alloc(alignment, (bytes + 63) / 64 * 64) : NULL;
    if (memory && alignment == huge) uform__advise_huge_pages(memory, bytes / huge * huge);
    uform_status_t status = UFORM_OUT_OF_MEMORY;
    if (memory)
        status = (bf16 ? gemm->pack_bf16 : gemm->pack_f32)(layer->weight, layer->columns, layer->dtype, layer->rows,
                                                           layer->columns, memory, bytes, &made->packed, NULL);
    if (status != UFORM_OK) {
        free(memory), free(made);
        __atomic_store_n(&mutable->lazy_state, 3, __ATOMIC_RELEASE);
        return NULL;
    }
    made->memory = memory;
    __atomic_store_n(&mutable->lazy_packed, made, __ATOMIC_RELEASE);
    __atomic_store_n(&mutable->lazy_state, 2, __ATOMIC_RELEASE);
    return &made->packed;
}

void uform__linear_lazy_release(uform__linear_t *layer) {
    uform__lazy_packed_t *made = (uform__lazy_packed_t *)layer->lazy_packed;
    if (made) free(made->memory), free(made);
    layer->lazy_packed = NULL, layer->lazy_state = 0;
}
