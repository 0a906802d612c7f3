/*
 * Image preprocessing as published checkpoints' Python processors do it: Pillow's `Image.resize`
 * on 8-bit RGB, then a centre crop, rescale and normalisation in the processor's own arithmetic
 * (docs/preprocessing.md, "Published checkpoints' preprocessing", with the measured differences
 * and speed). Private to libuform. The engine's own path (torchvision's antialiased bilinear on float
 * tensors, signal.h) stays for native UForm 4 checkpoints; this is the second path, for
 * checkpoints whose preprocessor_config.json / open_clip_config.json / config.json say how.
 *
 * Four processor styles are described (uform__signal_pil_style_t), each checked against its
 * Python code run by Debian's python3 (Pillow 9.4, numpy 1.24, torch 1.13, torchvision 0.14) in
 * tests/kernels/test_signal_pil.c, with the Python re-implementations in
 * tests/reference/published_processors.py:
 *
 *   CLIP       transformers' CLIPImageProcessor: resize the shortest edge to S with PIL (the long
 *              edge int(S · long / short)), centre crop with floor offsets and zero padding,
 *              rescale in float64 then float32, normalise in float32
 *   SIGLIP     transformers' SiglipImageProcessor: resize both sides to height × width with PIL,
 *              rescale, normalise; no crop
 *   OPEN_CLIP  open_clip's image_transform(is_train=False): torchvision Resize / ResizeKeepRatio on
 *              a PIL image (PIL's resize), CenterCrop (round-half-even offsets) or
 *              CenterCropOrPad (fill_color), ToTensor (/ 255 in float32), Normalize (float32)
 *   UFORM3     UForm 3's torch ImageProcessor: Resize(S, BICUBIC), CenterCrop(S), ToTensor,
 *              Normalize — OPEN_CLIP's "shortest" mode with a square size
 *
 * Pillow's resize (libImaging/Resample.c of Pillow 9.4) as reproduced here, per axis:
 * scale = in / out (double), filterscale = max(scale, 1), support = filter support · filterscale;
 * output i is centred at (i + 0.5) · scale, reads source samples [xmin, xmax) with
 * xmin = max(0, (int)(centre − support + 0.5)), xmax = min(in, (int)(centre + support + 0.5)),
 * weighted filter((x − centre + 0.5) / filterscale) in double, normalised by their sum, then
 * converted to fixed point with 22 fraction bits rounding half away from zero. A pass sums
 * 2^21 + Σ weight · byte in 32-bit integers and stores clip(sum >> 22, 0, 255). The horizontal
 * pass runs first (only when the width changes) over the source rows the vertical pass needs;
 * the vertical pass (only when the height changes) reads its bytes. Integer sums are exact in
 * any order, so every CPU class gives Pillow's bytes.
 *
 * Errors: UFORM_INVALID_ARGUMENT names the argument, UFORM_UNSUPPORTED a valid setting not
 * handled (PIL's NEAREST, sizes past 2^24), UFORM_OUT_OF_MEMORY a failed allocation. Nothing here
 * aborts or prints.
 */
#ifndef UFORM_KERNELS_SIGNAL_PIL_H
#define UFORM_KERNELS_SIGNAL_PIL_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

/* ------------------------------------------------------------------------------------------ */
/* Pillow's resize (signal_pil.c).                                                             */

/* Pillow's filters, numbered as PIL.Image.Resampling (the `resample` of preprocessor_config.json).
 * NEAREST goes through Pillow's affine transform, not Resample.c, and is UFORM_UNSUPPORTED. */
typedef enum uform__signal_pil_filter_t {
    UFORM__SIGNAL_PIL_NEAREST = 0,
    UFORM__SIGNAL_PIL_LANCZOS = 1,  /* sinc(x) · sinc(x / 3), support 3 */
    UFORM__SIGNAL_PIL_BILINEAR = 2, /* triangle, support 1 */
    UFORM__SIGNAL_PIL_BICUBIC = 3,  /* Keys' cubic with a = −0.5, support 2 */
    UFORM__SIGNAL_PIL_BOX = 4,      /* 1 on (−0.5, 0.5], support 0.5 */
    UFORM__SIGNAL_PIL_HAMMING = 5   /* sinc(x) · (0.54 + 0.46 cos(πx)), support 1 */
} uform__signal_pil_filter_t;

