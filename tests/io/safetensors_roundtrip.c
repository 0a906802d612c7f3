/*
 * Round trips through the safetensors writer and reader: every dtype, a scalar, an empty tensor,
 * metadata with characters JSON escapes; the file's bytes equal the in-memory encoding and do not
 * depend on the order the tensors were given in; every tensor is aligned to its element size;
 * progress reports over a file larger than one write chunk; malformed write requests.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "io/safetensors.h"
#include "io/safetensors_sample.h"

static char directory[256];

/* Reads a whole file; answers its bytes (free them) or NULL. */
static uint8_t *slurp(const char *path, size_t *size) {
    FILE *stream = fopen(path, "rb");
    if (!stream) return NULL;
    fseek(stream, 0, SEEK_END);
    long length = ftell(stream);
    fseek(stream, 0, SEEK_SET);
    uint8_t *bytes = malloc(length > 0 ? (size_t)length : 1);
    if (bytes && fread(bytes, 1, (size_t)length, stream) != (size_t)length) {
        free(bytes);
        bytes = NULL;
    }
    fclose(stream);
    *size = (size_t)length;
    return bytes;
}

/* Checks that `file` holds exactly the sample's tensors and metadata. */
static void check_matches_sample(const uform__safetensors_t *file, const sample_t *sample) {
    CHECK_EQ_INT(uform__safetensors_count(file), SAMPLE_TENSORS);
    size_t size = 0, data_start = 0;
    const uint8_t *bytes = uform__safetensors_bytes(file, &size, &data_start);
    CHECK(bytes != NULL);
    CHECK_EQ_INT(data_start % 8, 0);
    for (int index = 0; index < SAMPLE_TENSORS; ++index) {
        const uform__safetensors_source_t *source = &sample->sources[index];
        const uform__safetensors_tensor_t *tensor = uform__safetensors_find(file, source->name);
        CHECK_MSG(tensor != NULL, "tensor '%s' is missing", source->name);
        if (!tensor) continue;
        CHECK_EQ_INT(tensor->dtype, source->dtype);
        CHECK_EQ_INT(tensor->rank, source->rank);
        uint64_t count = 1;
        for (uint32_t axis = 0; axis < source->rank; ++axis) {
            CHECK_EQ_INT(tensor->shape[axis], source->shape[axis]);
            count *= source->shape[axis];
        }
        for (uint32_t axis = source->rank; axis < UFORM__SAFETENSORS_MAX_RANK; ++axis) CHECK_EQ_INT(tensor->shape[axis], 0);
        CHECK_EQ_INT(tensor->element_count, count);
        CHECK_EQ_INT(tensor->length, sample->lengths[index]);
        CHECK(tensor->data == bytes + data_start + tensor->offset);
        CHECK_EQ_INT(tensor->offset % uform__safetensors_dtype_size(tensor->dtype), 0);
        CHECK_MSG(memcmp(tensor->data, source->data, sample->lengths[index]) == 0, "tensor '%s' data differ",
                  source->name);
    }
    /* Enumeration is in ascending name order. */
    for (size_t index = 1; index < uform__safetensors_count(file); ++index)
        CHECK(strcmp(uform__safetensors_at(file, index - 1)->name, uform__safetensors_at(file, index)->name) < 0);
    CHECK(uform__safetensors_at(file, SAMPLE_TENSORS) == NULL);
    CHECK(uform__safetensors_find(file, "missing") == NULL);
    CHECK(uform__safetensors_find(file, "") == NULL);
    CHECK_EQ_INT(uform__safetensors_metadata_count(file), SAMPLE_PAIRS);
    for (int index = 0; index < SAMPLE_PAIRS; ++index) {
        const char *value = uform__safetensors_metadata_find(file, sample->pairs[index].key);
        CHECK_MSG(value && strcmp(value, sample->pairs[index].value) == 0, "metadata '%s' is '%s'",
                  sample->pairs[index].key, value ? value : "(missing)");
    }
    const char *key = NULL, *value = NULL;
    CHECK(uform__safetensors_metadata_at(file, 0, &key, &value) == 1);
    CHECK(key && strcmp(key, "note") == 0); /* "note" < "uform.config" < "uform.format" */
    CHECK(uform__safetensors_metadata_at(file, SAMPLE_PAIRS, &key, &value) == 0);
    CHECK(uform__safetensors_metadata_find(file, "absent") == NULL);
}

