/*
 * Every NN backward (and its forward) against PyTorch autograd: the test writes random inputs
 * into a temporary directory, runs tests/kernels/nn_reference.py under Debian's python3 (torch in
 * float64), reads the results back and compares each class this machine runs. Exits 77
 * (skipped) when that interpreter cannot import torch.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/nn_test_support.h"
#include "common/skip.h"

#ifndef NN_TORCH_PYTHON
#define NN_TORCH_PYTHON "/usr/bin/python3"
#endif
#ifndef NN_REFERENCE_SCRIPT
#error "NN_REFERENCE_SCRIPT must name tests/kernels/nn_reference.py"
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

static size_t classes_here(uform_cpu_class_t *classes) {
    size_t count = 0;
    classes[count++] = UFORM_CPU_CLASS_SERIAL;
    for (size_t k = 0; k < test_simd_class_count; ++k)
        if (check_class_runs(test_simd_classes[k])) classes[count++] = test_simd_classes[k];
    return count;
}

static void compare(uform_cpu_class_t cpu_class, const char *what, const float *got, const char *file, size_t n,
                    double absolute, double relative) {
    double *expected = read_f64(file, n);
    char label[128];
    snprintf(label, sizeof label, "%s %s vs torch", uform_cpu_class_name(cpu_class), what);
    test_compare_f32(label, got, expected, n, absolute, relative);
    free(expected);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x70C4ull, state = seed;
    printf("seed 0x%llx\n", (unsigned long long)seed);
    snprintf(directory, sizeof directory, "%s/uform-nn-torch-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
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

    /* Attention: items of 1, 70 (a ragged second block), 5 and 0 tokens, 3 heads of width 7. */
    const size_t att_offsets[] = {0, 1, 71, 76, 76}, att_count = 4, H = 3, dh = 7, d = H * dh, T = 76;
    float *qkv = malloc(T * 3 * d * 4), *att_dout = malloc(T * d * 4), *att_out = malloc(T * d * 4);
    float *att_lse = malloc(H * T * 4), *att_dqkv = malloc(T * 3 * d * 4), *att_deltas = malloc(H * T * 4);
    test_fill(qkv, T * 3 * d, &state, 2.0f), test_fill(att_dout, T * d, &state, 1.0f);
    fprintf(meta, "attention %zu %zu %zu\nattention_offsets", T, H, dh);
    for (size_t i = 0; i <= att_count; ++i) fprintf(meta, " %zu", att_offsets[i]);
    fprintf(meta, "\n");
    write_file("attention_qkv.f32", qkv, T * 3 * d * 4), write_file("attention_dout.f32", att_dout, T * d * 4);

    /* LayerNorm [29, 67]. */
    const size_t ln_rows = 29, ln_width = 67;
    const float ln_eps = 1e-6f;
    float *ln_x = malloc(ln_rows * ln_width * 4), *ln_w = malloc(ln_width * 4), *ln_b = malloc(ln_width * 4);
    float *ln_dy = malloc(ln_rows * ln_width * 4), *ln_y = malloc(ln_rows * ln_width * 4);
    float *ln_dx = malloc(ln_rows * ln_width * 4), *ln_dw = malloc(ln_width * 4), *ln_db = malloc(ln_width * 4);
    float *ln_mean = malloc(ln_rows * 4), *ln_rstd = malloc(ln_rows * 4);
    test_fill(ln_x, ln_rows * ln_width, &state, 3.0f), test_fill(ln_w, ln_width, &state, 1.0f);
    test_fill(ln_b, ln_width, &state, 1.0f), test_fill(ln_dy, ln_rows * ln_width, &state, 1.0f);
    fprintf(meta, "layernorm %zu %zu\nlayernorm_eps %.9g\n", ln_rows, ln_width, (double)ln_eps);
    write_file("layernorm_x.f32", ln_x, ln_rows * ln_width * 4), write_file("layernorm_weight.f32", ln_w, ln_width * 4);
    write_file("layernorm_bias.f32", ln_b, ln_width * 4), write_file("layernorm_dy.f32", ln_dy, ln_rows * ln_width * 4);

    /* GELU over 1001 values in [−6, 6]. */
    const size_t gelu_n = 1001;
    float *g_x = malloc(gelu_n * 4), *g_dy = malloc(gelu_n * 4), *g_y = malloc(gelu_n * 4), *g_dx = malloc(gelu_n * 4);
    test_fill(g_x, gelu_n, &state, 6.0f), test_fill(g_dy, gelu_n, &state, 1.0f);
    fprintf(meta, "gelu %zu\n", gelu_n);
    write_file("gelu_x.f32", g_x, gelu_n * 4), write_file("gelu_dy.f32", g_dy, gelu_n * 4);

    /* Softmax + cross-entropy [17, 31] with per-row scales up to 100 and two ignored rows. */
    const size_t xe_rows = 17, xe_width = 31;
    float *xe_z = malloc(xe_rows * xe_width * 4), *xe_scale = malloc(xe_rows * 4), *xe_dloss = malloc(xe_rows * 4);
    float *xe_probs = malloc(xe_rows * xe_width * 4), *xe_loss = malloc(xe_rows * 4);
    float *xe_dz = malloc(xe_rows * xe_width * 4), *xe_dscale = malloc(xe_rows * 4);
    int32_t xe_targets[17];
    test_fill(xe_z, xe_rows * xe_width, &state, 1.0f), test_fill(xe_dloss, xe_rows, &state, 1.0f);
    for (size_t r = 0; r < xe_rows; ++r) {
        xe_scale[r] = 1.0f + 99.0f * (0.5f + 0.5f * check_random_float(&state));
        xe_targets[r] = (int32_t)(check_random_next(&state) % xe_width);
    }
    xe_targets[3] = xe_targets[11] = -1;
    fprintf(meta, "xent %zu %zu\n", xe_rows, xe_width);
    write_file("xent_logits.f32", xe_z, xe_rows * xe_width * 4), write_file("xent_scale.f32", xe_scale, xe_rows * 4);
    write_file("xent_targets.i32", xe_targets, xe_rows * 4), write_file("xent_dloss.f32", xe_dloss, xe_rows * 4);

    /* L2 normalisation [9, 384]. */
    const size_t l2_rows = 9, l2_width = 384;
    float *l2_x = malloc(l2_rows * l2_width * 4), *l2_dy = malloc(l2_rows * l2_width * 4);
    float *l2_y = malloc(l2_rows * l2_width * 4), *l2_dx = malloc(l2_rows * l2_width * 4),
          *l2_norm = malloc(l2_rows * 4);
    test_fill(l2_x, l2_rows * l2_width, &state, 1.0f), test_fill(l2_dy, l2_rows * l2_width, &state, 1.0f);
    fprintf(meta, "l2 %zu %zu\n", l2_rows, l2_width);
    write_file("l2_x.f32", l2_x, l2_rows * l2_width * 4), write_file("l2_dy.f32", l2_dy, l2_rows * l2_width * 4);

    /* Mean pooling: groups of 2, 0, 5 and 1 rows of width 13. */
    const size_t pool_offsets[] = {0, 2, 2, 7, 8}, pool_groups = 4, pool_rows = 8, pool_width = 13;
    float pool_x[8 * 13], pool_dy[4 * 13], pool_y[4 * 13], pool_dx[8 * 13];
    test_fill(pool_x, pool_rows * pool_width, &state, 1.0f), test_fill(pool_dy, pool_groups * pool_width, &state, 1.0f);
    fprintf(meta, "pool %zu %zu\npool_offsets", pool_rows, pool_width);
    for (size_t i = 0; i <= pool_groups; ++i) fprintf(meta, " %zu", pool_offsets[i]);
    fprintf(meta, "\n");
    write_file("pool_x.f32", pool_x, sizeof pool_x), write_file("pool_dy.f32", pool_dy, sizeof pool_dy);

    /* Embeddings: 41 ids (repeats) into a [12, 10] table. */
    enum { emb_n = 41, emb_vocabulary = 12, emb_width = 10 };
    uint32_t emb_ids[emb_n];
    int32_t emb_ids_i32[emb_n];
    float emb_table[emb_vocabulary * emb_width], emb_out0[emb_n * emb_width], emb_out[emb_n * emb_width];
    float emb_dout[emb_n * emb_width], emb_dtable[emb_vocabulary * emb_width];
    for (size_t i = 0; i < emb_n; ++i)
        emb_ids[i] = (uint32_t)(check_random_next(&state) % 7), emb_ids_i32[i] = (int32_t)emb_ids[i];
    test_fill(emb_table, sizeof emb_table / 4, &state, 1.0f), test_fill(emb_out0, sizeof emb_out0 / 4, &state, 1.0f);
    test_fill(emb_dout, sizeof emb_dout / 4, &state, 1.0f);
    fprintf(meta, "embedding %d %d %d\n", emb_n, emb_vocabulary, emb_width);
    write_file("embedding_ids.i32", emb_ids_i32, sizeof emb_ids_i32),
        write_file("embedding_table.f32", emb_table, sizeof emb_table);
    write_file("embedding_out.f32", emb_out0, sizeof emb_out0),
        write_file("embedding_dout.f32", emb_dout, sizeof emb_dout);

    /* AdamW: 3 steps over 257 parameters with the trainer's hyperparameters. */
    enum { adam_n = 257, adam_steps = 3 };
    const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.98f, adam_eps = 1e-6f, decay = 0.1f;
    float adam_p0[adam_n], adam_g[adam_steps * adam_n];
    test_fill(adam_p0, adam_n, &state, 1.0f), test_fill(adam_g, adam_steps * adam_n, &state, 1.0f);
    fprintf(meta, "adamw %d %d\nadamw_hyper %.9g %.9g %.9g %.9g %.9g\n", adam_n, adam_steps, (double)lr, (double)beta1,
            (double)beta2, (double)adam_eps, (double)decay);
    write_file("adamw_params.f32", adam_p0, sizeof adam_p0), write_file("adamw_grads.f32", adam_g, sizeof adam_g);
    fclose(meta);

    char command[1024];
    snprintf(command, sizeof command, "'%s' '%s' '%s'", NN_TORCH_PYTHON, NN_REFERENCE_SCRIPT, directory);
    int status = system(command);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 77 || code == 127) /* the script's "no torch", or the shell's "no such interpreter" */
        return check_skip_missing("%s cannot run the torch reference (python3-torch)", NN_TORCH_PYTHON);
    CHECK_MSG(code == 0, "%s exited with %d", command, code);
    if (code != 0) return check_finish();

    uform_cpu_class_t classes[8];
    size_t count = classes_here(classes);
    for (size_t k = 0; k < count; ++k) {
        const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
        uform_cpu_class_t c = classes[k];
        uform__attention_shape_t shape = {T, H, dh, att_offsets, att_count};
        kernels->attention_forward(&shape, qkv, att_out, att_lse, NULL);
        kernels->attention_backward(&shape, qkv, att_out, att_lse, att_dout, att_deltas, att_dqkv, NULL);
        compare(c, "attention out", att_out, "attention_out.f64", T * d, 2e-6, 2e-5);
        compare(c, "attention dqkv", att_dqkv, "attention_dqkv.f64", T * 3 * d, 1e-5, 1e-4);

        kernels->layernorm_forward(ln_rows, ln_width, ln_x, ln_width, ln_w, ln_b, ln_eps, ln_y, ln_width, ln_mean,
                                   ln_rstd, NULL);
        memset(ln_dw, 0, ln_width * 4), memset(ln_db, 0, ln_width * 4);
        kernels->layernorm_backward(ln_rows, ln_width, ln_x, ln_width, ln_w, ln_mean, ln_rstd, ln_dy, ln_width, ln_dx,
                                    ln_width, ln_dw, ln_db, NULL);
        compare(c, "layernorm y", ln_y, "layernorm_y.f64", ln_rows * ln_width, 1e-5, 1e-5);
        compare(c, "layernorm dx", ln_dx, "layernorm_dx.f64", ln_rows * ln_width, 1e-5, 1e-4);
        compare(c, "layernorm dweight", ln_dw, "layernorm_dweight.f64", ln_width, 1e-5, 1e-4);
        compare(c, "layernorm dbias", ln_db, "layernorm_dbias.f64", ln_width, 1e-5, 1e-4);

        kernels->gelu_forward(gelu_n, g_x, g_y, NULL);
        kernels->gelu_backward(gelu_n, g_x, g_dy, g_dx, NULL);
        compare(c, "gelu y", g_y, "gelu_y.f64", gelu_n, 1e-37, 1e-5);
        compare(c, "gelu dx", g_dx, "gelu_dx.f64", gelu_n, 1e-7, 1e-5);

        kernels->softmax_xent_forward(xe_rows, xe_width, xe_z, xe_width, xe_targets, xe_scale, xe_probs, xe_loss, NULL);
        kernels->softmax_xent_backward(xe_rows, xe_width, xe_z, xe_width, xe_targets, xe_scale, xe_probs, xe_dloss,
                                       xe_dz, xe_width, xe_dscale, NULL);
        compare(c, "xent loss", xe_loss, "xent_loss.f64", xe_rows, 1e-5, 1e-5);
        compare(c, "xent dlogits", xe_dz, "xent_dlogits.f64", xe_rows * xe_width, 1e-5, 1e-4);
        compare(c, "xent dscale", xe_dscale, "xent_dscale.f64", xe_rows, 1e-5, 1e-4);

        kernels->l2norm_forward(l2_rows, l2_width, l2_x, l2_width, 1e-12f, l2_y, l2_width, l2_norm, NULL);
        kernels->l2norm_backward(l2_rows, l2_width, l2_y, l2_width, l2_norm, 1e-12f, l2_dy, l2_width, l2_dx, l2_width,
                                 NULL);
        compare(c, "l2norm y", l2_y, "l2_y.f64", l2_rows * l2_width, 1e-7, 1e-6);
        compare(c, "l2norm dx", l2_dx, "l2_dx.f64", l2_rows * l2_width, 1e-6, 1e-5);

        kernels->mean_pool_forward(pool_groups, pool_offsets, pool_width, pool_x, pool_width, pool_y, pool_width, NULL);
        kernels->mean_pool_backward(pool_groups, pool_offsets, pool_width, pool_dy, pool_width, pool_dx, pool_width,
                                    NULL);
        compare(c, "mean pool y", pool_y, "pool_y.f64", pool_groups * pool_width, 1e-7, 1e-6);
        compare(c, "mean pool dx", pool_dx, "pool_dx.f64", pool_rows * pool_width, 1e-7, 1e-6);

        memcpy(emb_out, emb_out0, sizeof emb_out);
        memset(emb_dtable, 0, sizeof emb_dtable);
        kernels->embedding_forward(emb_n, emb_ids, emb_width, emb_table, emb_width, emb_out, emb_width, NULL);
        kernels->embedding_backward(emb_n, emb_ids, emb_width, emb_dout, emb_width, emb_vocabulary, emb_dtable,
                                    emb_width, NULL);
        compare(c, "embedding out", emb_out, "embedding_out.f64", emb_n * emb_width, 1e-7, 1e-6);
        compare(c, "embedding dtable", emb_dtable, "embedding_dtable.f64", emb_vocabulary * emb_width, 1e-6, 1e-6);

        float adam_p[adam_n], adam_m[adam_n], adam_v[adam_n];
        memcpy(adam_p, adam_p0, sizeof adam_p), memset(adam_m, 0, sizeof adam_m), memset(adam_v, 0, sizeof adam_v);
        for (uint64_t step = 1; step <= adam_steps; ++step)
            kernels->adamw(adam_n, adam_p, adam_g + (step - 1) * adam_n, adam_m, adam_v, lr, beta1, beta2, adam_eps,
                           decay, step, NULL);
        compare(c, "adamw params", adam_p, "adamw_params.f64", adam_n, 1e-7, 1e-6);
    }

    snprintf(command, sizeof command, "rm -rf '%s'", directory);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", directory);
    free(qkv), free(att_dout), free(att_out), free(att_lse), free(att_dqkv), free(att_deltas);
    free(ln_x), free(ln_w), free(ln_b), free(ln_dy), free(ln_y), free(ln_dx), free(ln_dw), free(ln_db);
    free(ln_mean), free(ln_rstd), free(g_x), free(g_dy), free(g_y), free(g_dx);
    free(xe_z), free(xe_scale), free(xe_dloss), free(xe_probs), free(xe_loss), free(xe_dz), free(xe_dscale);
    free(l2_x), free(l2_dy), free(l2_y), free(l2_dx), free(l2_norm);
    return check_finish();
}
