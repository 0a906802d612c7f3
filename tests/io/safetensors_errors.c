/*
 * Each way a safetensors header can be malformed gets UFORM_FORMAT and a message that names the
 * tensor (or key) and says what was wrong; the valid corner cases next to them are accepted.
 * Files are built here from literal JSON so each case shows exactly the bytes it tests.
 */
#include "common/check.h"
#include "io/safetensors.h"

/* Builds 8-byte length + `header` + `data_size` bytes of data (0, 1, 2, ...); free() it. */
static uint8_t *build(const char *header, uint64_t declared_length, size_t data_size, size_t *size) {
    size_t header_length = strlen(header);
    *size = 8 + header_length + data_size;
    uint8_t *bytes = malloc(*size);
    if (!bytes) return NULL;
    for (int byte = 0; byte < 8; ++byte) bytes[byte] = (uint8_t)(declared_length >> (8 * byte));
    memcpy(bytes + 8, header, header_length);
    for (size_t at = 0; at < data_size; ++at) bytes[8 + header_length + at] = (uint8_t)at;
    return bytes;
}

/* Opens `header` with `data_size` data bytes and checks the status and message fragments. */
static void expect(int line, const char *header, size_t data_size, uform_status_t status, const char *fragment,
                   const char *second_fragment) {
    size_t size;
    uint8_t *bytes = build(header, strlen(header), data_size, &size);
    uform_outcome_t outcome = {0};
    uform__safetensors_t *file = NULL;
    uform_status_t got = uform__safetensors_open_memory(bytes, size, &file, &outcome);
    if (got != status) fprintf(stderr, "line %d: header %s\n  message: %s\n", line, header, outcome.message);
    CHECK_STATUS(got, status);
    if (status != UFORM_OK) {
        CHECK(file == NULL);
        if (fragment && !strstr(outcome.message, fragment)) fprintf(stderr, "line %d:\n", line);
        if (fragment) CHECK_CONTAINS(outcome.message, fragment);
        if (second_fragment) CHECK_CONTAINS(outcome.message, second_fragment);
    }
    uform__safetensors_close(file);
    free(bytes);
}

#define EXPECT_FORMAT(header, data_size, fragment, second) expect(__LINE__, header, data_size, UFORM_FORMAT, fragment, second)
#define EXPECT_OK(header, data_size) expect(__LINE__, header, data_size, UFORM_OK, NULL, NULL)

#define W(dtype, shape, offsets) "{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":" offsets "}"

