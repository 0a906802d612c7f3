/*
 * INT8 matrix products per CPU class: the forward product of a linear layer with int8 weights
 * (symmetric, one scale per output channel) and int8 activations (symmetric, one scale per row,
 * quantized on the fly), summed exactly in int32 and scaled back to F32. Private to libuform;
 * docs/int8.md states the scheme for users.
 *
 *   quantize   q[r, k] = rint(x[r, k] · (127 / amax_r)),  scale_r = amax_r / 127,  amax_r = max_k |x[r, k]|
 *   forward    Y[M,N] = fma(float(Σ_k qx[m,k]·qw[n,k]), sx[m]·sw[n], bias[n]) (then GELU), or Y += that
 *
 * Quantization (the same function for weights, per output channel, and activations, per row).
 * Every step is one exactly specified F32 operation, so every class (and NumPy) gives the same
 * bits: amax is the largest |x| of the row (taken on the bit patterns as integers, so it does
 * not depend on the order of a vector max); inv = 127 / amax and scale = amax / 127 are each one
 * F32 division; q = rint(x · inv) is one F32 product rounded to nearest, ties to even (the
 * default rounding mode; vcvtps2dq), clamped to [−127, 127] (never −128, which keeps −q in
 * range for the sign trick below). A row whose amax is below 2^-96 (zero, or so small that
 * 127/amax would overflow) quantizes to zeros with scale 0; a row holding an infinity or a NaN
 * quantizes to zeros with scale NaN, so its outputs are NaN, as a float product's would be.
 * The quantizer also answers each row's Σ_k q (int32), which the VNNI classes need (below).
 * BF16 input rows are widened first (exactly).
 *
 * The product. Σ_k qx·qw is exact in int32 for K ≤ 65,536 (UFORM__GEMM_I8_MAX_K; a larger K is
 * UFORM_INVALID_ARGUMENT): the VNNI form's biased sum below stays under K·255·127 < 2^31. The
 * F32 epilogue is float(acc) — rounded to nearest even once |acc| > 2^24 — times the F32
 * product sx[m]·sw[n], plus bias[n] in one fused multiply-add (bias 0 when NULL); with
 * `accumulate` the old Y is added to that (one more F32 addition); then the activation as gemm.h
 * defines it (any uform__gemm_gelu_t: GELU_EXACT, _FAST, _QUICK or _TANH). Every class computes these operations in this order, so with
 * GELU_NONE the F32 results are bit-identical across classes and thread counts, and so are the
 * int32 sums (tests/kernels/test_gemm_i8.c). GELU follows each class's float kernels (gemm.h).
 *
 * How each class multiplies (one kernel file per instruction set, gemm_i8_<class>.c):
 *   SERIAL    plain C in int32, the reference.
 *   HASWELL   AVX2 vpmaddubsw + vpmaddwd + vpaddd. vpmaddubsw multiplies u8 by s8 and adds
 *             adjacent pairs into s16 with saturation: u8 = x + 128 against s8 weights could
 *             reach 2·255·127 = 64,770 and saturate. Instead (ggml's q8_0 trick) the tile feeds
 *             it |qx| (≤ 127, as u8) and qw with qx's sign moved onto it (vpsignb), so
 *             |pair| ≤ 2·127·127 = 32,258 < 32,767: it never saturates because −128 never
 *             occurs; vpmaddwd against ones then adds the pairs into s32 exactly.
 *   SKYLAKE   the same with AVX-512 BW on zmm (no vpsignb there: a byte-masked 0 − qw from
 *             vpmovb2m of qx's signs).
 *   ICELAKE, GENOA (and SAPPHIRE, GRANITE, DIAMOND)  AVX-512 VNNI vpdpbusd: 64 u8×s8 products per
 *             instruction, four adjacent ones summed into each s32 lane without saturation.
 *             The offset trick: the weight panels hold qw + 128 as u8 (biased once, at packing)
 *             and the activations stay s8, so acc = Σ (qw + 128)·qx = Σ qw·qx + 128·Σ_k qx; the
 *             tile subtracts 128·(the row's Σ q) from the quantizer. Moving the bias onto the
 *             weights instead of the activations (oneDNN's choice) costs nothing at run time.
 * SIERRA (AVX-VNNI on ymm) runs HASWELL's kernels; everything else SERIAL's.
 *
 * Layout. A weight is packed once (at model load) into NR-column panels of K quads,
 * [⌈K/4⌉][NR][4] bytes per panel (the 4 consecutive K of one column that a 32-bit lane
 * multiplies), zero padded, followed by its scales [N] and (VNNI) nothing else: the weight's
 * per-column sums are not needed by the offset trick above. The activations are read in place
 * from the quantizer's rows (row stride ldx ≥ K rounded up to 4, bytes K..⌈K/4⌉·4 zero, which
 * the quantizer writes), four bytes broadcast per row and K quad: no per-call packing at all.
 *
 * Blocking and split. One K slice always (the int32 sums live in registers over all of K): a
 * prong takes a block of rows (at most MC, fewer when MC·K would not fit half of a 1 MiB L2)
 * and a group of panels, and runs the MR×NR tile over every (panel, row panel) pair, the panel
 * outermost so it stays in L1/L2 while the row panels stream. Integer sums do not depend on
 * their order, and every output element is written by one prong, so results never depend on
 * the thread count.
 *   class     tile (MR×NR)   accumulators   MC
 *   SERIAL    4×16 plain C    —              128
 *   HASWELL   4×16 AVX2       8 ymm          192
 *   SKYLAKE   4×64 AVX-512BW  16 zmm         192
 *   ICELAKE   6×64 VNNI       24 zmm         192   (also GENOA)
 */
