/*
 * The small text functions of `uform serve`: base64 against RFC 4648's test vectors (§10), its
 * refusals (bad characters, bad padding, non-canonical last characters, naming the offset) and
 * random round trips; float32 JSON numbers read back bit for bit by strtof for a million random
 * floats and the powers of ten; the UTF-8 validator against hand-made sequences (overlong forms,
 * surrogates, values above U+10FFFF, truncations); JSON string escaping.
 * Usage: test_serve_text [SEED]
 */
#include <stdint.h>

#include "base64.h"
#include "buffer.h"
#include "common/check.h"

static void test_base64_vectors(void) {
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const encoded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; ++i) {
        char out[16] = {0};
        size_t length = serve_base64_encode((const unsigned char *)plain[i], strlen(plain[i]), out);
        CHECK_MSG(length == strlen(encoded[i]) && memcmp(out, encoded[i], length) == 0, "encode '%s': '%.*s', expected '%s'",
                  plain[i], (int)length, out, encoded[i]);
        CHECK_EQ_INT(serve_base64_encoded_length(strlen(plain[i])), strlen(encoded[i]));
        unsigned char back[16];
        size_t decoded = 99, bad = 0;
        CHECK_EQ_INT(serve_base64_decode(encoded[i], strlen(encoded[i]), back, &decoded, &bad), 0);
        CHECK_MSG(decoded == strlen(plain[i]) && memcmp(back, plain[i], decoded) == 0, "decode '%s'", encoded[i]);
        /* Without its padding it decodes the same. */
        size_t unpadded = strlen(encoded[i]);
        while (unpadded && encoded[i][unpadded - 1] == '=') --unpadded;
        CHECK_EQ_INT(serve_base64_decode(encoded[i], unpadded, back, &decoded, &bad), 0);
        CHECK_EQ_INT(decoded, strlen(plain[i]));
    }
}

static void test_base64_refusals(void) {
    static const struct {
        const char *text;
        size_t bad_at;
    } cases[] = {
        {"Z", 1},          /* a lone character ends mid-quantum */
        {"Zg=", 2},        /* partial padding */
        {"Zh==", 1},       /* 'h' leaves bits set past the byte: not canonical */
        {"Zm9=", 2},       /* '9' likewise, with one '=' */
        {"Zm9v YmFy", 4},  /* white space */
        {"Zm9v-mFy", 4},   /* the URL-safe alphabet */
        {"Zm9v_mFy", 4},
        {"====", 0},
        {"Zg==Zg==", 2},   /* padding inside */
        {"Zm9vYg=", 6},
        {"Zm9vYmFy=", 8},
        {"\xc3\xa9\xc3\xa9", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        unsigned char out[32];
        size_t decoded = 0, bad = 999;
        int result = serve_base64_decode(cases[i].text, strlen(cases[i].text), out, &decoded, &bad);
        CHECK_MSG(result == -1 && bad == cases[i].bad_at, "'%s': answered %d at %zu, expected -1 at %zu", cases[i].text, result,
                  bad, cases[i].bad_at);
    }
}

static void test_base64_round_trips(uint64_t *state) {
    unsigned char bytes[300], back[300 + 3];
    char text[404];
    size_t failures = 0;
    for (int n = 0; n < 3000; ++n) {
        size_t length = (size_t)(check_random_next(state) % sizeof bytes);
        for (size_t i = 0; i < length; ++i) bytes[i] = (unsigned char)check_random_next(state);
        size_t written = serve_base64_encode(bytes, length, text), decoded = 0, bad = 0;
        if (written % 4 || serve_base64_decode(text, written, back, &decoded, &bad) != 0 || decoded != length ||
            memcmp(back, bytes, length) != 0)
            ++failures;
    }
    CHECK_EQ_INT(failures, 0);
}

static int same_float(float a, float b) {
    uint32_t x, y;
    memcpy(&x, &a, 4), memcpy(&y, &b, 4);
    return x == y;
}

static void test_floats(uint64_t *state) {
    static const struct {
        float value;
        const char *text;
    } exact[] = {{0.5f, "0.5"}, {1.0f, "1"}, {100.0f, "100"}, {-0.25f, "-0.25"}, {1e-7f, "1.00000001e-7"}, {1e10f, "1e10"},
                 {0.0f, "0"}, {123456789.0f, "123456792"}, {0.1f, "0.100000001"}, {-1.5e-30f, "-1.5e-30"}};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; ++i) {
        char text[32];
        size_t length = serve_format_float(exact[i].value, text);
        text[length] = 0;
        CHECK_MSG(strcmp(text, exact[i].text) == 0, "%.9g wrote '%s', expected '%s'", exact[i].value, text, exact[i].text);
    }
    char text[32];
    size_t length = serve_format_float(NAN, text);
    CHECK(length == 1 && text[0] == '0');
    length = serve_format_float(-INFINITY, text);
    CHECK(length == 1 && text[0] == '0');
    /* Random bit patterns (every exponent), and the values around each power of ten. */
    size_t failures = 0, checked = 0;
    for (int n = 0; n < 1000000; ++n) {
        uint32_t bits = (uint32_t)check_random_next(state);
        float value;
        memcpy(&value, &bits, 4);
        if (!isfinite(value)) continue;
        length = serve_format_float(value, text);
        text[length] = 0;
        float back = strtof(text, NULL);
        failures += !(same_float(back, value) || (value == 0 && back == 0)) || length > SERVE_FLOAT_TEXT_MAX;
        ++checked;
    }
    for (int e = -45; e <= 38; ++e) {
        float power = (float)pow(10.0, e);
        float around[3] = {nextafterf(power, 0), power, nextafterf(power, INFINITY)};
        for (int k = 0; k < 3; ++k) {
            if (!isfinite(around[k]) || around[k] == 0) continue;
            length = serve_format_float(around[k], text);
            text[length] = 0;
            failures += !same_float(strtof(text, NULL), around[k]) || length > SERVE_FLOAT_TEXT_MAX;
            ++checked;
        }
    }
    CHECK_MSG(failures == 0, "%zu of %zu floats did not read back or were longer than %d bytes", failures, checked,
              SERVE_FLOAT_TEXT_MAX);
}

