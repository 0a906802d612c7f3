/*
 * The antialiased bilinear resize against torchvision 0.14's resize(..., antialias=True):
 * random RGB8 images, up- and down-scaling, odd sizes and extreme aspect ratios; every output
 * layout; the image stem's shorter-side-then-centre-crop geometry; thread-count independence;
 * argument errors. Usage: test_signal_resize PYTHON SCRIPT [SEED].
 */
#include "core/cpu.h"
#include "kernels/signal.h"
#include "test_signal_common.h"
#include "common/skip.h"

typedef struct resize_case_t {
    size_t height, width, out_height, out_width; /* resize_to */
} resize_case_t;

typedef struct shorter_case_t {
    size_t height, width, side;
} shorter_case_t;

static const resize_case_t resize_cases[] = {
    {37, 53, 19, 101}, {1, 1, 5, 3}, {480, 640, 224, 298}, {7, 300, 3, 31}, {300, 7, 224, 5},
    {2, 1000, 1, 224}, {100, 100, 100, 100}, {13, 17, 13, 40}, {64, 48, 8, 6}, {5, 9, 211, 3},
    {255, 3, 17, 2}, {31, 31, 30, 32}, {1500, 40, 7, 5}, /* 215 vertical taps: the chunked path */
};

static const shorter_case_t shorter_cases[] = {
    {480, 640, 224}, {640, 480, 224}, {333, 500, 224}, {224, 224, 224}, {100, 37, 224},
    {1000, 20, 32},  {21, 19, 32},    {5, 7, 32},      {225, 227, 224}, {224, 1001, 224},
};

#define RESIZE_CASES (sizeof(resize_cases) / sizeof(resize_cases[0]))
#define SHORTER_CASES (sizeof(shorter_cases) / sizeof(shorter_cases[0]))

static const float clip_mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
static const float clip_std[3] = {0.26862954f, 0.26130258f, 0.27577711f};

/* The call with the target spelled out: layout, mean/std, patch; one frame per tubelet. */
static uform_status_t resize(uform__signal_resize_plan_t *plan, const uint8_t *source, size_t stride,
                             uform__signal_pixels_t pixels, const float *mean, const float *std, size_t patch,
                             void *data, const uform__signal_kernels_t *kernels, const uform__parallel_t *parallel,
                             uform_outcome_t *outcome) {
    const uform__signal_image_target_t target = {pixels, data, mean, std, patch, 1, 0};
    return uform__signal_resize_rgb8(plan, source, stride, &target, kernels, parallel, outcome);
}

static uint8_t *random_image(uint64_t *state, size_t height, size_t width) {
    uint8_t *pixels = malloc(height * width * 3);
    /* Half the images are smooth gradients with noise, half pure noise: both stress the filter. */
    const int smooth = (int)(check_random_next(state) & 1);
    for (size_t i = 0; i < height * width * 3; ++i) {
        const uint64_t r = check_random_next(state);
        if (smooth) {
            const size_t y = i / (width * 3), x = (i / 3) % width;
            pixels[i] = (uint8_t)((y * 255 / (height + 1) + x * 97 / (width + 1) + (r & 15)) % 256);
        } else
            pixels[i] = (uint8_t)r;
    }
    return pixels;
}

/* Largest |a − b| over n floats, NaN counting as infinite. */
static double max_difference(const float *a, const float *b, size_t n, size_t *where) {
    double worst = 0.0;
    *where = 0;
    for (size_t i = 0; i < n; ++i) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (isnan(d)) d = INFINITY;
        if (d > worst) worst = d, *where = i;
    }
    return worst;
}

