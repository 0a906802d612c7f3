/*
 * The rendezvous stores of a mesh without a shared folder (docs/mesh.md, "Rendezvous"): the tcp://
 * store that member 0 hosts while the members bootstrap (its server, store_server.c, and the client
 * every member uses, store_tcp.c) and, through the collectives module, a Redis server. Both answer the
 * key–value interface of gloo.h (uform__gloo_kv_t), which the bootstrap (rendezvous_store.c) and
 * Gloo's rendezvous use alike. Private to src/mesh/.
 *
 * The tcp:// protocol, version 1. Every message is a frame: a 4-byte big-endian length N (1 to
 * UFORM__KV_FRAME_LIMIT), then N bytes. A request is
 *     op (1 byte) | key length K (2 bytes, big-endian) | key (K bytes) | value (N − 3 − K bytes)
 * and its reply
 *     code (1 byte) | value (N − 1 bytes)
 * Ops: 'H' hello (key "uform-kv/1", value the job: answered 'O' with the store's 8-byte nonce, or
 * 'X' with a reason when the job or the protocol differ; it must come first), 'A' add (answered
 * 'O' when added, 'E' when the key exists), 'S' set (replaces; 'O'), 'G' get ('O' with the value,
 * 'M' when missing), 'D' delete ('O'), 'T' time ('O' with the server's monotonic clock in
 * milliseconds, 8 bytes big-endian). 'X' answers anything refused, with the reason. A client sends
 * one request at a time and waits for its reply. Keys are at most UFORM__KV_KEY_LIMIT bytes, values
 * at most UFORM__KV_VALUE_LIMIT; the server holds at most UFORM__KV_KEYS keys and
 * UFORM__KV_CONNECTIONS connections, and closes a connection that breaks a rule.
 */
#ifndef UFORM_MESH_STORE_H
#define UFORM_MESH_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "core/outcome.h"
#include "mesh/gloo.h"

#define UFORM__KV_PROTOCOL "uform-kv/1"
#define UFORM__KV_KEY_LIMIT 512
#define UFORM__KV_VALUE_LIMIT ((size_t)1 << 20)
#define UFORM__KV_FRAME_LIMIT (3 + UFORM__KV_KEY_LIMIT + UFORM__KV_VALUE_LIMIT)
#define UFORM__KV_KEYS 65536
#define UFORM__KV_CONNECTIONS 1024

/* A rendezvous URL taken apart: "tcp://HOST:PORT" or "redis://HOST:PORT" (HOST a name, an IPv4
 * address or a bracketed IPv6 one). */
typedef enum uform__kv_scheme_t { UFORM__KV_TCP = 1, UFORM__KV_REDIS = 2 } uform__kv_scheme_t;
typedef struct uform__kv_url_t {
    uform__kv_scheme_t scheme;
    char host[256];
    int port;
} uform__kv_url_t;

/* UFORM_OK or UFORM_INVALID_ARGUMENT naming what is wrong with `text` (as options.rendezvous). */
uform_status_t uform__kv_url_parse(const char *text, uform__kv_url_t *url, uform_outcome_t *outcome,
                                   const char *function);

/* ---- the tcp:// server (member 0) ---- */

typedef struct uform__kv_server_s uform__kv_server_t;

/* Binds `port` on every interface (IPv6 and IPv4 where the host has both) and serves the protocol on
 * a thread of its own, for `job`. UFORM_IO when the port cannot be bound (in use: another job's
 * store, or a run that has not let go of it), UFORM_OUT_OF_MEMORY. */
uform_status_t uform__kv_server_start(int port, const char *job, uform__kv_server_t **server, uform_outcome_t *outcome,
                                      const char *function);

/* Whether the server's thread ran out of memory serving a request (its client was told so, and
 * the connection closed): the bootstrap of the member that hosts it fails with UFORM_OUT_OF_MEMORY. */
int uform__kv_server_out_of_memory(uform__kv_server_t *server);

/* Connections open right now (they say hello, work and close; member 0 waits for them to go). */
size_t uform__kv_server_connections(uform__kv_server_t *server);

/* Stops the thread, closes every connection and frees the server. NULL is a no-op. */
void uform__kv_server_stop(uform__kv_server_t *server);

/* ---- the tcp:// client (every member) ---- */

/* Connects to the store at `url` and says hello for `job`, retrying a refused or unanswered connection
 * until `timeout_ms` have passed (member 0 may start later than the others); every later call is
 * bounded by `timeout_ms` too. Fills `*kv` (gloo.h); kv->close ends it. UFORM_TIMEOUT when no store
 * answered in time, UFORM_INVALID_ARGUMENT when the store serves another job or protocol, UFORM_IO,
 * UFORM_OUT_OF_MEMORY. */
uform_status_t uform__kv_tcp_open(const uform__kv_url_t *url, const char *job, int64_t timeout_ms, uform__gloo_kv_t *kv,
                                  uform_outcome_t *outcome, const char *function);

/* The client of the member that hosts `server` (member 0): every later call first checks whether
 * the server ran out of memory, and answers UFORM_OUT_OF_MEMORY then. */
void uform__kv_tcp_host(uform__gloo_kv_t *kv, uform__kv_server_t *server);

/* ---- frames, shared by both ends ---- */

static inline void uform__kv_put32(unsigned char *at, uint32_t value) {
    at[0] = (unsigned char)(value >> 24), at[1] = (unsigned char)(value >> 16);
    at[2] = (unsigned char)(value >> 8), at[3] = (unsigned char)value;
}
static inline uint32_t uform__kv_get32(const unsigned char *at) {
    return ((uint32_t)at[0] << 24) | ((uint32_t)at[1] << 16) | ((uint32_t)at[2] << 8) | (uint32_t)at[3];
}
static inline void uform__kv_put64(unsigned char *at, uint64_t value) {
    uform__kv_put32(at, (uint32_t)(value >> 32)), uform__kv_put32(at + 4, (uint32_t)value);
}
static inline uint64_t uform__kv_get64(const unsigned char *at) {
    return ((uint64_t)uform__kv_get32(at) << 32) | uform__kv_get32(at + 4);
}

#endif
