/*
 * The INT8 GEMM dispatch and the driver every class shares (gemm_i8.h): argument checks, weight
 * packing, the parallel split of the product and of the quantizer, and the plain-C pieces the
 * reference and the partial tiles use. Compiled for the baseline CPU; only the tiles and row
 * quantizers it calls use wider instructions (gemm_i8_<class>.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "kernels/gemm_i8.h"

const uform__gemm_i8_kernels_t *uform__gemm_i8_kernels(uform_cpu_class_t cpu_class) {
    switch (cpu_class) {
    case UFORM_CPU_CLASS_INTEL_HASWELL:
    case UFORM_CPU_CLASS_INTEL_SIERRA: /* AVX-VNNI's ymm vpdpbusd would serve it better; not written yet */
        return &uform__gemm_i8_kernels_haswell;
    case UFORM_CPU_CLASS_INTEL_SKYLAKE:
        return &uform__gemm_i8_kernels_skylake;
    case UFORM_CPU_CLASS_INTEL_ICELAKE:
    case UFORM_CPU_CLASS_AMD_GENOA:
    case UFORM_CPU_CLASS_INTEL_SAPPHIRE: /* AMX's int8 tiles would beat vpdpbusd there; not written yet */
    case UFORM_CPU_CLASS_INTEL_GRANITE:
    case UFORM_CPU_CLASS_INTEL_DIAMOND:
        return &uform__gemm_i8_kernels_icelake;
    default: /* SERIAL, UNKNOWN, MONOVERSIONED and the non-x86 classes */
        return &uform__gemm_i8_kernels_serial;
    }
}

/* ---- The reference pieces ---- */

