/*
 * The JSON front of cJSON (src/io/json.c): the allocation-free checker accepts exactly what
 * cJSON accepts, on hand-picked corners of cJSON's grammar, and uform__json_parse answers
 * OUT_OF_MEMORY only for well-formed text whose parse ran out of memory (cJSON's allocator is
 * made to fail through cJSON_InitHooks), FORMAT for malformed text whether memory runs out or not.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/check.h"
#include "io/json.h"

/* Each case is checked against cJSON itself, so the expectations cannot drift from the library. */
static const char *const cases[] = {
    "{}", "[]", "null", "true", "false", "0", "-0", "1.5e3", "01", "1.", ".5", "-", "+1", "1e", "1e+", "--1",
    "\"\"", "\"a\\\"b\"", "\"\\u00e9\"", "\"\\uD83D\\uDE00\"", "\"\\uD83D\"", "\"\\uDE00\"", "\"\\uD83D\\u0041\"",
    "\"\\uZZZZ\"", "\"\\u12\"", "\"\\x\"", "\"\\", "\"abc", "\"tab\tinside\"", "\"nul\\u0000\"",
    "[1,2,]", "[,1]", "[1 2]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{\"a\":1}", "{\"a\":[1,{\"b\":null}]}",
    "\xEF\xBB\xBF{}", "\xEF\xBB\xBF", "\x01\x02 {}", "{}garbage", "nul", "tru", "[1,2", "{\"a\":",
    "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
    "[12345678901234567890123456789012345678901234567890123456789012345678901234567890]",
    "1.2.3", "[1.2.3]", "0x10", "[0x10]", "Infinity", "[1e999]", "  \n\r\t [ ] ",
};

static void test_agreement(void) {
    size_t accepted = 0, refused = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        size_t length = strlen(cases[i]);
        for (int with_nul = 0; with_nul < 2; ++with_nul) { /* as cJSON_ParseWithLength, and as cJSON_Parse */
            cJSON *parsed = cJSON_ParseWithLengthOpts(cases[i], length + (size_t)with_nul, NULL, 0);
            int checked = uform__json_check(cases[i], length + (size_t)with_nul, NULL);
            /* Numbers over 63 characters: cJSON 1.7.15 as released refuses them inside a container, patched
             * and later versions accept them; the checker accepts (json.h), so either cJSON is fine here. */
            int lenient = !parsed && checked && length > 64;
            CHECK_MSG((parsed != NULL) == checked || lenient, "case %zu '%s' (%s NUL): cJSON %s, the checker %s", i, cases[i],
                      with_nul ? "with" : "without", parsed ? "accepts" : "refuses", checked ? "accepts" : "refuses");
            if (parsed) ++accepted;
            else ++refused;
            cJSON_Delete(parsed);
        }
    }
    CHECK(accepted >= 20 && refused >= 20); /* both verdicts are exercised */
    /* Nesting: 1000 levels are cJSON's limit. */
    char deep[2 * 1001 + 1];
    for (int depth = 999; depth <= 1001; ++depth) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        cJSON *parsed = cJSON_ParseWithLengthOpts(deep, 2 * (size_t)depth, NULL, 0);
        CHECK_MSG((parsed != NULL) == uform__json_check(deep, 2 * (size_t)depth, NULL), "nesting %d", depth);
        CHECK_EQ_INT(parsed != NULL, depth <= 1000);
        cJSON_Delete(parsed);
    }
}

/* cJSON's allocator, failing every allocation while `failing` is set, as malloc does (ENOMEM). */
static int failing;
static void *failing_malloc(size_t size) {
    if (failing) {
        errno = ENOMEM;
        return NULL;
    }
    return malloc(size);
}

static void test_parse_statuses(void) {
    static const char good[] = "{\"uform.format\": \"4\", \"shape\": [2, 3]}", bad[] = "{\"uform.format\": \"4\", \"shape\": [2, 3}";
    cJSON *root = NULL;
    size_t at = 0;
    CHECK_STATUS(uform__json_parse(good, sizeof good - 1, &root, NULL, NULL), UFORM_OK);
    CHECK(cJSON_IsObject(root));
    cJSON_Delete(root);
    CHECK_STATUS(uform__json_parse(bad, sizeof bad - 1, &root, NULL, &at), UFORM_FORMAT);
    CHECK(root == NULL);
    CHECK_MSG(at == sizeof bad - 2, "malformed near byte %zu, expected %zu", at, sizeof bad - 2);

    cJSON_Hooks hooks = {failing_malloc, free};
    cJSON_InitHooks(&hooks);
    failing = 1;
    CHECK_STATUS(uform__json_parse(good, sizeof good - 1, &root, NULL, NULL), UFORM_OUT_OF_MEMORY);
    CHECK_STATUS(uform__json_parse(bad, sizeof bad - 1, &root, NULL, NULL), UFORM_FORMAT);
    errno = 0;
    CHECK_STATUS(uform__json_parse(good, sizeof good - 1, &root, NULL, NULL), UFORM_OUT_OF_MEMORY);
    CHECK_EQ_INT(errno, 0); /* the caller's errno is left as it was */
    failing = 0;
    cJSON_InitHooks(NULL);
    CHECK_STATUS(uform__json_parse(good, sizeof good - 1, &root, NULL, NULL), UFORM_OK);
    cJSON_Delete(root);
}

int main(void) {
    test_agreement();
    test_parse_statuses();
    return check_finish();
}