typedef struct progress_log_t {
    uint64_t calls, last_written, last_total;
    int monotonic;
} progress_log_t;

static int log_progress(void *state, uint64_t written, uint64_t total) {
    progress_log_t *log = state;
    if (written < log->last_written || written > total) log->monotonic = 0;
    ++log->calls;
    log->last_written = written;
    log->last_total = total;
    return 0;
}

static void test_round_trip(void) {
    sample_t sample;
    CHECK(sample_make(&sample, 42, 1));
    uint8_t *encoded = NULL;
    size_t encoded_size = 0;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__safetensors_encode(&sample.request, &encoded, &encoded_size, &outcome), UFORM_OK);

    uform__safetensors_t *file = NULL;
    CHECK_STATUS(uform__safetensors_open_memory(encoded, encoded_size, &file, &outcome), UFORM_OK);
    if (file) check_matches_sample(file, &sample);
    uform__safetensors_close(file);

    char path[512];
    snprintf(path, sizeof path, "%s/sample.safetensors", directory);
    CHECK_STATUS(uform__safetensors_write(path, &sample.request, &outcome), UFORM_OK);
    if (outcome.status != UFORM_OK) fprintf(stderr, "write: %s\n", outcome.message);
    size_t written_size = 0;
    uint8_t *written = slurp(path, &written_size);
    CHECK(written != NULL);
    CHECK_EQ_INT(written_size, encoded_size);
    CHECK(written && written_size == encoded_size && memcmp(written, encoded, encoded_size) == 0);
    struct stat facts;
    CHECK(stat(path, &facts) == 0 && (facts.st_mode & 0777) == 0644);

    file = NULL;
    CHECK_STATUS(uform__safetensors_open(path, &file, &outcome), UFORM_OK);
    if (file) check_matches_sample(file, &sample);
    uform__safetensors_close(file);

    /* The same tensors and metadata given in reverse order encode to the same bytes. */
    uform__safetensors_source_t reversed[SAMPLE_TENSORS];
    uform__safetensors_pair_t reversed_pairs[SAMPLE_PAIRS];
    for (int index = 0; index < SAMPLE_TENSORS; ++index) reversed[index] = sample.sources[SAMPLE_TENSORS - 1 - index];
    for (int index = 0; index < SAMPLE_PAIRS; ++index) reversed_pairs[index] = sample.pairs[SAMPLE_PAIRS - 1 - index];
    uform__safetensors_write_t request = sample.request;
    request.tensors = reversed;
    request.metadata = reversed_pairs;
    uint8_t *again = NULL;
    size_t again_size = 0;
    CHECK_STATUS(uform__safetensors_encode(&request, &again, &again_size, &outcome), UFORM_OK);
    CHECK(again && again_size == encoded_size && memcmp(again, encoded, encoded_size) == 0);

    /* The header is padded with spaces to a multiple of 8. */
    uint64_t header_length = 0;
    for (int byte = 7; byte >= 0; --byte) header_length = header_length << 8 | encoded[byte];
    CHECK_EQ_INT(header_length % 8, 0);
    CHECK(encoded[8] == '{');
    free(again);
    free(written);
    free(encoded);
    unlink(path);
    sample_free(&sample);
}

/* A file larger than one 8 MiB write chunk: progress comes in order and ends at the total. */
static void test_large_with_progress(void) {
    sample_t sample;
    CHECK(sample_make(&sample, 7, 1 << 20)); /* embed.weight becomes [3 Mi, 4] BF16 = 24 MiB */
    progress_log_t log = {.monotonic = 1};
    sample.request.progress = log_progress;
    sample.request.progress_state = &log;
    char path[512];
    snprintf(path, sizeof path, "%s/large.safetensors", directory);
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__safetensors_write(path, &sample.request, &outcome), UFORM_OK);
    struct stat facts;
    CHECK(stat(path, &facts) == 0);
    CHECK(log.calls >= 4); /* the header, then at least three chunks of the 24 MiB tensor */
    CHECK(log.monotonic);
    CHECK_EQ_INT(log.last_written, log.last_total);
    CHECK_EQ_INT(log.last_total, facts.st_size);
    uform__safetensors_t *file = NULL;
    CHECK_STATUS(uform__safetensors_open(path, &file, &outcome), UFORM_OK);
    if (file) check_matches_sample(file, &sample);
    uform__safetensors_close(file);
    unlink(path);
    sample_free(&sample);
}

