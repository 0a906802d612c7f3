/*
 * The training products of every class this CPU runs against PyTorch autograd in float64:
 * Y = linear(X, W, b), Z = gelu(Y) (exact erf), and from Y.backward(G): dX, dW, db. The test
 * writes seeded inputs to a temporary folder, runs test_gemm_torch.py with the interpreter given
 * as argv[1] (Debian's /usr/bin/python3, which has torch), reads the float64 results and compares.
 * F32 and BF16 weights; GENOA's BF16 products round F32 activations and gradients to BF16 (unit
 * roundoff 2⁻⁸), so their tolerance adds 2⁻⁸·Σ|a·b| per rounded operand. Usage: test_gemm_torch PYTHON SCRIPT [SEED]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/skip.h"
#include "kernels/gemm.h"

static int write_floats(const char *folder, const char *name, const float *values, size_t count) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    FILE *file = fopen(path, "wb");
    if (!file) return -1;
    size_t written = fwrite(values, sizeof(float), count, file);
    return fclose(file) == 0 && written == count ? 0 : -1;
}

static double *read_doubles(const char *folder, const char *name, size_t count) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    double *values = malloc(count * sizeof(double));
    size_t read = fread(values, sizeof(double), count, file);
    fclose(file);
    if (read != count) {
        free(values);
        return NULL;
    }
    return values;
}

/* |got − want| ≤ tol(magnitude) for every element; prints the first failure. */
static void compare(const char *what, const float *got, const double *want, const double *magnitude, size_t count,
                    size_t k, int bf16, int gelu) {
    size_t failures = 0;
    for (size_t i = 0; i < count; ++i) {
        double tol = (4.0 * sqrt((double)k) + 16.0) * ldexp(1.0, -24) * magnitude[i] + (bf16 ? ldexp(1.0, -8) * magnitude[i] : 0.0);
        if (gelu) tol = 1.2 * tol + 2e-6 * fabs(want[i]);
        if (!(fabs(got[i] - want[i]) <= tol) && failures++ == 0) {
            fprintf(stderr, "%s: element %zu:\n", what, i);
            CHECK_NEAR(got[i], want[i], tol, 0.0);
        }
    }
    CHECK_MSG(failures == 0, "%s: %zu of %zu elements out of tolerance", what, failures, count);
}

