/*
 * The kernels the published checkpoints brought, against PyTorch (tests/kernels/
 * nn_reference_published.py under Debian's python3, float64), on every class this machine runs:
 *   - causal attention: torch's scaled_dot_product_attention(is_causal=True) per item, items of
 *     1, 2, 15, 16, 17, 77 and 300 tokens packed end to end at head widths 32, 64 and 128:
 *     attention_forward's out and lse and attention_backward's dqkv (autograd) within F32
 *     tolerances, attention_forward_bf16's out and attention_backward_bf16's dqkv within BF16's
 *     (1.5e-2 of max|out|, 2e-2 of each gradient's max magnitude), one query per item (the last
 *     token, CLIP's pooled one, and another) against torch's rows;
 *   - the activation slot (activation_forward, whose bits are the GEMM epilogue's): QuickGELU
 *     against OpenCLIP's x * torch.sigmoid(1.702 * x), the tanh GELU against
 *     F.gelu(approximate="tanh"), the erf GELU (exact and fast) against F.gelu, over [−12, 12].
 * Exits 77 (skipped) when that interpreter cannot import torch.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/gemm.h"
#include "kernels/nn_test_support.h"
#include "common/skip.h"

#ifndef NN_TORCH_PYTHON
#define NN_TORCH_PYTHON "/usr/bin/python3"
#endif
#ifndef NN_REFERENCE_SCRIPT
#error "NN_REFERENCE_SCRIPT must name tests/kernels/nn_reference_published.py"
#endif

static char directory[256];

static void write_file(const char *name, const void *data, size_t bytes) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    FILE *file = fopen(path, "wb");
    if (!file || fwrite(data, 1, bytes, file) != bytes) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(file);
}

static double *read_f64(const char *name, size_t count) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    double *data = malloc((count ? count : 1) * sizeof(double));
    FILE *file = fopen(path, "rb");
    if (!file || fread(data, sizeof(double), count, file) != count) {
        fprintf(stderr, "cannot read %zu doubles from %s\n", count, path);
        exit(1);
    }
    fclose(file);
    return data;
}

typedef struct config_t {
    size_t heads, head_width;
    size_t lengths[7];
} config_t;

static const config_t configs[] = {
    {2, 32, {1, 2, 15, 16, 17, 77, 300}},
    {2, 64, {77, 300, 16, 1, 17, 2, 15}},
    {1, 128, {300, 15, 2, 77, 17, 16, 1}},
};
enum { config_count = sizeof configs / sizeof configs[0], items = 7 };

typedef struct attention_t {
    size_t offsets[items + 1], tokens, d;
    float *qkv, *dout;
} attention_t;

/* The largest |x| of part `part` (0 q, 1 k, 2 v) of [T, 3d], at least 1e-30. */
static double part_max(const double *x, size_t tokens, size_t d, size_t part) {
    double most = 1e-30;
    for (size_t t = 0; t < tokens; ++t)
        for (size_t e = 0; e < d; ++e) most = fmax(most, fabs(x[t * 3 * d + part * d + e]));
    return most;
}