static uint32_t float_bits(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

void uform__gemm_i8_row_factors(uint32_t amax_bits, float *scale, float *inv) {
    if (amax_bits >= 0x7F800000u) { /* an infinity or a NaN: outputs NaN, as a float product's */
        *scale = NAN, *inv = 0.0f;
        return;
    }
    if (amax_bits < UFORM__GEMM_I8_TINY_BITS) { /* zero, or 127/amax would overflow */
        *scale = 0.0f, *inv = 0.0f;
        return;
    }
    float amax;
    memcpy(&amax, &amax_bits, sizeof amax);
    *scale = amax / 127.0f;
    *inv = 127.0f / amax;
}

void uform__gemm_i8_quantize_row_serial(size_t k, const void *x, uform__gemm_dtype_t x_dtype, int8_t *q,
                                        size_t k_padded, float *scale, int32_t *sum) {
    const float *x32 = x;
    const uform__bf16_t *x16 = x;
    uint32_t amax_bits = 0;
    for (size_t i = 0; i < k; ++i) {
        uint32_t bits = x_dtype == UFORM__GEMM_BF16 ? (uint32_t)x16[i] << 16 : float_bits(x32[i]);
        bits &= 0x7FFFFFFFu;
        if (bits > amax_bits) amax_bits = bits;
    }
    float inv;
    uform__gemm_i8_row_factors(amax_bits, scale, &inv);
    int32_t total = 0;
    for (size_t i = 0; i < k; ++i) {
        int value = 0;
        if (inv != 0.0f) {
            float element = x_dtype == UFORM__GEMM_BF16 ? uform__gemm_f32_from_bf16(x16[i]) : x32[i];
            float rounded = rintf(element * inv); /* nearest, ties to even (the default rounding mode) */
            value = rounded > 127.0f ? 127 : rounded < -127.0f ? -127 : (int)rounded;
        }
        q[i] = (int8_t)value;
        total += value;
    }
    for (size_t i = k; i < k_padded; ++i) q[i] = 0;
    if (sum) *sum = total;
}

float uform__gemm_i8_dequantize(int32_t acc, float x_scale, float w_scale, float bias) {
    return fmaf((float)acc, x_scale * w_scale, bias);
}

void uform__gemm_i8_tile_store(const int32_t *sums, size_t nr, const uform__gemm_i8_tile_out_t *out,
                               const uform__gemm_kernels_t *gelu_kernels) {
    if (out->output == UFORM__GEMM_I8_I32) {
        for (size_t r = 0; r < out->rows; ++r)
            memcpy((int32_t *)out->y + r * out->ldy, sums + r * nr, out->cols * sizeof(int32_t));
        return;
    }
    /* F32 values staged in a local tile (at most 8 × 64), GELU'd there by the class's F32
     * epilogue, then stored as F32 or rounded to BF16. */
    float staged[8 * 64];
    size_t cols = out->cols;
    for (size_t r = 0; r < out->rows; ++r)
        for (size_t j = 0; j < cols; ++j) {
            float value = uform__gemm_i8_dequantize(sums[r * nr + j], out->x_scale[r], out->w_scale[j],
                                                    out->bias ? out->bias[j] : 0.0f);
            if (out->accumulate) value = ((const float *)out->y)[r * out->ldy + j] + value;
            staged[r * 64 + j] = value;
        }
    if (out->gelu) gelu_kernels->epilogue(staged, 64, out->rows, cols, NULL, out->gelu);
    for (size_t r = 0; r < out->rows; ++r) {
        if (out->output == UFORM__GEMM_I8_F32) memcpy((float *)out->y + r * out->ldy, staged + r * 64, cols * sizeof(float));
        else
            for (size_t j = 0; j < cols; ++j)
                ((uform__bf16_t *)out->y)[r * out->ldy + j] = uform__gemm_bf16_from_f32(staged[r * 64 + j]);
    }
}

/* ---- Quantizing rows in parallel ---- */

typedef struct quantize_job_t {
    const uform__gemm_i8_micro_t *micro;
    size_t rows, k, ldx, ldq, prongs;
    const void *x;
    uform__gemm_dtype_t x_dtype;
    int8_t *q;
    float *scale;
    int32_t *sums;
} quantize_job_t;

static void quantize_prong(void *context, size_t thread, size_t prong) {
    (void)thread;
    const quantize_job_t *job = context;
    size_t begin, end, element = job->x_dtype == UFORM__GEMM_BF16 ? 2 : 4;
    uform__split_range(job->rows, job->prongs, prong, &begin, &end);
    for (size_t r = begin; r < end; ++r)
        job->micro->quantize_row(job->k, (const unsigned char *)job->x + r * job->ldx * element, job->x_dtype,
                                 job->q + r * job->ldq, uform__gemm_i8_k_padded(job->k), job->scale + r,
                                 job->sums ? job->sums + r : NULL);
}

void uform__gemm_i8_quantize_drive(const uform__gemm_i8_micro_t *micro, size_t rows, size_t k, const void *x,
                                   size_t ldx, uform__gemm_dtype_t x_dtype, int8_t *q, size_t ldq, float *scale,
                                   int32_t *sums, const uform__parallel_t *parallel) {
    if (rows == 0) return;
    /* Prongs of at least ~16 KiB of input, a few per thread for balance. */
    size_t threads = uform__parallel_threads(parallel), row_bytes = (k ? k : 1) * (x_dtype == UFORM__GEMM_BF16 ? 2 : 4);
    size_t prongs = rows * row_bytes / 16384 + 1;
    if (prongs > 4 * threads) prongs = 4 * threads;
    if (prongs > rows) prongs = rows;
    quantize_job_t job = {micro, rows, k, ldx, ldq, prongs, x, x_dtype, q, scale, sums};
    uform__parallel_for(threads > 1 ? parallel : NULL, prongs, quantize_prong, &job);
}

/* ---- Packing ---- */

static size_t round_up(size_t value, size_t step) { return (value + step - 1) / step * step; }

static size_t panels_bytes(const uform__gemm_i8_micro_t *micro, size_t n, size_t k) {
    return round_up(round_up(n, micro->nr) * uform__gemm_i8_k_padded(k) * (micro->wide ? 2 : 1), 64);
}

size_t uform__gemm_i8_packed_size_for(const uform__gemm_i8_micro_t *micro, size_t n, size_t k) {
    return panels_bytes(micro, n, k) + round_up(round_up(n, micro->nr) * sizeof(float), 64);
}

uform_status_t uform__gemm_i8_pack_for(const uform__gemm_i8_micro_t *micro, const int8_t *q, size_t ldq,
                                       const float *scale, size_t n, size_t k, void *memory, size_t capacity,
                                       uform__gemm_i8_packed_t *packed, uform_outcome_t *outcome) {
    static const char function[] = "uform__gemm_i8_pack";
    if (!packed) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "'packed' is NULL");
    memset(packed, 0, sizeof *packed);
    if (n == 0 || k == 0 || k > UFORM__GEMM_I8_MAX_K)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "W[%zu, %zu]: N must be positive and K in 1..%d (int32 sums stay exact up to there)", n, k,
                           UFORM__GEMM_I8_MAX_K);
    if (!q || !scale)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "'%s' is NULL", !q ? "q" : "scale");
    if (n > 1 && ldq < k)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "quantized W [%zu, %zu]: row stride %zu is smaller than its %zu columns", n, k, ldq, k);
    size_t size = uform__gemm_i8_packed_size_for(micro, n, k);
    if (!memory || capacity < size)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "packing W[%zu, %zu] needs %zu bytes, the buffer has %zu", n, k, size, memory ? capacity : 0);
    if ((uintptr_t)memory % 64)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the packing buffer %p is not 64-byte aligned",
                           memory);
    size_t nr = micro->nr, k_padded = uform__gemm_i8_k_padded(k), group = micro->wide ? 2 : 4, groups = k_padded / group;
    int8_t *panels = memory;
    int16_t *panels16 = memory;
    float *scales = (float *)((unsigned char *)memory + panels_bytes(micro, n, k));
    /* panel p, group t, column j, element i  ←  q[p·NR + j][group·t + i]: groups of 4 bytes (+128 as
     * u8 when biased), or of 2 int16 when wide. */
    for (size_t p = 0; p < (n + nr - 1) / nr; ++p)
        for (size_t j = 0; j < nr; ++j) {
            size_t column = p * nr + j;
            const int8_t *row = column < n ? q + column * ldq : NULL;
            for (size_t t = 0; t < groups; ++t)
                for (size_t i = 0; i < group; ++i) {
                    size_t kk = group * t + i, at = p * nr * k_padded + (t * nr + j) * group + i;
                    int value = row && kk < k ? row[kk] : 0;
                    if (micro->wide) panels16[at] = (int16_t)value;
                    else panels[at] = (int8_t)(micro->biased ? (uint8_t)(value + 128) : value);
                }
        }
    for (size_t j = 0; j < round_up(n, nr); ++j) scales[j] = j < n ? scale[j] : 0.0f;
    *packed = (uform__gemm_i8_packed_t){.data = panels, .scale = scales, .n = n, .k = k, .k_padded = k_padded,
                                        .nr = nr, .layout = micro->layout, .biased = micro->biased, .wide = micro->wide};
    return UFORM_OK;
}

