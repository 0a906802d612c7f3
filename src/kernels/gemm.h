/*
 * Matrix products (GEMM) per CPU class: the forward product of a linear layer and the three
 * products its training needs. Private to libuform.
 *
 *   forward      Y[M,N]  = X[M,K] · W[N,K]ᵀ (+ bias[N]) (then GELU)     torch.nn.functional.linear
 *   backward_x   dX[M,K] = dY[M,N] · W[N,K]
 *   backward_w   dW[N,K] += dY[M,N]ᵀ · X[M,K]
 *   backward_b   db[N]   += Σ_m dY[m,:]
 *
 * W is row-major [out, in] as checkpoints store it (K-contiguous). Every matrix has a leading
 * dimension (row stride, in elements) so callers can pass sub-matrices. All accumulation is F32.
 *
 * Element types. F32×F32 → F32, and BF16 weights × (F32 or BF16) activations → F32. BF16 is the
 * upper half of an IEEE binary32 (stored as uint16_t); F32 → BF16 rounds to nearest even (NaN
 * stays NaN). What "F32 activations × BF16 weights" means depends on the class:
 *   - SERIAL, HASWELL, SKYLAKE, ICELAKE widen the BF16 weights to F32 (exact) and multiply in F32,
 *     so F32 activations keep all their bits.
 *   - GENOA multiplies with vdpbf16ps: F32 activations (and F32 upstream gradients in backward_x)
 *     are rounded to BF16 (nearest even, vcvtne2ps2bf16) once, while their block is packed,
 *     exactly as PyTorch's BF16 autocast and oneDNN's BF16 matmul do. Each product then carries a
 *     relative error of at most 2^-8 from that rounding; the sum is accumulated in F32. Decision:
 *     the dot-product instruction runs at twice the F32 FMA rate (measured here on one core:
 *     ≈230 vs ≈115 GFLOP/s), and BF16 compute (docs/training.md) already means BF16 operands with F32
 *     accumulation. A caller that needs F32 activations kept exact uses forward_f32 with the
 *     weights widened (or the Skylake table).
 *   - backward_w multiplies in F32 on every class. backward_w_bf16 is the BF16-compute form
 *     (docs/training.md: BF16 operands, F32 accumulation): GENOA rounds dY and F32 X to BF16 and uses
 *     vdpbf16ps (twice the rate); the other classes compute it exactly as backward_w.
 *
 * Blocking (GotoBLAS/BLIS loop order, gemm_driver.c). The output is cut into column chunks of at
 * most NC; K into slices of at most KC (both near-equal, derived from the shape and the class
 * only). Per (chunk, slice): the weight-side operand is packed into NR-column panels ([kc][NR] F32
 * or [kc/2][NR][2] BF16 pairs for vdpbf16ps) in parallel over panels, unless it came pre-packed;
 * then each prong takes an MC-row block of the other operand — in place when its rows are already
 * K-contiguous in the panel type (3–5% at K = 1536, N = 384), else copied into a row-major
 * [rows][kc] block with conversion — and runs the MR×NR register tile over every (panel, row
 * panel) pair, the B micro-panel outermost.
 *   class     tile (MR×NR)  accumulators     KC    MC    NC
 *   SERIAL    4×16 plain C  —                256   128   1024
 *   HASWELL   6×16 AVX2     12 ymm           512   144   1536
 *   SKYLAKE   6×64 AVX-512  24 zmm           768   168   1536   (also ICELAKE, GENOA's F32)
 *   GENOA     6×64 BF16     24 zmm, vdpbf16ps 1536  168   1536
 * (6×64 beat 14×32 by 1–2% in both AVX-512 tiles: 10 loads per 24 products instead of 16 per 28.)
 * (KC and MC chosen by sweeping 512..3072 and 84..252 at the benchmark shapes: long K slices win
 * because every slice reads and writes C once; the A block, MC×KC, stays within the 1 MiB L2.)
 * The tiles prefetch their C lines before the K loop (C is touched once per slice); that alone
 * took the AVX-512 tiles from ≈82% to ≈90% of the measured peak.
 *
 * Packed weights. `packed_size_*` / `pack_*` lay a whole [N,K] weight out once (at model load)
 * in exactly the panel format the class's tile streams, so the forward product skips the
 * per-call packing of W. A packed weight belongs to the tile family that packed it (its `layout`
 * field); handing it to another class is UFORM_INVALID_ARGUMENT. Decision, measured (bench_gemm,
 * 1 thread, GFLOP/s, plain → packed): at M = 4096 packing W per call costs 1–3% (GENOA BF16
 * 4096×384×1152: 213.5 → 216.9; SKYLAKE F32 4096×384×1536: 107.7 → 110.0); at M = 1..64 it is
 * most of the call (GENOA BF16 M=16, K=768, N=3072: 47 → 130; M=1: 4.3 → 16.5, where the product
 * is a memory-bound GEMV). So the model packs every weight at load; the plain path stays for
 * gradients, activations × activations and one-off products.
 *
 * Determinism. Work is split into prongs over (row block × group of column panels) of the
 * output; each output element is computed by exactly one prong, summing K in a fixed order (the
 * slices in order, each slice in order), and neither the split nor the slices depend on timing,
 * so results are bit-identical whatever the thread count (tested with 1, 2 and 3 threads).
 * backward_w splits over tiles of dW and sums all of M inside one prong; backward_b splits over
 * columns and sums rows in order.
 *
 * Activation (`gelu`, uform__gemm_gelu_t). GELU is the exact-erf form 0.5·x·(1 + erf(x/√2))
 * (torch.nn.GELU(approximate='none')) in two precisions, EXACT and FAST:
 *   EXACT (1): x − 0.5·x·erfc(z) for x ≥ 0 and 0.5·x·erfc(z) for x < 0, z = |x|/√2, with a
 *     vectorised erfc(z) = t·exp(−z² + P(t)), t = 1/(1 + z/2), P a degree-9 polynomial fitted for
 *     this project (coefficients in gemm_driver.c); z² = x²/2 is carried as hi + lo so large |x|
 *     lose nothing to rounding. Worst relative error against double erfc: 5.0e-7 over 4.8 M
 *     values (test_gemm_gelu's sweep; 3.2e-7 on test_gemm's coarser grid); SERIAL uses libm's
 *     double erfc. ≈47 vector instructions per 16 lanes.
 *   FAST (2): still the erf form (not the tanh approximation), for outputs that are rounded to
 *     BF16 (relative 2^-9) before the next product anyway: with a = min(|x|, 20),
 *     0.5·erfc(a/√2) ≈ h = t·Q(t)·2^y, t = 1/(1 + 0.336·a), Q of degree 4, y = −a²·log2(e)/2
 *     evaluated as 2^n·E(y − n) with E of degree 5; GELU = max(x, 0) − |x|·h (AVX-512; AVX2
 *     writes it as x − x·h and x·h). Bound: |GELU_fast(x) − GELU(x)| ≤ 2e-7·max(1, |x|) for every
 *     finite F32 x, asserted by test_gemm_gelu against libm's double erfc over 4.8 M values (a
 *     grid on [−30, 30], every 1021st bit pattern, ±0, subnormals, ±FLT_MAX). Where it comes
 *     from: the fit of t·Q(t) (p and Q minimax for |0.5·x·Δerfc| / max(1, |x|), gemm_driver.c)
 *     contributes 2.9e-8; E's relative error 1.5e-7 and the F32 roundings of t, Q, E and their
 *     product (≈8 ulps relative on h) reach the result multiplied by |x|·h ≤ max |x|·Φ(−|x|) =
 *     0.17, so ≤ 1.1e-7; the last fused step rounds once (≤ 2^-24·|x|): 2.0e-7·max(1, |x|)
 *     together. Measured worst: 1.25e-7·max(1,|x|) with AVX-512 (vrcp14ps + one Newton step for
 *     t), 1.1e-7 with AVX2 (a division). +∞ → +∞, −∞ → NaN (as the formula and PyTorch give),
 *     NaN → NaN. 24 vector instructions per 16 lanes; alone on one core 0.41 ns per value
 *     against EXACT's 0.96. SERIAL computes FAST exactly (libm), which meets the bound.
 *   Decision: the model's BF16 compute mode asks for FAST on mlp.up (its output is rounded to
 *   BF16 by the next product); F32 compute keeps EXACT. EXACT's results are bit-for-bit those of
 *   the earlier separate epilogue pass (checked against the previous library on every class).
 * Two more MLP activations of published checkpoints, both of the form x·σ(z) with z odd in x:
 *   QUICK (3): QuickGELU x·σ(1.702·x) (OpenAI CLIP's hidden_act "quick_gelu"; OpenCLIP's
 *     QuickGELU module, x * torch.sigmoid(1.702 * x)), z = 1.702·x.
 *   TANH (4): the tanh form 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (SigLIP's
 *     "gelu_pytorch_tanh" = torch.nn.functional.gelu(x, approximate="tanh"); BERT-era
 *     "gelu_new"), computed as x·σ(2u) since 0.5·(1 + tanh(u)) = σ(2u): z = k1·x + k3·x³,
 *     k1 = 2√(2/π), k3 = 0.044715·k1. (PyTorch's F32 kernel evaluates 1 + tanh(u), which cancels
 *     for x below ≈ −3: its results there are off by up to ≈|x|·2^-24 absolute, ours are not.)
 *   Vector form (gemm_x_sigmoid_f32x16 in gemm_avx512.h, x_sigmoid_f32x8 in gemm_haswell.c):
 *   a = |z| as hi + lo (the constants as F32 pairs; TANH's |x|², k3·|x|² and k1 + k3·|x|² each
 *   with its exact remainder, Fast2Sum for the sum), e^(−a) = p·2^n with p = e^r Taylor to degree
 *   7 on |r| ≤ ln2/2, q = 1/(1 + p·2^n) (AVX-512 vrcp14ps + a Newton step, AVX2 a division), and
 *   y = x·q for x ≥ 0, (x·p·q)·2^n for x < 0: no overflow, the power of two last. Carrying z as
 *   hi + lo matters for x < 0, where y's relative error is ≈ |Δz| (z reaches −100 before y
 *   underflows): a plain F32 z would give up to 1e-5 there. Bound: relative error ≤ 3e-7 for every
 *   finite F32 x (+ two subnormal ulps), asserted by test_gemm_gelu against double references
 *   over the same 4.8 M values as the GELU forms; measured worst 2.56e-7 (QUICK) and 2.52e-7
 *   (TANH) with AVX-512, 2.22e-7 and 2.10e-7 with AVX2; SERIAL computes them in double through
 *   libm (5.95e-8, its final rounding). +∞ → +∞, −∞ → NaN (−∞·0, as the formulas and PyTorch give),
 *   NaN → NaN, ±0 → ±0. Alone on one core (4,096 values in L1, thread CPU time, ns per value,
 *   AVX-512 / AVX2): EXACT 0.74 / 1.91, FAST 0.31 / 0.64, QUICK 0.41 / 0.95, TANH 0.56 / 1.27.
 *   In a product (bench_gemm --epilogue, bias + activation against the bare packed product in
 *   the same run, M = 2464 (32 × 77 tokens), K = 768, N = 3072, one thread): GENOA BF16 slot
 *   EXACT −5.2%, FAST −1.8%, QUICK −2.2%, TANH −3.7%; its F32 slot −7.7%, −3.5%, −4.7%, −7.6%;
 *   HASWELL F32 −9.1%, −5.0%, −4.9%, −5.2%.
 *   Decision: no "fast" variants of these two. QUICK already costs about what FAST does; a TANH
 *   with a plain F32 z (≈0.41 ns, within ≈2e-7·max(1, |x|)) would take back ≈1.5% of a BF16
 *   mlp.up product (≈0.5% of a block), not worth a sixth value every caller must choose between.
 *   The tiles fold only the erf forms into their
 *   registers; QUICK and TANH run as the separate pass over the tile just stored (still in L1):
 *   with four forms inlined at a tile's 24 vectors GCC called the activation out of line, which
 *   spills the live accumulators at every call (gemm_avx512.h, gemm_gelu_folds).
 *
 * Epilogue placement. SKYLAKE's F32 tile (also ICELAKE's and GENOA's F32) and GENOA's BF16 tile
 * have a folded form (`tile_epilogue`): on the last K slice the bias is added to the registers
 * (after the add to C when accumulating, as the separate pass did) and GELU applied before the
 * one store, so Y is written once instead of stored, reloaded and stored again. SERIAL and
 * HASWELL run the tile and then the separate epilogue on the same tile while it is in L1.
 * Measured (M=6304 tokens, the `small` model's four products; GENOA BF16 slot, F32 activations,
 * packed weights, 1 thread, thread CPU time, best of 9, ms; the calls bench_gemm --shape M,K,N
 * --epilogue bias|gelu|gelu-fast makes; "before" is the library before the fold and the fast
 * GELU, built from the previous commit and measured in the same window):
 *     product (K, N)            bare    + bias before/after   + bias + GELU before / exact / fast
 *     qkv      (384, 1152)      25.9    27.0 / 25.7
 *     proj     (384, 384)        9.0     9.5 /  8.9
 *     mlp.up   (384, 1536)      34.3                          42.3 / 41.7 / 37.7
 *     mlp.down (1536, 384)      35.4    35.4 / 35.9 (noise)
 * One block's four products: 114.2 → 108.2 ms (−5.3%) with the fast GELU, 106.7 ms (−6.6%) with
 * mlp.up writing BF16 that mlp.down reads in place (below). So the GELU itself, not the reload,
 * was the cost of the GELU product (the separate pass read its tile from L1: folding saves ≈0.6
 * of 8.0 ms there); folding mostly removes the bias pass (≈1.3 ms of qkv, mlp.up, proj). bench_gemm
 * --epilogue at mlp.up's shape, 1 / 2 threads (quiet window, GFLOP/s): bare 218.8 / 426.1, + bias
 * 217.9 / 432.7, + bias + EXACT 180.5 / 354.8, + bias + FAST 197.1 / 389.6.
 *
 * BF16 output (forward's `y_dtype` = BF16). Each result, after bias and GELU, is rounded once to
 * BF16 (nearest even) and stored as such, so the next product reads it in place as BF16 X (the
 * driver reads BF16 A rows in place when the panels are BF16): the trunk's mlp.up → mlp.down
 * then skips converting the hidden activations while packing. On GENOA this changes no bit (its
 * BF16 slot rounds F32 activations the same way, vcvtne2ps2bf16, which also flushes subnormal
 * values to zero, before multiplying; test_gemm_output checks the whole MLP chain); on the
 * classes that widen BF16 it rounds activations they would have kept in F32. GENOA's BF16 tile
 * rounds and stores from its registers (tile_bf16_out); the other tiles write an F32 staging tile
 * the driver rounds. A BF16 Y cannot hold partial sums, so when K spans several slices (K > KC)
 * the call computes into an F32 buffer it allocates and rounds that; `accumulate` is refused.
 * Measured (M=6304, GENOA, packed BF16 weights, thread CPU time, best of 7; 2 threads
 * wall-clock): mlp.up (K=384, N=1536, bias + fast GELU) 37.9 ms F32 Y / 38.3 ms BF16 Y (19.2 /
 * 19.2 ms); mlp.down (K=1536, N=384, bias) 35.1 ms from F32 X / 33.2 ms from BF16 X (17.9 /
 * 17.1 ms): ≈5% of mlp.down, its conversion pass; rounding in the tile costs mlp.up nothing
 * measurable (an F32 staging tile instead cost it 2.4 ms).
 *
 * Scratch memory: the packing buffers (a few MiB: one A block per thread and one KC×NC slice of
 * W) come from the caller when `scratch` holds at least the table's `scratch_bytes(threads)`
 * (64-byte aligned), so a steady loop allocates nothing; otherwise each call allocates and frees
 * its own, and failing to answers UFORM_OUT_OF_MEMORY. A scratch buffer serves one call at a time.
 *
 * Measured here (bench_gemm; AMD EPYC, family 25 model 17 (Zen 4) under KVM, 2 cores shared with
 * other builds; 1 thread timed by thread CPU time, best of 5 interleaved rounds; GFLOP/s):
 *   (M, K, N)          peak F32/BF16  OpenBLAS  ours F32 packed   oneDNN BF16 plain/blocked  GENOA BF16 plain/packed
 *   4096, 384, 1152    117 / 234      99.1      112.8 (1.14×)    208.9 / 213.2              216.1 / 218.9 (1.03×)
 *   4096, 384, 1536                   100.7     112.9 (1.12×)    204.6 / 213.3              217.7 / 219.0 (1.03×)
 *   4096, 1536, 384                   97.2      111.5 (1.15×)    217.1 / 222.2              221.4 / 225.4 (1.01×)
 *   4096, 768, 2304                   106.0     112.6 (1.06×)    207.0 / 219.5              218.3 / 222.5 (1.01×)
 *   4096, 768, 3072                   102.6     109.3 (1.07×)    200.7 / 210.7              213.0 / 220.9 (1.05×)
 *   4096, 3072, 768                   100.4     109.1 (1.09×)    216.0 / 221.2              218.6 / 224.6 (1.02×)
 *   1024, 1024, 1024                  97.0      108.3 (1.12×)    212.2 / 218.6              209.8 / 226.7 (1.04×)
 *   2048, 2048, 2048                  99.5      107.1 (1.08×)    213.5 / 221.5              207.4 / 216.8 (0.98×)
 * (ours F32 = SKYLAKE's tile, which ICELAKE and GENOA share; HASWELL's AVX2 tile is 1–6% behind
 * it here, as Zen 4 runs 512-bit FMAs as two 256-bit halves; SERIAL ≈20.) Two threads,
 * wall-clock, in a quiet window (peaks 234 / 469): 4096×384×1152 F32 220.5 vs OpenBLAS 190.6
 * (1.16×), BF16 packed 427.5 vs oneDNN blocked 433.0 (0.99×); 2048³ F32 212.8 vs 206.0 (1.03×),
 * BF16 423.3 vs 441.2 (0.96×) — measured with the earlier 14×32 tiles; other two-thread runs
 * were taken while other processes held the cores and say nothing. What limits BF16: the K loop
 * runs at ≈97% of the vdpbf16ps peak (an embedded-broadcast form measured 3% slower), and
 * packing, C traffic and the prong loop take another 1–3%; oneDNN reaches 90–95% of peak here.
 * The 2048³ case copies its A rows (a 4 KiB row stride) and stays at 0.98×.
 * The training products (GENOA table, 4096×768×3072, 1 thread): backward_x F32 107, BF16 205;
 * backward_w 100, backward_w_bf16 ≈158 (bound by transposing dY into BF16 pairs); forward with
 * bias + GELU 100 (vs 108 without; see "Epilogue placement" above for BF16 and the fast GELU).
 */
