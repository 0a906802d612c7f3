/*
 * How the safetensors and PyTorch readers open files (src/io/open_mapped.c, which both share): the
 * argument checks, a missing file, a folder, malformed bytes on disk and in memory. The expected
 * statuses, functions and messages are the ones each reader answered before the shared opener
 * existed, written out here so that a change to the shared code that alters either reader fails.
 */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "io/safetensors.h"
#include "io/torch_file.h"

static char directory[256];

/* Passes when `message` starts with `'<path>': ` followed by `rest`. */
static void check_path_prefix(const char *message, const char *path, const char *rest) {
    char expected[1024];
    snprintf(expected, sizeof expected, "'%s': %s", path, rest);
    CHECK_MSG(strncmp(message, expected, strlen(expected)) == 0, "message \"%s\", expected to start \"%s\"", message,
              expected);
}

static void check_safetensors(const char *bad, const char *missing) {
    uform_outcome_t outcome;
    uform__safetensors_t *file = (uform__safetensors_t *)&outcome; /* not NULL: a failure must clear it */
    CHECK_STATUS(uform__safetensors_open(NULL, &file, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK(file == NULL);
    CHECK_CONTAINS(outcome.message, "`path` is NULL");
    CHECK_CONTAINS(outcome.function, "uform__safetensors_open");
    CHECK_STATUS(uform__safetensors_open(bad, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "`file` is NULL");
    CHECK_STATUS(uform__safetensors_open_memory(NULL, 5, &file, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "`bytes` is NULL but `size` is 5");
    CHECK_CONTAINS(outcome.function, "uform__safetensors_open_memory");
    CHECK_STATUS(uform__safetensors_open_memory("x", 1, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "`file` is NULL");

    CHECK_STATUS(uform__safetensors_open(missing, &file, &outcome), UFORM_IO);
    CHECK(file == NULL);
    CHECK_CONTAINS(outcome.message, missing);
    CHECK_STATUS(uform__safetensors_open(directory, &file, &outcome), UFORM_IO);
    CHECK_CONTAINS(outcome.message, "not a regular file");

    /* Malformed on disk: the reader's message after the quoted path, under the open's name. */
    file = (uform__safetensors_t *)&outcome;
    CHECK_STATUS(uform__safetensors_open(bad, &file, &outcome), UFORM_FORMAT);
    CHECK(file == NULL);
    check_path_prefix(outcome.message, bad, "the file is 4 bytes, shorter than the 8-byte header length");
    CHECK(strcmp(outcome.function, "uform__safetensors_open") == 0);
    /* Malformed in memory: the same message without a path. */
    CHECK_STATUS(uform__safetensors_open_memory("\x02\0\0\0", 4, &file, &outcome), UFORM_FORMAT);
    CHECK(file == NULL);
    CHECK(strncmp(outcome.message, "the file is 4 bytes, shorter", 28) == 0);
    CHECK(strcmp(outcome.function, "uform__safetensors_open") == 0);
    /* The smallest valid file, by path and from memory. */
    static const char empty[] = "\x02\0\0\0\0\0\0\0{}";
    CHECK_STATUS(uform__safetensors_open_memory(empty, 10, &file, &outcome), UFORM_OK);
    CHECK(file != NULL && uform__safetensors_count(file) == 0);
    uform__safetensors_close(file);
}

static void check_torch(const char *bad, const char *missing) {
    uform_outcome_t outcome;
    uform__torch_file_t *file = (uform__torch_file_t *)&outcome;
    CHECK_STATUS(uform__torch_open(NULL, &file, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK(file == NULL);
    CHECK_CONTAINS(outcome.message, "`path` is NULL");
    CHECK_CONTAINS(outcome.function, "uform__torch_open");
    CHECK_STATUS(uform__torch_open(bad, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "`file` is NULL");
    CHECK_STATUS(uform__torch_open_memory(NULL, 7, &file, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "`bytes` is NULL but `size` is 7");
    CHECK_CONTAINS(outcome.function, "uform__torch_open_memory");

    CHECK_STATUS(uform__torch_open(missing, &file, &outcome), UFORM_IO);
    CHECK(file == NULL);
    CHECK_CONTAINS(outcome.message, missing);
    CHECK_CONTAINS(outcome.function, "uform__torch_open");

    /* Malformed on disk and in memory: the same message, after the path when there is one, and
     * always under uform__torch_open's name (the archive layers' names are rewritten). */
    uform_outcome_t from_memory;
    file = (uform__torch_file_t *)&outcome;
    CHECK_STATUS(uform__torch_open_memory("\x02\0\0\0", 4, &file, &from_memory), UFORM_FORMAT);
    CHECK(file == NULL);
    CHECK(strcmp(from_memory.function, "uform__torch_open") == 0);
    CHECK(from_memory.message[0] != 0 && from_memory.message[0] != '\'');
    CHECK_STATUS(uform__torch_open(bad, &file, &outcome), UFORM_FORMAT);
    CHECK(file == NULL);
    check_path_prefix(outcome.message, bad, from_memory.message);
    CHECK(strcmp(outcome.function, "uform__torch_open") == 0);
}

int main(void) {
    snprintf(directory, sizeof directory, "/tmp/uform-open-mapped-XXXXXX");
    if (!mkdtemp(directory)) {
        fprintf(stderr, "cannot create a temporary folder\n");
        return 1;
    }
    char bad[512], missing[512];
    snprintf(bad, sizeof bad, "%s/short.bin", directory);
    snprintf(missing, sizeof missing, "%s/missing.bin", directory);
    FILE *stream = fopen(bad, "wb");
    CHECK(stream != NULL);
    if (stream) {
        fwrite("\x02\0\0\0", 1, 4, stream);
        fclose(stream);
    }
    check_safetensors(bad, missing);
    check_torch(bad, missing);
    unlink(bad);
    rmdir(directory);
    return check_finish();
}
