/*
 * Interoperability with an independent implementation: tests/io/safetensors_reference.py (plain
 * Python struct + json, run by Debian's interpreter) writes a file that this reader must read
 * with the values its formulas give, and checks a file this writer makes from the same formulas.
 * Usage: io_safetensors_python PYTHON SCRIPT. Exits 77 (skipped) when PYTHON cannot run.
 */
#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/check.h"
#include "common/skip.h"
#include "io/safetensors.h"

typedef struct reference_t {
    const char *name;
    uform__safetensors_dtype_t dtype;
    uint32_t rank;
    uint64_t shape[3];
} reference_t;

/* The tensors of safetensors_reference.py, in the same order as its TENSORS table. */
static const reference_t references[] = {
    {"f32", UFORM__SAFETENSORS_F32, 2, {2, 3}},      {"f64", UFORM__SAFETENSORS_F64, 1, {4}},
    {"f16", UFORM__SAFETENSORS_F16, 2, {3, 2}},      {"bf16", UFORM__SAFETENSORS_BF16, 3, {2, 2, 2}},
    {"i8", UFORM__SAFETENSORS_I8, 1, {5}},           {"u8", UFORM__SAFETENSORS_U8, 1, {6}},
    {"i32", UFORM__SAFETENSORS_I32, 1, {3}},         {"i64", UFORM__SAFETENSORS_I64, 1, {2}},
    {"bool", UFORM__SAFETENSORS_BOOL, 1, {7}},       {"scalar", UFORM__SAFETENSORS_F32, 0, {0}},
    {"layers.0.\xc3\xbc" "ber", UFORM__SAFETENSORS_F32, 2, {1, 2}},
};
#define REFERENCE_COUNT (sizeof references / sizeof references[0])

/* Element i of each tensor, as the Python script defines it (integers travel as doubles exactly). */
static double expected_value(const char *name, uint64_t i) {
    double x = (double)i;
    if (!strcmp(name, "f32")) return x * 0.5 - 3.0;
    if (!strcmp(name, "f64")) return x * 0.25 - 1.0;
    if (!strcmp(name, "f16")) return x - 4.0;
    if (!strcmp(name, "bf16")) return (x - 2.0) * 0.5;
    if (!strcmp(name, "i8")) return (double)((i * 37) % 256) - 128.0;
    if (!strcmp(name, "u8")) return (double)((i * 13) % 256);
    if (!strcmp(name, "i32")) return x * 100000.0 - 7.0;
    if (!strcmp(name, "i64")) return x * 1099511627776.0 - 5.0;
    if (!strcmp(name, "bool")) return i % 3 == 0;
    if (!strcmp(name, "scalar")) return 2.5;
    return -x - 0.75;
}

/* IEEE 754 binary16 to float, subnormals included. */
static float half_to_float(uint16_t half) {
    int sign = half >> 15, exponent = (half >> 10) & 31, mantissa = half & 1023;
    float magnitude;
    if (exponent == 0) magnitude = ldexpf((float)mantissa, -24);
    else if (exponent == 31) magnitude = mantissa ? NAN : INFINITY;
    else magnitude = ldexpf((float)(mantissa | 1024), exponent - 25);
    return sign ? -magnitude : magnitude;
}

/* Exact for the small integers the tests use (normal binary16 numbers). */
static uint16_t float_to_half(float value) {
    if (value == 0) return 0;
    uint16_t sign = value < 0 ? 0x8000 : 0;
    int exponent;
    float fraction = frexpf(fabsf(value), &exponent); /* value = fraction * 2^exponent, fraction in [0.5, 1) */
    uint16_t mantissa = (uint16_t)((fraction * 2.0f - 1.0f) * 1024.0f);
    return (uint16_t)(sign | (uint16_t)((exponent - 1 + 15) << 10) | mantissa);
}

static double decode(uform__safetensors_dtype_t dtype, const uint8_t *bytes) {
    switch (dtype) {
    case UFORM__SAFETENSORS_F32: { float v; memcpy(&v, bytes, 4); return v; }
    case UFORM__SAFETENSORS_F64: { double v; memcpy(&v, bytes, 8); return v; }
    case UFORM__SAFETENSORS_F16: { uint16_t v; memcpy(&v, bytes, 2); return half_to_float(v); }
    case UFORM__SAFETENSORS_BF16: {
        uint32_t bits = (uint32_t)bytes[0] << 16 | (uint32_t)bytes[1] << 24;
        float v;
        memcpy(&v, &bits, 4);
        return v;
    }
    case UFORM__SAFETENSORS_I8: return (int8_t)bytes[0];
    case UFORM__SAFETENSORS_U8: return bytes[0];
    case UFORM__SAFETENSORS_I32: { int32_t v; memcpy(&v, bytes, 4); return v; }
    case UFORM__SAFETENSORS_I64: { int64_t v; memcpy(&v, bytes, 8); return (double)v; }
    case UFORM__SAFETENSORS_BOOL: return bytes[0];
    default: return NAN;
    }
}