#ifndef UFORM_KERNELS_GEMM_I8_H
#define UFORM_KERNELS_GEMM_I8_H

#include <stddef.h>
#include <stdint.h>

#include "core/parallel.h"
#include "kernels/gemm.h"
#include "uform/uform.h"

/* The largest K whose sums stay exact in int32 in every class's form. */
#define UFORM__GEMM_I8_MAX_K 65536
/* Rows quantize to zeros (scale 0) when their largest magnitude is below 2^-96. */
#define UFORM__GEMM_I8_TINY_BITS 0x0F800000u

/* What the forward writes: F32 (scaled, bias, GELU), BF16 (the same, rounded to nearest even),
 * or I32, the raw sums Σ_k qx·qw (no scale, bias or GELU; for tests and diagnosis). */
typedef enum uform__gemm_i8_output_t {
    UFORM__GEMM_I8_F32 = 0,
    UFORM__GEMM_I8_BF16 = 1,
    UFORM__GEMM_I8_I32 = 2
} uform__gemm_i8_output_t;

/* Quantized rows [rows, ld]: int8 values (zero padded from K to ⌈K/4⌉·4), one F32 scale and the
 * int32 Σ_k q per row. Views into caller memory. */
typedef struct uform__gemm_i8_rows_t {
    const int8_t *q;
    size_t ld;            /* bytes per row, ≥ ⌈K/4⌉·4 */
    const float *scale;   /* [rows] */
    const int32_t *sums;  /* [rows] Σ_k q */
} uform__gemm_i8_rows_t;

/* A weight W[N,K] quantized per output channel and laid out once in a class's panel format.
 * `data` points into caller-owned memory of `packed_size` bytes (64-byte aligned): the panels,
 * then the N scales. The descriptor is small and held by value. */
typedef struct uform__gemm_i8_packed_t {
    const int8_t *data;   /* ⌈N/NR⌉ panels of [k_padded/4][NR][4] bytes */
    const float *scale;   /* [N] per output channel, inside `data`'s memory */
    size_t n, k, k_padded, nr;
    uint32_t layout;      /* the micro-kernel family's tag; checked on use */
    int biased, wide;     /* how the panels hold the values (gemm_i8.c's pack), for unpacking */
} uform__gemm_i8_packed_t;

/* Y[M,N] (+)= dequantized X · Wᵀ (+ bias) (then GELU); see the top of this file. */
typedef struct uform__gemm_i8_forward_t {
    size_t m, n, k;
    uform__gemm_i8_rows_t x;                 /* [M] quantized rows (uform__gemm_i8_kernels_t.quantize) */
    const uform__gemm_i8_packed_t *packed;   /* W, packed by the same class's table */
    const float *bias;                       /* [N] or NULL */
    int gelu;                                /* uform__gemm_gelu_t; not with accumulate or I32 */
    void *y; size_t ldy;                     /* ldy in elements of `output` */
    uform__gemm_i8_output_t output;
    int accumulate;                          /* F32 only: Y += the product's value */
    void *scratch; size_t scratch_capacity;  /* optional (see scratch_bytes): else the call allocates its own */
} uform__gemm_i8_forward_t;