#ifndef UFORM_KERNELS_GEMM_H
#define UFORM_KERNELS_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "core/parallel.h"
#include "uform/uform.h"

typedef uint16_t uform__bf16_t;

typedef enum uform__gemm_dtype_t {
    UFORM__GEMM_F32 = 0,
    UFORM__GEMM_BF16 = 1
} uform__gemm_dtype_t;

/* The activation a forward product applies after its bias (the `gelu` field; the top comment has
 * the forms and their measured bounds). */
typedef enum uform__gemm_gelu_t {
    UFORM__GEMM_GELU_NONE = 0,
    UFORM__GEMM_GELU_EXACT = 1, /* erf form to F32 rounding (relative error ≤ 5e-7) */
    UFORM__GEMM_GELU_FAST = 2,  /* erf form, |error| ≤ 2e-7·max(1, |x|): for outputs rounded to BF16 next */
    UFORM__GEMM_GELU_QUICK = 3, /* QuickGELU x·σ(1.702·x) (OpenAI CLIP), relative error ≤ 4e-7 */
    UFORM__GEMM_GELU_TANH = 4   /* tanh form (gelu_pytorch_tanh, gelu_new), relative error ≤ 4e-7 */
} uform__gemm_gelu_t;
#define UFORM__GEMM_GELU_LAST UFORM__GEMM_GELU_TANH
/* Whether `gelu` is a uform__gemm_gelu_t value (the products refuse others). */
static inline int uform__gemm_gelu_known(int gelu) { return gelu >= 0 && gelu <= UFORM__GEMM_GELU_LAST; }
#define UFORM__GEMM_GELU_CHOICES "0 (none), 1 (exact), 2 (fast), 3 (quick) or 4 (tanh)"
/* The sigmoid forms' constants as F32 pairs hi + lo (hi = the constant rounded to F32, lo = the
 * rest rounded): 1.702 (QUICK); k1 = 2·√(2/π) and k3 = 0.044715·k1 (TANH: 2u = k1·x + k3·x³). */