static void test_entries(void) {
    EXPECT_OK("{\"w\":" W("F32", "[2]", "[0,8]") "}", 8);
    /* dtypes are exact upper-case names */
    EXPECT_FORMAT("{\"w\":" W("F33", "[2]", "[0,8]") "}", 8, "tensor 'w': dtype 'F33' is not one of", "BOOL");
    EXPECT_FORMAT("{\"w\":" W("f32", "[2]", "[0,8]") "}", 8, "tensor 'w': dtype 'f32'", NULL);
    EXPECT_FORMAT("{\"w\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 'w': dtype is a number", NULL);
    /* shape x dtype size must equal the byte range */
    EXPECT_FORMAT("{\"w\":" W("F32", "[3]", "[0,8]") "}", 16, "tensor 'w': shape [3] of F32 needs 12 bytes",
                  "[0, 8] span 8");
    EXPECT_FORMAT("{\"w\":" W("BF16", "[2,2]", "[0,4]") "}", 16, "tensor 'w': shape [2, 2] of BF16 needs 8 bytes", NULL);
    /* ranges inside the data section */
    EXPECT_FORMAT("{\"w\":" W("U8", "[8]", "[4,12]") "}", 8, "tensor 'w': data_offsets [4, 12] run past the end of the 8-byte",
                  NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "[0]", "[9,9]") "}", 8, "tensor 'w': data_offsets [9, 9] run past", NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "[0]", "[8,4]") "}", 8, "tensor 'w': data_offsets [8, 4] end before they begin", NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "[9007199254740991]", "[0,9007199254740991]") "}", 8, "tensor 'w'", "run past");
    /* offsets: integers below 2^53 only */
    EXPECT_FORMAT("{\"w\":" W("U8", "[4]", "[0.5,4.5]") "}", 8, "tensor 'w': data_offsets[0] is 0.5: not an integer", NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "[4]", "[-4,0]") "}", 8, "tensor 'w': data_offsets[0] is -4: negative", NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "[4]", "[0,9007199254740993]") "}", 8, "tensor 'w': data_offsets[1]", "2^53");
    EXPECT_FORMAT("{\"w\":" W("U8", "[4]", "[0,9007199254740992]") "}", 8, "tensor 'w': data_offsets[1]", "2^53");
    EXPECT_FORMAT("{\"w\":" W("U8", "[4]", "[0,1e300]") "}", 8, "tensor 'w': data_offsets[1] is 1e+300", "2^53");
    EXPECT_FORMAT("{\"w\":" W("U8", "[4]", "[0,1e999]") "}", 8, "tensor 'w': data_offsets[1]", "2^53");
    EXPECT_FORMAT("{\"w\":" W("U8", "[4]", "[0,\"4\"]") "}", 8, "tensor 'w': data_offsets[1] is a string", NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "[4]", "[0,4,8]") "}", 8, "tensor 'w': data_offsets is an array without exactly 2",
                  NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "[4]", "[0]") "}", 8, "tensor 'w': data_offsets is an array without", NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "[4]", "{}") "}", 8, "tensor 'w': data_offsets is an object", NULL);
    EXPECT_OK("{\"w\":" W("U8", "[4]", "[0,4.0]") "}", 8); /* 4.0 is the integer 4 */
    EXPECT_OK("{\"w\":" W("U8", "[4]", "[0,4e0]") "}", 8);
    /* shapes: up to 8 non-negative integers */
    EXPECT_FORMAT("{\"w\":" W("U8", "[-1]", "[0,0]") "}", 8, "tensor 'w': shape[0] is -1: negative", NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "[2,1.5]", "[0,3]") "}", 8, "tensor 'w': shape[1] is 1.5: not an integer", NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "[true]", "[0,1]") "}", 8, "tensor 'w': shape[0] is a boolean", NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "3", "[0,3]") "}", 8, "tensor 'w': shape is a number, expected an array", NULL);
    EXPECT_FORMAT("{\"w\":" W("U8", "[1,1,1,1,1,1,1,1,1]", "[0,1]") "}", 8, "tensor 'w': shape has 9 dimensions", NULL);
    EXPECT_OK("{\"w\":" W("U8", "[1,1,1,1,1,1,1,1]", "[0,1]") "}", 8);
    EXPECT_OK("{\"w\":" W("F64", "[]", "[0,8]") "}", 8); /* a scalar */
    EXPECT_FORMAT("{\"w\":" W("U8", "[4503599627370496,4503599627370496]", "[0,0]") "}", 8,
                  "tensor 'w': shape has more than 2^64 elements", NULL);
    EXPECT_FORMAT("{\"w\":" W("I64", "[4503599627370496,2048]", "[0,0]") "}", 8, "tensor 'w': shape", "more than 2^64 bytes");
    /* the entry's own structure */
    EXPECT_FORMAT("{\"w\":[1,2]}", 8, "tensor 'w': the entry is an array", NULL);
    EXPECT_FORMAT("{\"w\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 8, "tensor 'w': has no 'dtype'", NULL);
    EXPECT_FORMAT("{\"w\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 8, "tensor 'w': has no 'shape'", NULL);
    EXPECT_FORMAT("{\"w\":{\"dtype\":\"U8\",\"shape\":[1]}}", 8, "tensor 'w': has no 'data_offsets'", NULL);
    EXPECT_FORMAT("{\"w\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 8,
                  "tensor 'w': key 'dtype' appears twice", NULL);
    EXPECT_FORMAT("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"extra\":1}}", 8,
                  "tensor 'w': unexpected key 'extra'", NULL);
    /* names in messages are quoted with control bytes escaped */
    EXPECT_FORMAT("{\"a\\nb\\u00e9's\":" W("F33", "[2]", "[0,8]") "}", 8, "tensor 'a\\x0ab\xc3\xa9\\'s': dtype", NULL);
    /* a long name is cut after 80 bytes, at a character boundary */
    EXPECT_FORMAT("{\"" "0123456789012345678901234567890123456789012345678901234567890123456789012345678\xc3\xa9tail\":"
                  W("F33", "[2]", "[0,8]") "}", 8, "tensor '0123456789012345678901234567890123456789012345678901234567890123456789012345678'...: dtype", NULL);
}

static void test_between_entries(void) {
    /* overlapping ranges name both tensors */
    EXPECT_FORMAT("{\"a\":" W("U8", "[8]", "[0,8]") ",\"b\":" W("U8", "[8]", "[4,12]") "}", 16,
                  "tensor 'b': data_offsets [4, 12] overlap those of tensor 'a' [0, 8]", NULL);
    EXPECT_FORMAT("{\"b\":" W("U8", "[4]", "[2,6]") ",\"a\":" W("U8", "[8]", "[0,8]") "}", 16, "overlap", "'a'");
    EXPECT_FORMAT("{\"a\":" W("U8", "[4]", "[0,4]") ",\"b\":" W("U8", "[4]", "[0,4]") "}", 16, "overlap", NULL);
    /* touching, holes and empty tensors anywhere are fine */
    EXPECT_OK("{\"a\":" W("U8", "[4]", "[0,4]") ",\"b\":" W("U8", "[4]", "[4,8]") "}", 8);
    EXPECT_OK("{\"a\":" W("U8", "[2]", "[0,2]") ",\"b\":" W("U8", "[2]", "[6,8]") "}", 16);
    EXPECT_OK("{\"a\":" W("U8", "[8]", "[0,8]") ",\"e\":" W("F32", "[0,3]", "[4,4]") ",\"f\":" W("F32", "[0]", "[4,4]") "}", 8);
    /* names are unique (cJSON keeps duplicates; the reader must not) */
    EXPECT_FORMAT("{\"w\":" W("U8", "[4]", "[0,4]") ",\"w\":" W("U8", "[4]", "[4,8]") "}", 8,
                  "tensor 'w': the name appears twice", NULL);
    /* metadata: an object of strings */
    EXPECT_OK("{\"__metadata__\":{\"k\":\"v\",\"empty\":\"\"}}", 0);
    EXPECT_FORMAT("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ key 'k': the value is a number, expected a string", NULL);
    EXPECT_FORMAT("{\"__metadata__\":{\"ok\":\"v\",\"k\":{\"nested\":\"x\"}}}", 0, "__metadata__ key 'k': the value is an object",
                  NULL);
    EXPECT_FORMAT("{\"__metadata__\":{\"k\":null}}", 0, "__metadata__ key 'k': the value is null", NULL);
    EXPECT_FORMAT("{\"__metadata__\":\"x\"}", 0, "__metadata__ is a string, expected an object", NULL);
    EXPECT_FORMAT("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "__metadata__ key 'k' appears twice", NULL);
    EXPECT_FORMAT("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "two '__metadata__' entries", NULL);
}

static void test_header_bytes(void) {
    EXPECT_OK("{}", 0);
    EXPECT_OK("{}      ", 0);
    EXPECT_FORMAT("[]", 0, "must start with '{', found byte 0x5b", NULL);
    EXPECT_FORMAT(" {}", 0, "must start with '{'", NULL);
    EXPECT_FORMAT("{}x", 0, "header byte 2 after the JSON object is 0x78", NULL);
    EXPECT_FORMAT("{\"w\":", 0, "ends before its top-level object closes", NULL);
    EXPECT_FORMAT("{\"w\":1,}", 0, "malformed near header byte", NULL);
    EXPECT_FORMAT("{\"w\":1}", 0, "tensor 'w': the entry is a number", NULL);
    EXPECT_FORMAT("{\"w\xff\":1}", 0, "not valid UTF-8 at header byte 3", NULL);
    EXPECT_FORMAT("{\"\xed\xa0\x80\":1}", 0, "not valid UTF-8", NULL); /* an encoded surrogate */
    EXPECT_FORMAT("{\"a\tb\":1}", 0, "raw control byte 0x09 inside a JSON string", NULL);
    EXPECT_FORMAT("{\x01}", 0, "raw control byte 0x01 in the JSON header", NULL);
    EXPECT_FORMAT("{\"a\\u0000b\":1}", 0, "escaped NUL", NULL);
    EXPECT_FORMAT("{\"a\\ud800\":1}", 0, "malformed", NULL); /* a lone surrogate escape */
    EXPECT_FORMAT("{\"w\":{\"dtype\":\"U8\",\"shape\":[[1]],\"data_offsets\":[0,1]}}", 8, "nests deeper than 3 levels", NULL);
}

/* Lengths: the 8-byte prefix against the file and the 100 MiB bound. */
static void test_lengths(void) {
    uform_outcome_t outcome = {0};
    uform__safetensors_t *file = NULL;
    size_t size;
    for (size_t short_size = 0; short_size < 8; ++short_size) {
        uint8_t zeros[8] = {0};
        CHECK_STATUS(uform__safetensors_open_memory(zeros, short_size, &file, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, "shorter than the 8-byte header length");
    }
    uint8_t *bytes = build("{}", (uint64_t)1 << 40, 0, &size);
    CHECK_STATUS(uform__safetensors_open_memory(bytes, size, &file, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "header length 1099511627776 exceeds the limit");
    free(bytes);
    bytes = build("{}", UINT64_MAX, 0, &size);
    CHECK_STATUS(uform__safetensors_open_memory(bytes, size, &file, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "exceeds the limit");
    free(bytes);
    bytes = build("{}", 3, 0, &size);
    CHECK_STATUS(uform__safetensors_open_memory(bytes, size, &file, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "header length 3 runs past the end of the 10-byte file");
    free(bytes);
    bytes = build("{}", 1, 0, &size);
    CHECK_STATUS(uform__safetensors_open_memory(bytes, size, &file, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "too short for a JSON object");
    free(bytes);
    bytes = build("{}", 0, 0, &size);
    CHECK_STATUS(uform__safetensors_open_memory(bytes, size, &file, &outcome), UFORM_FORMAT);
    free(bytes);
    /* A declared length shorter than the text: "{}" then "  " counted as data, fine. */
    bytes = build("{}  ", 2, 0, &size);
    CHECK_STATUS(uform__safetensors_open_memory(bytes, size, &file, &outcome), UFORM_OK);
    uform__safetensors_close(file);
    free(bytes);
}

int main(void) {
    test_entries();
    test_between_entries();
    test_header_bytes();
    test_lengths();
    return check_finish();
}