/* A header with no tensors and no metadata, and one padded with mixed whitespace. */
static void test_minimal_files(void) {
    uform__safetensors_write_t empty = {0};
    uint8_t *bytes = NULL;
    size_t size = 0;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__safetensors_encode(&empty, &bytes, &size, &outcome), UFORM_OK);
    CHECK_EQ_INT(size, 16);
    CHECK(bytes && memcmp(bytes + 8, "{}      ", 8) == 0);
    uform__safetensors_t *file = NULL;
    CHECK_STATUS(uform__safetensors_open_memory(bytes, size, &file, &outcome), UFORM_OK);
    CHECK_EQ_INT(uform__safetensors_count(file), 0);
    CHECK_EQ_INT(uform__safetensors_metadata_count(file), 0);
    uform__safetensors_close(file);
    free(bytes);

    static const char header[] = "{\"x\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}} \n\t\r ";
    uint8_t padded[8 + sizeof header - 1 + 4] = {(uint8_t)(sizeof header - 1)};
    memcpy(padded + 8, header, sizeof header - 1);
    memcpy(padded + 8 + sizeof header - 1, "\x01\x02\x03\x04", 4);
    CHECK_STATUS(uform__safetensors_open_memory(padded, sizeof padded, &file, &outcome), UFORM_OK);
    const uform__safetensors_tensor_t *x = uform__safetensors_find(file, "x");
    CHECK(x && x->length == 2 && ((const uint8_t *)x->data)[0] == 2 && ((const uint8_t *)x->data)[1] == 3);
    uform__safetensors_close(file);
}

