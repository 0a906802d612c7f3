/*
 * The session against PyTorch: each case is a small program built with the builder, run on
 * seeded random inputs, and written out with the PyTorch expression that defines its meaning
 * (torch.nn.functional.gelu, layer_norm, softmax, matmul with broadcasting, reductions, trunc
 * division, where, dtype conversions ...). torch_check.py, run by Debian's python3 with torch,
 * evaluates every expression on the same inputs and compares. This checks the semantics the
 * session documents against the framework users know, independently of the double reference.
 * Usage: test_session_torch DIRECTORY (writes manifest.tsv and raw little-endian .bin files).
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "session/programs.h"

typedef struct input_t {
    uform_session_dtype_t dtype;
    size_t rank, dims[4];
    int kind; /* 0: uniform [-1, 1), 1: positive [0.5, 2), 2: integers [-20, 20] without 0, 3: [-1000, 1000], 4: with NaNs */
} input_t;

static const char *dtype_name(uform_session_dtype_t d) {
    static const char *names[] = {"f32", "f64", "f16", "bf16", "i8", "i32", "i64", "u8", "bool"};
    return names[d];
}

static size_t element_size(uform_session_dtype_t d) {
    static const size_t sizes[] = {4, 8, 2, 2, 1, 4, 8, 1, 1};
    return sizes[d];
}

/* Writes one case: compiles the builder's program, fills the inputs, runs, dumps files and a manifest line. */
static void run_case(uform_session_t session, FILE *manifest, const char *directory, const char *name, const char *expr,
                     uform_program_builder_t builder, const input_t *inputs, size_t input_count, double rtol, double atol,
                     uint64_t *rng) {
    const void *bytes;
    size_t length;
    uform_program_t program;
    CHECK_STATUS(uform_program_builder_finish(builder, &bytes, &length), UFORM_SESSION_OK);
    uform_session_status_t status = uform_session_compile(session, bytes, length, &program);
    CHECK_MSG(status == UFORM_SESSION_OK, "%s: %s", name, uform_session_last_cause(session));
    if (status != UFORM_SESSION_OK) return;
    const uform_descriptor_t *outs;
    size_t out_count;
    uform_session_outputs(session, program, &outs, &out_count);
    const void *in[8];
    size_t in_sizes[8];
    fprintf(manifest, "%s\t%s\t%g\t%g\t%zu", name, expr, rtol, atol, input_count);
    for (size_t i = 0; i < input_count; ++i) {
        size_t count = 1;
        for (size_t d = 0; d < inputs[i].rank; ++d) count *= inputs[i].dims[d];
        size_t size = element_size(inputs[i].dtype);
        unsigned char *data = (unsigned char *)malloc(count * size);
        for (size_t e = 0; e < count; ++e) {
            double u = (double)(check_random_next(rng) >> 11) / 9007199254740992.0;
            double v = inputs[i].kind == 1 ? 0.5 + 1.5 * u : inputs[i].kind == 2 ? (double)((int)(u * 40) - 20) :
                       inputs[i].kind == 3 ? (double)((int)(u * 2000) - 1000) + 0.75 : 2 * u - 1;
            if (inputs[i].kind == 2 && v == 0) v = 7;
            if (inputs[i].kind == 4 && e % 5 == 2) v = NAN;
            float f = (float)v;
            int32_t q = (int32_t)v;
            if (inputs[i].dtype == UFORM_SESSION_DTYPE_F32) memcpy(data + e * size, &f, 4);
            else if (inputs[i].dtype == UFORM_SESSION_DTYPE_F64) memcpy(data + e * size, &v, 8);
            else if (inputs[i].dtype == UFORM_SESSION_DTYPE_I32) memcpy(data + e * size, &q, 4);
            else if (inputs[i].dtype == UFORM_SESSION_DTYPE_F16) { // exact halves: multiples of 1/64 in [-1, 1)
                float h = (float)((int)(v * 64)) / 64.0f;
                uint32_t bits;
                memcpy(&bits, &h, 4);
                uint16_t half = (uint16_t)(((bits >> 16) & 0x8000u) | (h == 0 ? 0 : ((((bits >> 23) & 0xFF) - 112) << 10) | ((bits >> 13) & 0x3FF)));
                memcpy(data + e * size, &half, 2);
            }
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.x%zu.bin", directory, name, i);
        FILE *file = fopen(path, "wb");
        CHECK(file && fwrite(data, size, count, file) == count);
        if (file) fclose(file);
        in[i] = data, in_sizes[i] = count * size;
        fprintf(manifest, "\t%s:", dtype_name(inputs[i].dtype));
        for (size_t d = 0; d < inputs[i].rank; ++d) fprintf(manifest, d ? ",%zu" : "%zu", inputs[i].dims[d]);
    }
    void *out = malloc(outs[0].byte_size);
    size_t out_size = outs[0].byte_size;
    CHECK_STATUS(uform_session_invoke(session, program, in, in_sizes, input_count, &out, &out_size, 1, NULL, 0), UFORM_SESSION_OK);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.y.bin", directory, name);
    FILE *file = fopen(path, "wb");
    CHECK(file && fwrite(out, 1, out_size, file) == out_size);
    if (file) fclose(file);
    fprintf(manifest, "\t%s:", dtype_name(outs[0].dtype));
    for (size_t d = 0; d < outs[0].rank; ++d) fprintf(manifest, d ? ",%zu" : "%zu", outs[0].dims[d]);
    fprintf(manifest, "\n");
    for (size_t i = 0; i < input_count; ++i) free((void *)in[i]);
    free(out);
    uform_session_release(session, program);
}

#define INFER UFORM_SESSION_INFER
#define F32 UFORM_SESSION_DTYPE_F32

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_session_torch DIRECTORY\n");
        return 2;
    }
    const char *dir = argv[1];
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.tsv", dir);
    FILE *manifest = fopen(path, "w");
    if (!manifest) return 2;
    uint64_t rng = 0x70C4;
    printf("test_session_torch: seed 0x70C4, writing %s\n", path);
    uform_session_t session = NULL;
    uform_session_init(&session);
    uform_program_builder_t b;
    uint32_t x0, x1, x2, y, ops[3];

