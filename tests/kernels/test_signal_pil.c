/*
 * Pillow's resize and the published processors' preprocessing (src/kernels/signal_pil*.c) against
 * Pillow 9.4 and the Python processors, run by Debian's python3 through
 * tests/kernels/pil_reference.py, which draws the pictures (noise, gradients, sharp edges; 1×1 to
 * 1000×37) and writes Pillow's bytes and the processors' floats.
 *
 *   resize cases  every CPU class's bytes equal Pillow's (BICUBIC, BILINEAR, BOX exactly; LANCZOS
 *                 and HAMMING, whose weights go through libm's sin and cos, within one step), also
 *                 through a window of the resized picture and a source stride longer than its row;
 *   style cases   CLIP, SigLIP, OpenCLIP and UForm 3 processors: the output size, the CHW floats
 *                 bit for bit (within one 8-bit step after normalisation for LANCZOS), the patch
 *                 rows the same values rearranged, every class the serial bits, a pipeline reused
 *                 on a second picture;
 *   errors        each argument check, with its message.
 *
 * Usage: test_signal_pil PYTHON SCRIPT [SEED]. Prints the largest differences it measured, and
 * "exercised: CLASS" for each class it ran (scripts/test-avx2.sh reads them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/skip.h"
#include "kernels/signal_pil.h"
#include "test_signal_common.h"

typedef struct totals_t {
    size_t cases, bytes, mismatched_bytes, float_cases, floats, unequal_floats;
    int worst_byte;          /* largest |C − Pillow| of a byte */
    double worst_steps;      /* largest |C − processor| of a float, in 8-bit steps after normalisation */
} totals_t;

static totals_t totals;

static uint8_t *read_bytes(const char *name, const char *suffix, size_t bytes) {
    uint8_t *data = malloc(bytes ? bytes : 1);
    if (data && !signal_read(name, suffix, data, bytes)) {
        free(data);
        return NULL;
    }
    return data;
}

/* Lanczos and Hamming weights call sin and cos; the others are arithmetic only. */
static int exact_filter(int filter) { return filter == 2 || filter == 3 || filter == 4; }

/* Compares bytes; answers the largest difference and counts the differing ones. */
static int compare_bytes(const uint8_t *actual, const uint8_t *expected, size_t n, size_t *mismatched, size_t *at) {
    int worst = 0;
    *mismatched = 0;
    *at = 0;
    for (size_t i = 0; i < n; ++i) {
        const int d = abs((int)actual[i] - (int)expected[i]);
        if (d) ++*mismatched;
        if (d > worst) worst = d, *at = i;
    }
    return worst;
}

/* A copy of the picture whose rows lie `stride` bytes apart, the last row ending the buffer. */
static uint8_t *strided(const uint8_t *pixels, size_t height, size_t width, size_t stride) {
    uint8_t *copy = malloc((height - 1) * stride + width * 3);
    for (size_t y = 0; y < height; ++y) memcpy(copy + y * stride, pixels + y * width * 3, width * 3);
    return copy;
}