/* An array written at once equals its values written one by one, for the longest values too
 * (the writer reserves room for all of them before writing), and reads back as the same floats. */
static void test_float_arrays(uint64_t *state) {
    float values[300];
    for (size_t i = 0; i < 300; ++i) {
        uint32_t bits = (uint32_t)check_random_next(state);
        memcpy(&values[i], &bits, 4);
    }
    values[0] = -1.23456789e-5f, values[1] = -9.87654321e-38f, values[2] = -1.17549435e-38f, values[3] = NAN;
    for (size_t count = 0; count <= 300; count += count < 8 ? 1 : 73) {
        serve_buffer_t array = {0}, one_by_one = {0};
        serve_buffer_floats(&array, values, count);
        serve_buffer_append(&one_by_one, "[", 1);
        for (size_t i = 0; i < count; ++i) {
            if (i) serve_buffer_append(&one_by_one, ",", 1);
            serve_buffer_float(&one_by_one, values[i]);
        }
        serve_buffer_append(&one_by_one, "]", 1);
        CHECK_MSG(!array.failed && array.length == one_by_one.length && strcmp(array.data, one_by_one.data) == 0,
                  "%zu values: '%.80s' against '%.80s'", count, array.data, one_by_one.data);
        size_t failures = 0;
        const char *at = array.data + 1;
        for (size_t i = 0; i < count; ++i) {
            char *end = NULL;
            float back = strtof(at, &end);
            failures += !(same_float(back, values[i]) || (!isfinite(values[i]) && back == 0) || (values[i] == 0 && back == 0));
            at = end + 1;
        }
        CHECK_MSG(failures == 0, "%zu of %zu values in an array did not read back", failures, count);
        serve_buffer_free(&array), serve_buffer_free(&one_by_one);
    }
}

static void test_utf8(void) {
    static const char *const valid[] = {"", "abc", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9d\x84\x9e", "\xf4\x8f\xbf\xbf",
                                        "\xed\x9f\xbf"};
    for (size_t i = 0; i < sizeof valid / sizeof *valid; ++i)
        CHECK_MSG(serve_utf8_valid((const unsigned char *)valid[i], strlen(valid[i]), NULL), "valid #%zu refused", i);
    static const struct {
        const char *bytes;
        size_t bad_at;
    } invalid[] = {{"a\xc0\xaf", 1},        /* overlong '/' */
                   {"\xe0\x80\xaf", 0},     /* overlong, three bytes */
                   {"ab\xed\xa0\x80", 2},   /* a UTF-16 surrogate */
                   {"\xf4\x90\x80\x80", 0}, /* above U+10FFFF */
                   {"\xf5\x80\x80\x80", 0},
                   {"abc\x80", 3},          /* a lone continuation byte */
                   {"\xe2\x82", 0},         /* truncated */
                   {"x\xff", 1},
                   {"\xc3\x28", 0}};
    for (size_t i = 0; i < sizeof invalid / sizeof *invalid; ++i) {
        size_t bad = 999;
        int ok = serve_utf8_valid((const unsigned char *)invalid[i].bytes, strlen(invalid[i].bytes), &bad);
        CHECK_MSG(!ok && bad == invalid[i].bad_at, "invalid #%zu: answered %d at %zu, expected 0 at %zu", i, ok, bad,
                  invalid[i].bad_at);
    }
}

static void test_json_strings(void) {
    serve_buffer_t buffer = {0};
    static const char raw[] = "a\"b\\c\n\t\x01 \xc3\xa9 \xff end";
    serve_buffer_json_string(&buffer, raw, sizeof raw - 1);
    CHECK_MSG(strcmp(buffer.data, "\"a\\\"b\\\\c\\n\\t\\u0001 \xc3\xa9 \\ufffd end\"") == 0, "escaped: %s", buffer.data);
    buffer.length = 0;
    serve_buffer_size(&buffer, 0);
    serve_buffer_text(&buffer, ",");
    serve_buffer_size(&buffer, 18446744073709551615u);
    CHECK_MSG(strcmp(buffer.data, "0,18446744073709551615") == 0, "sizes: %s", buffer.data);
    serve_buffer_free(&buffer);
}

int main(int argc, char **argv) {
    /* A fixed seed (docs/testing.md: seeds never come from the time); another as the argument. */
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 20261201u;
    printf("seed %llu (another: the argument)\n", (unsigned long long)seed);
    uint64_t state = seed;
    test_base64_vectors();
    test_base64_refusals();
    test_base64_round_trips(&state);
    test_floats(&state);
    test_float_arrays(&state);
    test_utf8();
    test_json_strings();
    return check_finish();
}
