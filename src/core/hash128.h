/*
 * The project's 128-bit hash (first used for the checkpoint fingerprint, src/model/fingerprint.c;
 * also the identity of an index's rows that pairs it with its approximate structure,
 * src/index/ann_pair.c). Four 64-bit lanes each absorb one 8-byte word of every 32-byte stripe
 * (v = rotl(v ^ w·K1, 29)·K2, independent lanes so the multiplies overlap); a ragged tail is
 * zero-padded with the total length mixed in, and the lanes fold through a splitmix64-style
 * finaliser into two outputs. Not cryptographic: it guards against mix-ups, not adversaries. It
 * streams at memory speed. Private to libuform.
 */
#ifndef UFORM_CORE_HASH128_H
#define UFORM_CORE_HASH128_H

#include <stddef.h>
#include <stdint.h>

typedef struct uform__hash128_t {
    uint64_t lanes[4];
    unsigned char pending[32];
    size_t pending_bytes;
    uint64_t length;
} uform__hash128_t;

void uform__hash128_init(uform__hash128_t *hasher);
void uform__hash128_update(uform__hash128_t *hasher, const void *data, size_t size);
/* Hashes a field with its length in front (8 bytes, little-endian), so adjacent fields cannot
 * trade bytes. */
void uform__hash128_field(uform__hash128_t *hasher, const void *data, uint64_t size);
/* The digest, big-endian high word then low word. The hasher must not be updated afterwards. */
void uform__hash128_digest(uform__hash128_t *hasher, unsigned char digest[16]);

#endif
