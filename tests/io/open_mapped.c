/*
 * How the safetensors and PyTorch readers open files (src/io/open_mapped.c, which both share): the
 * argument checks, a missing file, a folder, malformed bytes on disk and in memory. The expected
 * statuses, functions and messages are the ones each reader answered before the shared opener
 * existed, written out here so that a change to the shared code that alters either reader fails.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "io/safetensors.h"
#include "io/torch_file.h"

static char directory[256], bad[512], missing[512];

/* Passes when `message` starts with `'<path>': ` followed by `rest`. */
static void check_path_prefix(const char *message, const char *path, const char *rest) {
    char expected[1024];
    snprintf(expected, sizeof expected, "'%s': %s", path, rest);
    CHECK_MSG(strncmp(message, expected, strlen(expected)) == 0, "message \"%s\", expected to start \"%s\"", message,
              expected);
}

/* The same cases on both readers: `type` is the reader's file type, `open` and `open_memory` its
 * two openers, named `name` and `name`_memory in outcomes. A failure must leave `*file` NULL (it is
 * set to a non-NULL address first); a malformed file answers the in-memory message after the
 * quoted path, under `name`, whichever layer wrote it. */
#define CHECK_READER(type, open, open_memory, name)                                                     \
    do {                                                                                                \
        uform_outcome_t outcome, from_memory;                                                           \
        type *file = (type *)&outcome;                                                                  \
        CHECK_STATUS(open(NULL, &file, &outcome), UFORM_INVALID_ARGUMENT);                              \
        CHECK(file == NULL);                                                                            \
        CHECK_CONTAINS(outcome.message, "`path` is NULL");                                              \
        CHECK(strcmp(outcome.function, name) == 0);                                                     \
        CHECK_STATUS(open(bad, NULL, &outcome), UFORM_INVALID_ARGUMENT);                                \
        CHECK_CONTAINS(outcome.message, "`file` is NULL");                                              \
        CHECK_STATUS(open_memory(NULL, 5, &file, &outcome), UFORM_INVALID_ARGUMENT);                    \
        CHECK_CONTAINS(outcome.message, "`bytes` is NULL but `size` is 5");                             \
        CHECK(strcmp(outcome.function, name "_memory") == 0);                                           \
        CHECK_STATUS(open_memory("x", 1, NULL, &outcome), UFORM_INVALID_ARGUMENT);                      \
        CHECK_CONTAINS(outcome.message, "`file` is NULL");                                              \
        file = (type *)&outcome;                                                                        \
        CHECK_STATUS(open(missing, &file, &outcome), UFORM_IO);                                         \
        CHECK(file == NULL);                                                                            \
        CHECK_CONTAINS(outcome.message, missing);                                                       \
        CHECK(strcmp(outcome.function, name) == 0);                                                     \
        CHECK_STATUS(open(directory, &file, &outcome), UFORM_IO);                                       \
        CHECK_CONTAINS(outcome.message, "not a regular file");                                          \
        file = (type *)&outcome;                                                                        \
        CHECK_STATUS(open_memory("\x02\0\0\0", 4, &file, &from_memory), UFORM_FORMAT);                  \
        CHECK(file == NULL);                                                                            \
        CHECK(strcmp(from_memory.function, name) == 0);                                                 \
        CHECK(from_memory.message[0] != 0 && from_memory.message[0] != '\'');                           \
        file = (type *)&outcome;                                                                        \
        CHECK_STATUS(open(bad, &file, &outcome), UFORM_FORMAT);                                         \
        CHECK(file == NULL);                                                                            \
        check_path_prefix(outcome.message, bad, from_memory.message);                                   \
        CHECK(strcmp(outcome.function, name) == 0);                                                     \
    } while (0)

int main(void) {
    snprintf(directory, sizeof directory, "/tmp/uform-open-mapped-XXXXXX");
    if (!mkdtemp(directory)) {
        fprintf(stderr, "cannot create a temporary folder\n");
        return 1;
    }
    snprintf(bad, sizeof bad, "%s/short.bin", directory);
    snprintf(missing, sizeof missing, "%s/missing.bin", directory);
    int descriptor = open(bad, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(descriptor >= 0 && write(descriptor, "\x02\0\0\0", 4) == 4);
    if (descriptor >= 0) close(descriptor);

    CHECK_READER(uform__safetensors_t, uform__safetensors_open, uform__safetensors_open_memory, "uform__safetensors_open");
    CHECK_READER(uform__torch_file_t, uform__torch_open, uform__torch_open_memory, "uform__torch_open");

    /* The safetensors reader's own words for those four bytes, and the smallest valid file. */
    uform_outcome_t outcome;
    uform__safetensors_t *file = NULL;
    CHECK_STATUS(uform__safetensors_open(bad, &file, &outcome), UFORM_FORMAT);
    check_path_prefix(outcome.message, bad, "the file is 4 bytes, shorter than the 8-byte header length");
    static const char empty[] = "\x02\0\0\0\0\0\0\0{}";
    CHECK_STATUS(uform__safetensors_open_memory(empty, 10, &file, &outcome), UFORM_OK);
    CHECK(file != NULL && uform__safetensors_count(file) == 0);
    uform__safetensors_close(file);

    unlink(bad);
    rmdir(directory);
    return check_finish();
}