typedef struct uform__gemm_i8_kernels_t {
    uform_cpu_class_t cpu_class; /* the class whose instructions these kernels use */
    /* Quantizes rows of x [rows, k] (row stride ldx elements; F32 or BF16) into q [rows, ldq]
     * (ldq ≥ ⌈k/4⌉·4; the padding bytes are written 0), scale [rows] and sums [rows] (or NULL).
     * Bit-identical on every class. Parallel over rows; never fails. */
    void (*quantize)(size_t rows, size_t k, const void *x, size_t ldx, uform__gemm_dtype_t x_dtype, int8_t *q,
                     size_t ldq, float *scale, int32_t *sums, const uform__parallel_t *parallel);
    /* Bytes a packed [N,K] weight takes in this class's layout (scales included). */
    size_t (*packed_size)(size_t n, size_t k);
    /* Lays out quantized weight rows q [N, ldq] (values in [−127, 127]) with their scales [N]
     * into `memory` (`capacity` bytes, 64-byte aligned) and fills `*packed`.
     * UFORM_INVALID_ARGUMENT for a short or misaligned buffer, K = 0 or K > UFORM__GEMM_I8_MAX_K. */
    uform_status_t (*pack)(const int8_t *q, size_t ldq, const float *scale, size_t n, size_t k, void *memory,
                           size_t capacity, uform__gemm_i8_packed_t *packed, uform_outcome_t *outcome);
    /* The product. UFORM_INVALID_ARGUMENT (with the reason) for inconsistent arguments: a weight
     * packed by another class's layout or of another shape, ldx < ⌈K/4⌉·4, GELU with I32 or with
     * accumulate, accumulate without F32 output, NULL pointers. */
    uform_status_t (*forward)(const uform__gemm_i8_forward_t *args, const uform__parallel_t *parallel,
                              uform_outcome_t *outcome);
    /* Scratch bytes (64-byte aligned) that spare every product of this table with `threads`
     * threads an allocation; 0 when its products need none. A scratch serves one call at a time. */
    size_t (*scratch_bytes)(size_t threads);
} uform__gemm_i8_kernels_t;

/* The table for `cpu_class` (see the top of this file for which classes share one). Never NULL.
 * The caller checks that the machine runs the class before calling through it. */
const uform__gemm_i8_kernels_t *uform__gemm_i8_kernels(uform_cpu_class_t cpu_class);

/* The quantized rows q [N, ldq] (ldq ≥ K) of a weight packed by any class: the inverse of its
 * pack, so a weight packed for one class can be repacked for another (a call on an executor of
 * another class than the model's). The scales are `packed->scale`. */
void uform__gemm_i8_unpack(const uform__gemm_i8_packed_t *packed, int8_t *q, size_t ldq);

/* ⌈k/4⌉·4: the bytes of a quantized row's K, padded to whole quads. */
static inline size_t uform__gemm_i8_k_padded(size_t k) { return (k + 3) / 4 * 4; }

/* ---- Below: the shared driver and the per-class micro-kernel contract (gemm_i8.c). ---- */

/* What a tile writes after its sums: rows × cols of Y starting at `y` (element type `output`),
 * with the rows' scales and Σ q (for the VNNI offset correction), the columns' scales and bias. */
typedef struct uform__gemm_i8_tile_out_t {
    void *y;
    size_t ldy;
    uform__gemm_i8_output_t output;
    size_t rows, cols;
    const float *x_scale;   /* [rows] */
    const int32_t *x_sums;  /* [rows] */
    const float *w_scale;   /* [cols] */
    const float *bias;      /* [cols] or NULL */
    int accumulate, gelu;
    /* The tile's share of the prong's next panel, to prefetch into L2 during its K loop (NULL and
     * 0: none; tiles may ignore it). At batch 1 a panel has a few tiles only, and the next one would
     * otherwise arrive from L3 or memory when its first tile starts (gemm.h's tile_ahead). */
    const void *ahead;
    size_t ahead_bytes;
} uform__gemm_i8_tile_out_t;

/* An MR×NR tile over k_padded/4 quads: A is `out->rows` ≤ MR rows of quantized activations read in
 * place (row stride `lda`; a tile either runs only those rows, as ICELAKE's does, or repeats the
 * last one for rows past them, whose sums it does not store), B one panel [k_padded/4][NR][4]. */
typedef void (*uform__gemm_i8_tile_fn)(size_t quads, const int8_t *a, size_t lda, const int8_t *b_panel,
                                       const uform__gemm_i8_tile_out_t *out);
/* Starts fetching the Y lines a tile writes after its K loop (as gemm.h's float tiles do: Y is
 * written once, and stores to lines not in cache stall the tile's end). */