static void test_open_errors(void) {
    uform_outcome_t outcome = {0};
    uform__safetensors_t *file = (uform__safetensors_t *)&outcome; /* must come back NULL */
    char path[512];
    snprintf(path, sizeof path, "%s/absent.safetensors", directory);
    CHECK_STATUS(uform__safetensors_open(path, &file, &outcome), UFORM_IO);
    CHECK(file == NULL);
    CHECK_CONTAINS(outcome.message, "absent.safetensors");
    CHECK_CONTAINS(outcome.message, strerror(ENOENT));
    /* A long path keeps its end, the file name, in the message. */
    char long_path[1024];
    snprintf(long_path, sizeof long_path, "%s/%0100d/%0100d/%0100d/absent-long.safetensors", directory, 0, 0, 0);
    CHECK_STATUS(uform__safetensors_open(long_path, &file, &outcome), UFORM_IO);
    CHECK_CONTAINS(outcome.message, "cannot open '...000");
    CHECK_CONTAINS(outcome.message, "000/absent-long.safetensors': ");
    CHECK_CONTAINS(outcome.message, strerror(ENOENT));
    CHECK_STATUS(uform__safetensors_open(directory, &file, &outcome), UFORM_IO);
    CHECK_CONTAINS(outcome.message, "not a regular file");
    CHECK_STATUS(uform__safetensors_open(NULL, &file, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__safetensors_open(path, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__safetensors_open_memory(NULL, 4, &file, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__safetensors_open_memory(NULL, 0, &file, NULL), UFORM_FORMAT);

    /* A malformed file on disk: the message starts with the path. */
    snprintf(path, sizeof path, "%s/short.safetensors", directory);
    FILE *stream = fopen(path, "wb");
    CHECK(stream != NULL);
    if (stream) {
        fwrite("\x02\0\0\0", 1, 4, stream);
        fclose(stream);
    }
    CHECK_STATUS(uform__safetensors_open(path, &file, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "short.safetensors': the file is 4 bytes");
    CHECK_CONTAINS(outcome.function, "uform__safetensors_open");
    unlink(path);
    /* An empty file cannot be mapped, and is refused as malformed, not as an I/O error. */
    stream = fopen(path, "wb");
    if (stream) fclose(stream);
    CHECK_STATUS(uform__safetensors_open(path, &file, &outcome), UFORM_FORMAT);
    unlink(path);
}

/* Requests the writer must refuse, each naming the tensor or key. */
static void test_write_refusals(void) {
    sample_t sample;
    CHECK(sample_make(&sample, 3, 1));
    uform_outcome_t outcome = {0};
    uint8_t *bytes = NULL;
    size_t size = 0;
    uform__safetensors_source_t sources[SAMPLE_TENSORS];
    uform__safetensors_write_t request = sample.request;
    request.tensors = sources;
    uint64_t big_shape[2] = {1ull << 53, 1};
    static const char bad_utf8[] = "bad\xc3(";
    struct {
        const char *what;
        int tensor;
        uform__safetensors_source_t change;
        const char *expected;
    } cases[] = {
        {"duplicate", 1, {.name = "embed.weight", .dtype = UFORM__SAFETENSORS_F16, .rank = 0, .data = "ab"},
         "'embed.weight': the name appears twice"},
        {"null name", 2, {.name = NULL}, "tensors[2]: the name is NULL"},
        {"reserved", 2, {.name = "__metadata__", .dtype = UFORM__SAFETENSORS_U8}, "reserved"},
        {"utf8", 2, {.name = bad_utf8, .dtype = UFORM__SAFETENSORS_U8}, "not valid UTF-8"},
        {"dtype", 2, {.name = "odd", .dtype = (uform__safetensors_dtype_t)99}, "'odd': dtype 99"},
        {"rank", 2, {.name = "deep", .dtype = UFORM__SAFETENSORS_U8, .rank = 9, .shape = big_shape}, "'deep': rank 9"},
        {"huge", 2, {.name = "huge", .dtype = UFORM__SAFETENSORS_U8, .rank = 2, .shape = big_shape}, "'huge': shape[0]"},
        {"data", 2, {.name = "nodata", .dtype = UFORM__SAFETENSORS_F32, .rank = 0, .data = NULL}, "'nodata': 4 bytes"},
    };
    for (size_t index = 0; index < sizeof cases / sizeof cases[0]; ++index) {
        memcpy(sources, sample.sources, sizeof sources);
        sources[cases[index].tensor] = cases[index].change;
        CHECK_STATUS(uform__safetensors_encode(&request, &bytes, &size, &outcome), UFORM_INVALID_ARGUMENT);
        CHECK_CONTAINS(outcome.message, cases[index].expected);
        CHECK(bytes == NULL);
        char path[512];
        snprintf(path, sizeof path, "%s/refused.safetensors", directory);
        CHECK_STATUS(uform__safetensors_write(path, &request, &outcome), UFORM_INVALID_ARGUMENT);
        CHECK(access(path, F_OK) != 0);
    }
    uform__safetensors_pair_t pairs[2] = {{"k", "1"}, {"k", "2"}};
    uform__safetensors_write_t duplicate_keys = {.metadata = pairs, .metadata_count = 2};
    CHECK_STATUS(uform__safetensors_encode(&duplicate_keys, &bytes, &size, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "__metadata__ key 'k' appears twice");
    pairs[1].value = NULL;
    pairs[1].key = "j";
    CHECK_STATUS(uform__safetensors_encode(&duplicate_keys, &bytes, &size, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "metadata[1]: the value is NULL");
    CHECK_STATUS(uform__safetensors_encode(NULL, &bytes, &size, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__safetensors_write(directory, &sample.request, &outcome), UFORM_IO); /* a directory */
    char trailing[512];
    snprintf(trailing, sizeof trailing, "%s/", directory);
    CHECK_STATUS(uform__safetensors_write(trailing, &sample.request, &outcome), UFORM_INVALID_ARGUMENT);
    sample_free(&sample);
}

/* Nothing but what the tests removed again: the directory must be empty. */
static void check_directory_empty(void) {
    DIR *listing = opendir(directory);
    CHECK(listing != NULL);
    if (!listing) return;
    struct dirent *entry;
    while ((entry = readdir(listing))) {
        if (strcmp(entry->d_name, ".") && strcmp(entry->d_name, ".."))
            CHECK_MSG(0, "left behind: %s", entry->d_name);
    }
    closedir(listing);
}

int main(void) {
    snprintf(directory, sizeof directory, "/tmp/uform_io_roundtrip_XXXXXX");
    if (!mkdtemp(directory)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_large_with_progress();
    test_minimal_files();
    test_open_errors();
    test_write_refusals();
    check_directory_empty();
    rmdir(directory);
    return check_finish();
}
