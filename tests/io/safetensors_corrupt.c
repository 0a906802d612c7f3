/*
 * A valid file, truncated at every byte offset, must be refused with UFORM_FORMAT; with every
 * header byte flipped (xor 0xFF) or replaced by each of a set of characters that matter to JSON,
 * it must be refused with UFORM_FORMAT or, where the change leaves a valid file, accepted with
 * consistent contents. Each input sits at the very end of a readable page with an unreadable page
 * after it, so reading one byte too far crashes this test even without AddressSanitizer.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "common/check.h"
#include "io/safetensors.h"
#include "io/safetensors_sample.h"

typedef struct guarded_t {
    uint8_t *pages;
    size_t readable; /* bytes before the guard page */
} guarded_t;

static int guarded_make(guarded_t *guarded, size_t capacity) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    guarded->readable = (capacity + page - 1) / page * page;
    if (!guarded->readable) guarded->readable = page;
    guarded->pages = mmap(NULL, guarded->readable + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guarded->pages == MAP_FAILED) return 0;
    return mprotect(guarded->pages + guarded->readable, page, PROT_NONE) == 0;
}

/* Copies `size` bytes so they end right at the guard page; answers where they start. */
static const uint8_t *guarded_place(guarded_t *guarded, const uint8_t *bytes, size_t size) {
    uint8_t *start = guarded->pages + guarded->readable - size;
    memcpy(start, bytes, size);
    return start;
}

static size_t accepted_count = 0;

/* An accepted file must be consistent: ranges inside the data, matching shapes, sorted unique names
 * that lookup finds, disjoint non-empty ranges, metadata found by key. Touches every data byte. */
static void check_consistent(const uform__safetensors_t *file, const uint8_t *bytes, size_t size, const char *what,
                             size_t at) {
    ++accepted_count;
    size_t file_size = 0, data_start = 0;
    CHECK(uform__safetensors_bytes(file, &file_size, &data_start) == bytes);
    CHECK(file_size == size && data_start >= 10 && data_start <= size);
    size_t count = uform__safetensors_count(file);
    unsigned checksum = 0;
    for (size_t index = 0; index < count; ++index) {
        const uform__safetensors_tensor_t *tensor = uform__safetensors_at(file, index);
        uint64_t elements = 1;
        for (uint32_t axis = 0; axis < tensor->rank; ++axis) elements *= tensor->shape[axis];
        CHECK_MSG(tensor->rank <= UFORM__SAFETENSORS_MAX_RANK, "%s at %zu", what, at);
        CHECK_MSG(elements == tensor->element_count, "%s at %zu", what, at);
        CHECK_MSG(tensor->length == elements * uform__safetensors_dtype_size(tensor->dtype), "%s at %zu", what, at);
        CHECK_MSG(tensor->offset + tensor->length <= size - data_start, "%s at %zu", what, at);
        CHECK_MSG((const uint8_t *)tensor->data == bytes + data_start + tensor->offset, "%s at %zu", what, at);
        CHECK_MSG(uform__safetensors_find(file, tensor->name) == tensor, "%s at %zu: lookup of '%s'", what, at,
                  tensor->name);
        if (index) CHECK_MSG(strcmp(uform__safetensors_at(file, index - 1)->name, tensor->name) < 0, "%s at %zu", what, at);
        for (uint64_t byte = 0; byte < tensor->length; ++byte) checksum += ((const uint8_t *)tensor->data)[byte];
        for (size_t other = 0; other < index; ++other) {
            const uform__safetensors_tensor_t *earlier = uform__safetensors_at(file, other);
            int disjoint = !tensor->length || !earlier->length || tensor->offset >= earlier->offset + earlier->length ||
                           earlier->offset >= tensor->offset + tensor->length;
            CHECK_MSG(disjoint, "%s at %zu: '%s' and '%s' overlap", what, at, tensor->name, earlier->name);
        }
    }
    for (size_t index = 0; index < uform__safetensors_metadata_count(file); ++index) {
        const char *key = NULL, *value = NULL;
        CHECK(uform__safetensors_metadata_at(file, index, &key, &value));
        CHECK(key && value && uform__safetensors_metadata_find(file, key) == value);
    }
    (void)checksum;
}