static void resize_case(const char *name, const char *picture, size_t height, size_t width, size_t out_height,
                        size_t out_width, int filter) {
    const size_t n = out_height * out_width * 3;
    uint8_t *pixels = read_bytes(picture, "in", height * width * 3), *expected = read_bytes(name, "out", n);
    uint8_t *actual = malloc(n);
    if (!pixels || !expected || !actual) goto done;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__signal_pil_resize_rgb8(pixels, height, width, width * 3, actual, out_height, out_width,
                                               (uform__signal_pil_filter_t)filter, &outcome),
                 UFORM_OK);
    size_t mismatched, at;
    const int worst = compare_bytes(actual, expected, n, &mismatched, &at);
    totals.cases++, totals.bytes += n, totals.mismatched_bytes += mismatched;
    if (worst > totals.worst_byte) totals.worst_byte = worst;
    const int allowed = exact_filter(filter) ? 0 : 1;
    CHECK_MSG(worst <= allowed, "%s: %zux%zu -> %zux%zu filter %d: %zu bytes differ, largest %d at byte %zu "
              "(pixel %zu, channel %zu): got %d, Pillow %d", name, height, width, out_height, out_width, filter,
              mismatched, worst, at, at / 3, at % 3, actual[at], expected[at]);

    /* Every class, through one plan reused, with rows 5 bytes longer than their pixels. */
    uform__signal_pil_plan_t plan;
    CHECK_STATUS(uform__signal_pil_plan_init(&plan, height, width, out_height, out_width, 0, 0, out_height, out_width,
                                             (uform__signal_pil_filter_t)filter, &outcome),
                 UFORM_OK);
    const size_t stride = width * 3 + 5;
    uint8_t *padded = strided(pixels, height, width, stride), *serial = malloc(n);
    CHECK_STATUS(uform__signal_pil_plan_apply(&plan, padded, stride, serial, out_width * 3, NULL, &outcome), UFORM_OK);
    CHECK_MSG(memcmp(serial, actual, n) == 0, "%s: a plan on a strided picture differs from the one-shot resize", name);
    for (size_t k = 0; k < CHECK_KERNEL_CLASSES; ++k) {
        const uform_cpu_class_t cls = check_kernel_classes[k];
        if (cls == UFORM_CPU_CLASS_SERIAL || !check_class_runs(cls)) continue;
        memset(actual, 0xA5, n);
        CHECK_STATUS(uform__signal_pil_plan_apply(&plan, padded, stride, actual, out_width * 3,
                                                  uform__signal_pil_kernels(cls), &outcome),
                     UFORM_OK);
        const int class_worst = compare_bytes(actual, serial, n, &mismatched, &at);
        CHECK_MSG(class_worst == 0, "%s: class %s: %zu bytes differ from serial, first largest at %zu: %d vs %d",
                  name, uform_cpu_class_name(cls), mismatched, at, actual[at], serial[at]);
    }
    uform__signal_pil_plan_free(&plan);

    /* A window of the resized picture (what a centre crop keeps): Pillow's bytes there. */
    if (out_height >= 3 && out_width >= 3) {
        const size_t top = out_height / 4, left = out_width / 3, rows = out_height / 2, columns = out_width / 2;
        CHECK_STATUS(uform__signal_pil_plan_init(&plan, height, width, out_height, out_width, top, left, rows, columns,
                                                 (uform__signal_pil_filter_t)filter, &outcome),
                     UFORM_OK);
        for (size_t k = 0; k < CHECK_KERNEL_CLASSES; ++k) {
            const uform_cpu_class_t cls = check_kernel_classes[k];
            if (!check_class_runs(cls)) continue;
            memset(actual, 0x5A, n);
            CHECK_STATUS(uform__signal_pil_plan_apply(&plan, pixels, width * 3, actual, columns * 3 + 1,
                                                      uform__signal_pil_kernels(cls), &outcome),
                         UFORM_OK);
            size_t wrong = 0;
            for (size_t y = 0; y < rows; ++y)
                wrong += memcmp(actual + y * (columns * 3 + 1), serial + ((top + y) * out_width + left) * 3,
                                columns * 3) != 0;
            CHECK_MSG(wrong == 0, "%s: class %s: %zu rows of the window at (%zu, %zu) differ from the whole resize",
                      name, uform_cpu_class_name(cls), wrong, top, left);
        }
        uform__signal_pil_plan_free(&plan);
    }
    free(padded), free(serial);
done:
    free(pixels), free(expected), free(actual);
}

typedef struct style_line_t {
    char name[64], picture[64];
    size_t height, width, out_height, out_width;
    uform__signal_pil_processor_t processor;
} style_line_t;

/* The value of a one-step change of byte v in channel c after rescale and normalisation. */
static double step_of(const uform__signal_pil_processor_t *p, int c) {
    const int transformers = p->style <= UFORM__SIGNAL_PIL_STYLE_SIGLIP;
    double step = transformers ? (p->do_rescale ? p->rescale_factor : 1.0) : 1.0 / 255.0;
    if (!transformers || p->do_normalize) step /= fabs((double)p->std[c]);
    return step;
}