static inline void uform__gemm_i8_prefetch_y(const uform__gemm_i8_tile_out_t *out) {
    size_t element = out->output == UFORM__GEMM_I8_BF16 ? 2 : 4, bytes = out->cols * element;
    for (size_t r = 0; r < out->rows; ++r)
        for (size_t offset = 0; offset < bytes; offset += 64)
            __builtin_prefetch((const char *)out->y + (r * out->ldy) * element + offset, 1, 3);
}

/* Row r of a tile's A: rows past `rows` repeat the last one (computed on, never stored). Plain
 * arithmetic: a pointer array built by the caller would be stored and then reloaded as one wider
 * vector by the tile, which store-to-load forwarding cannot serve (measured: ~10% of the tile). */
static inline const int8_t *uform__gemm_i8_row(const int8_t *a, size_t lda, size_t rows, size_t r) {
    return a + (r < rows ? r : rows - 1) * lda;
}
/* Quantizes one row (the quantize slot's work per row; the driver runs it in parallel). */
typedef void (*uform__gemm_i8_quantize_row_fn)(size_t k, const void *x, uform__gemm_dtype_t x_dtype, int8_t *q,
                                               size_t k_padded, float *scale, int32_t *sum);

typedef struct uform__gemm_i8_micro_t {
    size_t mr, nr, mc;
    uint32_t layout;       /* tag of the packed format (distinct per nr and per biased/plain bytes) */
    int biased;            /* panels hold qw + 128 (VNNI's offset trick) */
    /* Operands widened to int16 (HASWELL's vpmaddwd form): panels are [k_padded/2][NR][2] int16 and
     * each prong sign-extends its block of activation rows once into its share of the scratch,
     * [rows][k_padded] int16, which the tile reads (its `a` then points to int16 values). */
    int wide;
    /* Wide classes: target[0, count) = q[0, count) sign-extended, in the class's instructions
     * (the driver's code is built for the baseline CPU, where GCC's -O2 leaves this loop scalar). */
    void (*widen_row)(size_t count, const int8_t *q, int16_t *target);
    uform__gemm_i8_tile_fn tile;
    uform__gemm_i8_quantize_row_fn quantize_row;
} uform__gemm_i8_micro_t;

void uform__gemm_i8_quantize_drive(const uform__gemm_i8_micro_t *micro, size_t rows, size_t k, const void *x,
                                   size_t ldx, uform__gemm_dtype_t x_dtype, int8_t *q, size_t ldq, float *scale,
                                   int32_t *sums, const uform__parallel_t *parallel);
size_t uform__gemm_i8_packed_size_for(const uform__gemm_i8_micro_t *micro, size_t n, size_t k);
size_t uform__gemm_i8_scratch_bytes_for(const uform__gemm_i8_micro_t *micro, size_t threads);
uform_status_t uform__gemm_i8_pack_for(const uform__gemm_i8_micro_t *micro, const int8_t *q, size_t ldq,
                                       const float *scale, size_t n, size_t k, void *memory, size_t capacity,
                                       uform__gemm_i8_packed_t *packed, uform_outcome_t *outcome);
uform_status_t uform__gemm_i8_forward_drive(const uform__gemm_i8_micro_t *micro, const uform__gemm_i8_forward_t *args,
                                            const uform__parallel_t *parallel, uform_outcome_t *outcome);

/* The scalar quantizer (the reference every class's row quantizer must equal) and its pieces:
 * a row's amax bits (|x| as integers, the largest), and the scale and 127/amax it implies
 * (`inv` 0 for rows that quantize to zeros). */
void uform__gemm_i8_quantize_row_serial(size_t k, const void *x, uform__gemm_dtype_t x_dtype, int8_t *q,
                                        size_t k_padded, float *scale, int32_t *sum);
void uform__gemm_i8_row_factors(uint32_t amax_bits, float *scale, float *inv);
/* The serial epilogue of one element: fma(float(acc), sx·sw, bias) (then accumulate, GELU). */
float uform__gemm_i8_dequantize(int32_t acc, float x_scale, float w_scale, float bias);
/* Writes a tile's int32 sums (row-major [MR][nr]) through the epilogue, in plain C: classes
 * whose registers hold the sums use it for partial tiles and BF16 and I32 outputs. `sums`
 * already has the offset correction applied. `gelu_kernels` runs GELU (the class's F32 epilogue). */
void uform__gemm_i8_tile_store(const int32_t *sums, size_t nr, const uform__gemm_i8_tile_out_t *out,
                               const uform__gemm_kernels_t *gelu_kernels);

extern const uform__gemm_i8_kernels_t uform__gemm_i8_kernels_serial, uform__gemm_i8_kernels_haswell,
    uform__gemm_i8_kernels_skylake, uform__gemm_i8_kernels_icelake;

#endif