static void test_resize_to(const resize_case_t *c, const char *name, const uint8_t *image) {
    uform__signal_resize_plan_t plan;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__signal_resize_plan_init(&plan, c->height, c->width, c->out_height, c->out_width, 0, 0,
                                                c->out_height, c->out_width, &outcome),
                 UFORM_OK);
    const size_t n = c->out_height * c->out_width * 3;
    float *expected = malloc(n * sizeof(float)), *actual = malloc(n * sizeof(float)),
          *threaded = malloc(n * sizeof(float));
    uint8_t *expected8 = malloc(n), *actual8 = malloc(n);
    if (signal_read(name, "f32", expected, n * sizeof(float)) && signal_read(name, "u8", expected8, n)) {
        CHECK_STATUS(resize(&plan, image, c->width * 3, UFORM__SIGNAL_PIXELS_F32_HWC, NULL, NULL, 0,
                                               actual, NULL, NULL, &outcome),
                     UFORM_OK);
        size_t at;
        /* Values are 0..255; float rounding of ATen's own order leaves ~1e-5, allow 1e-4 (4e-7 of range). */
        const double worst = max_difference(actual, expected, n, &at);
        CHECK_MSG(worst <= 1e-4, "%s %zux%zu -> %zux%zu: max |diff| %.3g at %zu: got %.9g, expected %.9g", name,
                  c->height, c->width, c->out_height, c->out_width, worst, at, (double)actual[at],
                  (double)expected[at]);
        printf("%-10s %4zux%-4zu -> %4zux%-4zu float max |diff| %.3g\n", name, c->height, c->width, c->out_height,
               c->out_width, worst);
        CHECK_STATUS(resize(&plan, image, c->width * 3, UFORM__SIGNAL_PIXELS_F32_HWC, NULL, NULL, 0,
                                               threaded, uform__signal_kernels(uform__cpu_class_hardware()),
                                               &signal_pool, &outcome),
                     UFORM_OK);
        CHECK_MSG(memcmp(threaded, actual, n * sizeof(float)) == 0, "%s: 3 threads differ from serial", name);

        CHECK_STATUS(resize(&plan, image, c->width * 3, UFORM__SIGNAL_PIXELS_U8_HWC, NULL, NULL, 0,
                                               actual8, NULL, NULL, &outcome),
                     UFORM_OK);
        /* uint8: exact, except a value within float rounding of .5 may round either way. */
        size_t mismatches = 0;
        for (size_t i = 0; i < n; ++i) {
            if (actual8[i] == expected8[i]) continue;
            const double fraction = expected[i] - floor(expected[i]);
            const int tie = fabs(fraction - 0.5) < 1e-3 && abs((int)actual8[i] - (int)expected8[i]) == 1;
            if (!tie && mismatches++ < 5)
                fprintf(stderr, "%s u8[%zu]: got %d, expected %d (float %.9g)\n", name, i, actual8[i], expected8[i],
                        (double)expected[i]);
        }
        CHECK_EQ_INT(mismatches, 0);
    }
    free(expected), free(actual), free(threaded), free(expected8), free(actual8);
    uform__signal_resize_plan_free(&plan);
}

