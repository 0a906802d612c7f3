/* Shards written by hand (tar_seed.h): the ustar layout of POSIX.1-2001's pax, GNU's long names. */
#include "tar_seed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *grow(tar_buffer_t *tar, size_t more) {
    if (tar->failed) return NULL;
    if (tar->size + more > tar->capacity) {
        size_t capacity = (tar->size + more) * 2;
        uint8_t *bytes = realloc(tar->bytes, capacity);
        if (!bytes) {
            tar->failed = 1;
            return NULL;
        }
        tar->bytes = bytes, tar->capacity = capacity;
    }
    uint8_t *at = tar->bytes + tar->size;
    memset(at, 0, more);
    tar->size += more;
    return at;
}

/* A 512-byte header of `type` for a member of `size` bytes, its checksum over the header with the
 * checksum field taken as eight spaces, then the data padded to 512. */
static void add_block(tar_buffer_t *tar, char type, const char *name, const void *bytes, size_t size) {
    uint8_t *header = grow(tar, 512);
    if (!header) return;
    snprintf((char *)header, 100, "%s", name);
    snprintf((char *)header + 100, 8, "%07o", 0644);
    snprintf((char *)header + 108, 8, "%07o", 0);
    snprintf((char *)header + 116, 8, "%07o", 0);
    snprintf((char *)header + 124, 12, "%011lo", (unsigned long)size);
    snprintf((char *)header + 136, 12, "%011o", 0);
    header[156] = (uint8_t)type;
    memcpy(header + 257, "ustar", 6), memcpy(header + 263, "00", 2);
    memset(header + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < 512; ++i) sum += header[i];
    snprintf((char *)header + 148, 8, "%06o", sum);
    uint8_t *data = grow(tar, (size + 511) / 512 * 512);
    if (data && size) memcpy(data, bytes, size);
}

void tar_add(tar_buffer_t *tar, tar_name_style_t style, const char *name, const void *bytes, size_t size) {
    if (style == TAR_PAX) {
        /* One record "LEN path=NAME\n", LEN counting its own digits. */
        char record[1200];
        size_t body = strlen(" path=") + strlen(name) + 1, length = body + 1;
        while (snprintf(NULL, 0, "%zu", length) + body != length) ++length;
        snprintf(record, sizeof record, "%zu path=%s\n", length, name);
        add_block(tar, 'x', "PaxHeaders/member", record, strlen(record));
        add_block(tar, '0', "pax-placeholder", bytes, size);
    } else if (style == TAR_GNU_LONG) {
        add_block(tar, 'L', "././@LongLink", name, strlen(name) + 1);
        add_block(tar, '0', "long-placeholder", bytes, size);
    } else {
        add_block(tar, '0', name, bytes, size);
    }
}

void tar_end(tar_buffer_t *tar) { grow(tar, 1024); }

static uint32_t crc32_of(const uint8_t *bytes, size_t size) { /* the reflected polynomial 0xEDB88320 */
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < size; ++i) {
        crc ^= bytes[i];
        for (int bit = 0; bit < 8; ++bit) crc = crc & 1 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
    }
    return ~crc;
}

uint8_t *tar_gzip(const uint8_t *bytes, size_t size, size_t *out_size) {
    size_t blocks = size ? (size + 65534) / 65535 : 1;
    uint8_t *out = malloc(10 + blocks * 5 + size + 8);
    if (!out) return NULL;
    static const uint8_t header[10] = {0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3}; /* deflate, no name, Unix */
    memcpy(out, header, 10);
    size_t at = 10, done = 0;
    for (size_t block = 0; block < blocks; ++block) {
        size_t length = size - done < 65535 ? size - done : 65535;
        out[at++] = block + 1 == blocks; /* BFINAL, BTYPE 00: stored */
        out[at++] = (uint8_t)length, out[at++] = (uint8_t)(length >> 8);
        out[at++] = (uint8_t)~length, out[at++] = (uint8_t)(~length >> 8);
        memcpy(out + at, bytes + done, length);
        at += length, done += length;
    }
    uint32_t crc = crc32_of(bytes, size), isize = (uint32_t)size;
    for (int i = 0; i < 4; ++i) out[at++] = (uint8_t)(crc >> (8 * i));
    for (int i = 0; i < 4; ++i) out[at++] = (uint8_t)(isize >> (8 * i));
    *out_size = at;
    return out;
}