static void style_case(const style_line_t *line, uint64_t *state) {
    const uform__signal_pil_processor_t *p = &line->processor;
    const size_t h = line->out_height, w = line->out_width, n = 3 * h * w;
    uint8_t *pixels = read_bytes(line->picture, "in", line->height * line->width * 3);
    float *expected = malloc(n * sizeof(float)), *actual = malloc(n * sizeof(float));
    float *patches = malloc(n * sizeof(float)), *serial = malloc(n * sizeof(float));
    uint8_t *other = malloc(line->height * line->width * 3);
    if (!pixels || !expected || !actual || !patches || !serial || !other ||
        !signal_read(line->name, "out", expected, n * sizeof(float)))
        goto done;
    uform_outcome_t outcome = {0};
    uform__signal_pil_pipeline_t pipeline;
    const uform_status_t made = uform__signal_pil_pipeline_init(&pipeline, p, line->height, line->width, &outcome);
    CHECK_STATUS(made, UFORM_OK);
    if (made != UFORM_OK) {
        fprintf(stderr, "%s: %s\n", line->name, outcome.message);
        goto done;
    }
    CHECK_MSG(pipeline.geometry.output_height == h && pipeline.geometry.output_width == w,
              "%s: style %d on %zux%zu: output %zux%zu, the processor's %zux%zu", line->name, (int)p->style,
              line->height, line->width, pipeline.geometry.output_height, pipeline.geometry.output_width, h, w);
    if (pipeline.geometry.output_height != h || pipeline.geometry.output_width != w) {
        uform__signal_pil_pipeline_free(&pipeline);
        goto done;
    }
    /* A first picture of the same size through the same pipeline: the second must not see it. */
    for (size_t i = 0; i < line->height * line->width * 3; ++i) other[i] = (uint8_t)check_random_next(state);
    CHECK_STATUS(uform__signal_pil_pipeline_apply(&pipeline, other, line->width * 3, UFORM__SIGNAL_PIL_CHW, 0, actual,
                                                  NULL, &outcome),
                 UFORM_OK);
    CHECK_STATUS(uform__signal_pil_pipeline_apply(&pipeline, pixels, line->width * 3, UFORM__SIGNAL_PIL_CHW, 0, serial,
                                                  NULL, &outcome),
                 UFORM_OK);
    double worst = 0.0;
    size_t unequal = 0, at = 0;
    for (size_t i = 0; i < n; ++i) {
        if (memcmp(&serial[i], &expected[i], sizeof(float)) == 0) continue;
        ++unequal;
        double steps = fabs((double)serial[i] - (double)expected[i]) / step_of(p, (int)(i / (h * w)));
        if (isnan(steps)) steps = INFINITY;
        if (steps > worst) worst = steps, at = i;
    }
    totals.float_cases++, totals.floats += n, totals.unequal_floats += unequal;
    if (worst > totals.worst_steps) totals.worst_steps = worst;
    /* Exact where the resize is (its bytes are Pillow's and the table is the processor's arithmetic). */
    const double allowed = exact_filter((int)p->filter) ? 0.0 : 1.0 + 1e-3;
    CHECK_MSG(worst <= allowed && (allowed > 0.0 || unequal == 0),
              "%s: style %d filter %d, %zux%zu -> %zux%zu: %zu floats differ, largest %.3g steps at %zu "
              "(channel %zu, y %zu, x %zu): got %.9g, processor %.9g",
              line->name, (int)p->style, (int)p->filter, line->height, line->width, h, w, unequal, worst, at,
              at / (h * w), at / w % h, at % w, (double)serial[at], (double)expected[at]);

    /* Patch rows: the processor's [3, h, w] cut into p × p patches, each (c, y, x). */
    const size_t patch = h % 16 == 0 && w % 16 == 0 ? 16 : h % 14 == 0 && w % 14 == 0 ? 14 : h % 8 == 0 && w % 8 == 0 ? 8 : 1;
    CHECK_STATUS(uform__signal_pil_pipeline_apply(&pipeline, pixels, line->width * 3, UFORM__SIGNAL_PIL_PATCHES, patch,
                                                  patches, NULL, &outcome),
                 UFORM_OK);
    size_t wrong = 0;
    const size_t across = w / patch;
    for (size_t k = 0; k < (h / patch) * across; ++k)
        for (size_t c = 0; c < 3; ++c)
            for (size_t y = 0; y < patch; ++y)
                for (size_t x = 0; x < patch; ++x) {
                    const float got = patches[((k * 3 + c) * patch + y) * patch + x];
                    const float want = serial[(c * h + (k / across) * patch + y) * w + (k % across) * patch + x];
                    if (memcmp(&got, &want, sizeof(float)) != 0 && wrong++ < 3)
                        fprintf(stderr, "%s patch %zu (of %zu) c%zu (%zu, %zu): got %.9g, CHW %.9g\n", line->name, k,
                                patch, c, y, x, (double)got, (double)want);
                }
    CHECK_EQ_INT(wrong, 0);

    /* Every class: the serial bits. */
    for (size_t k = 0; k < CHECK_KERNEL_CLASSES; ++k) {
        const uform_cpu_class_t cls = check_kernel_classes[k];
        if (cls == UFORM_CPU_CLASS_SERIAL || !check_class_runs(cls)) continue;
        memset(actual, 0xFF, n * sizeof(float));
        CHECK_STATUS(uform__signal_pil_pipeline_apply(&pipeline, pixels, line->width * 3, UFORM__SIGNAL_PIL_CHW, 0,
                                                      actual, uform__signal_pil_kernels(cls), &outcome),
                     UFORM_OK);
        CHECK_MSG(memcmp(actual, serial, n * sizeof(float)) == 0, "%s: class %s differs from serial", line->name,
                  uform_cpu_class_name(cls));
    }
    uform__signal_pil_pipeline_free(&pipeline);
done:
    free(pixels), free(expected), free(actual), free(patches), free(serial), free(other);
}

