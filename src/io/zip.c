/*
 * The ZIP reader (zip.h): end records, central directory, local headers, in that order, with
 * every offset and length checked against the bytes before it is followed. Field offsets are
 * those of PKWARE's APPNOTE.TXT (sections 4.3.7 local header, 4.3.12 central directory header,
 * 4.3.14-16 zip64 end record, its locator and the end record, 4.5.3 the zip64 extra field).
 */
#include "io/zip.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "io/safetensors_text.h"

#define LOCAL_SIGNATURE 0x04034b50u
#define CENTRAL_SIGNATURE 0x02014b50u
#define END_SIGNATURE 0x06054b50u
#define ZIP64_END_SIGNATURE 0x06064b50u
#define ZIP64_LOCATOR_SIGNATURE 0x07064b50u

#define LOCAL_SIZE 30u
#define CENTRAL_SIZE 46u
#define END_SIZE 22u
#define ZIP64_END_SIZE 56u
#define ZIP64_LOCATOR_SIZE 20u
#define MAX_COMMENT 65535u

#define SATURATED_32 0xFFFFFFFFu

struct uform__zip_t {
    uform__zip_entry_t *entries; /* central directory order */
    size_t count;
    size_t *by_name;             /* entry indexes sorted by name (strcmp) */
    char *names;                 /* every name, NUL-terminated, one allocation */
};

static const char function[] = "uform__zip_open";

static uint16_t read16(const uint8_t *at) { return (uint16_t)(at[0] | at[1] << 8); }
static uint32_t read32(const uint8_t *at) { return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24; }
static uint64_t read64(const uint8_t *at) { return (uint64_t)read32(at) | (uint64_t)read32(at + 4) << 32; }

uint32_t uform__zip_crc32(uint32_t crc, const void *bytes, size_t size) {
    /* The table costs 2,048 steps to build, nothing next to the entries it is used on (data.pkl,
     * a few kilobytes or more), and keeps the function free of shared state. */
    uint32_t table[256];
    for (uint32_t byte = 0; byte < 256; ++byte) {
        uint32_t value = byte;
        for (int bit = 0; bit < 8; ++bit) value = value & 1 ? 0xEDB88320u ^ (value >> 1) : value >> 1;
        table[byte] = value;
    }
    const uint8_t *at = bytes;
    crc = ~crc;
    for (size_t index = 0; index < size; ++index) crc = table[(crc ^ at[index]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

/* Where the end-of-central-directory record starts: the last signature whose comment length
 * makes the record end exactly at the end of the bytes. Answers 0 and sets `*position`, or -1. */
static int find_end_record(const uint8_t *bytes, size_t size, size_t *position) {
    if (size < END_SIZE) return -1;
    size_t lowest = size - END_SIZE > MAX_COMMENT ? size - END_SIZE - MAX_COMMENT : 0;
    for (size_t at = size - END_SIZE + 1; at-- > lowest;) {
        if (read32(bytes + at) == END_SIGNATURE && read16(bytes + at + 20) == size - at - END_SIZE) {
            *position = at;
            return 0;
        }
    }
    return -1;
}

/* What the end records say about the central directory. */
typedef struct directory_t {
    uint64_t entries, offset, size;
    uint64_t limit; /* the directory must end here: where the first end record starts */
} directory_t;

static uform_status_t read_end_records(const uint8_t *bytes, size_t size, directory_t *directory, uform_outcome_t *outcome) {
    size_t end = 0;
    if (find_end_record(bytes, size, &end) != 0)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "no end-of-central-directory record in the last %zu bytes: not a ZIP archive, or truncated",
                           size < END_SIZE + MAX_COMMENT ? size : (size_t)(END_SIZE + MAX_COMMENT));
    const uint8_t *record = bytes + end;
    uint16_t disk = read16(record + 4), directory_disk = read16(record + 6);
    uint16_t disk_entries = read16(record + 8), total_entries = read16(record + 10);
    directory->entries = total_entries;
    directory->size = read32(record + 12);
    directory->offset = read32(record + 16);
    directory->limit = end;
    int zip64 = end >= ZIP64_LOCATOR_SIZE && read32(record - ZIP64_LOCATOR_SIZE) == ZIP64_LOCATOR_SIGNATURE;
    if (!zip64) {
        if (disk != 0 || directory_disk != 0 || disk_entries != total_entries)
            return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                               "the archive spans several disks (end record at byte %zu: disk %u, directory on disk %u, "
                               "%u of %u entries here)",
                               end, disk, directory_disk, disk_entries, total_entries);
        return UFORM_OK;
    }
    /* The zip64 locator sits right before the end record and says where the zip64 end record is. */
    size_t locator = end - ZIP64_LOCATOR_SIZE;
    uint32_t locator_disk = read32(bytes + locator + 4), disks = read32(bytes + locator + 16);
    uint64_t zip64_end = read64(bytes + locator + 8);
    if (locator_disk != 0 || disks > 1)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "the archive spans several disks (zip64 locator at byte %zu: %" PRIu32 " disks)", locator, disks);
    if (zip64_end > locator || locator - zip64_end < ZIP64_END_SIZE)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the zip64 locator at byte %zu points to byte %" PRIu64
                           ", which leaves no room for a 56-byte zip64 end record before it",
                           locator, zip64_end);
    record = bytes + zip64_end;
    if (read32(record) != ZIP64_END_SIGNATURE)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the zip64 locator at byte %zu points to byte %" PRIu64 ", which holds no zip64 end record "
                           "(signature 0x%08" PRIx32 ")",
                           locator, zip64_end, read32(record));
    uint64_t record_size = read64(record + 4);
    if (record_size < ZIP64_END_SIZE - 12 || record_size > locator - zip64_end - 12)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the zip64 end record at byte %" PRIu64 " claims %" PRIu64
                           " bytes, which do not fit between 44 and the locator at byte %zu",
                           zip64_end, record_size, locator);
    uint32_t disk64 = read32(record + 16), directory_disk64 = read32(record + 20);
    uint64_t disk_entries64 = read64(record + 24);
    directory->entries = read64(record + 32);
    directory->size = read64(record + 40);
    directory->offset = read64(record + 48);
    directory->limit = zip64_end;
    if (disk64 != 0 || directory_disk64 != 0 || disk_entries64 != directory->entries)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "the archive spans several disks (zip64 end record at byte %" PRIu64 ": disk %" PRIu32
                           ", directory on disk %" PRIu32 ", %" PRIu64 " of %" PRIu64 " entries here)",
                           zip64_end, disk64, directory_disk64, disk_entries64, directory->entries);
    return UFORM_OK;
}

