/*
 * The writer replaces its target atomically: when writing fails (the file size limit reached
 * mid-write, a directory in the way of the rename, a missing directory) or the progress hook
 * cancels at any of its reports, the old target keeps its bytes and no temporary file is left.
 * A successful replace keeps the old file's mode.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "io/safetensors.h"
#include "io/safetensors_sample.h"

static char directory[256], target[320];
static uint8_t *old_bytes;
static size_t old_size;

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

/* The target still holds the old bytes, and the directory holds nothing but `expected` entries. */
static void check_untouched(const char *when, int expected_entries) {
    size_t size = 0;
    uint8_t *bytes = slurp(target, &size);
    CHECK_MSG(bytes && size == old_size && memcmp(bytes, old_bytes, size) == 0, "%s: the target changed", when);
    free(bytes);
    DIR *listing = opendir(directory);
    int entries = 0;
    struct dirent *entry;
    while (listing && (entry = readdir(listing))) {
        if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
        ++entries;
        if (entry->d_name[0] == '.') CHECK_MSG(0, "%s: temporary file %s left behind", when, entry->d_name);
    }
    if (listing) closedir(listing);
    CHECK_MSG(entries == expected_entries, "%s: %d entries in the directory, expected %d", when, entries,
              expected_entries);
}

typedef struct cancel_t {
    int cancel_at, calls;
} cancel_t;

static int cancel_progress(void *state, uint64_t written, uint64_t total) {
    cancel_t *cancel = state;
    return ++cancel->calls == cancel->cancel_at;
}

/* A fill hook over the sample's own buffers, checking that it is asked in data order, each tensor
 * from its first byte to its last; `stop_at` > 0 answers non-zero at that call. */
typedef struct filling_t {
    const sample_t *sample;
    size_t order[SAMPLE_TENSORS], next; /* next: position in `order` of the tensor being filled */
    uint64_t offset;                    /* bytes of it filled so far */
    int calls, stop_at, out_of_order;
} filling_t;

static int fill_from_sample(void *state, size_t tensor, uint64_t offset, void *buffer, size_t bytes) {
    filling_t *filling = state;
    if (++filling->calls == filling->stop_at) return 1;
    while (filling->next < SAMPLE_TENSORS && filling->offset == filling->sample->lengths[filling->order[filling->next]])
        ++filling->next, filling->offset = 0;
    if (filling->next >= SAMPLE_TENSORS || tensor != filling->order[filling->next] || offset != filling->offset ||
        bytes > 8u << 20 || offset + bytes > filling->sample->lengths[tensor])
        filling->out_of_order += 1;
    else
        memcpy(buffer, filling->sample->buffers[tensor] + offset, bytes), filling->offset += bytes;
    return 0;
}