/* The largest side a plan takes (Pillow's own limit is INT_MAX; 2^24 keeps every index exact). */
#define UFORM__SIGNAL_PIL_MAX_SIDE ((size_t)1 << 24)

/* Fixed-point fraction bits of Pillow's 8-bit coefficients (its PRECISION_BITS, 32 − 8 − 2). */
#define UFORM__SIGNAL_PIL_PRECISION_BITS 22

/* One axis of the resize, for outputs [begin, begin + count) of `output` along it: output
 * begin + i reads size[i] consecutive source samples from first[i] with the fixed-point
 * weights[i · taps .. + size[i]]. */
typedef struct uform__signal_pil_axis_t {
    size_t input, output; /* samples along the axis before and after the resize */
    size_t begin, count;  /* the outputs this plan computes */
    size_t taps;          /* weights reserved per output (Pillow's ksize, >= every size[i]) */
    size_t *first;        /* [count] */
    size_t *size;         /* [count], >= 1 */
    int32_t *weights;     /* [count, taps] */
} uform__signal_pil_axis_t;

/* The inner loops per CPU class (signal_pil_serial.c, signal_pil_haswell.c, signal_pil_skylake.c). */
typedef struct uform__signal_pil_kernels_t {
    uform_cpu_class_t cpu_class;
    /* Horizontal pass over `rows` RGB8 rows (row r at source + r · stride):
     * target[r · target_stride + 3x + c] = clip8(2^21 + Σ_j weights[x, j] · source[r, 3(first[x] + j) + c])
     * for x < columns->count. `scratch` holds uform__signal_pil_horizontal_scratch(columns) bytes. */
    void (*horizontal_rgb8)(const uform__signal_pil_axis_t *columns, const uint8_t *source, size_t stride,
                            size_t rows, uint8_t *target, size_t target_stride, uint8_t *scratch);
    /* Vertical pass for one output row: target[k] = clip8(2^21 + Σ_{j < taps} weights[j] · base[j · stride + k])
     * for k < length. */
    void (*vertical_u8)(const uint8_t *base, size_t stride, const int32_t *weights, size_t taps, size_t length,
                        uint8_t *target);
} uform__signal_pil_kernels_t;

/* HASWELL and SIERRA get the AVX2 table, the AVX-512 classes (SKYLAKE, ICELAKE, GENOA, SAPPHIRE,
 * GRANITE, DIAMOND) the AVX-512 one, every other class SERIAL's. Never NULL; every slot filled.
 * The caller checks uform_cpu_class_supported before using a table. */
const uform__signal_pil_kernels_t *uform__signal_pil_kernels(uform_cpu_class_t cpu_class);

/* Bytes of scratch one horizontal_rgb8 call needs for `columns` (any class). */
size_t uform__signal_pil_horizontal_scratch(const uform__signal_pil_axis_t *columns);

/*
 * A planned resize: the weights for one source size, one resized size and one window of the
 * resized image (the part a crop keeps), computed once and reused for every picture of that size
 * (a batch, a video's frames). The plan owns a scratch buffer, so one plan serves one call at a
 * time; threads each use their own plan.
 */
typedef struct uform__signal_pil_plan_t {
    size_t source_height, source_width;   /* the picture read */
    size_t resized_height, resized_width; /* the whole resized picture the filter is defined on */
    size_t window_top, window_left;       /* the part of it produced */
    size_t window_height, window_width;
    uform__signal_pil_filter_t filter;
    int horizontal, vertical;             /* Pillow's need_horizontal / need_vertical: the side changes */
    uform__signal_pil_axis_t rows;        /* vertical taps over source rows (when `vertical`) */
    uform__signal_pil_axis_t columns;     /* horizontal taps over source columns (when `horizontal`) */
    size_t row_begin, row_end;            /* source rows the window reads */
    uint8_t *middle;                      /* horizontal result [row_end − row_begin, window_width, 3] */
    uint8_t *scratch;                     /* the horizontal pass's scratch */
} uform__signal_pil_plan_t;

