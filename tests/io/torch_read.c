/*
 * The PyTorch reader against PyTorch itself: tests/io/torch_write.py (Debian's python3 with
 * torch 1.13) writes real torch.save files, archives laid out by hand (zip64, offsets past 4 GiB
 * in a sparse file) that torch.load reads back, and hostile files; its manifest says what each
 * must give. Every tensor's bytes are compared with the dump NumPy wrote from the tensor in
 * memory; every refusal's status and message text are checked. Each file is read by path and,
 * when small, from memory too; two valid files (zip and legacy) are also cut at every length.
 * Usage: io_torch_read PYTHON SCRIPT. Exits 77 (skipped) when PYTHON or its torch is missing.
 */
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/check.h"
#include "common/skip.h"
#include "io/torch_file.h"

/* Runs `python script directory`; answers its exit status (or -1). */
static int run_python(const char *python, const char *script, const char *directory) {
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        execl(python, python, script, directory, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

/* The whole file in one allocation of exactly its size (so ASan sees any over-read). */
static uint8_t *read_all(const char *path, size_t *size) {
    FILE *stream = fopen(path, "rb");
    if (!stream) return NULL;
    fseek(stream, 0, SEEK_END);
    long length = ftell(stream);
    fseek(stream, 0, SEEK_SET);
    uint8_t *bytes = length >= 0 ? malloc(length ? (size_t)length : 1) : NULL;
    if (bytes && fread(bytes, 1, (size_t)length, stream) != (size_t)length) {
        free(bytes);
        bytes = NULL;
    }
    fclose(stream);
    *size = (size_t)length;
    return bytes;
}

/* Splits a manifest line on tabs into at most `capacity` fields; answers how many. */
static int split(char *line, char **fields, int capacity) {
    int count = 0;
    line[strcspn(line, "\n")] = 0;
    for (char *field = line; count < capacity;) {
        fields[count++] = field;
        char *tab = strchr(field, '\t');
        if (!tab) break;
        *tab = 0;
        field = tab + 1;
    }
    return count;
}

static uform_status_t status_named(const char *name) {
    if (!strcmp(name, "format")) return UFORM_FORMAT;
    if (!strcmp(name, "unsupported")) return UFORM_UNSUPPORTED;
    if (!strcmp(name, "ok")) return UFORM_OK;
    return UFORM_INTERNAL;
}

/* One expected tensor: its record in `file` has the manifest's dtype, shape, placement and bytes. */
static void check_tensor(const uform__torch_file_t *file, const char *directory, char **fields) {
    const char *name = fields[1], *dtype = fields[2], *shape = fields[3], *dump = fields[4], *mapped = fields[5];
    const uform__safetensors_tensor_t *tensor = uform__torch_find(file, name);
    CHECK_MSG(tensor != NULL, "tensor '%s' is missing", name);
    if (!tensor) return;
    CHECK_MSG(!strcmp(uform__safetensors_dtype_name(tensor->dtype), dtype), "'%s': dtype %s, expected %s", name,
              uform__safetensors_dtype_name(tensor->dtype), dtype);
    char spelled[256] = "";
    size_t used = 0;
    for (uint32_t axis = 0; axis < tensor->rank; ++axis)
        used += (size_t)snprintf(spelled + used, sizeof spelled - used, "%s%" PRIu64, axis ? "," : "", tensor->shape[axis]);
    CHECK_MSG(!strcmp(spelled, shape), "'%s': shape [%s], expected [%s]", name, spelled, shape);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", directory, dump);
    size_t size = 0;
    uint8_t *expected = read_all(path, &size);
    CHECK_MSG(expected != NULL, "cannot read %s", path);
    CHECK_MSG(tensor->length == size, "'%s': %" PRIu64 " bytes, the dump has %zu", name, tensor->length, size);
    CHECK(tensor->data != NULL);
    if (expected && tensor->data && tensor->length == size) {
        const uint8_t *got = tensor->data;
        size_t differ = 0;
        while (differ < size && got[differ] == expected[differ]) ++differ;
        CHECK_MSG(differ == size, "'%s': byte %zu is 0x%02x, NumPy's dump has 0x%02x", name, differ,
                  differ < size ? got[differ] : 0, differ < size ? expected[differ] : 0);
    }
    free(expected);
    size_t file_size = 0;
    const uint8_t *bytes = uform__torch_bytes(file, &file_size);
    int inside = (const uint8_t *)tensor->data >= bytes && (const uint8_t *)tensor->data + tensor->length <= bytes + file_size;
    if (!strcmp(mapped, "1")) {
        CHECK_MSG(uform__torch_mapped(file, tensor) && inside && (const uint8_t *)tensor->data == bytes + tensor->offset,
                  "'%s' should point into the file", name);
    } else if (!strcmp(mapped, "0")) {
        CHECK_MSG(!uform__torch_mapped(file, tensor) && !inside && tensor->offset == UINT64_MAX,
                  "'%s' should be a copy", name);
    }
}

/* Opens `file` by path and, when it is small, from memory: both must answer `status`. */
static uform__torch_file_t *open_both(const char *directory, const char *name, uform_status_t expected, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    uform_outcome_t outcome = {0};
    uform__torch_file_t *file = NULL;
    uform_status_t status = uform__torch_open(path, &file, &outcome);
    CHECK_MSG(status == expected, "%s: status %s, expected %s: %s", name, uform_status_name(status),
              uform_status_name(expected), outcome.message);
    if (expected != UFORM_OK) {
        CHECK_MSG(file == NULL && outcome.message[0] && strstr(outcome.message, text) && strstr(outcome.message, name),
                  "%s: the message \"%s\" should hold \"%s\" and the path", name, outcome.message, text);
    }
    struct stat facts;
    if (stat(path, &facts) == 0 && facts.st_size < (64 << 20)) {
        size_t size = 0;
        uint8_t *bytes = read_all(path, &size);
        uform__torch_file_t *from_memory = NULL;
        uform_outcome_t memory_outcome = {0};
        uform_status_t memory_status = uform__torch_open_memory(bytes, size, &from_memory, &memory_outcome);
        CHECK_MSG(memory_status == expected, "%s from memory: status %s: %s", name, uform_status_name(memory_status),
                  memory_outcome.message);
        if (expected != UFORM_OK) CHECK_CONTAINS(memory_outcome.message, text);
        if (file && from_memory) {
            CHECK_EQ_INT(uform__torch_count(from_memory), uform__torch_count(file));
            for (size_t index = 0; index < uform__torch_count(file); ++index) {
                const uform__safetensors_tensor_t *a = uform__torch_at(file, index), *b = uform__torch_at(from_memory, index);
                CHECK(!strcmp(a->name, b->name) && a->length == b->length && !memcmp(a->data, b->data, a->length));
            }
        }
        uform__torch_close(from_memory);
        free(bytes);
    }
    return file;
}

/* Every prefix of a valid file is refused as malformed, with a message, and read within bounds. */
static void cut_everywhere(const char *directory, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    size_t size = 0;
    uint8_t *whole = read_all(path, &size);
    CHECK(whole != NULL);
    if (!whole) return;
    size_t refused = 0;
    for (size_t cut = 0; cut < size; ++cut) {
        uint8_t *prefix = malloc(cut ? cut : 1);
        memcpy(prefix, whole, cut);
        uform_outcome_t outcome = {0};
        uform__torch_file_t *file = NULL;
        uform_status_t status = uform__torch_open_memory(prefix, cut, &file, &outcome);
        if (status == UFORM_FORMAT && !file && outcome.message[0]) ++refused;
        else fprintf(stderr, "%s cut to %zu bytes: status %s: %s\n", name, cut, uform_status_name(status), outcome.message);
        uform__torch_close(file);
        free(prefix);
    }
    CHECK_EQ_INT(refused, size);
    free(whole);
}

int main(int argc, char **argv) {
    if (argc < 3 || access(argv[1], X_OK) != 0)
        return check_skip_missing("no Python interpreter at %s", argc > 1 ? argv[1] : "(none given)");
    char directory[] = "/tmp/uform_io_torch_XXXXXX";
    if (!mkdtemp(directory)) return 1;
    int written = run_python(argv[1], argv[2], directory);
    if (written == 77) return check_skip_missing("torch or NumPy for %s", argv[1]);
    CHECK_EQ_INT(written, 0);

    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.tsv", directory);
    FILE *manifest = fopen(path, "r");
    CHECK_MSG(manifest != NULL, "cannot open %s: %s", path, strerror(errno));
    char line[8192], *fields[8];
    size_t files = 0, tensors = 0, refusals = 0;
    uform__torch_file_t *file = NULL;
    while (manifest && fgets(line, sizeof line, manifest)) {
        int count = split(line, fields, 8);
        if (!strcmp(fields[0], "ok") && count == 3) {
            uform__torch_close(file);
            file = open_both(directory, fields[1], UFORM_OK, "");
            CHECK_MSG(uform__torch_count(file) == strtoull(fields[2], NULL, 10), "%s: %zu tensors, expected %s", fields[1],
                      uform__torch_count(file), fields[2]);
            for (size_t index = 1; index < uform__torch_count(file); ++index)
                CHECK(strcmp(uform__torch_at(file, index - 1)->name, uform__torch_at(file, index)->name) < 0);
            ++files;
        } else if (!strcmp(fields[0], "tensor") && count == 6) {
            CHECK_MSG(file != NULL, "tensor %s of a file that did not open", fields[1]);
            if (file) check_tensor(file, directory, fields);
            ++tensors;
        } else if (!strcmp(fields[0], "fail") && count == 4) {
            uform__torch_close(file);
            file = NULL;
            uform__torch_close(open_both(directory, fields[1], status_named(fields[2]), fields[3]));
            ++refusals;
        } else {
            CHECK_MSG(0, "a manifest line this test does not know: %s", fields[0]);
        }
    }
    uform__torch_close(file);
    if (manifest) fclose(manifest);
    printf("%zu files with %zu tensors read, %zu refused as expected\n", files, tensors, refusals);
    CHECK(files >= 10 && tensors >= 50 && refusals >= 40);

    cut_everywhere(directory, "module_state.pt");
    cut_everywhere(directory, "legacy.pt");

    char command[4200];
    snprintf(command, sizeof command, "rm -rf '%s'", directory);
    CHECK_EQ_INT(system(command), 0);
    return check_finish();
}
