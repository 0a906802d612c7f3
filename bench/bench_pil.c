/*
 * Published checkpoints' preprocessing (src/kernels/signal_pil*.c) on one core: Pillow's resize
 * alone and the whole processor (resize of the kept window, crop, rescale, normalise, patch rows),
 * per CPU class this machine runs, on pictures of common sizes. Times are the median CPU time of
 * one call over many calls (CPU time survives other processes sharing the cores).
 *
 * Usage: bench_pil [PYTHON]. With PYTHON (Debian's python3 with PIL), it also times Pillow's own
 * Image.resize of the same sizes, for comparison.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"
#include "kernels/signal_pil.h"

typedef struct scenario_t {
    const char *name;
    size_t height, width;
    uform__signal_pil_style_t style;
    size_t size, patch;
} scenario_t;

static const scenario_t scenarios[] = {
    {"CLIP 224/14, 640x480", 480, 640, UFORM__SIGNAL_PIL_STYLE_CLIP, 224, 14},
    {"CLIP 224/14, 480x640", 640, 480, UFORM__SIGNAL_PIL_STYLE_CLIP, 224, 14},
    {"CLIP 336/14, 1920x1080", 1080, 1920, UFORM__SIGNAL_PIL_STYLE_CLIP, 336, 14},
    {"SigLIP 224/16, 640x480", 480, 640, UFORM__SIGNAL_PIL_STYLE_SIGLIP, 224, 16},
    {"SigLIP 384/16, 640x480", 480, 640, UFORM__SIGNAL_PIL_STYLE_SIGLIP, 384, 16},
    {"UForm3 224/16, 4032x3024", 3024, 4032, UFORM__SIGNAL_PIL_STYLE_UFORM3, 224, 16},
};

static int compare_doubles(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, size_t n) {
    qsort(values, n, sizeof(double), compare_doubles);
    return values[n / 2];
}

int main(int argc, char **argv) {
    const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                         UFORM_CPU_CLASS_INTEL_SKYLAKE};
    printf("%-26s %-14s %12s %12s\n", "scenario", "class", "resize µs", "whole µs");
    for (size_t s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); ++s) {
        const scenario_t *sc = &scenarios[s];
        uform__signal_pil_processor_t processor = {
            .style = sc->style, .filter = UFORM__SIGNAL_PIL_BICUBIC, .do_resize = 1, .do_center_crop = 1,
            .do_rescale = 1, .do_normalize = 1, .shortest_edge = sc->size, .height = sc->size, .width = sc->size,
            .crop_height = sc->size, .crop_width = sc->size, .rescale_factor = 1.0 / 255.0,
            .mean = {0.48145466f, 0.4578275f, 0.40821073f}, .std = {0.26862954f, 0.26130258f, 0.27577711f}};
        uint8_t *pixels = malloc(sc->height * sc->width * 3);
        float *out = malloc(3 * sc->size * sc->size * sizeof(float));
        uint64_t state = 1;
        for (size_t i = 0; i < sc->height * sc->width * 3; ++i) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            pixels[i] = (uint8_t)(state >> 56);
        }
        uform__signal_pil_pipeline_t pipeline;
        uform_outcome_t outcome = {0};
        if (uform__signal_pil_pipeline_init(&pipeline, &processor, sc->height, sc->width, &outcome) != UFORM_OK) {
            fprintf(stderr, "%s: %s\n", sc->name, outcome.message);
            return 1;
        }
        for (size_t c = 0; c < sizeof(classes) / sizeof(classes[0]); ++c) {
            if (!uform_cpu_class_supported(classes[c])) continue;
            const uform__signal_pil_kernels_t *kernels = uform__signal_pil_kernels(classes[c]);
            enum { RUNS = 41 };
            double resize[RUNS], whole[RUNS];
            for (int r = 0; r < RUNS; ++r) {
                double start = bench_cpu_seconds();
                uform__signal_pil_plan_apply(&pipeline.plan, pixels, sc->width * 3, pipeline.window,
                                             pipeline.window_width * 3, kernels, NULL);
                resize[r] = bench_cpu_seconds() - start;
                start = bench_cpu_seconds();
                uform__signal_pil_pipeline_apply(&pipeline, pixels, sc->width * 3, UFORM__SIGNAL_PIL_PATCHES, sc->patch,
                                                 out, kernels, NULL);
                whole[r] = bench_cpu_seconds() - start;
            }
            printf("%-26s %-14s %12.1f %12.1f\n", sc->name, uform_cpu_class_name(classes[c]), median(resize, RUNS) * 1e6,
                   median(whole, RUNS) * 1e6);
        }
        uform__signal_pil_pipeline_free(&pipeline);
        free(pixels), free(out);
    }
    if (argc > 1) {
        /* Pillow's own resize of the same pictures to the same resized sizes (the whole picture, as
         * the processors ask for it), median of 41 calls. */
        char command[2048];
        snprintf(command, sizeof(command),
                 "'%s' -c \"\n"
                 "import time, numpy as np\nfrom PIL import Image\n"
                 "cases = [('CLIP 224, 640x480', 480, 640, (298, 224)), ('CLIP 224, 480x640', 640, 480, (224, 298)),\n"
                 "         ('CLIP 336, 1920x1080', 1080, 1920, (597, 336)), ('SigLIP 224, 640x480', 480, 640, (224, 224)),\n"
                 "         ('SigLIP 384, 640x480', 480, 640, (384, 384)), ('UForm3 224, 4032x3024', 3024, 4032, (298, 224))]\n"
                 "for name, h, w, size in cases:\n"
                 "    im = Image.fromarray(np.random.default_rng(1).integers(0, 256, (h, w, 3), dtype=np.uint8))\n"
                 "    times = []\n"
                 "    for _ in range(41):\n"
                 "        t = time.process_time(); im.resize(size, Image.BICUBIC); times.append(time.process_time() - t)\n"
                 "    print('Pillow %%-20s resize %%8.1f us' %% (name, sorted(times)[20] * 1e6))\n"
                 "\"",
                 argv[1]);
        if (system(command) != 0) fprintf(stderr, "the Pillow comparison did not run\n");
    }
    return 0;
}