static void run_shape(const char *python, const char *script, size_t m, size_t n, size_t k, uint64_t *seed) {
    char folder[] = "/tmp/uform_gemm_torch_XXXXXX";
    if (!mkdtemp(folder)) {
        CHECK_MSG(0, "cannot make a temporary folder");
        return;
    }
    float *x = malloc(m * k * sizeof(float)), *w = malloc(n * k * sizeof(float)), *b = malloc(n * sizeof(float));
    float *g = malloc(m * n * sizeof(float));
    uform__bf16_t *w16 = malloc(n * k * sizeof(uform__bf16_t));
    for (size_t i = 0; i < m * k; ++i) x[i] = check_random_float(seed);
    /* W is drawn as BF16 so one torch run serves the F32 and the BF16 weight paths. */
    for (size_t i = 0; i < n * k; ++i) {
        w16[i] = uform__gemm_bf16_from_f32(check_random_float(seed));
        w[i] = uform__gemm_f32_from_bf16(w16[i]);
    }
    for (size_t i = 0; i < n; ++i) b[i] = check_random_float(seed);
    for (size_t i = 0; i < m * n; ++i) g[i] = check_random_float(seed);
    char path[600], command[2048];
    snprintf(path, sizeof path, "%s/shape.txt", folder);
    FILE *shape = fopen(path, "w");
    if (shape) fprintf(shape, "%zu %zu %zu\n", m, n, k), fclose(shape);
    CHECK(write_floats(folder, "x.f32", x, m * k) == 0 && write_floats(folder, "w.f32", w, n * k) == 0 &&
          write_floats(folder, "b.f32", b, n) == 0 && write_floats(folder, "g.f32", g, m * n) == 0);
    snprintf(command, sizeof command, "'%s' '%s' '%s'", python, script, folder);
    int status = system(command);
    CHECK_MSG(status == 0, "'%s' answered %d", command, status);
    double *y = read_doubles(folder, "y.f64", m * n), *z = read_doubles(folder, "z.f64", m * n);
    double *dx = read_doubles(folder, "dx.f64", m * k), *dw = read_doubles(folder, "dw.f64", n * k);
    double *db = read_doubles(folder, "db.f64", n);
    CHECK_MSG(y && z && dx && dw && db, "PyTorch outputs missing in %s", folder);
    if (y && z && dx && dw && db) {
        /* Σ|a·b| per output element, for the tolerances (BF16-rounded operands where GENOA rounds). */
        double *mag_y = calloc(m * n, sizeof(double)), *mag_y16 = calloc(m * n, sizeof(double));
        double *mag_dx = calloc(m * k, sizeof(double)), *mag_dx16 = calloc(m * k, sizeof(double));
        double *mag_dw = calloc(n * k, sizeof(double)), *mag_dw16 = calloc(n * k, sizeof(double));
        double *mag_db = calloc(n, sizeof(double));
        for (size_t i = 0; i < m; ++i)
            for (size_t j = 0; j < n; ++j) {
                for (size_t p = 0; p < k; ++p) mag_y[i * n + j] += fabs((double)x[i * k + p] * w[j * k + p]);
                mag_y[i * n + j] += fabs(b[j]);
                mag_y16[i * n + j] = mag_y[i * n + j] * (1.0 + ldexp(1.0, -8));
                for (size_t p = 0; p < k; ++p) {
                    mag_dx[i * k + p] += fabs((double)g[i * n + j] * w[j * k + p]);
                    mag_dw[j * k + p] += fabs((double)g[i * n + j] * x[i * k + p]);
                }
                mag_db[j] += fabs(g[i * n + j]);
            }
        for (size_t i = 0; i < m * k; ++i) mag_dx16[i] = mag_dx[i] * (1.0 + ldexp(1.0, -8));
        static const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                                    UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                                    UFORM_CPU_CLASS_AMD_GENOA};
        float *out = malloc((m * k + n * k + m * n + n) * sizeof(float));
        for (size_t c = 0; c < sizeof classes / sizeof classes[0]; ++c) {
            if (!check_class_runs(classes[c])) continue;
            const uform__gemm_kernels_t *table = uform__gemm_kernels(classes[c]);
            const char *name = uform_cpu_class_name(classes[c]);
            int genoa = classes[c] == UFORM_CPU_CLASS_AMD_GENOA;
            char what[200];
            for (int w_bf16 = 0; w_bf16 < 2; ++w_bf16) {
                uform__gemm_forward_t forward = {.m = m, .n = n, .k = k, .x = x, .ldx = k, .x_dtype = UFORM__GEMM_F32,
                                                 .w = w_bf16 ? (const void *)w16 : (const void *)w, .ldw = k,
                                                 .w_dtype = w_bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32, .bias = b,
                                                 .y = out, .ldy = n};
                uform__gemm_forward_fn forward_fn = w_bf16 ? table->forward_bf16 : table->forward_f32;
                int rounds = genoa && w_bf16;
                CHECK_STATUS(forward_fn(&forward, NULL, NULL), UFORM_OK);
                snprintf(what, sizeof what, "%s linear W=%s vs torch", name, w_bf16 ? "bf16" : "f32");
                compare(what, out, y, rounds ? mag_y16 : mag_y, m * n, k, rounds, 0);
                forward.gelu = 1;
                CHECK_STATUS(forward_fn(&forward, NULL, NULL), UFORM_OK);
                snprintf(what, sizeof what, "%s gelu(linear) W=%s vs torch", name, w_bf16 ? "bf16" : "f32");
                compare(what, out, z, rounds ? mag_y16 : mag_y, m * n, k, rounds, 1);
                uform__gemm_backward_x_t backward_x = {.m = m, .n = n, .k = k, .dy = g, .lddy = n,
                                                       .w = forward.w, .ldw = k, .w_dtype = forward.w_dtype,
                                                       .dx = out, .lddx = k};
                CHECK_STATUS((w_bf16 ? table->backward_x_bf16 : table->backward_x_f32)(&backward_x, NULL, NULL), UFORM_OK);
                snprintf(what, sizeof what, "%s dX W=%s vs torch", name, w_bf16 ? "bf16" : "f32");
                compare(what, out, dx, rounds ? mag_dx16 : mag_dx, m * k, n, rounds, 0);
            }
            memset(out, 0, (n * k + n) * sizeof(float));
            uform__gemm_backward_w_t backward_w = {.m = m, .n = n, .k = k, .dy = g, .lddy = n, .x = x, .ldx = k,
                                                   .x_dtype = UFORM__GEMM_F32, .dw = out, .lddw = k};
            CHECK_STATUS(table->backward_w(&backward_w, NULL, NULL), UFORM_OK);
            snprintf(what, sizeof what, "%s dW vs torch", name);
            compare(what, out, dw, mag_dw, n * k, m, 0, 0);
            memset(out, 0, n * k * sizeof(float));
            CHECK_STATUS(table->backward_w_bf16(&backward_w, NULL, NULL), UFORM_OK);
            snprintf(what, sizeof what, "%s dW (BF16 compute) vs torch", name);
            /* GENOA rounds both dY and X (unit roundoff 2⁻⁸ each): twice the magnitude, 2⁻⁷·Σ|a·b|. */
            for (size_t i = 0; i < n * k; ++i) mag_dw16[i] = 2.0 * mag_dw[i];
            compare(what, out, dw, genoa ? mag_dw16 : mag_dw, n * k, m, genoa, 0);
            uform__gemm_backward_b_t backward_b = {.m = m, .n = n, .dy = g, .lddy = n, .db = out + n * k};
            CHECK_STATUS(table->backward_b(&backward_b, NULL, NULL), UFORM_OK);
            snprintf(what, sizeof what, "%s db vs torch", name);
            compare(what, out + n * k, db, mag_db, n, m, 0, 0);
        }
        free(out), free(mag_y), free(mag_y16), free(mag_dx), free(mag_dx16), free(mag_dw), free(mag_dw16), free(mag_db);
    }
    free(y), free(z), free(dx), free(dw), free(db);
    free(x), free(w), free(w16), free(b), free(g);
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", folder);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s PYTHON SCRIPT [SEED]\n", argv[0]);
        return 2;
    }
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 7001u;
    printf("seed %llu\n", (unsigned long long)seed);
    run_shape(argv[1], argv[2], 37, 29, 53, &seed);
    run_shape(argv[1], argv[2], 5, 130, 300, &seed);
    return check_finish();
}
