/*
 * Builders for the PyTorch reader's C tests and fuzz seeds: a byte buffer, a pickle emitter for
 * torch.save-style state dicts, and a ZIP writer laid out as torch.save's (stored entries,
 * 64-byte-aligned data behind an "FB" extra field, zip64 end records; optionally zip64 extra
 * fields everywhere). Written from PKWARE's APPNOTE and CPython's pickle opcodes, independently
 * of src/io/zip.c and torch_pickle.c. Header-only, like check.h.
 */
#ifndef UFORM_TESTS_IO_TORCH_SAMPLE_H
#define UFORM_TESTS_IO_TORCH_SAMPLE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- bytes ---- */

typedef struct sample_bytes_t {
    uint8_t *data;
    size_t size, capacity;
} sample_bytes_t;

static inline void sample_put(sample_bytes_t *bytes, const void *data, size_t size) {
    if (bytes->capacity - bytes->size < size) {
        size_t next = bytes->capacity ? bytes->capacity * 2 : 256;
        while (next - bytes->size < size) next *= 2;
        uint8_t *bigger = realloc(bytes->data, next);
        if (!bigger) {
            fprintf(stderr, "torch_sample.h: out of memory\n");
            exit(1);
        }
        bytes->data = bigger;
        bytes->capacity = next;
    }
    if (size) memcpy(bytes->data + bytes->size, data, size);
    bytes->size += size;
}

static inline void sample_text(sample_bytes_t *bytes, const char *text) { sample_put(bytes, text, strlen(text)); }

/* A string literal's bytes, NULs included. */
#define SAMPLE_LITERAL(bytes, literal) sample_put(bytes, literal, sizeof literal - 1)

static inline void sample_le(sample_bytes_t *bytes, uint64_t value, int width) {
    uint8_t field[8];
    for (int at = 0; at < width; ++at) field[at] = (uint8_t)(value >> (8 * at));
    sample_put(bytes, field, (size_t)width);
}

static inline void sample_byte(sample_bytes_t *bytes, uint8_t value) { sample_put(bytes, &value, 1); }

/* ---- pickles (protocol 2 opcodes unless said) ---- */

/* BINUNICODE. */
static inline void pickle_string(sample_bytes_t *bytes, const char *text) {
    sample_byte(bytes, 'X');
    sample_le(bytes, strlen(text), 4);
    sample_text(bytes, text);
}

/* BININT1, BININT or LONG1 (8 bytes), as pickle.py chooses. */
static inline void pickle_int(sample_bytes_t *bytes, int64_t value) {
    if (value >= 0 && value < 256) {
        sample_byte(bytes, 'K');
        sample_byte(bytes, (uint8_t)value);
    } else if (value >= INT32_MIN && value <= INT32_MAX) {
        sample_byte(bytes, 'J');
        sample_le(bytes, (uint64_t)value, 4);
    } else {
        sample_byte(bytes, 0x8a);
        sample_byte(bytes, 8);
        sample_le(bytes, (uint64_t)value, 8);
    }
}

/* MARK, the items, TUPLE: the ints of `values`. */
static inline void pickle_int_tuple(sample_bytes_t *bytes, const int64_t *values, int count) {
    sample_byte(bytes, '(');
    for (int index = 0; index < count; ++index) pickle_int(bytes, values[index]);
    sample_byte(bytes, 't');
}

/* _rebuild_tensor_v2(('storage', torch.<kind>, key, 'cpu', numel), offset, size, stride, False, OrderedDict()). */
static inline void pickle_tensor(sample_bytes_t *bytes, const char *kind, const char *key, int64_t numel, int64_t offset,
                          const int64_t *size, const int64_t *stride, int rank) {
    sample_text(bytes, "ctorch._utils\n_rebuild_tensor_v2\n(");
    sample_byte(bytes, '(');
    pickle_string(bytes, "storage");
    sample_text(bytes, "ctorch\n");
    sample_text(bytes, kind);
    sample_byte(bytes, '\n');
    pickle_string(bytes, key);
    pickle_string(bytes, "cpu");
    pickle_int(bytes, numel);
    sample_text(bytes, "tQ");
    pickle_int(bytes, offset);
    pickle_int_tuple(bytes, size, rank);
    pickle_int_tuple(bytes, stride, rank);
    sample_text(bytes, "\x89" "ccollections\nOrderedDict\n)RtR");
}