#define UFORM__GEMM_QUICK_C_HI 1.702000022e+00f
#define UFORM__GEMM_QUICK_C_LO -2.193450932e-08f
#define UFORM__GEMM_TANH_K1_HI 1.595769167e+00f
#define UFORM__GEMM_TANH_K1_LO -4.534068054e-08f
#define UFORM__GEMM_TANH_K3_HI 7.135481387e-02f
#define UFORM__GEMM_TANH_K3_LO 2.398832466e-09f

/* A weight laid out once in a class's panel format. `data` points into caller-owned memory of
 * `packed_size` bytes (64-byte aligned); the descriptor is small and held by value. */
typedef struct uform__gemm_packed_t {
    const void *data;
    size_t n, k;                     /* the logical weight W[N,K] */
    uform__gemm_dtype_t w_dtype;     /* what was packed */
    uform__gemm_dtype_t panel_dtype; /* what the panels hold (F32, or BF16 pairs) */
    size_t nr;                       /* columns per panel */
    size_t k_padded;                 /* K rounded up to the panel's K granularity (1 or 2) */
    uint32_t layout;                 /* the micro-kernel family's tag; checked on use */
} uform__gemm_packed_t;

/* Y[M,N] = X[M,K] · W[N,K]ᵀ (+ bias) (then the activation), or with `accumulate` Y[M,N] += X·Wᵀ (+ bias):
 * the products are summed onto Y's values in K order, then the bias is added. `gelu` picks the
 * activation: UFORM__GEMM_GELU_NONE, _EXACT (F32 rounding), _FAST (|error| ≤ 2e-7·max(1, |x|), for
 * activations that are rounded to BF16 next), _QUICK or _TANH; any other value is UFORM_INVALID_ARGUMENT. `w` with `ldw`, or `packed` (then `w` is
 * ignored). `x_dtype`: F32 or BF16 (BF16 only with BF16 weights). Y must not alias X or W. */