/* Opens `bytes` placed against the guard page; UFORM_OK must be consistent, anything else FORMAT. */
static void try_open(guarded_t *guarded, const uint8_t *bytes, size_t size, int must_fail, const char *what, size_t at) {
    const uint8_t *placed = guarded_place(guarded, bytes, size);
    uform_outcome_t outcome = {0};
    uform__safetensors_t *file = NULL;
    uform_status_t status = uform__safetensors_open_memory(placed, size, &file, &outcome);
    if (status == UFORM_OK && !must_fail) {
        check_consistent(file, placed, size, what, at);
    } else {
        if (status != UFORM_FORMAT) fprintf(stderr, "%s at byte %zu: %s\n", what, at, outcome.message);
        CHECK_STATUS(status, UFORM_FORMAT);
        CHECK_MSG(outcome.message[0] != 0, "%s at %zu: empty message", what, at);
        CHECK(file == NULL);
    }
    uform__safetensors_close(file);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20260101;
    printf("seed %llu\n", (unsigned long long)seed);
    sample_t sample;
    CHECK(sample_make(&sample, seed, 1));
    uint8_t *valid = NULL;
    size_t size = 0;
    CHECK_STATUS(uform__safetensors_encode(&sample.request, &valid, &size, NULL), UFORM_OK);
    if (!valid) return check_finish();
    size_t header_end = 8 + (size_t)(valid[0] | valid[1] << 8 | valid[2] << 16 | (uint64_t)valid[3] << 24);
    guarded_t guarded;
    if (!guarded_make(&guarded, size)) {
        perror("mmap");
        return 1;
    }
    try_open(&guarded, valid, size, 0, "the valid file", 0);
    CHECK_EQ_INT(accepted_count, 1);

    /* Every truncation is refused. */
    for (size_t length = 0; length < size; ++length) try_open(&guarded, valid, length, 1, "truncated", length);

    /* Every header byte (the length prefix included) flipped or replaced. */
    static const uint8_t replacements[] = {'"', '{', '}', '[', ']', ',', ':', '0', '1', '9', '-', '.', 'e',
                                           'E', ' ', '\\', 'u', 'A', 0x00, 0x7F, 0x80, 0xC3, 0xFF};
    uint8_t *mutated = malloc(size);
    size_t mutations = 0;
    for (size_t at = 0; at < header_end; ++at) {
        for (size_t choice = 0; choice <= sizeof replacements; ++choice) {
            memcpy(mutated, valid, size);
            mutated[at] = choice == sizeof replacements ? (uint8_t)(valid[at] ^ 0xFF) : replacements[choice];
            if (mutated[at] == valid[at]) continue;
            try_open(&guarded, mutated, size, 0, choice == sizeof replacements ? "flipped" : "replaced", at);
            ++mutations;
        }
    }
    /* Two bytes at once, drawn from the seed, to reach states one change cannot. */
    uint64_t state = seed;
    for (int round = 0; round < 100000; ++round) {
        memcpy(mutated, valid, size);
        for (int change = 0; change < 2; ++change) {
            size_t at = (size_t)(sample_next(&state) % header_end);
            mutated[at] = replacements[sample_next(&state) % sizeof replacements];
        }
        try_open(&guarded, mutated, size, 0, "two replacements", (size_t)round);
        ++mutations;
    }
    printf("%zu-byte file, %zu header bytes, %zu mutations, %zu accepted\n", size, header_end, mutations,
           accepted_count - 1);
    free(mutated);
    free(valid);
    sample_free(&sample);
    return check_finish();
}