/* A contiguous 1-D F32 tensor of `count` elements of storage `key`, from element `offset`. */
static inline void pickle_vector(sample_bytes_t *bytes, const char *key, int64_t numel, int64_t offset, int64_t count) {
    int64_t one = 1;
    pickle_tensor(bytes, "FloatStorage", key, numel, offset, &count, &one, 1);
}

/* ---- archives ---- */

typedef struct sample_entry_t {
    const char *name;
    const uint8_t *data;
    size_t size;
    uint16_t method;     /* written as is: the data are not compressed */
    uint16_t flags;
    int wrong_crc;       /* write a CRC that does not match */
} sample_entry_t;

static inline uint32_t sample_crc32(const uint8_t *data, size_t size) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t index = 0; index < size; ++index) {
        crc ^= data[index];
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
    }
    return ~crc;
}

typedef struct sample_zip_options_t {
    int zip64_fields;    /* sizes and offsets through zip64 extra fields */
    int no_zip64_end;    /* no zip64 end record and locator (as Python's zipfile writes) */
    const char *comment; /* an archive comment */
} sample_zip_options_t;

/* Appends an archive of `count` entries to `out`; its offsets count from where it starts. */
static inline void sample_zip(sample_bytes_t *out, const sample_entry_t *entries, size_t count, sample_zip_options_t options) {
    size_t *offsets = calloc(count ? count : 1, sizeof *offsets), origin = out->size;
    for (size_t index = 0; index < count; ++index) {
        const sample_entry_t *entry = &entries[index];
        size_t name = strlen(entry->name), extra = options.zip64_fields ? 20 : 0;
        offsets[index] = out->size - origin;
        size_t start = out->size - origin + 30 + name + extra + 4, padding = (64 - start % 64) % 64;
        uint32_t crc = sample_crc32(entry->data, entry->size) ^ (entry->wrong_crc ? 1u : 0u);
        sample_le(out, 0x04034b50, 4);
        sample_le(out, options.zip64_fields ? 45 : 20, 2);
        sample_le(out, entry->flags, 2);
        sample_le(out, entry->method, 2);
        sample_le(out, 0, 4); /* time, date */
        sample_le(out, crc, 4);
        sample_le(out, options.zip64_fields ? 0xFFFFFFFFu : entry->size, 4);
        sample_le(out, options.zip64_fields ? 0xFFFFFFFFu : entry->size, 4);
        sample_le(out, name, 2);
        sample_le(out, extra + 4 + padding, 2);
        sample_text(out, entry->name);
        if (options.zip64_fields) {
            sample_le(out, 1, 2);
            sample_le(out, 16, 2);
            sample_le(out, entry->size, 8);
            sample_le(out, entry->size, 8);
        }
        sample_text(out, "FB");
        sample_le(out, padding, 2);
        for (size_t pad = 0; pad < padding; ++pad) sample_byte(out, 'Z');
        sample_put(out, entry->data, entry->size);
    }
    size_t directory = out->size - origin;
    for (size_t index = 0; index < count; ++index) {
        const sample_entry_t *entry = &entries[index];
        size_t name = strlen(entry->name);
        uint32_t wide = options.zip64_fields ? 0xFFFFFFFFu : 0;
        sample_le(out, 0x02014b50, 4);
        sample_le(out, 45, 2);
        sample_le(out, options.zip64_fields ? 45 : 20, 2);
        sample_le(out, entry->flags, 2);
        sample_le(out, entry->method, 2);
        sample_le(out, 0, 4);
        sample_le(out, sample_crc32(entry->data, entry->size) ^ (entry->wrong_crc ? 1u : 0u), 4);
        sample_le(out, wide ? wide : entry->size, 4);
        sample_le(out, wide ? wide : entry->size, 4);
        sample_le(out, name, 2);
        sample_le(out, options.zip64_fields ? 28 : 0, 2);
        sample_le(out, 0, 2); /* comment */
        sample_le(out, 0, 2); /* disk */
        sample_le(out, 0, 2); /* internal attributes */
        sample_le(out, 0, 4); /* external attributes */
        sample_le(out, wide ? wide : offsets[index], 4);
        sample_text(out, entry->name);
        if (options.zip64_fields) {
            sample_le(out, 1, 2);
            sample_le(out, 24, 2);
            sample_le(out, entry->size, 8);
            sample_le(out, entry->size, 8);
            sample_le(out, offsets[index], 8);
        }
    }
    size_t directory_size = out->size - origin - directory;
    if (!options.no_zip64_end) {
        size_t end64 = out->size - origin;
        sample_le(out, 0x06064b50, 4);
        sample_le(out, 44, 8);
        sample_le(out, 45, 2);
        sample_le(out, 45, 2);
        sample_le(out, 0, 4);
        sample_le(out, 0, 4);
        sample_le(out, count, 8);
        sample_le(out, count, 8);
        sample_le(out, directory_size, 8);
        sample_le(out, directory, 8);
        sample_le(out, 0x07064b50, 4);
        sample_le(out, 0, 4);
        sample_le(out, end64, 8);
        sample_le(out, 1, 4);
    }
    const char *comment = options.comment ? options.comment : "";
    sample_le(out, 0x06054b50, 4);
    sample_le(out, 0, 2);
    sample_le(out, 0, 2);
    sample_le(out, count, 2);
    sample_le(out, count, 2);
    sample_le(out, directory_size, 4);
    sample_le(out, directory, 4);
    sample_le(out, strlen(comment), 2);
    sample_text(out, comment);
    free(offsets);
}

