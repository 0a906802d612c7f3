/*
 * The row softmax slot of the NN tables (torch.softmax(x, dim=-1)) on every class this CPU runs,
 * against a double-precision reference: widths 1, primes and ragged tails, in place and strided,
 * and NaN or +inf rows turning into NaN rows as torch's do.
 */
#include <stdlib.h>

#include "common/check.h"
#include "common/skip.h"
#include "kernels/nn.h"

static void reference(size_t width, const float *x, double *y) {
    double high = -INFINITY;
    for (size_t j = 0; j < width; ++j) high = x[j] > high ? x[j] : high;
    double sum = 0;
    for (size_t j = 0; j < width; ++j) sum += y[j] = exp((double)x[j] - high);
    for (size_t j = 0; j < width; ++j) y[j] /= sum;
}

int main(void) {
    uint64_t seed = 271828;
    printf("seed %llu\n", (unsigned long long)seed);
    static const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                                UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                                UFORM_CPU_CLASS_AMD_GENOA};
    static const size_t widths[] = {1, 2, 7, 16, 17, 31, 64, 97, 256, 1031};
    enum { rows = 5, stride_extra = 3 };
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; ++c) {
        if (!check_class_runs(classes[c])) continue;
        const uform__nn_kernels_t *nn = uform__nn_kernels(classes[c]);
        CHECK(nn->softmax_forward != NULL);
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; ++w) {
            size_t width = widths[w], stride = width + stride_extra;
            float *x = malloc(rows * stride * sizeof(float)), *y = malloc(rows * stride * sizeof(float));
            double *expected = malloc(width * sizeof(double));
            for (size_t i = 0; i < rows * stride; ++i) x[i] = 8 * check_random_float(&seed), y[i] = -7;
            nn->softmax_forward(rows, width, x, stride, y, stride, NULL);
            double worst = 0;
            size_t untouched = 0;
            for (size_t r = 0; r < rows; ++r) {
                reference(width, x + r * stride, expected);
                for (size_t j = 0; j < width; ++j) {
                    double error = fabs(y[r * stride + j] - expected[j]) / (expected[j] + 1e-30);
                    if (!(error <= worst)) worst = isnan(error) ? INFINITY : error;
                }
                for (size_t j = width; j < stride; ++j) untouched += y[r * stride + j] == -7;
            }
            CHECK_MSG(worst <= 2e-6, "%s width %zu: worst relative error %.3g", uform_cpu_class_name(classes[c]), width,
                      worst);
            CHECK_EQ_INT(untouched, rows * stride_extra); /* the stride's padding is left alone */
            /* In place gives the same bits. */
            float *copy = malloc(rows * stride * sizeof(float));
            memcpy(copy, x, rows * stride * sizeof(float));
            nn->softmax_forward(rows, width, copy, stride, copy, stride, NULL);
            size_t same = 0;
            for (size_t r = 0; r < rows; ++r)
                for (size_t j = 0; j < width; ++j) same += copy[r * stride + j] == y[r * stride + j];
            CHECK_EQ_INT(same, rows * width);
            /* NaN or +inf anywhere in a row makes the whole row NaN. */
            if (width >= 2) {
                x[1] = NAN, x[stride + width - 1] = INFINITY;
                nn->softmax_forward(2, width, x, stride, y, stride, NULL);
                size_t nans = 0;
                for (size_t j = 0; j < width; ++j) nans += isnan(y[j]) + isnan(y[stride + j]);
                CHECK_EQ_INT(nans, 2 * width);
            }
            free(x), free(y), free(expected), free(copy);
        }
    }
    return check_finish();
}