static void test_shorter(const shorter_case_t *c, const char *name, const uint8_t *image) {
    uform__signal_resize_plan_t plan;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__signal_resize_plan_init_shorter_side(&plan, c->height, c->width, c->side, &outcome),
                 UFORM_OK);
    char path[512];
    signal_path(path, sizeof(path), name, "dims");
    FILE *file = fopen(path, "r");
    size_t height = 0, width = 0;
    CHECK(file && fscanf(file, "%zu %zu", &height, &width) == 2);
    if (file) fclose(file);
    /* Geometry: torchvision's resized size. */
    CHECK_EQ_INT(plan.resized_height, height);
    CHECK_EQ_INT(plan.resized_width, width);
    if (plan.resized_height != height || plan.resized_width != width) {
        uform__signal_resize_plan_free(&plan);
        return;
    }
    const size_t s = c->side, full = height * width * 3, crop = s * s * 3;
    float *resized = malloc(full * sizeof(float)), *expected = malloc(crop * sizeof(float));
    float *actual = malloc(crop * sizeof(float)), *patches = malloc(crop * sizeof(float));
    float *threaded = malloc(crop * sizeof(float));
    if (signal_read(name, "f32", resized, full * sizeof(float)) && signal_read(name, "norm", expected, crop * sizeof(float))) {
        /* The crop window of the full reference resize, as F32 HWC. */
        float *window = malloc(crop * sizeof(float));
        for (size_t y = 0; y < s; ++y)
            memcpy(window + y * s * 3, resized + ((plan.crop_top + y) * width + plan.crop_left) * 3, s * 3 * sizeof(float));
        CHECK_STATUS(resize(&plan, image, c->width * 3, UFORM__SIGNAL_PIXELS_F32_HWC, NULL, NULL, 0,
                                               actual, NULL, NULL, &outcome),
                     UFORM_OK);
        size_t at;
        double worst = max_difference(actual, window, crop, &at);
        CHECK_MSG(worst <= 1e-4, "%s crop: max |diff| %.3g at %zu: got %.9g, expected %.9g", name, worst, at,
                  (double)actual[at], (double)window[at]);
        free(window);

        /* The stem's layout: normalised, channel-major, against center_crop + Normalize. */
        CHECK_STATUS(resize(&plan, image, c->width * 3, UFORM__SIGNAL_PIXELS_F32_CHW_NORMALISED,
                                               clip_mean, clip_std, 0, actual, NULL, NULL, &outcome),
                     UFORM_OK);
        worst = max_difference(actual, expected, crop, &at);
        CHECK_MSG(worst <= 2e-6, "%s normalised: max |diff| %.3g at %zu: got %.9g, expected %.9g", name, worst, at,
                  (double)actual[at], (double)expected[at]);
        printf("%-10s %4zux%-4zu side %zu -> %zux%zu crop (%zu, %zu): normalised max |diff| %.3g\n", name, c->height,
               c->width, s, height, width, plan.crop_top, plan.crop_left, worst);
        CHECK_STATUS(resize(&plan, image, c->width * 3, UFORM__SIGNAL_PIXELS_F32_CHW_NORMALISED,
                                               clip_mean, clip_std, 0, threaded, NULL, &signal_pool, &outcome),
                     UFORM_OK);
        CHECK_MSG(memcmp(threaded, actual, crop * sizeof(float)) == 0, "%s: 3 threads differ from serial", name);

        /* Patch-major layout: the reference's [3, S, S] cut into p×p patches, each (c, y, x). */
        const size_t p = s % 16 == 0 ? 16 : s % 8 == 0 ? 8 : 1;
        CHECK_STATUS(resize(&plan, image, c->width * 3,
                                               UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED, clip_mean, clip_std, p,
                                               patches, NULL, NULL, &outcome),
                     UFORM_OK);
        size_t wrong = 0, across = s / p;
        for (size_t k = 0; k < across * across; ++k)
            for (size_t ch = 0; ch < 3; ++ch)
                for (size_t y = 0; y < p; ++y)
                    for (size_t x = 0; x < p; ++x) {
                        const float got = patches[((k * 3 + ch) * p + y) * p + x];
                        const float want = expected[(ch * s + (k / across) * p + y) * s + (k % across) * p + x];
                        if (!(fabsf(got - want) <= 2e-6f) && wrong++ < 3)
                            fprintf(stderr, "%s patch %zu c%zu (%zu, %zu): got %.9g, expected %.9g\n", name, k, ch, y,
                                    x, (double)got, (double)want);
                    }
        CHECK_EQ_INT(wrong, 0);

        /* The video stem's tubelets: this image as frame slot 1 of 2, [(S/p)², 3, 2, p, p]. */
        float *tubelets = malloc(2 * crop * sizeof(float));
        memset(tubelets, 0xFF, 2 * crop * sizeof(float)); /* NaN: the other slot must stay untouched */
        const uform__signal_image_target_t target = {UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED, tubelets, clip_mean,
                                                     clip_std, p, 2, 1};
        CHECK_STATUS(uform__signal_resize_rgb8(&plan, image, c->width * 3, &target, NULL, NULL, &outcome), UFORM_OK);
        wrong = 0;
        size_t touched = 0;
        for (size_t k = 0; k < across * across; ++k)
            for (size_t ch = 0; ch < 3; ++ch)
                for (size_t slot = 0; slot < 2; ++slot)
                    for (size_t y = 0; y < p; ++y)
                        for (size_t x = 0; x < p; ++x) {
                            const float got = tubelets[(((k * 3 + ch) * 2 + slot) * p + y) * p + x];
                            if (slot == 0) {
                                touched += !isnan(got);
                                continue;
                            }
                            const float want = expected[(ch * s + (k / across) * p + y) * s + (k % across) * p + x];
                            if (!(fabsf(got - want) <= 2e-6f) && wrong++ < 3)
                                fprintf(stderr, "%s tubelet %zu c%zu (%zu, %zu): got %.9g, expected %.9g\n", name, k,
                                        ch, y, x, (double)got, (double)want);
                        }
        CHECK_EQ_INT(wrong, 0);
        CHECK_EQ_INT(touched, 0);
        free(tubelets);
    }
    free(resized), free(expected), free(actual), free(patches), free(threaded);
    uform__signal_resize_plan_free(&plan);
}