static void check_attention(uform_cpu_class_t cpu_class, size_t index, const attention_t *a) {
    const config_t *c = &configs[index];
    const uform__nn_kernels_t *kernels = uform__nn_kernels(cpu_class);
    size_t T = a->tokens, H = c->heads, d = a->d;
    uform__attention_shape_t shape = {T, H, c->head_width, a->offsets, items, NULL, 1};
    float *out = malloc(T * d * sizeof(float)), *lse = malloc(H * T * sizeof(float));
    float *dqkv = malloc(T * 3 * d * sizeof(float)), *deltas = malloc(H * T * sizeof(float));
    char name[64], label[160];
    snprintf(name, sizeof name, "attention_%zu", index);
    const char *class_name = uform_cpu_class_name(cpu_class);
    double *want_out = NULL, *want_lse = NULL, *want_dqkv = NULL;
    {
        char file[96];
        snprintf(file, sizeof file, "%s_out.f64", name), want_out = read_f64(file, T * d);
        snprintf(file, sizeof file, "%s_lse.f64", name), want_lse = read_f64(file, H * T);
        snprintf(file, sizeof file, "%s_dqkv.f64", name), want_dqkv = read_f64(file, T * 3 * d);
    }
    /* F32. */
    kernels->attention_forward(&shape, a->qkv, out, lse, NULL);
    kernels->attention_backward(&shape, a->qkv, out, lse, a->dout, deltas, dqkv, NULL);
    snprintf(label, sizeof label, "%s causal dh=%zu out vs torch", class_name, c->head_width);
    test_compare_f32(label, out, want_out, T * d, 2e-6, 2e-5);
    snprintf(label, sizeof label, "%s causal dh=%zu lse vs torch", class_name, c->head_width);
    test_compare_f32(label, lse, want_lse, H * T, 2e-6, 2e-6);
    snprintf(label, sizeof label, "%s causal dh=%zu dqkv vs torch autograd", class_name, c->head_width);
    test_compare_f32(label, dqkv, want_dqkv, T * 3 * d, 1e-5, 1e-4);
    /* One query per item: the last token (CLIP pools its end-of-text token) and another. */
    size_t queries[items];
    float *row_out = malloc(items * d * sizeof(float)), *row_lse = malloc(H * items * sizeof(float));
    double *want_rows = malloc(items * d * sizeof(double));
    for (size_t i = 0; i < items; ++i) {
        size_t length = c->lengths[i];
        queries[i] = a->offsets[i] + (i % 2 ? length - 1 : (length * 2) / 3);
        memcpy(want_rows + i * d, want_out + queries[i] * d, d * sizeof(double));
    }
    shape.queries = queries;
    kernels->attention_forward(&shape, a->qkv, row_out, row_lse, NULL);
    snprintf(label, sizeof label, "%s causal dh=%zu one query per item vs torch", class_name, c->head_width);
    test_compare_f32(label, row_out, want_rows, items * d, 2e-6, 2e-5);
    shape.queries = NULL;
    /* BF16: within BF16's error of torch's float64. */
    kernels->attention_forward_bf16(&shape, a->qkv, out, lse, NULL);
    double most = 1e-30;
    for (size_t i = 0; i < T * d; ++i) most = fmax(most, fabs(want_out[i]));
    snprintf(label, sizeof label, "%s causal bf16 dh=%zu out vs torch", class_name, c->head_width);
    test_compare_f32(label, out, want_out, T * d, 1.5e-2 * most, 0.0);
    kernels->attention_backward_bf16(&shape, a->qkv, out, lse, a->dout, deltas, dqkv, NULL);
    for (size_t part = 0; part < 3; ++part) {
        double bound = 2e-2 * part_max(want_dqkv, T, d, part);
        size_t bad = 0, first = 0;
        for (size_t t = 0; t < T; ++t)
            for (size_t e = 0; e < d; ++e) {
                size_t i = t * 3 * d + part * d + e;
                if (!(fabs((double)dqkv[i] - want_dqkv[i]) <= bound) && bad++ == 0) first = i;
            }
        CHECK_MSG(bad == 0, "%s causal bf16 dh=%zu d%c vs torch autograd: %zu values beyond %.3g; first [%zu]: %.9g vs %.9g",
                  class_name, c->head_width, "qkv"[part], bad, bound, first, dqkv[first], want_dqkv[first]);
    }
    free(out), free(lse), free(dqkv), free(deltas), free(row_out), free(row_lse), free(want_rows);
    free(want_out), free(want_lse), free(want_dqkv);
}

enum { activation_count = 4001 + 6 };