/* Plans Pillow's resize of a source_height × source_width RGB8 picture to resized_height ×
 * resized_width with `filter`, producing the window at (window_top, window_left) of window_height
 * × window_width, which must lie inside the resized picture. Sides 1 .. UFORM__SIGNAL_PIL_MAX_SIDE. */
uform_status_t uform__signal_pil_plan_init(uform__signal_pil_plan_t *plan, size_t source_height, size_t source_width,
                                           size_t resized_height, size_t resized_width, size_t window_top,
                                           size_t window_left, size_t window_height, size_t window_width,
                                           uform__signal_pil_filter_t filter, uform_outcome_t *outcome);

/* Frees what init allocated; a zeroed or already freed plan is a no-op. */
void uform__signal_pil_plan_free(uform__signal_pil_plan_t *plan);

/* Resizes `pixels` (RGB8, row r at pixels + r · stride bytes, stride >= 3 · source_width) through
 * `plan` into `out` (RGB8 [window_height, window_width, 3], row r at out + r · out_stride,
 * out_stride >= 3 · window_width). `kernels` NULL means serial. */
uform_status_t uform__signal_pil_plan_apply(uform__signal_pil_plan_t *plan, const uint8_t *pixels, size_t stride,
                                            uint8_t *out, size_t out_stride, const uform__signal_pil_kernels_t *kernels,
                                            uform_outcome_t *outcome);

/* RGB8 [height, width, 3] (row stride in bytes) → RGB8 [out_height, out_width, 3] (packed rows),
 * Pillow's `Image.resize((out_width, out_height), filter)`: a plan made, applied serially, freed. */
uform_status_t uform__signal_pil_resize_rgb8(const uint8_t *pixels, size_t height, size_t width, size_t stride,
                                             uint8_t *out, size_t out_height, size_t out_width,
                                             uform__signal_pil_filter_t filter, uform_outcome_t *outcome);

/* ------------------------------------------------------------------------------------------ */
/* Crop, rescale, normalise, lay out (signal_pil_normalise.c).                                 */

/*
 * The arithmetic from bytes to model inputs, per channel c and byte v:
 *
 *   TRANSFORMERS  x = rescale ? (float)((double)v · rescale_factor) : (float)v
 *                 (image_transforms.rescale: astype(float64) · scale, then astype(float32));
 *                 y = normalise ? (x − mean[c]) / std[c] : x, both steps in float32
 *                 (image_transforms.normalize with float32 mean and std).
 *   TORCHVISION   x = (float)v / 255.0f (ToTensor's div(255) in float32);
 *                 y = (x − mean[c]) / std[c] in float32 (Normalize's sub_ then div_).
 *                 `rescale`, `normalise` and `rescale_factor` are not read.
 *
 * mean and std are the configuration's values rounded to float, as numpy's
 * np.array(mean, dtype=float32) and torch.as_tensor(mean, dtype=float32) round them; std is
 * non-zero when normalising.
 */
typedef enum uform__signal_pil_arithmetic_t {
    UFORM__SIGNAL_PIL_TRANSFORMERS = 0,
    UFORM__SIGNAL_PIL_TORCHVISION = 1
} uform__signal_pil_arithmetic_t;

typedef struct uform__signal_pil_normalise_t {
    uform__signal_pil_arithmetic_t arithmetic;
    int rescale, normalise; /* transformers' do_rescale, do_normalize */
    double rescale_factor;  /* transformers' rescale_factor (1/255 as a double for every known checkpoint) */
    float mean[3], std[3];
} uform__signal_pil_normalise_t;