static void encode(uform__safetensors_dtype_t dtype, double value, uint8_t *bytes) {
    switch (dtype) {
    case UFORM__SAFETENSORS_F32: { float v = (float)value; memcpy(bytes, &v, 4); break; }
    case UFORM__SAFETENSORS_F64: memcpy(bytes, &value, 8); break;
    case UFORM__SAFETENSORS_F16: { uint16_t v = float_to_half((float)value); memcpy(bytes, &v, 2); break; }
    case UFORM__SAFETENSORS_BF16: {
        float v = (float)value;
        uint32_t bits;
        memcpy(&bits, &v, 4);
        bytes[0] = (uint8_t)(bits >> 16);
        bytes[1] = (uint8_t)(bits >> 24);
        break;
    }
    case UFORM__SAFETENSORS_I8: bytes[0] = (uint8_t)(int8_t)value; break;
    case UFORM__SAFETENSORS_U8: bytes[0] = (uint8_t)value; break;
    case UFORM__SAFETENSORS_I32: { int32_t v = (int32_t)value; memcpy(bytes, &v, 4); break; }
    case UFORM__SAFETENSORS_I64: { int64_t v = (int64_t)value; memcpy(bytes, &v, 8); break; }
    case UFORM__SAFETENSORS_BOOL: bytes[0] = value != 0; break;
    default: break;
    }
}

/* Runs `python script mode path`; answers its exit status (or -1). */
static int run_python(const char *python, const char *script, const char *mode, const char *path) {
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        execl(python, python, script, mode, path, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

static uint64_t element_count(const reference_t *reference) {
    uint64_t count = 1;
    for (uint32_t axis = 0; axis < reference->rank; ++axis) count *= reference->shape[axis];
    return count;
}

int main(int argc, char **argv) {
    if (argc < 3 || access(argv[1], X_OK) != 0) {
        return check_skip_missing("no Python interpreter at %s", argc > 1 ? argv[1] : "(none given)");
    }
    char directory[] = "/tmp/uform_io_python_XXXXXX";
    if (!mkdtemp(directory)) return 1;
    char from_python[128], from_c[128];
    snprintf(from_python, sizeof from_python, "%s/python.safetensors", directory);
    snprintf(from_c, sizeof from_c, "%s/c.safetensors", directory);

    /* Python writes, C reads. */
    CHECK_EQ_INT(run_python(argv[1], argv[2], "write", from_python), 0);
    uform_outcome_t outcome = {0};
    uform__safetensors_t *file = NULL;
    CHECK_STATUS(uform__safetensors_open(from_python, &file, &outcome), UFORM_OK);
    if (outcome.status != UFORM_OK) fprintf(stderr, "open: %s\n", outcome.message);
    CHECK_EQ_INT(uform__safetensors_count(file), REFERENCE_COUNT);
    for (size_t index = 0; index < REFERENCE_COUNT && file; ++index) {
        const reference_t *reference = &references[index];
        const uform__safetensors_tensor_t *tensor = uform__safetensors_find(file, reference->name);
        CHECK_MSG(tensor != NULL, "'%s' missing", reference->name);
        if (!tensor) continue;
        CHECK_EQ_INT(tensor->dtype, reference->dtype);
        CHECK_EQ_INT(tensor->rank, reference->rank);
        for (uint32_t axis = 0; axis < reference->rank; ++axis) CHECK_EQ_INT(tensor->shape[axis], reference->shape[axis]);
        CHECK_EQ_INT(tensor->element_count, element_count(reference));
        size_t size = uform__safetensors_dtype_size(tensor->dtype);
        for (uint64_t i = 0; i < tensor->element_count; ++i) {
            double got = decode(tensor->dtype, (const uint8_t *)tensor->data + i * size);
            CHECK_NEAR(got, expected_value(reference->name, i), 0, 0);
        }
    }
    const char *format = uform__safetensors_metadata_find(file, "uform.format");
    const char *note = uform__safetensors_metadata_find(file, "note");
    CHECK(format && !strcmp(format, "4"));
    CHECK(note && !strcmp(note, "caf\xc3\xa9 \"quoted\"\n"));
    uform__safetensors_close(file);

    /* C writes the same values, Python checks them. */
    uform__safetensors_source_t sources[REFERENCE_COUNT];
    uint8_t *buffers[REFERENCE_COUNT];
    for (size_t index = 0; index < REFERENCE_COUNT; ++index) {
        const reference_t *reference = &references[index];
        size_t size = uform__safetensors_dtype_size(reference->dtype);
        uint64_t count = element_count(reference);
        buffers[index] = calloc(count ? count : 1, size);
        for (uint64_t i = 0; i < count; ++i) encode(reference->dtype, expected_value(reference->name, i), buffers[index] + i * size);
        sources[index] = (uform__safetensors_source_t){reference->name, reference->dtype, reference->rank,
                                                       reference->shape, buffers[index]};
    }
    uform__safetensors_pair_t pairs[] = {{"uform.format", "4"}, {"note", "caf\xc3\xa9 \"quoted\"\n"}};
    uform__safetensors_write_t request = {sources, REFERENCE_COUNT, pairs, 2, NULL, NULL};
    CHECK_STATUS(uform__safetensors_write(from_c, &request, &outcome), UFORM_OK);
    CHECK_EQ_INT(run_python(argv[1], argv[2], "check", from_c), 0);
    for (size_t index = 0; index < REFERENCE_COUNT; ++index) free(buffers[index]);
    unlink(from_python);
    unlink(from_c);
    rmdir(directory);
    return check_finish();
}