typedef struct uform__gemm_forward_t {
    size_t m, n, k;
    const void *x; size_t ldx; uform__gemm_dtype_t x_dtype;
    const void *w; size_t ldw; uform__gemm_dtype_t w_dtype;
    const uform__gemm_packed_t *packed;
    const float *bias; /* [N] or NULL */
    int gelu;          /* uform__gemm_gelu_t after the bias: 0 none, 1 exact, 2 fast, 3 quick, 4 tanh; others are refused */
    void *y; size_t ldy; /* F32 or BF16 as y_dtype says; ldy in elements */
    void *scratch; size_t scratch_capacity; /* optional, see scratch_bytes */
    int accumulate;    /* non-zero: Y += X·Wᵀ (+ bias) — a residual connection in one pass; not with GELU */
    /* F32 (0, the default) or BF16: each result, after bias and GELU, rounded once to BF16 (nearest
     * even), so the next product can read it in place as BF16 X. Not with `accumulate`. */
    uform__gemm_dtype_t y_dtype;
    /* Optional: `ahead_bytes` from `ahead`, memory the caller reads next (the next block of an index
     * search), prefetched into L2 in equal shares by the tiles of the first K slice, each tile its
     * share over its K loop (classes with tile_ahead, F32 y; elsewhere ignored). Then those tiles do
     * not prefetch their next panel. A prefetch changes no value. */
    const void *ahead; size_t ahead_bytes;
} uform__gemm_forward_t;