/* Where the normalised values go. */
typedef enum uform__signal_pil_layout_t {
    UFORM__SIGNAL_PIL_CHW = 0,    /* float [3, crop_height, crop_width], what the processors return */
    UFORM__SIGNAL_PIL_PATCHES = 1 /* float [(crop_height/p)·(crop_width/p), 3·p·p]: patches left to right, then
                                     top to bottom, each (c, y, x) — the image stem's patch rows */
} uform__signal_pil_layout_t;

/*
 * Crops RGB8 `pixels` (height × width, row stride in bytes) to crop_height × crop_width whose
 * pixel (0, 0) is the picture's pixel (top, left) — negative offsets, or a crop reaching past
 * the far edge, read `fill` in every channel there (transformers' center_crop pads with 0,
 * torchvision's with 0, open_clip's CenterCropOrPad with fill_color; the padding is a pixel
 * value, normalised like the others) — then rescales and normalises as `normalise` says and
 * writes `out` in `layout`; `patch` (p >= 1, dividing both crop sides) is read by PATCHES only.
 */
uform_status_t uform__signal_pil_crop_normalise(const uint8_t *pixels, size_t height, size_t width, size_t stride,
                                                ptrdiff_t top, ptrdiff_t left, size_t crop_height,
                                                size_t crop_width, uint8_t fill,
                                                const uform__signal_pil_normalise_t *normalise,
                                                uform__signal_pil_layout_t layout, size_t patch, float *out,
                                                uform_outcome_t *outcome);

/* ------------------------------------------------------------------------------------------ */
/* The four processor styles (signal_pil_style.c).                                             */

typedef enum uform__signal_pil_style_t {
    UFORM__SIGNAL_PIL_STYLE_CLIP = 0,
    UFORM__SIGNAL_PIL_STYLE_SIGLIP = 1,
    UFORM__SIGNAL_PIL_STYLE_OPEN_CLIP = 2,
    UFORM__SIGNAL_PIL_STYLE_UFORM3 = 3
} uform__signal_pil_style_t;

/* open_clip's preprocess_cfg.resize_mode. */
typedef enum uform__signal_pil_resize_mode_t {
    UFORM__SIGNAL_PIL_SHORTEST = 0, /* shortest edge to the size, then CenterCrop */
    UFORM__SIGNAL_PIL_LONGEST = 1,  /* longest edge to the size (ResizeKeepRatio), then CenterCropOrPad */
    UFORM__SIGNAL_PIL_SQUASH = 2    /* both sides to the size, no crop */
} uform__signal_pil_resize_mode_t;

/*
 * One processor's settings, as its configuration file states them (the caller parses the file):
 *
 *   CLIP       preprocessor_config.json: do_resize, size, resample, do_center_crop, crop_size,
 *              do_rescale, rescale_factor, do_normalize, image_mean, image_std. `size` is
 *              {"shortest_edge": S} (shortest_edge = S) or {"height": H, "width": W}
 *              (shortest_edge = 0, height = H, width = W: resized to exactly H × W); a bare
 *              integer size means {"shortest_edge": S} and a bare integer crop_size means a
 *              square, as transformers' get_size_dict reads them.
 *   SIGLIP     do_resize, size {"height", "width"}, resample, do_rescale, rescale_factor,
 *              do_normalize, image_mean, image_std (do_center_crop is not read).
 *   OPEN_CLIP  preprocess_cfg: size (height = width = S for an integer), mean, std,
 *              interpolation ("bicubic" = BICUBIC, "bilinear" = BILINEAR, "random" = BICUBIC at
 *              inference), resize_mode, fill_color.
 *   UFORM3     image_encoder.image_size (height = width), normalization_means,
 *              normalization_deviations; filter BICUBIC.
 *
 * Flags not read by a style are ignored; OPEN_CLIP and UFORM3 always resize, crop and normalise
 * with TORCHVISION arithmetic, CLIP and SIGLIP use TRANSFORMERS arithmetic.
 */