/*
 * Reads the zip64 extra field of a central directory header: each field whose 32-bit value is
 * saturated is replaced, in the order size, stored size, header offset, by the next 8 bytes of
 * the field. `extra` is the header's extra data, `length` bytes.
 */
static uform_status_t read_zip64_extra(const uint8_t *extra, size_t length, uint32_t sizes[3], uint64_t values[3],
                                       const char *quoted, size_t header, uform_outcome_t *outcome) {
    int needed = (sizes[0] == SATURATED_32) + (sizes[1] == SATURATED_32) + (sizes[2] == SATURATED_32);
    const uint8_t *field = NULL;
    size_t field_length = 0;
    for (size_t at = 0; at < length;) {
        if (length - at < 4)
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "entry %s: the extra field of its central header (byte %zu) ends inside a field header",
                               quoted, header);
        uint16_t id = read16(extra + at), size = read16(extra + at + 2);
        if (size > length - at - 4)
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "entry %s: extra field 0x%04x of its central header (byte %zu) claims %u bytes, %zu remain",
                               quoted, id, header, size, length - at - 4);
        if (id == 0x0001 && !field) field = extra + at + 4, field_length = size;
        at += 4 + (size_t)size;
    }
    if (!needed) return UFORM_OK;
    if (!field || field_length < 8u * (size_t)needed)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "entry %s: its central header (byte %zu) saturates %d size or offset field(s) but %s", quoted,
                           header, needed, field ? "its zip64 extra field is too short" : "has no zip64 extra field");
    for (int slot = 0; slot < 3; ++slot) {
        if (sizes[slot] != SATURATED_32) continue;
        values[slot] = read64(field);
        field += 8;
    }
    return UFORM_OK;
}