void uform__gemm_i8_unpack(const uform__gemm_i8_packed_t *packed, int8_t *q, size_t ldq) {
    size_t nr = packed->nr, k_padded = packed->k_padded, group = packed->wide ? 2 : 4;
    const int16_t *panels16 = (const int16_t *)packed->data;
    for (size_t column = 0; column < packed->n; ++column) {
        size_t p = column / nr, j = column % nr;
        for (size_t kk = 0; kk < packed->k; ++kk) {
            size_t at = p * nr * k_padded + ((kk / group) * nr + j) * group + kk % group;
            int value = packed->wide ? panels16[at] : packed->biased ? (int)(uint8_t)packed->data[at] - 128 : packed->data[at];
            q[column * ldq + kk] = (int8_t)value;
        }
    }
}

/* ---- The product ---- */

typedef struct forward_job_t {
    const uform__gemm_i8_micro_t *micro;
    const uform__gemm_i8_forward_t *args;
    size_t mc, row_blocks, groups, panels;
    unsigned char *scratch; /* wide classes: per thread [mc][k_padded] int16 */
    size_t scratch_stride;
} forward_job_t;

/* The bytes of one row block a prong works on: int8 rows, or int16 for wide classes. */
static size_t block_budget(void) { return (size_t)256 << 10; }