static int parse_style(const char *text, style_line_t *line) {
    memset(line, 0, sizeof(*line));
    uform__signal_pil_processor_t *p = &line->processor;
    int style, filter, do_resize, do_crop, do_rescale, do_normalize, mode, fill;
    size_t shortest, height, width, crop_h, crop_w;
    double factor, mean[3], std[3];
    const int got = sscanf(text,
                           "style %63s %63s %zu %zu %d %d %d %d %d %d %zu %zu %zu %zu %zu %lf %d %d %lf %lf %lf %lf "
                           "%lf %lf %zu %zu",
                           line->name, line->picture, &line->height, &line->width, &style, &filter, &do_resize,
                           &do_crop, &do_rescale, &do_normalize, &shortest, &height, &width, &crop_h, &crop_w, &factor,
                           &mode, &fill, &mean[0], &mean[1], &mean[2], &std[0], &std[1], &std[2], &line->out_height,
                           &line->out_width);
    if (got != 26) return 0;
    p->style = (uform__signal_pil_style_t)style;
    p->filter = (uform__signal_pil_filter_t)filter;
    p->do_resize = do_resize, p->do_center_crop = do_crop, p->do_rescale = do_rescale, p->do_normalize = do_normalize;
    p->shortest_edge = shortest, p->height = height, p->width = width, p->crop_height = crop_h, p->crop_width = crop_w;
    p->rescale_factor = factor;
    p->resize_mode = (uform__signal_pil_resize_mode_t)mode;
    p->fill = (uint8_t)fill;
    for (int c = 0; c < 3; ++c) p->mean[c] = (float)mean[c], p->std[c] = (float)std[c];
    return 1;
}

static void run_manifest(uint64_t *state) {
    char path[512], text[1024];
    snprintf(path, sizeof(path), "%s/manifest.txt", signal_directory);
    FILE *manifest = fopen(path, "r");
    CHECK_MSG(manifest != NULL, "no manifest at %s", path);
    if (!manifest) return;
    size_t resizes = 0, styles = 0;
    while (fgets(text, sizeof(text), manifest)) {
        if (strncmp(text, "resize ", 7) == 0) {
            char name[64], picture[64];
            size_t h, w, oh, ow;
            int filter;
            const int got = sscanf(text, "resize %63s %63s %zu %zu %zu %zu %d", name, picture, &h, &w, &oh, &ow, &filter);
            CHECK_MSG(got == 7, "unreadable manifest line: %s", text);
            if (got == 7) resize_case(name, picture, h, w, oh, ow, filter), ++resizes;
        } else if (strncmp(text, "style ", 6) == 0) {
            style_line_t line;
            const int parsed = parse_style(text, &line);
            CHECK_MSG(parsed, "unreadable manifest line: %s", text);
            if (parsed) style_case(&line, state), ++styles;
        }
    }
    fclose(manifest);
    CHECK_MSG(resizes >= 100 && styles >= 50, "the manifest lists %zu resize and %zu style cases", resizes, styles);
}

