/*
 * The mesh's only door to the collectives library (Gloo, Debian's libgloo-dev): a handful of
 * extern "C" functions implemented in gloo.cpp, the project's only C++ file. No C++ exception
 * crosses them: each catches everything and answers a status with Gloo's words in `message`.
 *
 * gloo.cpp is not part of libuform: it is built into its own module, libuform-gloo.so.4, the only
 * binary that links Gloo and libstdc++, which libuform opens with dlopen the first time a mesh of
 * more than one member needs the collectives (gloo_load.h). These declarations are the module's
 * exports, looked up by name; libuform calls them through the table in gloo_load.h, never directly.
 * Private to src/mesh/.
 *
 * Every call is blocking, bounded by the timeout given to connect, and must be made by every member
 * in the same order with buffers of the same sizes (Gloo aborts the process on a size mismatch; the
 * bootstrap's fact check and the fixed-size exchanges before every variable-size one guarantee it).
 */
#ifndef UFORM_MESH_GLOO_H
#define UFORM_MESH_GLOO_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The module exports these names (and nothing else); libuform's objects keep them hidden. */
#if defined(UFORM_BUILDING_GLOO_MODULE)
#define UFORM__GLOO_EXPORT __attribute__((visibility("default")))
#else
#define UFORM__GLOO_EXPORT
#endif

/* The interface between libuform and the module: libuform's ABI major version in the high 16 bits,
 * a revision of this header in the low 16. Bump the revision whenever a declaration here changes
 * (or a type they use: uform_status_t, uform__gloo_scalar_t), so that a stale module left in a
 * library folder is refused rather than called with the wrong arguments. */
#define UFORM__GLOO_ABI ((UFORM_VERSION_MAJOR << 16) | 2)

typedef struct uform__gloo_s uform__gloo_t;

/* Answers the UFORM__GLOO_ABI the module was built with; looked up first. */
UFORM__GLOO_EXPORT uint32_t uform__gloo_module_abi(void);

typedef enum uform__gloo_scalar_t { UFORM__GLOO_F32 = 0, UFORM__GLOO_F64 = 1 } uform__gloo_scalar_t;

/*
 * A key–value store as the bootstrap sees it (docs/mesh.md, "Rendezvous"): the TCP store's client
 * in libuform (store_tcp.c) or a Redis server through the module (uform__gloo_redis_open). Every call
 * is bounded by the timeout the store was opened with and answers UFORM_OK, UFORM_TIMEOUT (no answer
 * in time), UFORM_PEER_LOST (the store's host closed the connection), UFORM_IO (the store refused),
 * UFORM_OUT_OF_MEMORY or UFORM_INTERNAL, with the store's words in `message`.
 *   add     stores `value` under `key` unless the key exists (*added 0 then); the key expires after
 *           `ttl_ms` where the store can expire keys (Redis), else lives as long as the store
 *   set     stores `value` under `key`, replacing it (the collectives' rendezvous; same expiry)
 *   get     a key's value, malloc'ed (free it), without waiting: *found 0 when it is not there
 *   remove  deletes a key (there or not)
 *   now_ms  the store's own clock in milliseconds (the age of a key is measured against it)
 *   close   ends the connection and frees `state`
 */
typedef struct uform__gloo_kv_t {
    void *state;
    uform_status_t (*add)(void *state, const char *key, const void *value, size_t length, int64_t ttl_ms, int *added,
                          char *message, size_t capacity);
    uform_status_t (*set)(void *state, const char *key, const void *value, size_t length, int64_t ttl_ms,
                          char *message, size_t capacity);
    uform_status_t (*get)(void *state, const char *key, void **value, size_t *length, int *found, char *message,
                          size_t capacity);
    uform_status_t (*remove)(void *state, const char *key, char *message, size_t capacity);
    uform_status_t (*now_ms)(void *state, int64_t *now, char *message, size_t capacity);
    void (*close)(void *state);
} uform__gloo_kv_t;

/*
 * Connects to the Redis server at host:port (retrying a refused connection until the timeout) and
 * fills `*kv` with the functions above over it, Gloo's RedisStore underneath: every command bounded
 * by `timeout_ms`, keys set with an expiry. UFORM_TIMEOUT when nobody answers in time.
 */
UFORM__GLOO_EXPORT uform_status_t uform__gloo_redis_open(const char *host, int port, int64_t timeout_ms,
                                                         uform__gloo_kv_t *kv, char *message, size_t capacity);

/*
 * Binds the TCP transport on `address` (numeric IPv4 or IPv6; an ephemeral port per peer), meets the
 * other `size - 1` members through a store — Gloo's FileStore in the existing folder `folder` when it
 * is not NULL, else `kv` under the key prefix `prefix` (a Redis store of uform__gloo_redis_open
 * through Gloo's own RedisStore, any other through its functions) — connects to each of them and sets
 * `timeout_ms` as the timeout of the rendezvous and of every later collective. Answers UFORM_OK,
 * UFORM_IO (the address cannot be bound, the store cannot be written), UFORM_TIMEOUT,
 * UFORM_PEER_LOST, UFORM_OUT_OF_MEMORY or UFORM_INTERNAL.
 */
UFORM__GLOO_EXPORT uform_status_t uform__gloo_connect(const char *folder, const uform__gloo_kv_t *kv,
                                                      const char *prefix, const char *address, size_t rank,
                                                      size_t size, int64_t timeout_ms, uform__gloo_t **gloo,
                                                      char *message, size_t capacity);

/* values[count] ← their sum over the members; the result is bit-identical on every member (a ring:
 * each segment is reduced once, then copied). */
UFORM__GLOO_EXPORT uform_status_t uform__gloo_allreduce_sum(uform__gloo_t *gloo, void *values, size_t count,
                                                            uform__gloo_scalar_t scalar, char *message,
                                                            size_t capacity);

/* output ← the members' inputs end to end; member r contributes bytes[r] bytes (`input` holds this
 * member's bytes[rank]). */
UFORM__GLOO_EXPORT uform_status_t uform__gloo_allgatherv(uform__gloo_t *gloo, const void *input, void *output,
                                                         const size_t *bytes, char *message, size_t capacity);

/* data[bytes] ← member `root`'s data[bytes]. */
UFORM__GLOO_EXPORT uform_status_t uform__gloo_broadcast(uform__gloo_t *gloo, void *data, size_t bytes, size_t root,
                                                        char *message, size_t capacity);

/* Returns once every member has called it. */
UFORM__GLOO_EXPORT uform_status_t uform__gloo_barrier(uform__gloo_t *gloo, char *message, size_t capacity);

/* Closes every connection now, so peers waiting on this member fail at once (PEER_LOST) instead of
 * waiting for their timeout. The handle stays valid until freed; its collectives then fail. */
UFORM__GLOO_EXPORT void uform__gloo_close(uform__gloo_t *gloo);

/* Closes and frees. NULL is a no-op. */
UFORM__GLOO_EXPORT void uform__gloo_free(uform__gloo_t *gloo);

#ifdef __cplusplus
}
#endif

#endif