/* 24 floats 0, 1, ..., 23: the storage "0" of the samples. */
static const float sample_floats[24] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};

/* An archive "archive/..." of `pickle` as data.pkl and storage "0" (sample_floats) as data/0. */
static inline void sample_archive(sample_bytes_t *out, const sample_bytes_t *pickle, sample_zip_options_t options) {
    sample_entry_t entries[3] = {
        {"archive/data.pkl", pickle->data, pickle->size, 0, 0, 0},
        {"archive/data/0", (const uint8_t *)sample_floats, sizeof sample_floats, 0, 0, 0},
        {"archive/version", (const uint8_t *)"3\n", 2, 0, 0, 0},
    };
    sample_zip(out, entries, 3, options);
}

/* A state dict pickle: "w" a 2x3 view at offset 6, "t" its transpose (a copy), "nested.v" a vector,
 * 7: {"b": a scalar}, and leaves that are skipped. */
static inline void sample_state_pickle(sample_bytes_t *pickle) {
    static const int64_t size[2] = {2, 3}, stride[2] = {3, 1}, size_t_[2] = {3, 2}, stride_t[2] = {1, 3};
    SAMPLE_LITERAL(pickle, "\x80\x02}q\x00(");
    pickle_string(pickle, "w");
    pickle_tensor(pickle, "FloatStorage", "0", 24, 6, size, stride, 2);
    pickle_string(pickle, "t");
    pickle_tensor(pickle, "FloatStorage", "0", 24, 6, size_t_, stride_t, 2);
    pickle_string(pickle, "nested");
    sample_text(pickle, "}(");
    pickle_string(pickle, "v");
    pickle_vector(pickle, "0", 24, 20, 4);
    pickle_int(pickle, 7);
    sample_text(pickle, "}(");
    pickle_string(pickle, "b");
    pickle_tensor(pickle, "FloatStorage", "0", 24, 23, NULL, NULL, 0);
    sample_text(pickle, "uu");
    pickle_string(pickle, "epoch");
    pickle_int(pickle, 3);
    pickle_string(pickle, "list");
    sample_text(pickle, "](");
    pickle_vector(pickle, "0", 24, 0, 2);
    sample_text(pickle, "e");
    sample_text(pickle, "u.");
}