/* Hand-worked geometry where the Python rules differ: floor against round half to even, and the
 * two paddings' sides. The values follow from the formulas quoted in signal_pil.h. */
static void test_geometry(void) {
    uform__signal_pil_processor_t clip = {.style = UFORM__SIGNAL_PIL_STYLE_CLIP, .filter = UFORM__SIGNAL_PIL_BICUBIC,
                                          .do_resize = 1, .do_center_crop = 1, .do_rescale = 1, .do_normalize = 1,
                                          .shortest_edge = 224, .crop_height = 224, .crop_width = 224,
                                          .rescale_factor = 1.0 / 255.0, .mean = {0.5f, 0.5f, 0.5f},
                                          .std = {0.5f, 0.5f, 0.5f}};
    uform__signal_pil_processor_t uform3 = clip;
    uform3.style = UFORM__SIGNAL_PIL_STYLE_UFORM3, uform3.height = uform3.width = 224;
    uform__signal_pil_geometry_t g;
    /* 480 × 640: 224 × int(224 · 640 / 480) = 298; left (298 − 224) // 2 = 37 either way. */
    CHECK_STATUS(uform__signal_pil_geometry(&clip, 480, 640, &g, NULL), UFORM_OK);
    CHECK(g.resize && g.resized_height == 224 && g.resized_width == 298 && g.crop_top == 0 && g.crop_left == 37);
    /* 227 × 224 → 227 × 224 is no resize... take 224 wide, 227 tall: crop top 3 // 2 = 1 against round(1.5) = 2. */
    CHECK_STATUS(uform__signal_pil_geometry(&clip, 227, 224, &g, NULL), UFORM_OK);
    CHECK(!g.resize && g.crop_top == 1 && g.crop_left == 0);
    CHECK_STATUS(uform__signal_pil_geometry(&uform3, 227, 224, &g, NULL), UFORM_OK);
    CHECK(!g.resize && g.crop_top == 2 && g.crop_left == 0);
    /* 225 tall: 1 // 2 = 0 and round(0.5) = 0 (half to even). */
    CHECK_STATUS(uform__signal_pil_geometry(&uform3, 225, 224, &g, NULL), UFORM_OK);
    CHECK(g.crop_top == 0);
    /* A crop 3 longer than the picture: transformers pads ceil(3 / 2) = 2 before, torchvision 3 // 2 = 1. */
    clip.do_resize = 0, clip.crop_height = 103, clip.crop_width = 100;
    CHECK_STATUS(uform__signal_pil_geometry(&clip, 100, 100, &g, NULL), UFORM_OK);
    CHECK(g.crop_top == -2 && g.crop_left == 0 && g.output_height == 103);
    uform__signal_pil_processor_t open_clip = uform3;
    open_clip.style = UFORM__SIGNAL_PIL_STYLE_OPEN_CLIP, open_clip.resize_mode = UFORM__SIGNAL_PIL_LONGEST;
    open_clip.height = 103, open_clip.width = 100, open_clip.fill = 9;
    CHECK_STATUS(uform__signal_pil_geometry(&open_clip, 100, 100, &g, NULL), UFORM_OK);
    /* longest: ratio max(100/103, 100/100) = 1, no resize; pad (103 − 100) // 2 = 1 before. */
    CHECK(!g.resize && g.crop_top == -1 && g.crop_left == 0 && g.fill == 9);
}