/* dX[M,K] = dY[M,N] · W[N,K] (overwrites dX). dY is F32; W is F32 or BF16 (row-major). */
typedef struct uform__gemm_backward_x_t {
    size_t m, n, k;
    const float *dy; size_t lddy;
    const void *w; size_t ldw; uform__gemm_dtype_t w_dtype;
    float *dx; size_t lddx;
    void *scratch; size_t scratch_capacity; /* optional, see scratch_bytes */
} uform__gemm_backward_x_t;

/* dW[N,K] += dY[M,N]ᵀ · X[M,K] (accumulates into dW). dY is F32, X is F32 or BF16.
 * `db`, when not NULL, also gets the bias gradient db[N] += Σ_m dY[m, :] of the F32 dY (never the
 * BF16-rounded copy), summed while dY is packed, rows in order: the same additions in the same
 * order as backward_b, so the same bits, without reading dY a second time. db must not overlap
 * dY or dW. */
typedef struct uform__gemm_backward_w_t {
    size_t m, n, k;
    const float *dy; size_t lddy;
    const void *x; size_t ldx; uform__gemm_dtype_t x_dtype;
    float *dw; size_t lddw;
    void *scratch; size_t scratch_capacity; /* optional, see scratch_bytes */
    float *db;                              /* optional [N]: += Σ_m dY[m, :], see above */
} uform__gemm_backward_w_t;