#define BEGIN() uform_program_builder_init(&b)
#define PARAM(i, dt, r, ...)                                                                           \
    do {                                                                                               \
        size_t dims_[] = {__VA_ARGS__};                                                                \
        uform_program_builder_parameter(b, "x", dt, r, dims_, &x##i);                                  \
    } while (0)
#define END(name, expr, rtol, atol, ...)                                                               \
    do {                                                                                               \
        input_t in_[] = {__VA_ARGS__};                                                                 \
        uform_program_builder_output(b, "y", y);                                                       \
        run_case(session, manifest, dir, name, expr, b, in_, sizeof in_ / sizeof in_[0], rtol, atol, &rng); \
        uform_program_builder_free(b);                                                                 \
    } while (0)

    BEGIN();
    PARAM(0, F32, 2, 4, 37);
    uform_program_builder_operation(b, UFORM_SESSION_OP_GELU, &x0, 1, NULL, 0, F32, INFER, NULL, &y);
    END("gelu", "F.gelu(x0)", 1e-5, 1e-6, {F32, 2, {4, 37}, 0});

    BEGIN();
    PARAM(0, F32, 3, 3, 5, 16);
    PARAM(1, F32, 2, 5, 16);
    PARAM(2, F32, 2, 5, 16);
    {
        double eps = 1e-5;
        int64_t a[2] = {1, 0};
        memcpy(&a[1], &eps, 8);
        ops[0] = x0, ops[1] = x1, ops[2] = x2;
        uform_program_builder_operation(b, UFORM_SESSION_OP_LAYER_NORM, ops, 3, a, 2, F32, INFER, NULL, &y);
    }
    END("layer_norm", "F.layer_norm(x0, (5, 16), x1, x2, 1e-5)", 1e-4, 1e-5, {F32, 3, {3, 5, 16}, 0}, {F32, 2, {5, 16}, 0},
        {F32, 2, {5, 16}, 0});

    BEGIN();
    PARAM(0, F32, 3, 4, 6, 5);
    {
        int64_t axis = 1;
        uform_program_builder_operation(b, UFORM_SESSION_OP_SOFTMAX, &x0, 1, &axis, 1, F32, INFER, NULL, &y);
    }
    END("softmax_axis1", "torch.softmax(x0, 1)", 1e-5, 1e-7, {F32, 3, {4, 6, 5}, 0});

    BEGIN();
    PARAM(0, F32, 4, 2, 1, 3, 4);
    PARAM(1, F32, 3, 5, 3, 6);
    {
        int64_t t[2] = {1, 0};
        ops[0] = x0, ops[1] = x1;
        uform_program_builder_operation(b, UFORM_SESSION_OP_MATMUL, ops, 2, t, 2, F32, INFER, NULL, &y);
    }
    END("matmul_batched", "torch.matmul(x0.transpose(-1, -2), x1)", 1e-5, 1e-6, {F32, 4, {2, 1, 3, 4}, 0}, {F32, 3, {5, 3, 6}, 0});

    BEGIN();
    PARAM(0, F32, 2, 7, 40);
    PARAM(1, F32, 2, 9, 40);
    {
        int64_t t[2] = {0, 1};
        ops[0] = x0, ops[1] = x1;
        uform_program_builder_operation(b, UFORM_SESSION_OP_MATMUL, ops, 2, t, 2, F32, INFER, NULL, &y);
    }
    END("matmul_linear", "x0 @ x1.T", 1e-5, 1e-5, {F32, 2, {7, 40}, 0}, {F32, 2, {9, 40}, 0});

    BEGIN();
    PARAM(0, F32, 3, 3, 4, 5);
    {
        int64_t a[3] = {1, 0, 2};
        uform_program_builder_operation(b, UFORM_SESSION_OP_REDUCE_MEAN, &x0, 1, a, 3, F32, INFER, NULL, &y);
    }
    END("reduce_mean_keepdims", "x0.mean(dim=(0, 2), keepdim=True)", 1e-6, 1e-7, {F32, 3, {3, 4, 5}, 0});

    BEGIN();
    PARAM(0, UFORM_SESSION_DTYPE_I32, 2, 4, 5);
    {
        int64_t a[2] = {0, 1};
        uform_program_builder_operation(b, UFORM_SESSION_OP_REDUCE_MAX, &x0, 1, a, 2, F32, INFER, NULL, &y);
    }
    END("reduce_max_i32", "x0.amax(1)", 0, 0, {UFORM_SESSION_DTYPE_I32, 2, {4, 5}, 2});

    BEGIN();
    PARAM(0, UFORM_SESSION_DTYPE_I32, 2, 6, 7);
    PARAM(1, UFORM_SESSION_DTYPE_I32, 1, 7);
    ops[0] = x0, ops[1] = x1;
    uform_program_builder_operation(b, UFORM_SESSION_OP_DIV, ops, 2, NULL, 0, F32, INFER, NULL, &y);
    END("div_i32_trunc", "torch.div(x0, x1, rounding_mode='trunc')", 0, 0, {UFORM_SESSION_DTYPE_I32, 2, {6, 7}, 3},
        {UFORM_SESSION_DTYPE_I32, 1, {7}, 2});

    BEGIN();
    PARAM(0, F32, 2, 5, 6);
    PARAM(1, F32, 2, 5, 6);
    ops[0] = x0, ops[1] = x1;
    uform_program_builder_operation(b, UFORM_SESSION_OP_POW, ops, 2, NULL, 0, F32, INFER, NULL, &y);
    END("pow", "torch.pow(x0, x1)", 1e-5, 1e-7, {F32, 2, {5, 6}, 1}, {F32, 2, {5, 6}, 0});

    BEGIN();
    PARAM(0, F32, 1, 50);
    uform_program_builder_operation(b, UFORM_SESSION_OP_ERF, &x0, 1, NULL, 0, F32, INFER, NULL, &y);
    uform_program_builder_operation(b, UFORM_SESSION_OP_SIGMOID, &y, 1, NULL, 0, F32, INFER, NULL, &y);
    uform_program_builder_operation(b, UFORM_SESSION_OP_RSQRT, &y, 1, NULL, 0, F32, INFER, NULL, &y);
    uform_program_builder_operation(b, UFORM_SESSION_OP_TANH, &y, 1, NULL, 0, F32, INFER, NULL, &y);
    END("unary_chain", "torch.tanh(torch.rsqrt(torch.sigmoid(torch.erf(x0))))", 1e-5, 1e-7, {F32, 1, {50}, 0});

    BEGIN();
    PARAM(0, F32, 2, 6, 7);
    PARAM(1, F32, 2, 3, 3);
    {
        int64_t s[6] = {1, 6, 2, 0, 7, 3}, p[2] = {1, 0}, axis = 0;
        uform_program_builder_operation(b, UFORM_SESSION_OP_SLICE, &x0, 1, s, 6, F32, INFER, NULL, &y);
        uform_program_builder_operation(b, UFORM_SESSION_OP_TRANSPOSE, &y, 1, p, 2, F32, INFER, NULL, &y);
        ops[0] = y, ops[1] = x1;
        uform_program_builder_operation(b, UFORM_SESSION_OP_CONCAT, ops, 2, &axis, 1, F32, INFER, NULL, &y);
    }
    END("slice_transpose_concat", "torch.cat([x0[1:6:2, 0:7:3].T, x1], 0)", 0, 0, {F32, 2, {6, 7}, 0}, {F32, 2, {3, 3}, 0});

    BEGIN();
    PARAM(0, F32, 2, 4, 5);
    PARAM(1, F32, 1, 5);
    {
        uint32_t c;
        ops[0] = x0, ops[1] = x1;
        uform_program_builder_operation(b, UFORM_SESSION_OP_LT, ops, 2, NULL, 0, F32, INFER, NULL, &c);
        ops[0] = c, ops[1] = x0, ops[2] = x1;
        uform_program_builder_operation(b, UFORM_SESSION_OP_SELECT, ops, 3, NULL, 0, F32, INFER, NULL, &y);
    }
    END("where", "torch.where(x0 < x1, x0, x1)", 0, 0, {F32, 2, {4, 5}, 0}, {F32, 1, {5}, 0});

    BEGIN();
    PARAM(0, F32, 1, 64);
    uform_program_builder_operation(b, UFORM_SESSION_OP_CONVERT, &x0, 1, NULL, 0, UFORM_SESSION_DTYPE_BF16, INFER, NULL, &y);
    END("to_bf16", "x0.to(torch.bfloat16)", 0, 0, {F32, 1, {64}, 3});

    BEGIN();
    PARAM(0, F32, 1, 64);
    uform_program_builder_operation(b, UFORM_SESSION_OP_CONVERT, &x0, 1, NULL, 0, UFORM_SESSION_DTYPE_F16, INFER, NULL, &y);
    END("to_f16", "x0.to(torch.float16)", 0, 0, {F32, 1, {64}, 0});

    BEGIN();
    PARAM(0, F32, 1, 64);
    uform_program_builder_operation(b, UFORM_SESSION_OP_CONVERT, &x0, 1, NULL, 0, UFORM_SESSION_DTYPE_I32, INFER, NULL, &y);
    END("to_i32", "x0.to(torch.int32)", 0, 0, {F32, 1, {64}, 3});

    BEGIN();
    PARAM(0, F32, 2, 3, 10);
    PARAM(1, F32, 2, 3, 10);
    ops[0] = x0, ops[1] = x1;
    uform_program_builder_operation(b, UFORM_SESSION_OP_MAX, ops, 2, NULL, 0, F32, INFER, NULL, &y);
    END("maximum_nan", "torch.maximum(x0, x1)", 0, 0, {F32, 2, {3, 10}, 4}, {F32, 2, {3, 10}, 0});

    BEGIN();
    PARAM(0, F32, 3, 4, 1, 3);
    PARAM(1, F32, 2, 5, 1);
    ops[0] = x0, ops[1] = x1;
    uform_program_builder_operation(b, UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, F32, INFER, NULL, &y);
    END("broadcast_add", "x0 + x1", 0, 0, {F32, 3, {4, 1, 3}, 0}, {F32, 2, {5, 1}, 0});

    BEGIN();
    PARAM(0, UFORM_SESSION_DTYPE_F16, 2, 8, 8);
    PARAM(1, UFORM_SESSION_DTYPE_F16, 2, 8, 8);
    ops[0] = x0, ops[1] = x1;
    uform_program_builder_operation(b, UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, F32, INFER, NULL, &y);
    ops[0] = y, ops[1] = x1;
    uform_program_builder_operation(b, UFORM_SESSION_OP_MUL, ops, 2, NULL, 0, F32, INFER, NULL, &y);
    uform_program_builder_operation(b, UFORM_SESSION_OP_EXP, &y, 1, NULL, 0, F32, INFER, NULL, &y);
    END("f16_chain", "torch.exp(((x0 + x1) * x1).float()).half()", 0, 0, {UFORM_SESSION_DTYPE_F16, 2, {8, 8}, 0}, {UFORM_SESSION_DTYPE_F16, 2, {8, 8}, 0});

    fclose(manifest);
    uform_session_free(session);
    return check_finish();
}