static void forward_prong(void *context, size_t thread, size_t prong) {
    const forward_job_t *job = context;
    const uform__gemm_i8_micro_t *micro = job->micro;
    const uform__gemm_i8_forward_t *args = job->args;
    const uform__gemm_i8_packed_t *packed = args->packed;
    size_t block = prong / job->groups, group = prong % job->groups;
    size_t i_begin = block * job->mc, i_end = i_begin + job->mc < args->m ? i_begin + job->mc : args->m;
    size_t p_begin, p_end;
    uform__split_range(job->panels, job->groups, group, &p_begin, &p_end);
    size_t nr = micro->nr, mr = micro->mr, quads = packed->k_padded / 4;
    size_t element = args->output == UFORM__GEMM_I8_BF16 ? 2 : 4;
    const int8_t *a = args->x.q + i_begin * args->x.ld;
    size_t lda = args->x.ld;
    if (micro->wide) { /* sign-extend the block's rows once; every panel of the prong reads them */
        int16_t *wide = (int16_t *)(job->scratch + thread * job->scratch_stride);
        for (size_t i = i_begin; i < i_end; ++i)
            micro->widen_row(packed->k_padded, args->x.q + i * args->x.ld, wide + (i - i_begin) * packed->k_padded);
        a = (const int8_t *)wide, lda = packed->k_padded;
    }
    /* The tiles of a panel prefetch the prong's next panel in equal shares (gemm_i8.h). */
    size_t panel_bytes = nr * packed->k_padded * (micro->wide ? 2 : 1), tiles = (i_end - i_begin + mr - 1) / mr;
    size_t ahead_share = round_up((panel_bytes + tiles - 1) / tiles, 64);
    for (size_t p = p_begin; p < p_end; ++p) {
        size_t j0 = p * nr, cols = args->n - j0 < nr ? args->n - j0 : nr;
        const int8_t *panel = packed->data + p * panel_bytes;
        for (size_t i0 = i_begin; i0 < i_end; i0 += mr) {
            size_t rows = i_end - i0 < mr ? i_end - i0 : mr, ahead_begin = (i0 - i_begin) / mr * ahead_share;
            int ahead = p + 1 < p_end && ahead_begin < panel_bytes;
            uform__gemm_i8_tile_out_t out = {
                .y = (unsigned char *)args->y + (i0 * args->ldy + j0) * element, .ldy = args->ldy,
                .output = args->output, .rows = rows, .cols = cols, .x_scale = args->x.scale + i0,
                .x_sums = args->x.sums + i0, .w_scale = packed->scale + j0, .bias = args->bias ? args->bias + j0 : NULL,
                .accumulate = args->accumulate, .gelu = args->gelu,
                .ahead = ahead ? panel + panel_bytes + ahead_begin : NULL,
                .ahead_bytes = !ahead ? 0 : panel_bytes - ahead_begin < ahead_share ? panel_bytes - ahead_begin : ahead_share};
            micro->tile(quads, a + (i0 - i_begin) * lda * (micro->wide ? 2 : 1), lda, panel, &out);
        }
    }
}