/* db[N] += Σ_m dY[m, :] (accumulates, rows in order). */
typedef struct uform__gemm_backward_b_t {
    size_t m, n;
    const float *dy; size_t lddy;
    float *db;
} uform__gemm_backward_b_t;

typedef uform_status_t (*uform__gemm_forward_fn)(const uform__gemm_forward_t *args, const uform__parallel_t *parallel,
                                                 uform_outcome_t *outcome);
typedef uform_status_t (*uform__gemm_backward_x_fn)(const uform__gemm_backward_x_t *args,
                                                    const uform__parallel_t *parallel, uform_outcome_t *outcome);
typedef uform_status_t (*uform__gemm_backward_w_fn)(const uform__gemm_backward_w_t *args,
                                                    const uform__parallel_t *parallel, uform_outcome_t *outcome);
typedef uform_status_t (*uform__gemm_backward_b_fn)(const uform__gemm_backward_b_t *args,
                                                    const uform__parallel_t *parallel, uform_outcome_t *outcome);
/* Bytes a packed [N,K] weight of `w_dtype` takes in this class's layout. */
typedef size_t (*uform__gemm_packed_size_fn)(size_t n, size_t k, uform__gemm_dtype_t w_dtype);
/* Packs W[N,K] (row stride `ldw`) into `memory` (`capacity` bytes, 64-byte aligned) and fills
 * `*packed`. UFORM_INVALID_ARGUMENT for a short or misaligned buffer. */
typedef uform_status_t (*uform__gemm_pack_fn)(const void *w, size_t ldw, uform__gemm_dtype_t w_dtype, size_t n,
                                              size_t k, void *memory, size_t capacity, uform__gemm_packed_t *packed,
                                              uform_outcome_t *outcome);

/* One table per CPU class; every slot is filled. `*_f32` slots take F32 weights, `*_bf16` slots
 * BF16 weights (and F32 or BF16 activations). */
typedef struct uform__gemm_kernels_t {
    uform_cpu_class_t cpu_class; /* the class whose instructions these kernels use */
    uform__gemm_forward_fn forward_f32;
    uform__gemm_forward_fn forward_bf16;
    uform__gemm_backward_x_fn backward_x_f32;
    uform__gemm_backward_x_fn backward_x_bf16;
    uform__gemm_backward_w_fn backward_w;      /* F32 products on every class */
    uform__gemm_backward_w_fn backward_w_bf16; /* BF16 operands where the class has BF16 dot products */
    uform__gemm_backward_b_fn backward_b;
    uform__gemm_packed_size_fn packed_size_f32, packed_size_bf16;
    uform__gemm_pack_fn pack_f32, pack_bf16;
    /* Scratch bytes that suffice for every product of this table with `threads` threads. */
    size_t (*scratch_bytes)(size_t threads);
    /* C[rows, cols] = GELU(C + bias) in place (bias [cols] or NULL; `gelu` a uform__gemm_gelu_t):
     * the pass the forward product applies, for callers that need it outside a product. */
    void (*epilogue)(float *c, size_t ldc, size_t rows, size_t cols, const float *bias, int gelu);
} uform__gemm_kernels_t;

/* The table for `cpu_class`: SERIAL, HASWELL, SKYLAKE, ICELAKE and GENOA have their own;
 * SAPPHIRE, GRANITE and DIAMOND use GENOA's; SIERRA uses HASWELL's; everything else (UNKNOWN,
 * MONOVERSIONED, the non-x86 classes) SERIAL's. Never NULL. The caller checks that the machine
 * runs the class (uform_cpu_class_supported) before calling through the table. */
const uform__gemm_kernels_t *uform__gemm_kernels(uform_cpu_class_t cpu_class);

/* ---- Below: the shared driver and the per-class micro-kernel contract (gemm.c). ---- */