typedef struct uform__signal_pil_processor_t {
    uform__signal_pil_style_t style;
    uform__signal_pil_filter_t filter;
    int do_resize, do_center_crop, do_rescale, do_normalize;
    size_t shortest_edge;           /* CLIP: size.shortest_edge, or 0 for size {height, width} */
    size_t height, width;           /* CLIP {height, width} size; SIGLIP size; OPEN_CLIP / UFORM3 image size */
    size_t crop_height, crop_width; /* CLIP crop_size */
    double rescale_factor;          /* CLIP, SIGLIP */
    uform__signal_pil_resize_mode_t resize_mode; /* OPEN_CLIP */
    uint8_t fill;                   /* OPEN_CLIP fill_color (0 .. 255) */
    float mean[3], std[3];
} uform__signal_pil_processor_t;

/* What a processor does to one picture's size. */
typedef struct uform__signal_pil_geometry_t {
    int resize;                           /* 0: the picture is used at its own size */
    size_t resized_height, resized_width; /* the picture's size after the resize (its own when !resize) */
    ptrdiff_t crop_top, crop_left;        /* the resized pixel that becomes output pixel (0, 0); outside = fill */
    size_t output_height, output_width;   /* the model input's size */
    uint8_t fill;                         /* the padding's byte value */
} uform__signal_pil_geometry_t;

/*
 * The geometry of `processor` on a height × width picture, following each Python processor's
 * code: transformers' get_resize_output_image_size (new_long = int(S · long / short)) and
 * center_crop (top = (H − h) // 2, floored; padding leaves the picture at ceil(d / 2) on the
 * padded side, which is the same offset); torchvision's _compute_resized_output_size and
 * center_crop (top = int(round((H − h) / 2.0)), half to even; a padded axis pads (h − H) // 2
 * before); open_clip's ResizeKeepRatio (round(side / ratio), half to even) and CenterCropOrPad.
 */
uform_status_t uform__signal_pil_geometry(const uform__signal_pil_processor_t *processor, size_t height,
                                          size_t width, uform__signal_pil_geometry_t *geometry,
                                          uform_outcome_t *outcome);

/* The normalisation a processor applies (arithmetic, flags, factor, mean, std). */
void uform__signal_pil_processor_normalise(const uform__signal_pil_processor_t *processor,
                                           uform__signal_pil_normalise_t *normalise);

/*
 * A processor planned for one picture size: geometry, the resize plan of the part of the resized
 * picture that the crop keeps, and the bytes it produces. One call at a time, like a plan.
 */
typedef struct uform__signal_pil_pipeline_t {
    uform__signal_pil_geometry_t geometry;
    uform__signal_pil_normalise_t normalise;
    size_t source_height, source_width;
    size_t window_top, window_left, window_height, window_width; /* resized pixels the crop reads */
    uform__signal_pil_plan_t plan;  /* valid when geometry.resize and the window is not empty */
    uint8_t *window;                /* [window_height, window_width, 3], the plan's output */
} uform__signal_pil_pipeline_t;

uform_status_t uform__signal_pil_pipeline_init(uform__signal_pil_pipeline_t *pipeline,
                                               const uform__signal_pil_processor_t *processor, size_t height,
                                               size_t width, uform_outcome_t *outcome);
void uform__signal_pil_pipeline_free(uform__signal_pil_pipeline_t *pipeline);

/* Runs the whole processor on `pixels` (RGB8, the planned size, row stride in bytes) into `out`
 * in `layout` (output_height × output_width; `patch` for PATCHES). `kernels` NULL means serial. */
uform_status_t uform__signal_pil_pipeline_apply(uform__signal_pil_pipeline_t *pipeline, const uint8_t *pixels,
                                                size_t stride, uform__signal_pil_layout_t layout, size_t patch,
                                                float *out, const uform__signal_pil_kernels_t *kernels,
                                                uform_outcome_t *outcome);

#endif