uform_status_t uform__gemm_i8_forward_drive(const uform__gemm_i8_micro_t *micro, const uform__gemm_i8_forward_t *args,
                                            const uform__parallel_t *parallel, uform_outcome_t *outcome) {
    static const char function[] = "uform__gemm_i8_forward";
    if (!args) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the arguments are NULL");
    const uform__gemm_i8_packed_t *packed = args->packed;
    if (!packed || !packed->data)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the packed weight is NULL");
    if (packed->layout != micro->layout || packed->nr != micro->nr)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "packed weight has layout %u (NR %zu), but this class's kernel expects layout %u (NR %zu)",
                           packed->layout, packed->nr, micro->layout, micro->nr);
    if (packed->n != args->n || packed->k != args->k)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "packed weight is [%zu, %zu], but the product needs W[%zu, %zu]", packed->n, packed->k,
                           args->n, args->k);
    if ((unsigned)args->output > UFORM__GEMM_I8_I32)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "output %d is not F32 (0), BF16 (1) or I32 (2)",
                           (int)args->output);
    if (!uform__gemm_gelu_known(args->gelu))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "'gelu' is %d; expected " UFORM__GEMM_GELU_CHOICES,
                           args->gelu);
    if (args->gelu && (args->accumulate || args->output == UFORM__GEMM_I8_I32))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "'gelu' does not combine with %s",
                           args->accumulate ? "'accumulate'" : "I32 output (the raw sums)");
    if (args->accumulate && args->output != UFORM__GEMM_I8_F32)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "'accumulate' needs F32 output");
    if (args->m == 0 || args->n == 0) return UFORM_OK;
    if (!args->x.q || !args->x.scale || !args->x.sums || !args->y)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "'%s' is NULL",
                           !args->x.q ? "x.q" : !args->x.scale ? "x.scale" : !args->x.sums ? "x.sums" : "y");
    if (args->m > 1 && args->x.ld < packed->k_padded)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "quantized X [%zu, %zu]: row stride %zu is smaller than K rounded up to 4 (%zu)", args->m,
                           args->k, args->x.ld, packed->k_padded);
    if (args->m > 1 && args->ldy < args->n)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "matrix 'y' [%zu, %zu]: leading dimension %zu is smaller than its %zu columns", args->m,
                           args->n, args->ldy, args->n);
    /* Row blocks: at most MC rows, and few enough that the block's K bytes fit in 256 KiB (half of
     * the smallest L2 of the classes), so the row panels stream from L2 while a panel is reused. */
    size_t mr = micro->mr, mc = micro->mc, budget = block_budget() / (micro->wide ? 2 : 1);
    if (mc * packed->k_padded > budget) mc = budget / packed->k_padded / mr * mr;
    if (mc < mr) mc = mr;
    size_t threads = uform__parallel_threads(parallel);
    size_t row_blocks = (args->m + mc - 1) / mc, panels = (args->n + micro->nr - 1) / micro->nr;
    /* Equal work per thread: as many row blocks as a multiple of the thread count (smaller blocks),
     * and column groups too when the rows are few. */
    /* ... unless the rows fit one block and the columns are enough to share (gemm_driver.c says
     * why: each weight panel is then streamed once, not once per row block). */
    if (threads > 1 && row_blocks % threads && !(row_blocks == 1 && panels >= 2 * threads)) {
        size_t wanted = (row_blocks + threads - 1) / threads * threads;
        size_t smaller = ((args->m + wanted - 1) / wanted + mr - 1) / mr * mr;
        if (smaller >= mr) mc = smaller, row_blocks = (args->m + mc - 1) / mc;
    }
    size_t groups = 1;
    if (threads > 1 && row_blocks < 4 * threads) {
        groups = (4 * threads + row_blocks - 1) / row_blocks;
        /* One block of rows (a text at batch 1): one run of consecutive panels a thread, which the
         * prefetchers stream best. Measured against two runs a thread (which let a thread take over
         * half of a late partner's share): batch-1 texts 3% faster on two threads, BERT-base and
         * MiniLM-L6 alike, with builds taking turns in one process; run alone, less, within the
         * host's drift (bench/README.md "Batch-1 texts: INT8 panels on 2 MiB pages"). */
        if (row_blocks == 1 && panels >= 2 * threads) groups = threads;
        if (groups > panels) groups = panels;
    }
    forward_job_t job = {micro, args, mc, row_blocks, groups, panels, NULL, 0};
    void *owned = NULL;
    if (micro->wide) {
        job.scratch_stride = round_up(mc * packed->k_padded * 2, 64);
        size_t bytes = job.scratch_stride * threads;
        if (args->scratch && args->scratch_capacity >= bytes && (uintptr_t)args->scratch % 64 == 0) job.scratch = args->scratch;
        else if (!(job.scratch = owned = aligned_alloc(64, bytes)))
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu bytes of scratch", bytes);
    }
    uform__parallel_for(parallel, row_blocks * groups, forward_prong, &job);
    free(owned);
    return UFORM_OK;
}

size_t uform__gemm_i8_scratch_bytes_for(const uform__gemm_i8_micro_t *micro, size_t threads) {
    /* A row block never exceeds the budget (or MR rows of the largest K, 65,536 × 2 bytes each). */
    size_t per_thread = block_budget() > micro->mr * UFORM__GEMM_I8_MAX_K * 2 ? block_budget() : micro->mr * UFORM__GEMM_I8_MAX_K * 2;
    return micro->wide ? round_up(per_thread + 64, 64) * (threads ? threads : 1) : 0;
}