/* Checks the local header of `entry` and finds its data; `end` is where entries must stop. */
static uform_status_t read_local(const uint8_t *bytes, uint64_t end, uform__zip_entry_t *entry, const char *quoted,
                                 uform_outcome_t *outcome) {
    uint64_t header = entry->header_offset;
    if (header > end || end - header < LOCAL_SIZE)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "entry %s: its local header at byte %" PRIu64 " does not fit before the central directory at "
                           "byte %" PRIu64,
                           quoted, header, end);
    const uint8_t *local = bytes + header;
    if (read32(local) != LOCAL_SIGNATURE)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "entry %s: byte %" PRIu64 " holds no local header (signature 0x%08" PRIx32 ")", quoted, header,
                           read32(local));
    uint16_t method = read16(local + 8), name_length = read16(local + 26), extra_length = read16(local + 28);
    size_t central_length = strlen(entry->name);
    uint64_t data = header + LOCAL_SIZE + name_length + extra_length;
    if (data > end)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "entry %s: its local header at byte %" PRIu64 " with a %u-byte name and %u bytes of extra "
                           "runs into the central directory at byte %" PRIu64,
                           quoted, header, name_length, extra_length, end);
    /* A local name or method that differs from the central directory's is how archives show one
     * reader one file and another reader another: refuse it. */
    if (name_length != central_length || memcmp(local + LOCAL_SIZE, entry->name, central_length) != 0)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "entry %s: its local header at byte %" PRIu64 " spells another name (%u bytes)", quoted, header,
                           name_length);
    if (method != entry->method)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "entry %s: its local header at byte %" PRIu64 " says method %u, the central directory %u", quoted,
                           header, method, entry->method);
    if (entry->stored_size > end - data)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "entry %s: its %" PRIu64 " bytes of data from byte %" PRIu64
                           " run into the central directory at byte %" PRIu64,
                           quoted, entry->stored_size, data, end);
    entry->data_offset = data;
    return UFORM_OK;
}

static int compare_offsets(const void *left, const void *right, void *context) {
    const uform__zip_entry_t *entries = context;
    uint64_t a = entries[*(const size_t *)left].header_offset, b = entries[*(const size_t *)right].header_offset;
    return a < b ? -1 : a > b;
}

static int compare_names(const void *left, const void *right, void *context) {
    const uform__zip_entry_t *entries = context;
    return strcmp(entries[*(const size_t *)left].name, entries[*(const size_t *)right].name);
}

/* Names unique, and each entry's bytes (header to data end) apart from the next one's. */
static uform_status_t check_order(uform__zip_t *zip, uform_outcome_t *outcome) {
    if (zip->count < 2) return UFORM_OK;
    char first[UFORM__SAFETENSORS_QUOTE_CAPACITY], second[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    qsort_r(zip->by_name, zip->count, sizeof *zip->by_name, compare_names, zip->entries);
    for (size_t index = 1; index < zip->count; ++index) {
        const char *name = zip->entries[zip->by_name[index]].name;
        if (strcmp(zip->entries[zip->by_name[index - 1]].name, name) == 0)
            return uform__fail(outcome, UFORM_FORMAT, function, "entry %s appears twice in the central directory",
                               uform__safetensors_quote(first, name));
    }
    size_t *by_offset = malloc(zip->count * sizeof *by_offset);
    if (!by_offset)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the order of %zu entries", zip->count);
    for (size_t index = 0; index < zip->count; ++index) by_offset[index] = index;
    qsort_r(by_offset, zip->count, sizeof *by_offset, compare_offsets, zip->entries);
    uform_status_t status = UFORM_OK;
    for (size_t index = 1; index < zip->count; ++index) {
        const uform__zip_entry_t *before = &zip->entries[by_offset[index - 1]], *after = &zip->entries[by_offset[index]];
        if (before->data_offset + before->stored_size > after->header_offset) {
            status = uform__fail(outcome, UFORM_FORMAT, function,
                                 "entries %s (bytes %" PRIu64 " to %" PRIu64 ") and %s (from byte %" PRIu64 ") overlap",
                                 uform__safetensors_quote(first, before->name), before->header_offset,
                                 before->data_offset + before->stored_size, uform__safetensors_quote(second, after->name),
                                 after->header_offset);
            break;
        }
    }
    free(by_offset);
    return status;
}

/* Reads the central directory into `zip`; the caller frees `zip` on failure. */
static uform_status_t read_directory(const uint8_t *bytes, const directory_t *directory, uform__zip_t *zip,
                                     uform_outcome_t *outcome) {
    if (directory->offset > directory->limit || directory->size > directory->limit - directory->offset)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the central directory (%" PRIu64 " bytes from byte %" PRIu64
                           ") does not end before the end record at byte %" PRIu64,
                           directory->size, directory->offset, directory->limit);
    /* Every header takes at least 46 bytes, which bounds the tables before they are allocated. */
    if (directory->entries > directory->size / CENTRAL_SIZE)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the end record counts %" PRIu64 " entries, more than a %" PRIu64
                           "-byte central directory can hold",
                           directory->entries, directory->size);
    size_t count = (size_t)directory->entries;
    zip->entries = calloc(count ? count : 1, sizeof *zip->entries);
    zip->by_name = malloc((count ? count : 1) * sizeof *zip->by_name);
    zip->names = malloc(directory->size ? (size_t)directory->size : 1); /* names total less than the directory */
    if (!zip->entries || !zip->by_name || !zip->names)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function,
                           "cannot allocate the tables of %zu entries (%" PRIu64 " bytes of directory)", count,
                           directory->size);
    char *cursor = zip->names;
    char quoted[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    uint64_t at = directory->offset, end = directory->offset + directory->size;
    for (size_t index = 0; index < count; ++index) {
        if (end - at < CENTRAL_SIZE)
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "central header %zu of %zu at byte %" PRIu64 " runs past the directory's end at byte %" PRIu64,
                               index, count, at, end);
        const uint8_t *header = bytes + at;
        if (read32(header) != CENTRAL_SIGNATURE)
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "central header %zu of %zu: byte %" PRIu64 " holds signature 0x%08" PRIx32
                               ", not 0x%08x",
                               index, count, at, read32(header), CENTRAL_SIGNATURE);
        uint16_t name_length = read16(header + 28), extra_length = read16(header + 30), comment_length = read16(header + 32);
        uint64_t length = (uint64_t)CENTRAL_SIZE + name_length + extra_length + comment_length;
        if (length > end - at)
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "central header %zu of %zu at byte %" PRIu64 " with its name, extra and comment (%" PRIu64
                               " bytes) runs past the directory's end at byte %" PRIu64,
                               index, count, at, length, end);
        const uint8_t *name = header + CENTRAL_SIZE;
        if (name_length == 0)
            return uform__fail(outcome, UFORM_FORMAT, function, "central header %zu at byte %" PRIu64 " has an empty name",
                               index, at);
        const void *nul = memchr(name, 0, name_length);
        if (nul)
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "central header %zu at byte %" PRIu64 ": its name holds a NUL byte at name byte %zu", index,
                               at, (size_t)((const uint8_t *)nul - name));
        uform__zip_entry_t *entry = &zip->entries[index];
        memcpy(cursor, name, name_length);
        cursor[name_length] = 0;
        entry->name = cursor;
        cursor += name_length + 1;
        zip->count = index + 1;
        uform__safetensors_quote(quoted, entry->name);
        entry->flags = read16(header + 8);
        entry->method = read16(header + 10);
        entry->crc32 = read32(header + 16);
        uint32_t sizes[3] = {read32(header + 24), read32(header + 20), read32(header + 42)};
        uint64_t values[3] = {sizes[0], sizes[1], sizes[2]};
        uform_status_t status = read_zip64_extra(name + name_length, extra_length, sizes, values, quoted, (size_t)at, outcome);
        if (status != UFORM_OK) return status;
        entry->size = values[0];
        entry->stored_size = values[1];
        entry->header_offset = values[2];
        if (entry->flags & 1)
            return uform__fail(outcome, UFORM_UNSUPPORTED, function, "entry %s is encrypted", quoted);
        if (entry->method == 0 && entry->size != entry->stored_size)
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "entry %s is stored (method 0) but its size %" PRIu64 " differs from its stored size %" PRIu64,
                               quoted, entry->size, entry->stored_size);
        status = read_local(bytes, directory->offset, entry, quoted, outcome);
        if (status != UFORM_OK) return status;
        zip->by_name[index] = index;
        at += length;
    }
    return check_order(zip, outcome);
}