int main(void) {
    snprintf(directory, sizeof directory, "/tmp/uform_io_atomic_XXXXXX");
    if (!mkdtemp(directory)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(target, sizeof target, "%s/model.safetensors", directory);
    uform_outcome_t outcome = {0};

    /* The old file: a small sample, mode 0640. */
    sample_t old_sample, new_sample;
    CHECK(sample_make(&old_sample, 1, 1));
    CHECK_STATUS(uform__safetensors_write(target, &old_sample.request, &outcome), UFORM_OK);
    CHECK(chmod(target, 0640) == 0);
    old_bytes = slurp(target, &old_size);
    CHECK(old_bytes != NULL);
    /* The new one is 24 MiB, several write chunks. */
    CHECK(sample_make(&new_sample, 2, 1 << 20));

    /* Cancelling at each progress report keeps the old file. */
    cancel_t count = {.cancel_at = -1};
    uform__safetensors_write_t request = new_sample.request;
    request.progress = cancel_progress;
    request.progress_state = &count;
    char scratch[400];
    snprintf(scratch, sizeof scratch, "%s/scratch.safetensors", directory);
    CHECK_STATUS(uform__safetensors_write(scratch, &request, &outcome), UFORM_OK);
    unlink(scratch);
    CHECK(count.calls >= 4);
    for (int at = 1; at <= count.calls; ++at) {
        cancel_t cancel = {.cancel_at = at};
        request.progress_state = &cancel;
        CHECK_STATUS(uform__safetensors_write(target, &request, &outcome), UFORM_CANCELLED);
        CHECK_CONTAINS(outcome.message, "model.safetensors' was cancelled");
        CHECK_EQ_INT(cancel.calls, at);
        check_untouched("cancelled", 1);
    }

    /* The same tensors through the fill hook (no data in memory): the same bytes, written and
     * encoded, asked for in data order in chunks of at most 8 MiB; a hook that answers non-zero
     * cancels and keeps the old file. */
    uform__safetensors_source_t empty[SAMPLE_TENSORS];
    for (size_t t = 0; t < SAMPLE_TENSORS; ++t) empty[t] = new_sample.sources[t], empty[t].data = NULL;
    uform__safetensors_write_t filled = new_sample.request;
    filled.tensors = empty;
    filled.fill = fill_from_sample;
    filling_t filling = {.sample = &new_sample};
    uform__safetensors_data_order(new_sample.sources, SAMPLE_TENSORS, filling.order);
    filled.fill_state = &filling;
    char through_fill[400];
    snprintf(through_fill, sizeof through_fill, "%s/filled.safetensors", directory);
    CHECK_STATUS(uform__safetensors_write(scratch, &new_sample.request, &outcome), UFORM_OK);
    CHECK_STATUS(uform__safetensors_write(through_fill, &filled, &outcome), UFORM_OK);
    CHECK_EQ_INT(filling.out_of_order, 0);
    CHECK(filling.calls >= 3); /* 24 MiB in chunks of 8 MiB at most */
    size_t plain_size = 0, filled_size = 0;
    uint8_t *plain = slurp(scratch, &plain_size), *through = slurp(through_fill, &filled_size);
    CHECK(plain && through && plain_size == filled_size && memcmp(plain, through, plain_size) == 0);
    free(through);
    uint8_t *encoded = NULL;
    size_t encoded_size = 0;
    filling = (filling_t){.sample = &new_sample};
    uform__safetensors_data_order(new_sample.sources, SAMPLE_TENSORS, filling.order);
    CHECK_STATUS(uform__safetensors_encode(&filled, &encoded, &encoded_size, &outcome), UFORM_OK);
    CHECK(encoded && plain && encoded_size == plain_size && memcmp(encoded, plain, plain_size) == 0);
    CHECK_EQ_INT(filling.out_of_order, 0);
    free(encoded), free(plain);
    unlink(scratch), unlink(through_fill);
    for (int at = 1; at <= 3; ++at) {
        filling = (filling_t){.sample = &new_sample, .stop_at = at};
        uform__safetensors_data_order(new_sample.sources, SAMPLE_TENSORS, filling.order);
        CHECK_STATUS(uform__safetensors_write(target, &filled, &outcome), UFORM_CANCELLED);
        CHECK_CONTAINS(outcome.message, "model.safetensors' was cancelled by its progress or fill hook");
        check_untouched("fill stopped", 1);
    }

    /* The file size limit stops the write half way: EFBIG, old file kept, temporary removed. */
    struct rlimit saved, limited;
    CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    limited = saved;
    limited.rlim_cur = 1 << 20;
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &limited) == 0);
    CHECK_STATUS(uform__safetensors_write(target, &new_sample.request, &outcome), UFORM_IO);
    CHECK(setrlimit(RLIMIT_FSIZE, &saved) == 0);
    CHECK_CONTAINS(outcome.message, "cannot write");
    CHECK_CONTAINS(outcome.message, "model.safetensors'");
    CHECK_CONTAINS(outcome.message, strerror(EFBIG));
    check_untouched("file size limit", 1);

    /* A directory where the file should go: the rename fails, nothing is left. */
    char blocked[400];
    snprintf(blocked, sizeof blocked, "%s/blocked", directory);
    CHECK(mkdir(blocked, 0755) == 0);
    CHECK_STATUS(uform__safetensors_write(blocked, &old_sample.request, &outcome), UFORM_IO);
    CHECK_CONTAINS(outcome.message, "cannot rename the temporary file over");
    CHECK_CONTAINS(outcome.message, "blocked'");
    check_untouched("rename onto a directory", 2);
    struct stat facts;
    CHECK(stat(blocked, &facts) == 0 && S_ISDIR(facts.st_mode));
    rmdir(blocked);

    /* A directory that does not exist. */
    char missing[400];
    snprintf(missing, sizeof missing, "%s/absent/model.safetensors", directory);
    CHECK_STATUS(uform__safetensors_write(missing, &old_sample.request, &outcome), UFORM_IO);
    CHECK_CONTAINS(outcome.message, "cannot create a temporary file next to");
    CHECK_CONTAINS(outcome.message, strerror(ENOENT));

    /* A directory the process may not write to (meaningless for root, who may write anywhere). */
    if (geteuid() != 0) {
        CHECK(chmod(directory, 0555) == 0);
        CHECK_STATUS(uform__safetensors_write(target, &new_sample.request, &outcome), UFORM_IO);
        CHECK_CONTAINS(outcome.message, strerror(EACCES));
        CHECK(chmod(directory, 0755) == 0);
        check_untouched("read-only directory", 1);
    } else {
        printf("running as root: the read-only directory case is skipped\n");
    }

    /* Finally a replacement that succeeds keeps the mode and holds the new tensors. */
    CHECK_STATUS(uform__safetensors_write(target, &new_sample.request, &outcome), UFORM_OK);
    CHECK(stat(target, &facts) == 0 && (facts.st_mode & 07777) == 0640);
    uform__safetensors_t *file = NULL;
    CHECK_STATUS(uform__safetensors_open(target, &file, &outcome), UFORM_OK);
    const uform__safetensors_tensor_t *embed = uform__safetensors_find(file, "embed.weight");
    CHECK(embed && embed->shape[0] == 3u << 20 && memcmp(embed->data, new_sample.buffers[0], embed->length) == 0);
    uform__safetensors_close(file);
    DIR *listing = opendir(directory);
    int entries = 0;
    struct dirent *entry;
    while (listing && (entry = readdir(listing))) entries += entry->d_name[0] != '.';
    if (listing) closedir(listing);
    CHECK_EQ_INT(entries, 1);

    /* A relative path without a directory part writes into the working directory. */
    char previous[512];
    CHECK(getcwd(previous, sizeof previous) != NULL);
    CHECK(chdir(directory) == 0);
    CHECK_STATUS(uform__safetensors_write("plain.safetensors", &old_sample.request, &outcome), UFORM_OK);
    CHECK(access("plain.safetensors", R_OK) == 0);
    unlink("plain.safetensors");
    CHECK(chdir(previous) == 0);

    unlink(target);
    rmdir(directory);
    free(old_bytes);
    sample_free(&old_sample);
    sample_free(&new_sample);
    return check_finish();
}