static void check_activations(uform_cpu_class_t cpu_class, const float *x) {
    const uform__nn_kernels_t *kernels = uform__nn_kernels(cpu_class);
    const char *class_name = uform_cpu_class_name(cpu_class);
    static const struct {
        int kind;
        const char *file, *name;
    } forms[] = {{UFORM__GEMM_GELU_QUICK, "activation_quick.f64", "quick"},
                 {UFORM__GEMM_GELU_TANH, "activation_tanh.f64", "tanh"},
                 {UFORM__GEMM_GELU_EXACT, "activation_exact.f64", "exact"},
                 {UFORM__GEMM_GELU_FAST, "activation_exact.f64", "fast"}};
    float *y = malloc(activation_count * sizeof(float));
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; ++f) {
        double *want = read_f64(forms[f].file, activation_count);
        kernels->activation_forward(forms[f].kind, activation_count, x, y, NULL);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < activation_count; ++i) {
            /* gemm.h's bounds; torch's own float64 1 + tanh(u) and 1 + erf(z) cancel for x below
             * ≈ −5 (an absolute error of ≈|x|·1e-16 there, where ours is relative). */
            double tolerance = forms[f].kind == UFORM__GEMM_GELU_FAST ? 2e-7 * fmax(1.0, fabs(x[i]))
                               : forms[f].kind == UFORM__GEMM_GELU_EXACT ? 6e-7 * fabs(want[i]) + 1e-37
                                                                         : 3e-7 * fabs(want[i]) + 1e-37;
            if (forms[f].kind != UFORM__GEMM_GELU_QUICK) tolerance += 1e-15 * fmax(1.0, fabs(x[i]));
            if (!(fabs((double)y[i] - want[i]) <= tolerance) && bad++ == 0) first = i;
        }
        CHECK_MSG(bad == 0, "%s activation %s vs torch: %zu of %d values out of bound; first x = %.9g: %.9g vs %.9g",
                  class_name, forms[f].name, bad, activation_count, x[first], y[first], want[first]);
        free(want);
    }
    free(y);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x70C5ull, state = seed;
    printf("seed 0x%llx\n", (unsigned long long)seed);
    snprintf(directory, sizeof directory, "%s/uform-nn-published-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(directory)) {
        perror("mkdtemp");
        return 1;
    }
    char meta_path[512];
    snprintf(meta_path, sizeof meta_path, "%s/meta.txt", directory);
    FILE *meta = fopen(meta_path, "w");
    if (!meta) {
        perror(meta_path);
        return 1;
    }
    attention_t attention[config_count];
    fprintf(meta, "attention_configs %d\n", config_count);
    for (size_t index = 0; index < config_count; ++index) {
        const config_t *c = &configs[index];
        attention_t *a = &attention[index];
        a->offsets[0] = 0;
        for (size_t i = 0; i < items; ++i) a->offsets[i + 1] = a->offsets[i] + c->lengths[i];
        a->tokens = a->offsets[items], a->d = c->heads * c->head_width;
        a->qkv = malloc(a->tokens * 3 * a->d * sizeof(float)), a->dout = malloc(a->tokens * a->d * sizeof(float));
        test_fill(a->qkv, a->tokens * 3 * a->d, &state, 2.0f), test_fill(a->dout, a->tokens * a->d, &state, 1.0f);
        fprintf(meta, "attention_%zu %zu %zu %zu\nattention_%zu_offsets", index, a->tokens, c->heads, c->head_width, index);
        for (size_t i = 0; i <= items; ++i) fprintf(meta, " %zu", a->offsets[i]);
        fprintf(meta, "\n");
        char file[96];
        snprintf(file, sizeof file, "attention_%zu_qkv.f32", index);
        write_file(file, a->qkv, a->tokens * 3 * a->d * sizeof(float));
        snprintf(file, sizeof file, "attention_%zu_dout.f32", index);
        write_file(file, a->dout, a->tokens * a->d * sizeof(float));
    }
    /* A grid over [−12, 12] (the tanh form's tail and QuickGELU's), then 0, ±2^-100, ±30. */
    float x[activation_count];
    for (size_t i = 0; i < 4001; ++i) x[i] = (float)(-12.0 + 24.0 * (double)i / 4000.0);
    const float extra[6] = {0.0f, 0x1p-100f, -0x1p-100f, 30.0f, -30.0f, -7.3f};
    memcpy(x + 4001, extra, sizeof extra);
    fprintf(meta, "activation %d\n", activation_count);
    write_file("activation_x.f32", x, sizeof x);
    fclose(meta);

    char command[1024];
    snprintf(command, sizeof command, "'%s' '%s' '%s'", NN_TORCH_PYTHON, NN_REFERENCE_SCRIPT, directory);
    int status = system(command);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 77 || code == 127) /* the script's "no torch", or the shell's "no such interpreter" */
        return check_skip_missing("%s cannot run the torch reference (python3-torch)", NN_TORCH_PYTHON);
    CHECK_MSG(code == 0, "%s exited with %d", command, code);
    if (code != 0) return check_finish();

    const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                         UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                         UFORM_CPU_CLASS_AMD_GENOA};
    for (size_t k = 0; k < sizeof classes / sizeof classes[0]; ++k) {
        if (!check_class_runs(classes[k])) continue;
        for (size_t index = 0; index < config_count; ++index) check_attention(classes[k], index, &attention[index]);
        check_activations(classes[k], x);
        printf("exercised: %s\n", uform_cpu_class_name(classes[k]));
    }
    snprintf(command, sizeof command, "rm -rf '%s'", directory);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", directory);
    for (size_t index = 0; index < config_count; ++index) free(attention[index].qkv), free(attention[index].dout);
    return check_finish();
}