static void test_errors(void) {
    uform_outcome_t outcome = {0};
    uform__signal_pil_plan_t plan;
    CHECK_STATUS(uform__signal_pil_plan_init(NULL, 4, 4, 2, 2, 0, 0, 2, 2, UFORM__SIGNAL_PIL_BICUBIC, &outcome),
                 UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__signal_pil_plan_init(&plan, 0, 4, 2, 2, 0, 0, 2, 2, UFORM__SIGNAL_PIL_BICUBIC, &outcome),
                 UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "source 0x4");
    CHECK_STATUS(uform__signal_pil_plan_init(&plan, 4, 4, 2, 2, 1, 0, 2, 2, UFORM__SIGNAL_PIL_BICUBIC, &outcome),
                 UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "window 2x2 at (1, 0)");
    CHECK_STATUS(uform__signal_pil_plan_init(&plan, 4, 4, 2, 2, 0, 0, 2, 2, UFORM__SIGNAL_PIL_NEAREST, &outcome),
                 UFORM_UNSUPPORTED);
    CHECK_CONTAINS(outcome.message, "NEAREST");
    CHECK_STATUS(uform__signal_pil_plan_init(&plan, 4, 4, 2, 2, 0, 0, 2, 2, (uform__signal_pil_filter_t)7, &outcome),
                 UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "filter 7");
    CHECK_STATUS(uform__signal_pil_plan_init(&plan, (size_t)1 << 25, 4, 2, 2, 0, 0, 2, 2, UFORM__SIGNAL_PIL_BICUBIC,
                                             &outcome),
                 UFORM_UNSUPPORTED);
    CHECK_STATUS(uform__signal_pil_plan_init(&plan, 4, 4, 2, 2, 0, 0, 2, 2, UFORM__SIGNAL_PIL_BICUBIC, &outcome),
                 UFORM_OK);
    uint8_t image[4 * 4 * 3] = {0}, out[2 * 2 * 3];
    CHECK_STATUS(uform__signal_pil_plan_apply(&plan, image, 11, out, 6, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "stride 11");
    CHECK_STATUS(uform__signal_pil_plan_apply(&plan, image, 12, out, 5, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "out_stride 5");
    CHECK_STATUS(uform__signal_pil_plan_apply(&plan, NULL, 12, out, 6, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    uform__signal_pil_plan_free(&plan);
    uform__signal_pil_plan_free(&plan); /* twice: a no-op */
    CHECK_STATUS(uform__signal_pil_plan_apply(&plan, image, 12, out, 6, NULL, &outcome), UFORM_INVALID_ARGUMENT);

    const uform__signal_pil_normalise_t normalise = {UFORM__SIGNAL_PIL_TRANSFORMERS, 1, 1, 1.0 / 255.0,
                                                     {0.5f, 0.5f, 0.5f}, {0.5f, 0.0f, 0.5f}};
    float values[3 * 4 * 4];
    CHECK_STATUS(uform__signal_pil_crop_normalise(image, 4, 4, 12, 0, 0, 4, 4, 0, &normalise, UFORM__SIGNAL_PIL_CHW, 0,
                                                  values, &outcome),
                 UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "channel 1");
    uform__signal_pil_normalise_t unnormalised = normalise;
    unnormalised.normalise = 0; /* a zero std is not read */
    CHECK_STATUS(uform__signal_pil_crop_normalise(image, 4, 4, 12, 0, 0, 4, 4, 0, &unnormalised, UFORM__SIGNAL_PIL_CHW,
                                                  0, values, &outcome),
                 UFORM_OK);
    CHECK_STATUS(uform__signal_pil_crop_normalise(image, 4, 4, 12, 0, 0, 4, 4, 0, &unnormalised,
                                                  UFORM__SIGNAL_PIL_PATCHES, 3, values, &outcome),
                 UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "patch 3");
    CHECK_STATUS(uform__signal_pil_crop_normalise(image, 4, 4, 12, 0, 0, 0, 4, 0, &unnormalised, UFORM__SIGNAL_PIL_CHW,
                                                  0, values, &outcome),
                 UFORM_INVALID_ARGUMENT);
    /* Fill only: a crop wholly outside the picture. */
    CHECK_STATUS(uform__signal_pil_crop_normalise(image, 4, 4, 12, 10, -20, 4, 4, 255, &unnormalised,
                                                  UFORM__SIGNAL_PIL_CHW, 0, values, &outcome),
                 UFORM_OK);
    CHECK(values[0] == (float)(255.0 / 255.0) && values[47] == values[0]);

    uform__signal_pil_processor_t processor = {.style = UFORM__SIGNAL_PIL_STYLE_UFORM3,
                                               .filter = UFORM__SIGNAL_PIL_BICUBIC, .height = 224, .width = 200,
                                               .mean = {0.5f, 0.5f, 0.5f}, .std = {0.5f, 0.5f, 0.5f}};
    uform__signal_pil_geometry_t geometry;
    CHECK_STATUS(uform__signal_pil_geometry(&processor, 10, 10, &geometry, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "square");
    processor.style = UFORM__SIGNAL_PIL_STYLE_OPEN_CLIP, processor.resize_mode = UFORM__SIGNAL_PIL_LONGEST;
    processor.width = 224;
    /* longest on 1 × 1000: round(1 / (1000 / 224)) = 0 rows, which Python's PIL refuses too. */
    CHECK_STATUS(uform__signal_pil_geometry(&processor, 1, 1000, &geometry, &outcome), UFORM_UNSUPPORTED);
    CHECK_CONTAINS(outcome.message, "0x224");
    processor.filter = UFORM__SIGNAL_PIL_NEAREST, processor.resize_mode = UFORM__SIGNAL_PIL_SHORTEST;
    CHECK_STATUS(uform__signal_pil_geometry(&processor, 10, 20, &geometry, &outcome), UFORM_UNSUPPORTED);
    CHECK_CONTAINS(outcome.message, "NEAREST");
    processor.filter = UFORM__SIGNAL_PIL_BICUBIC, processor.resize_mode = (uform__signal_pil_resize_mode_t)5;
    CHECK_STATUS(uform__signal_pil_geometry(&processor, 10, 20, &geometry, &outcome), UFORM_INVALID_ARGUMENT);
    processor.style = UFORM__SIGNAL_PIL_STYLE_CLIP, processor.do_resize = 1, processor.do_center_crop = 1;
    processor.shortest_edge = 224, processor.crop_height = 0, processor.crop_width = 224;
    CHECK_STATUS(uform__signal_pil_geometry(&processor, 10, 20, &geometry, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "crop_size 0x224");
    uform__signal_pil_pipeline_t pipeline;
    CHECK_STATUS(uform__signal_pil_pipeline_init(&pipeline, &processor, 10, 20, &outcome), UFORM_INVALID_ARGUMENT);
    uform__signal_pil_pipeline_free(&pipeline);
    uform__signal_pil_pipeline_free(&pipeline);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s PYTHON SCRIPT [SEED]\n", argv[0]);
        return 2;
    }
    uint64_t seed = signal_seed(argc, argv, 3), state = seed;
    char probe[1024];
    snprintf(probe, sizeof(probe), "'%s' -c 'import PIL, numpy, torch, torchvision' > /dev/null 2>&1", argv[1]);
    if (system(probe) != 0) return check_skip_missing("%s cannot import PIL, numpy, torch and torchvision", argv[1]);
    for (int cls = UFORM_CPU_CLASS_UNKNOWN; cls <= UFORM_CPU_CLASS_MONOVERSIONED; ++cls) {
        const uform__signal_pil_kernels_t *kernels = uform__signal_pil_kernels((uform_cpu_class_t)cls);
        CHECK(kernels && kernels->horizontal_rgb8 && kernels->vertical_u8);
    }
    test_errors();
    test_geometry();
    if (!signal_directory_make()) return check_finish();
    char command[1024];
    snprintf(command, sizeof(command), "'%s' '%s' '%s' %llu", argv[1], argv[2], signal_directory,
             (unsigned long long)seed);
    const int status = system(command);
    CHECK_MSG(status == 0, "reference failed (status %d): %s", status, command);
    if (status == 0) run_manifest(&state);
    for (size_t k = 0; k < CHECK_KERNEL_CLASSES; ++k) /* for scripts/test-avx2.sh */
        if (uform_cpu_class_supported(check_kernel_classes[k]))
            printf("exercised: %s\n", uform_cpu_class_name(check_kernel_classes[k]));
    printf("resize: %zu cases, %zu bytes, %zu differ from Pillow, largest difference %d\n", totals.cases, totals.bytes,
           totals.mismatched_bytes, totals.worst_byte);
    printf("processors: %zu cases, %zu floats, %zu differ from Python, largest difference %.3g steps\n",
           totals.float_cases, totals.floats, totals.unequal_floats, totals.worst_steps);
    signal_directory_remove();
    return check_finish();
}
