/*
 * FNV-1a, 64-bit (Fowler, Noll and Vo): the library's small hash for short keys and identities that
 * need no strength (a mesh's job name into a port, the facts members agree on, a dataset's source
 * list and samples in a cursor's fingerprint). Bytes in order, so the same input gives the same
 * value on every machine. For long data (checkpoints, index rows) see core/hash128.h. Private to
 * libuform.
 */
#ifndef UFORM_CORE_FNV_H
#define UFORM_CORE_FNV_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a's standard offset basis. */
#define UFORM__FNV1A64_OFFSET 0xcbf29ce484222325ull

/* `hash` advanced over `length` bytes. */
static inline uint64_t uform__fnv1a64(const void *bytes, size_t length, uint64_t hash) {
    const unsigned char *at = (const unsigned char *)bytes;
    for (size_t i = 0; i < length; ++i) hash = (hash ^ at[i]) * 0x100000001b3ull;
    return hash;
}

/* `hash` advanced over the bytes of a NUL-terminated text (not the NUL). */
static inline uint64_t uform__fnv1a64_text(const char *text, uint64_t hash) {
    for (const unsigned char *at = (const unsigned char *)text; *at; ++at) hash = (hash ^ *at) * 0x100000001b3ull;
    return hash;
}

#endif