/*
 * A file of the legacy format (torch.save before PyTorch 1.6): the magic, version and system
 * pickles, an object pickle with six-item persistent ids, the key list, then per key its element
 * count and elements. The object: "w" = 6 floats of storage "k1" from element 2 (2, 3 ... 7; the
 * storage holds 0 ... 9), "v.x" = a view (first 4, 3 elements: 14, 15, 16) of storage "k2" (10 ... 19),
 * "b" = 2 bytes of storage "k3". `keys` replaces the key list ("k1", "k2", "k3") when not NULL.
 */
static inline void sample_legacy(sample_bytes_t *out, const char *const *keys, int key_count) {
    static const char *const default_keys[] = {"k1", "k2", "k3"};
    if (!keys) keys = default_keys, key_count = 3;
    SAMPLE_LITERAL(out, "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.");
    SAMPLE_LITERAL(out, "\x80\x02M\xe9\x03.");
    SAMPLE_LITERAL(out, "\x80\x02}(X\x0d\0\0\0little_endian\x88u.");
    static const int64_t six[1] = {6}, one[1] = {1}, three[1] = {3}, two[1] = {2};
    SAMPLE_LITERAL(out, "\x80\x02}(X\x01\0\0\0w" "ctorch._utils\n_rebuild_tensor_v2\n((X\x07\0\0\0storagectorch\nFloatStorage\n"
                        "X\x02\0\0\0k1X\x03\0\0\0" "cpuK\x0aNtQK\x02");
    pickle_int_tuple(out, six, 1);
    pickle_int_tuple(out, one, 1);
    SAMPLE_LITERAL(out, "\x89" "ccollections\nOrderedDict\n)RtR");
    SAMPLE_LITERAL(out, "X\x01\0\0\0v}(X\x01\0\0\0x" "ctorch._utils\n_rebuild_tensor_v2\n((X\x07\0\0\0storagectorch\n"
                        "FloatStorage\nX\x02\0\0\0k2X\x03\0\0\0" "cpuK\x0a(X\x02\0\0\0vwK\x04K\x03ttQK\x00");
    pickle_int_tuple(out, three, 1);
    pickle_int_tuple(out, one, 1);
    SAMPLE_LITERAL(out, "\x89" "ccollections\nOrderedDict\n)RtRu");
    SAMPLE_LITERAL(out, "X\x01\0\0\0" "b" "ctorch._utils\n_rebuild_tensor_v2\n((X\x07\0\0\0storagectorch\nByteStorage\n"
                        "X\x02\0\0\0k3X\x03\0\0\0" "cpuK\x02NtQK\x00");
    pickle_int_tuple(out, two, 1);
    pickle_int_tuple(out, one, 1);
    SAMPLE_LITERAL(out, "\x89" "ccollections\nOrderedDict\n)RtRu.");
    SAMPLE_LITERAL(out, "\x80\x02](");
    for (int index = 0; index < key_count; ++index) pickle_string(out, keys[index]);
    SAMPLE_LITERAL(out, "e.");
    for (int index = 0; index < key_count; ++index) {
        int which = keys[index][1] - '1';
        sample_le(out, which == 2 ? 2 : 10, 8);
        if (which == 2) SAMPLE_LITERAL(out, "\x07\x09");
        else sample_put(out, sample_floats + (which == 0 ? 0 : 10), 10 * sizeof(float));
    }
}

#endif
