/* The project's 128-bit hash (hash128.h); moved here unchanged from model/fingerprint.c, so every
 * fingerprint stays what it was. */
#include "core/hash128.h"

#include <string.h>

#define K1 0x9E3779B97F4A7C15ull
#define K2 0xC2B2AE3D27D4EB4Full
#define K3 0x165667B19E3779F9ull

static uint64_t rotl(uint64_t value, int bits) { return (value << bits) | (value >> (64 - bits)); }

static uint64_t load64(const unsigned char *bytes) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = value << 8 | bytes[i]; /* little-endian on every host */
    return value;
}

static void absorb_stripe(uform__hash128_t *hasher, const unsigned char *stripe) {
    for (int lane = 0; lane < 4; ++lane)
        hasher->lanes[lane] = rotl(hasher->lanes[lane] ^ load64(stripe + 8 * lane) * K1, 29) * K2;
}

void uform__hash128_init(uform__hash128_t *hasher) {
    memset(hasher, 0, sizeof *hasher);
    for (int lane = 0; lane < 4; ++lane) hasher->lanes[lane] = K3 * (uint64_t)(lane + 1);
}

void uform__hash128_update(uform__hash128_t *hasher, const void *data, size_t size) {
    const unsigned char *bytes = data;
    hasher->length += size;
    if (hasher->pending_bytes) {
        size_t take = 32 - hasher->pending_bytes < size ? 32 - hasher->pending_bytes : size;
        memcpy(hasher->pending + hasher->pending_bytes, bytes, take);
        hasher->pending_bytes += take, bytes += take, size -= take;
        if (hasher->pending_bytes < 32) return;
        absorb_stripe(hasher, hasher->pending);
        hasher->pending_bytes = 0;
    }
    for (; size >= 32; bytes += 32, size -= 32) absorb_stripe(hasher, bytes);
    memcpy(hasher->pending, bytes, size);
    hasher->pending_bytes = size;
}

static uint64_t finalise(uint64_t value) {
    value ^= value >> 30, value *= 0xBF58476D1CE4E5B9ull;
    value ^= value >> 27, value *= 0x94D049BB133111EBull;
    return value ^ (value >> 31);
}

void uform__hash128_digest(uform__hash128_t *hasher, unsigned char digest[16]) {
    if (hasher->pending_bytes) {
        memset(hasher->pending + hasher->pending_bytes, 0, 32 - hasher->pending_bytes);
        absorb_stripe(hasher, hasher->pending);
    }
    uint64_t a = hasher->lanes[0] ^ rotl(hasher->lanes[2], 17) ^ hasher->length;
    uint64_t b = hasher->lanes[1] ^ rotl(hasher->lanes[3], 41) ^ (hasher->length * K2);
    uint64_t high = finalise(a ^ finalise(b)), low = finalise(b + high * K1);
    for (int i = 0; i < 8; ++i) digest[i] = (unsigned char)(high >> (56 - 8 * i)), digest[8 + i] = (unsigned char)(low >> (56 - 8 * i));
}

void uform__hash128_field(uform__hash128_t *hasher, const void *data, uint64_t size) {
    unsigned char prefix[8];
    for (int i = 0; i < 8; ++i) prefix[i] = (unsigned char)(size >> (8 * i));
    uform__hash128_update(hasher, prefix, 8);
    uform__hash128_update(hasher, data, (size_t)size);
}
