/* The pairing record of a .faiss file and the identity of an index (ann.h). */
#include <stdio.h>
#include <string.h>

#include "core/hash128.h"
#include "index/ann.h"
#include "kernels/nn.h"

static const char magic[8] = {'U', 'F', 'O', 'R', 'M', 'A', 'N', 'N'};
static const char lists_magic[8] = {'U', 'F', 'O', 'R', 'M', 'I', 'V', 'F'};

static void put64(unsigned char *at, uint64_t value) {
    for (int i = 0; i < 8; ++i) at[i] = (unsigned char)(value >> (8 * i));
}
static void put32(unsigned char *at, uint32_t value) {
    for (int i = 0; i < 4; ++i) at[i] = (unsigned char)(value >> (8 * i));
}
static uint64_t get64(const unsigned char *at) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = value << 8 | at[i];
    return value;
}
static uint32_t get32(const unsigned char *at) {
    return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
}

void uform__ann_identity_of(uform_index_t index, uform__ann_identity_t *identity) {
    memset(identity, 0, sizeof *identity);
    memcpy(identity->fingerprint, index->fingerprint, sizeof identity->fingerprint);
    identity->count = index->count, identity->dims = index->dims, identity->scalar = (uint32_t)index->scalar;
    uform__hash128_t hasher;
    uform__hash128_init(&hasher);
    uform__hash128_field(&hasher, index->modality, index->count);
    for (int m = 0; m < 4; ++m)
        uform__hash128_field(&hasher, index->parts[m].data, (uint64_t)index->parts[m].rows * index->row_bytes);
    uform__hash128_digest(&hasher, identity->rows_hash);
}

void uform__ann_record_encode(const uform__ann_record_t *record, unsigned char bytes[UFORM__ANN_RECORD_BYTES]) {
    memset(bytes, 0, UFORM__ANN_RECORD_BYTES);
    memcpy(bytes, magic, 8);
    put32(bytes + 8, record->lists_name[0] ? 2 : 1);
    put32(bytes + 12, UFORM__ANN_RECORD_BYTES);
    put64(bytes + 16, record->faiss_bytes);
    memcpy(bytes + 24, record->faiss_hash, 16);
    memcpy(bytes + 40, record->identity.fingerprint, 32);
    put64(bytes + 72, record->identity.count);
    put64(bytes + 80, record->identity.dims);
    put32(bytes + 88, record->identity.scalar);
    memcpy(bytes + 96, record->identity.rows_hash, 16);
    put64(bytes + 112, record->train_rows);
    memcpy(bytes + 120, record->recipe, strnlen(record->recipe, UFORM__ANN_RECIPE_CAPACITY - 1));
    memcpy(bytes + 248, magic, 8);
}

uform_status_t uform__ann_record_decode(const unsigned char bytes[UFORM__ANN_RECORD_BYTES], uform__ann_record_t *record,
                                        char *why, size_t capacity) {
    memset(record, 0, sizeof *record);
    if (memcmp(bytes, magic, 8) != 0 || memcmp(bytes + 248, magic, 8) != 0) {
        snprintf(why, capacity, "its last %d bytes are not UForm's pairing record", UFORM__ANN_RECORD_BYTES);
        return UFORM_FORMAT;
    }
    record->version = get32(bytes + 8);
    if (record->version > UFORM__ANN_RECORD_VERSION) {
        snprintf(why, capacity, "its pairing record has version %u; this libuform reads %d", record->version,
                 UFORM__ANN_RECORD_VERSION);
        return UFORM_UNSUPPORTED;
    }
    if (record->version == 0 || get32(bytes + 12) != UFORM__ANN_RECORD_BYTES) {
        snprintf(why, capacity, "its pairing record says version %u, %u bytes (expected 1 or 2, %d)", record->version,
                 get32(bytes + 12), UFORM__ANN_RECORD_BYTES);
        return UFORM_FORMAT;
    }
    record->faiss_bytes = get64(bytes + 16);
    memcpy(record->faiss_hash, bytes + 24, 16);
    memcpy(record->identity.fingerprint, bytes + 40, 32);
    record->identity.fingerprint[32] = 0;
    for (int i = 0; i < 32; ++i) {
        char c = record->identity.fingerprint[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            snprintf(why, capacity, "its pairing record's fingerprint is not 32 hex digits");
            return UFORM_FORMAT;
        }
    }
    record->identity.count = get64(bytes + 72);
    record->identity.dims = get64(bytes + 80);
    record->identity.scalar = get32(bytes + 88);
    memcpy(record->identity.rows_hash, bytes + 96, 16);
    record->train_rows = get64(bytes + 112);
    memcpy(record->recipe, bytes + 120, UFORM__ANN_RECIPE_CAPACITY);
    if (record->recipe[UFORM__ANN_RECIPE_CAPACITY - 1] != 0) {
        snprintf(why, capacity, "its pairing record's recipe is not terminated");
        return UFORM_FORMAT;
    }
    return UFORM_OK;
}