void uform__zip_close(uform__zip_t *zip) {
    if (!zip) return;
    free(zip->entries);
    free(zip->by_name);
    free(zip->names);
    free(zip);
}

uform_status_t uform__zip_open(const uint8_t *bytes, size_t size, uform__zip_t **zip, uform_outcome_t *outcome) {
    if (!zip) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "`zip` is NULL");
    *zip = NULL;
    if (!bytes && size)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "`bytes` is NULL but `size` is %zu", size);
    directory_t directory = {0, 0, 0, 0};
    uform_status_t status = read_end_records(bytes, size, &directory, outcome);
    if (status != UFORM_OK) return status;
    uform__zip_t *result = calloc(1, sizeof *result);
    if (!result) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate an archive record");
    status = read_directory(bytes, &directory, result, outcome);
    if (status != UFORM_OK) {
        uform__zip_close(result);
        return status;
    }
    *zip = result;
    return uform__succeed(outcome, __func__);
}

size_t uform__zip_count(const uform__zip_t *zip) { return zip ? zip->count : 0; }

const uform__zip_entry_t *uform__zip_at(const uform__zip_t *zip, size_t index) {
    if (!zip || index >= zip->count) return NULL;
    return &zip->entries[index];
}

const uform__zip_entry_t *uform__zip_find(const uform__zip_t *zip, const char *name) {
    if (!zip || !name) return NULL;
    size_t low = 0, high = zip->count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        const uform__zip_entry_t *entry = &zip->entries[zip->by_name[middle]];
        int order = strcmp(name, entry->name);
        if (order == 0) return entry;
        if (order < 0) high = middle;
        else low = middle + 1;
    }
    return NULL;
}