static void test_errors(void) {
    uform__signal_resize_plan_t plan;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__signal_resize_plan_init(&plan, 0, 4, 2, 2, 0, 0, 2, 2, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "source 0x4");
    CHECK_STATUS(uform__signal_resize_plan_init(&plan, 4, 4, 2, 2, 1, 0, 2, 2, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "crop 2x2 at (1, 0)");
    CHECK_STATUS(uform__signal_resize_plan_init(&plan, 4, 4, 2, 2, 0, 0, 2, 2, &outcome), UFORM_OK);
    uint8_t image[4 * 4 * 3] = {0};
    float out[2 * 2 * 3];
    CHECK_STATUS(resize(&plan, image, 11, UFORM__SIGNAL_PIXELS_F32_HWC, NULL, NULL, 0, out, NULL,
                                           NULL, &outcome),
                 UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "stride 11");
    CHECK_STATUS(resize(&plan, image, 12, UFORM__SIGNAL_PIXELS_F32_CHW_NORMALISED, NULL, NULL, 0,
                                           out, NULL, NULL, &outcome),
                 UFORM_INVALID_ARGUMENT);
    const float zero_std[3] = {1, 0, 1};
    CHECK_STATUS(resize(&plan, image, 12, UFORM__SIGNAL_PIXELS_F32_CHW_NORMALISED, clip_mean,
                                           zero_std, 0, out, NULL, NULL, &outcome),
                 UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "channel 1");
    CHECK_STATUS(resize(&plan, image, 12, UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED, clip_mean,
                                           clip_std, 3, out, NULL, NULL, &outcome),
                 UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "patch 3");
    const uform__signal_image_target_t bad_slot = {UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED, out, clip_mean,
                                                   clip_std, 2, 2, 2};
    CHECK_STATUS(uform__signal_resize_rgb8(&plan, image, 12, &bad_slot, NULL, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "frame slot 2");
    uform__signal_resize_plan_free(&plan);
    uform__signal_resize_plan_free(&plan); /* freeing twice is a no-op */
    CHECK_STATUS(uform__signal_resize_plan_init_shorter_side(&plan, 10, 10, 0, &outcome), UFORM_INVALID_ARGUMENT);
}

/* Every class this machine runs produces the serial bits, in every layout, over shapes that
 * exercise the row blocks (8 and 16 lanes) and their partial last blocks, partial tiles, runs of
 * outputs wider than the planes (a 2000-pixel row to 7), 1- and 2-pixel-wide sources and rows
 * whose stride is longer than their pixels (the last row's bytes end the buffer, so a read past
 * a row's end is a read past the allocation under ASan). */
static void test_classes(uint64_t *state) {
    static const size_t shapes[][4] = {{1, 1, 3, 7},     {4, 2, 3, 33},   {9, 3, 17, 40},    {31, 100, 7, 37},
                                       {50, 640, 9, 224}, {20, 1920, 5, 61}, {7, 17, 11, 16},  {3, 300, 2, 300},
                                       {224, 224, 32, 32}, {33, 200, 17, 48}, {5, 2000, 3, 7}, {41, 57, 90, 80},
                                       {480, 640, 224, 224}};
    static const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f}, std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    const uform__signal_kernels_t *serial = uform__signal_kernels(UFORM_CPU_CLASS_SERIAL);
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); ++s) {
        const size_t h = shapes[s][0], w = shapes[s][1], oh = shapes[s][2], ow = shapes[s][3], n = oh * ow * 3;
        const size_t patch = oh % 8 == 0 && ow % 8 == 0 ? 8 : 1;
        /* Odd shapes read rows 5 bytes apart beyond their pixels. */
        const size_t stride = w * 3 + (s % 2 ? 5 : 0);
        uint8_t *pixels = random_image(state, h, w), *image = malloc((h - 1) * stride + w * 3);
        for (size_t y = 0; y < h; ++y) memcpy(image + y * stride, pixels + y * w * 3, w * 3);
        uform__signal_resize_plan_t plan;
        CHECK_STATUS(uform__signal_resize_plan_init(&plan, h, w, oh, ow, 0, 0, oh, ow, NULL), UFORM_OK);
        float *expected = malloc(n * sizeof(float)), *actual = malloc(n * sizeof(float));
        static const uform__signal_pixels_t layouts[] = {UFORM__SIGNAL_PIXELS_F32_HWC, UFORM__SIGNAL_PIXELS_F32_CHW_NORMALISED,
                                                         UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED};
        for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); ++l) {
            CHECK_STATUS(resize(&plan, image, stride, layouts[l], mean, std, patch, expected, serial, NULL, NULL), UFORM_OK);
            for (size_t k = 0; k < CHECK_KERNEL_CLASSES; ++k) {
                const uform_cpu_class_t cls = check_kernel_classes[k];
                if (!check_class_runs(cls)) continue;
                const uform__signal_kernels_t *kernels = uform__signal_kernels((uform_cpu_class_t)cls);
                memset(actual, 0xFF, n * sizeof(float));
                CHECK_STATUS(resize(&plan, image, stride, layouts[l], mean, std, patch, actual, kernels, &signal_pool, NULL),
                             UFORM_OK);
                size_t at = n;
                for (size_t i = 0; i < n && at == n; ++i)
                    if (memcmp(&actual[i], &expected[i], sizeof(float)) != 0) at = i;
                CHECK_MSG(at == n, "class %s, layout %d, %zux%zu -> %zux%zu: element %zu is %.9g, serial %.9g",
                          uform_cpu_class_name((uform_cpu_class_t)cls), (int)layouts[l], h, w, oh, ow, at,
                          (double)actual[at % n], (double)expected[at % n]);
            }
        }
        free(pixels), free(image), free(expected), free(actual);
        uform__signal_resize_plan_free(&plan);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s PYTHON SCRIPT [SEED]\n", argv[0]);
        return 2;
    }
    uint64_t state = signal_seed(argc, argv, 3);
    test_errors();
    /* Every class's table has every slot filled. */
    for (int cls = UFORM_CPU_CLASS_UNKNOWN; cls <= UFORM_CPU_CLASS_MONOVERSIONED; ++cls) {
        const uform__signal_kernels_t *kernels = uform__signal_kernels((uform_cpu_class_t)cls);
        CHECK(kernels && kernels->resize_rows_rgb8 && kernels->resize_column_f32 && kernels->normalise_rgb_f32 &&
              kernels->dot_f32);
    }
    test_classes(&state);
    if (!signal_directory_make()) return check_finish();
    uint8_t *resize_images[RESIZE_CASES], *shorter_images[SHORTER_CASES];
    char name[64];
    for (size_t i = 0; i < RESIZE_CASES; ++i) {
        const resize_case_t *c = &resize_cases[i];
        resize_images[i] = random_image(&state, c->height, c->width);
        snprintf(name, sizeof(name), "resize%zu", i);
        signal_write(name, "in", resize_images[i], c->height * c->width * 3);
        signal_case("resize_to %s %zu %zu %zu %zu", name, c->height, c->width, c->out_height, c->out_width);
    }
    for (size_t i = 0; i < SHORTER_CASES; ++i) {
        const shorter_case_t *c = &shorter_cases[i];
        shorter_images[i] = random_image(&state, c->height, c->width);
        snprintf(name, sizeof(name), "shorter%zu", i);
        signal_write(name, "in", shorter_images[i], c->height * c->width * 3);
        signal_case("shorter %s %zu %zu %zu", name, c->height, c->width, c->side);
    }
    if (signal_run_reference(argv[1], argv[2])) {
        for (size_t i = 0; i < RESIZE_CASES; ++i) {
            snprintf(name, sizeof(name), "resize%zu", i);
            test_resize_to(&resize_cases[i], name, resize_images[i]);
        }
        for (size_t i = 0; i < SHORTER_CASES; ++i) {
            snprintf(name, sizeof(name), "shorter%zu", i);
            test_shorter(&shorter_cases[i], name, shorter_images[i]);
        }
    }
    for (size_t i = 0; i < RESIZE_CASES; ++i) free(resize_images[i]);
    for (size_t i = 0; i < SHORTER_CASES; ++i) free(shorter_images[i]);
    signal_directory_remove();
    return check_finish();
}