void uform__ann_lists_encode(const uform__ann_record_t *record, unsigned char bytes[UFORM__ANN_LISTS_BYTES]) {
    memset(bytes, 0, UFORM__ANN_LISTS_BYTES);
    memcpy(bytes, lists_magic, 8);
    put64(bytes + 8, record->lists_bytes);
    memcpy(bytes + 16, record->lists_hash, 16);
    memcpy(bytes + 32, record->lists_name, strnlen(record->lists_name, UFORM__ANN_LISTS_NAME_CAPACITY - 1));
    memcpy(bytes + 248, lists_magic, 8);
}

uform_status_t uform__ann_lists_decode(const unsigned char bytes[UFORM__ANN_LISTS_BYTES], uform__ann_record_t *record,
                                       char *why, size_t capacity) {
    if (memcmp(bytes, lists_magic, 8) != 0 || memcmp(bytes + 248, lists_magic, 8) != 0) {
        snprintf(why, capacity, "its pairing record says its lists are on disk, but no lists block precedes it");
        return UFORM_FORMAT;
    }
    record->lists_bytes = get64(bytes + 8);
    memcpy(record->lists_hash, bytes + 16, 16);
    memcpy(record->lists_name, bytes + 32, UFORM__ANN_LISTS_NAME_CAPACITY);
    const char *name = record->lists_name;
    /* Only a plain name in the .faiss's own folder: never a path that leads elsewhere. */
    if (name[UFORM__ANN_LISTS_NAME_CAPACITY - 1] != 0 || !name[0] || strchr(name, '/') || !strcmp(name, ".") ||
        !strcmp(name, "..")) {
        snprintf(why, capacity, "its lists block does not name a file in its own folder");
        return UFORM_FORMAT;
    }
    return UFORM_OK;
}

static void hex16(const unsigned char digest[16], char text[33]) {
    for (int i = 0; i < 16; ++i) snprintf(text + 2 * i, 3, "%02x", digest[i]);
}

int uform__ann_identity_differs(const uform__ann_identity_t *index, const uform__ann_identity_t *structure, char *why,
                                size_t capacity) {
    if (strcmp(index->fingerprint, structure->fingerprint) != 0) {
        snprintf(why, capacity, "it was built from an index of checkpoint %s, this index is checkpoint %s's",
                 structure->fingerprint, index->fingerprint);
        return 1;
    }
    if (index->count != structure->count || index->dims != structure->dims || index->scalar != structure->scalar) {
        const char *name = uform__index_scalar_name((uform_scalar_kind_t)structure->scalar);
        snprintf(why, capacity, "it was built from an index of %llu items × %llu dims of %s, this index holds %llu × %llu of %s",
                 (unsigned long long)structure->count, (unsigned long long)structure->dims, name ? name : "?",
                 (unsigned long long)index->count, (unsigned long long)index->dims,
                 uform__index_scalar_name((uform_scalar_kind_t)index->scalar));
        return 1;
    }
    if (memcmp(index->rows_hash, structure->rows_hash, 16) != 0) {
        char mine[33], theirs[33];
        hex16(index->rows_hash, mine), hex16(structure->rows_hash, theirs);
        snprintf(why, capacity,
                 "it was built from other rows of the same shape (row hash %s, this index's is %s): rebuild it", theirs,
                 mine);
        return 1;
    }
    return 0;
}

void uform__ann_widen(uform_scalar_kind_t scalar, size_t dims, const unsigned char *row, float *out) {
    const uform__nn_kernels_t *nn = uform__nn_kernels(UFORM_CPU_CLASS_SERIAL);
    switch (scalar) {
    case UFORM_SCALAR_F32: memcpy(out, row, dims * sizeof(float)); break;
    case UFORM_SCALAR_F16: nn->f16_to_f32(dims, (const uint16_t *)(const void *)row, out); break;
    case UFORM_SCALAR_BF16: nn->bf16_to_f32(dims, (const uint16_t *)(const void *)row, out); break;
    case UFORM_SCALAR_I8:
        for (size_t c = 0; c < dims; ++c) out[c] = (float)((const int8_t *)row)[c] / 127.0f;
        break;
    default: memset(out, 0, dims * sizeof(float)); break;
    }
}

void uform__ann_widen_row(uform_index_t index, size_t item, float *out) {
    const uform__index_part_t *part = &index->parts[index->modality[item]];
    uform__ann_widen(index->scalar, index->dims, part->data + index->rows_of[item] * index->row_bytes, out);
}