/*
 * An MR×NR register tile: C[rows, cols] (+)= Σ_p A[0..MR)[p] ⊗ B[p][0..NR) over `kc` steps.
 * A is MR rows with row stride `lda` elements: a block the driver packed (rows beyond `rows` zero
 * filled) or, for whole panels already in the panel type, the operand itself read in place; B is
 * an NR-column panel, [kc][NR] for F32 panels or K pairs [kc/2][NR][2] for BF16 panels (kc even;
 * A's pair (p, p+1) is read as one, possibly unaligned, 32-bit word).
 * Lanes beyond `cols` are computed on zero padding and not stored. `accumulate` 0 overwrites C,
 * 1 adds to it.
 */
typedef void (*uform__gemm_tile_fn)(size_t kc, const void *a, size_t lda, const void *b, float *c, size_t ldc,
                                    size_t rows, size_t cols, int accumulate);
/* Converts `count` F32 values to BF16 with round-to-nearest-even (a class's vector form). */
typedef void (*uform__gemm_convert_fn)(const float *source, uform__bf16_t *target, size_t count);
typedef void (*uform__gemm_epilogue_fn)(float *c, size_t ldc, size_t rows, size_t cols, const float *bias, int gelu);
/* The tile with the epilogue folded in: after the K loop (and the add to C when accumulating),
 * adds `bias` (its NR columns, or NULL) and applies GELU (`gelu`, a uform__gemm_gelu_t) to the
 * registers before the one store. The result must equal tile followed by epilogue bit for bit. */
typedef void (*uform__gemm_tile_epilogue_fn)(size_t kc, const void *a, size_t lda, const void *b, float *c, size_t ldc,
                                             size_t rows, size_t cols, int accumulate, const float *bias, int gelu);
/* tile_epilogue that also prefetches `ahead_bytes` from `ahead` into L2, spread over its K loop:
 * its share of the B panel the prong runs next. At a few dozen rows (a text or an image at batch
 * 1) every panel is used by a handful of tiles only, so its first tile would otherwise wait on
 * the weights coming from L3 or memory with nothing to overlap them with; with this the next
 * panel arrives while the current one is computed. A prefetch changes no value: the result must
 * equal tile_epilogue's bit for bit (bias NULL and gelu 0 give tile's). */
typedef void (*uform__gemm_tile_ahead_fn)(size_t kc, const void *a, size_t lda, const void *b, float *c, size_t ldc,
                                          size_t rows, size_t cols, int accumulate, const float *bias, int gelu,
                                          const void *ahead, size_t ahead_bytes);
/* The tile for a BF16 C (forward's y_dtype, one K slice, overwriting): the sums, then bias and
 * GELU as tile_epilogue, each result rounded to BF16 (nearest even) and stored; `ldc` in elements. */
typedef void (*uform__gemm_tile_bf16_out_fn)(size_t kc, const void *a, size_t lda, const void *b, uform__bf16_t *c,
                                             size_t ldc, size_t rows, size_t cols, const float *bias, int gelu);

/* backward_w's A block (A = dYᵀ, so block row r is column r of the source): block[r·lda + p] =
 * source[p·ld + r] for r < rows, p < kc, in the panel type — F32 copied, or BF16 rounded to
 * nearest even, K pairs as the tile reads them. The driver zero-fills the padding (p ≥ kc, rows
 * up to MR) afterwards. With `sums` (not NULL), also sums[r] += source[p·ld + r] with p in order:
 * the bias gradient, the same additions as backward_b. Must give the tile the operand values the
 * driver's portable loop gives it (gemm_driver.c's pack_a says where BF16 blocks may differ). */
typedef void (*uform__gemm_pack_transposed_fn)(const float *source, size_t ld, size_t rows, size_t kc, void *block,
                                               size_t lda, float *sums);
/* One NR-column panel of BF16 K pairs from F32 rows (backward_w's X, backward_x's F32 W):
 * panel[(t·NR + j)·2 + h] = bf16(source[(2t + h)·ld + j]) for j < cols, 0 for j ≥ cols and for the
 * missing row h = 1 of an odd kc; t < ⌈kc/2⌉. */
typedef void (*uform__gemm_pack_pairs_fn)(const float *source, size_t ld, size_t kc, size_t cols, uform__bf16_t *panel);
/* The same panel from BF16 rows (backward_w's BF16 X, as the trainer keeps it under native BF16
 * compute): panel[(t·NR + j)·2 + h] = source[(2t + h)·ld + j] for j < cols, 0 elsewhere as above. */
typedef void (*uform__gemm_pack_pairs16_fn)(const uform__bf16_t *source, size_t ld, size_t kc, size_t cols,
                                            uform__bf16_t *panel);

