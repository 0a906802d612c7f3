/*
 * The attention exponentials (exp_shift_sum, through the row softmax slot that uses them) on
 * every class this CPU runs, against libm's exp in double over the whole F32 range a softmax
 * meets: x − max from 0 down to −103 (past F32 underflow), maxima near 0 and near ±60 (where
 * the shift's own rounding matters), in rows where the max dominates so that each output is
 * exp(x − max) over a sum within an ulp of 1 + exp(probe). Bound per value: 3e-7 relative plus
 * twice the rounding an F32 argument x − max carries (2^-24·|x − max| relative each, through
 * exp's derivative: SKYLAKE's base-2 exp rounds its argument x·log2 e − max·log2 e twice), for
 * outputs above 2^-120; below, within 2^-125 (some classes flush there).
 */
#include <stdlib.h>

#include "common/check.h"
#include "common/skip.h"
#include "kernels/nn.h"

int main(void) {
    uint64_t seed = 0xE4E4ull;
    printf("seed 0x%llx\n", (unsigned long long)seed);
    static const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                                UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                                UFORM_CPU_CLASS_AMD_GENOA};
    static const float maxima[] = {0.0f, 1.5f, -3.25f, 59.7f, -61.3f};
    enum { rows = 64, width = 197 };
    float *x = malloc(rows * width * sizeof(float)), *y = malloc(rows * width * sizeof(float));
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; ++c) {
        if (!check_class_runs(classes[c])) continue;
        const uform__nn_kernels_t *nn = uform__nn_kernels(classes[c]);
        for (size_t m = 0; m < sizeof maxima / sizeof maxima[0]; ++m) {
            /* Row r: the max, one probe at max − 12·r/rows and the rest at max − 20 .. max − 103,
             * so the sum is 1 + exp(probe) + (under 5e-7): every output is exp(x − max) to an ulp. */
            for (size_t r = 0; r < rows; ++r) {
                x[r * width] = maxima[m];
                x[r * width + 1] = maxima[m] - 12.0f * (float)r / rows;
                for (size_t j = 2; j < width; ++j)
                    x[r * width + j] = maxima[m] - (61.5f + 41.5f * check_random_float(&seed));
            }
            nn->softmax_forward(rows, width, x, width, y, width, NULL);
            double worst = 0.0;
            size_t worst_at = 0, misses = 0;
            for (size_t r = 0; r < rows; ++r) {
                double sum = 0.0;
                for (size_t j = 0; j < width; ++j) sum += exp((double)x[r * width + j] - (double)x[r * width]);
                for (size_t j = 0; j < width; ++j) {
                    size_t i = r * width + j;
                    double argument = (double)x[i] - (double)x[r * width], expected = exp(argument) / sum;
                    double error = fabs((double)y[i] - expected), bound;
                    if (expected >= 0x1p-120) error /= expected, bound = 3e-7 + 0x1p-23 * fabs(argument);
                    else bound = 0x1p-125; /* near and below the subnormals: some classes flush to 0 */
                    double excess = isnan(y[i]) ? INFINITY : error / bound;
                    if (excess > 1.0 && misses++ < 5)
                        fprintf(stderr, "  %s max %g: exp(%.9g) gave %.9g, libm %.9g\n",
                                uform_cpu_class_name(classes[c]), maxima[m], argument, y[i], expected);
                    if (excess > worst) worst = excess, worst_at = i;
                }
            }
            CHECK_MSG(misses == 0, "%s max %g: %zu values beyond the bound; worst %.3g of the bound at %zu",
                      uform_cpu_class_name(classes[c]), maxima[m], misses, worst, worst_at);
            double worst_argument = (double)x[worst_at] - (double)x[worst_at / width * width];
            printf("%-14s max %6.2f: worst error %.2f of the bound (exp(%.6g): got %.9g)\n",
                   uform_cpu_class_name(classes[c]), maxima[m], worst, worst_argument, y[worst_at]);
        }
    }
    free(x), free(y);
    return check_finish();
}