typedef struct uform__gemm_micro_t {
    uform__gemm_dtype_t panel_dtype; /* F32, or BF16 pairs */
    size_t mr, nr;                   /* register tile */
    size_t kc, mc, nc;               /* cache blocks: K slice, rows per prong, columns per chunk */
    uint32_t layout;                 /* tag of the packed-weight format (distinct per mr/nr/dtype) */
    uform__gemm_tile_fn tile;
    uform__gemm_tile_epilogue_fn tile_epilogue; /* NULL: the last slice runs tile, then epilogue */
    uform__gemm_tile_bf16_out_fn tile_bf16_out; /* NULL: a BF16 C is staged through an F32 tile */
    uform__gemm_epilogue_fn epilogue;
    uform__gemm_convert_fn convert; /* used by BF16 panels to round F32 rows; NULL: scalar */
    uform__gemm_pack_transposed_fn pack_transposed; /* NULL: the driver's portable loop */
    uform__gemm_pack_pairs_fn pack_pairs;           /* BF16 panels only; NULL: the portable loop */
    uform__gemm_pack_pairs16_fn pack_pairs16;       /* BF16 panels only; NULL: the portable loop */
    uform__gemm_tile_ahead_fn tile_ahead;           /* F32 C only; NULL: tile / tile_epilogue, no prefetch */
} uform__gemm_micro_t;

/* The products through a class's micro-kernel: validate, pack, split, run. */
uform_status_t uform__gemm_forward_drive(const uform__gemm_micro_t *micro, const uform__gemm_forward_t *args,
                                         const uform__parallel_t *parallel, uform_outcome_t *outcome);
uform_status_t uform__gemm_backward_x_drive(const uform__gemm_micro_t *micro, const uform__gemm_backward_x_t *args,
                                            const uform__parallel_t *parallel, uform_outcome_t *outcome);
uform_status_t uform__gemm_backward_w_drive(const uform__gemm_micro_t *micro, const uform__gemm_backward_w_t *args,
                                            const uform__parallel_t *parallel, uform_outcome_t *outcome);
size_t uform__gemm_scratch_bytes_for(const uform__gemm_micro_t *micro, size_t threads);
size_t uform__gemm_packed_size_for(const uform__gemm_micro_t *micro, size_t n, size_t k);
uform_status_t uform__gemm_pack_for(const uform__gemm_micro_t *micro, const void *w, size_t ldw,
                                    uform__gemm_dtype_t w_dtype, size_t n, size_t k, void *memory, size_t capacity,
                                    uform__gemm_packed_t *packed, uform_outcome_t *outcome);

/* The serial (reference) pieces other classes reuse. */
uform_status_t uform__gemm_backward_b_serial(const uform__gemm_backward_b_t *args, const uform__parallel_t *parallel,
                                             uform_outcome_t *outcome);
/* Scalar GELU through libm's double erfc (the reference the vector epilogues are tested against). */
float uform__gemm_gelu_f32(float x);
/* SERIAL's activation of one value, `kind` a uform__gemm_gelu_t, in double and rounded once: NONE
 * gives x, EXACT and FAST uform__gemm_gelu_f32, QUICK x·σ(1.702·x), TANH x·σ(k1·x + k3·x³) (the
 * tanh form rewritten, see the top comment); an unknown kind gives NaN. */
float uform__gemm_activation_f32(int kind, float x);
/* P(t) of the vector erfc(z) = t·exp(−z² + P(t)), t = 1/(1 + z/2): coefficients of t^0..t^9. */
extern const float uform__gemm_erfc_coefficients[10];
/* The fast GELU (gemm.h's top comment): 0.5·erfc(|x|/√2) ≈ t·Q(t)·2^y, t = 1/(1 + p·|x|),
 * y = −x²·log2(e)/2; Q's coefficients of t^0..t^4, and E(f) ≈ 2^f on [−1/2, 1/2], f^0..f^5. */
extern const float uform__gemm_gelu_fast_p;
extern const float uform__gemm_gelu_fast_coefficients[5];
extern const float uform__gemm_exp2_coefficients[6];
/* F32 → BF16, round to nearest even, NaN kept (quietened); and back (exact). */
static inline uform__bf16_t uform__gemm_bf16_from_f32(float value) {
    union { float f; uint32_t u; } bits = {.f = value};
    if ((bits.u & 0x7FFFFFFFu) > 0x7F800000u) return (uform__bf16_t)((bits.u >> 16) | 0x0040u);
    bits.u += 0x7FFFu + ((bits.u >> 16) & 1u);
    return (uform__bf16_t)(bits.u >> 16);
}
static inline float uform__gemm_f32_from_bf16(uform__bf16_t value) {
    union { uint32_t u; float f; } bits = {.u = (uint32_t)value << 16};
    return bits.f;
}

extern const uform__gemm_kernels_t uform__gemm_kernels_serial, uform__gemm_kernels_haswell,
    uform__gemm_kernels_skylake, uform__gemm_kernels_icelake, uform__gemm_kernels_genoa;
/* Skylake's micro-kernel family, reused by Icelake and by Genoa's F32 products; and the other
 * classes' micro-kernels, so that tests can run them with the packing hooks removed. */
extern const uform__gemm_micro_t uform__gemm_micro_f32_skylake, uform__gemm_micro_f32_haswell,
    uform__gemm_micro_bf16_genoa;
/* Skylake's AVX-512 F bias + GELU epilogue, which Genoa's BF16 tile shares. */
void uform__gemm_epilogue_skylake(float *c, size_t ldc, size_t rows, size_t cols, const float *bias, int gelu);

#endif
