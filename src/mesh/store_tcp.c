/*
 * The tcp:// store's client (store.h) and rendezvous URLs. Every member, member 0 included, talks to
 * the store through one connection: a request, then its reply, each bounded by the timeout. The
 * connection is made with retries (member 0 may start after the others), but once made it is never
 * made again: if it breaks, the store's host (member 0) has gone, and the bootstrap fails with
 * UFORM_PEER_LOST rather than meet a store that lost what the members wrote.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mesh/store.h"
#include "core/clock.h"

typedef struct tcp_client_t {
    int fd;
    int64_t timeout_ms;
    char where[300];     /* "the store at tcp://HOST:PORT (member 0)" */
    int broken;          /* the connection failed: every later call answers that */
    uform_status_t broken_status;
    uform__kv_server_t *server; /* the store this member hosts, or NULL */
} tcp_client_t;

static void sleep_ms(long milliseconds) {
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) == -1 && errno == EINTR) {
    }
}

uform_status_t uform__kv_url_parse(const char *text, uform__kv_url_t *url, uform_outcome_t *outcome,
                                   const char *function) {
    memset(url, 0, sizeof *url);
    const char *rest = NULL;
    if (strncmp(text, "tcp://", 6) == 0) url->scheme = UFORM__KV_TCP, rest = text + 6;
    else if (strncmp(text, "redis://", 8) == 0) url->scheme = UFORM__KV_REDIS, rest = text + 8;
    else
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.rendezvous '%s' is neither tcp://HOST:PORT nor redis://HOST:PORT", text);
    const char *colon;
    if (*rest == '[') {
        const char *close = strchr(rest, ']');
        if (!close || close[1] != ':' || close == rest + 1 || (size_t)(close - rest - 1) >= sizeof url->host)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "options.rendezvous '%s': an IPv6 address is written [ADDRESS]:PORT", text);
        memcpy(url->host, rest + 1, (size_t)(close - rest - 1));
        colon = close + 1;
    } else {
        colon = strrchr(rest, ':');
        if (!colon || colon == rest || (size_t)(colon - rest) >= sizeof url->host || memchr(rest, '/', (size_t)(colon - rest)))
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "options.rendezvous '%s' names no HOST:PORT", text);
        memcpy(url->host, rest, (size_t)(colon - rest));
    }
    char *end = NULL;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || port < 1 || port > 65535)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.rendezvous '%s': the port is not a number from 1 to 65535", text);
    url->port = (int)port;
    return UFORM_OK;
}

/* Waits for `events` on fd until `deadline` (ms); 1 ready, 0 timed out, -1 error. */
static int wait_for(int fd, short events, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - uform__milliseconds_now();
        if (left <= 0) return 0;
        struct pollfd one = {fd, events, 0};
        int ready = poll(&one, 1, left > 1000000 ? 1000000 : (int)left);
        if (ready > 0) return 1;
        if (ready < 0 && errno != EINTR) return -1;
    }
}

/* One connection attempt to any of the host's addresses; the socket, or -1 with errno. */
static int connect_once(const uform__kv_url_t *url, int64_t deadline, int *resolve_error) {
    struct addrinfo hints, *found = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC, hints.ai_socktype = SOCK_STREAM;
    char port[16];
    snprintf(port, sizeof port, "%d", url->port);
    *resolve_error = getaddrinfo(url->host, port, &hints, &found);
    if (*resolve_error != 0) return errno = 0, -1;
    int fd = -1, saved = ECONNREFUSED;
    for (struct addrinfo *address = found; address && fd < 0; address = address->ai_next) {
        fd = socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, address->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int done = connect(fd, address->ai_addr, address->ai_addrlen);
        if (done != 0 && errno == EINPROGRESS) {
            int ready = wait_for(fd, POLLOUT, deadline);
            int error = 0;
            socklen_t length = sizeof error;
            if (ready == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0) done = 0;
            else errno = ready == 1 ? error : ETIMEDOUT;
        }
        if (done != 0) {
            saved = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    errno = saved;
    return fd;
}

static uform_status_t broke(tcp_client_t *client, uform_status_t status, char *message, size_t capacity,
                            const char *format, const char *detail) {
    client->broken = 1, client->broken_status = status;
    snprintf(message, capacity, format, client->where, detail);
    return status;
}

/* Sends one request and reads its reply: *code and the value (malloc'ed, NUL-terminated). */
static uform_status_t exchange(tcp_client_t *client, char op, const char *key, const void *value, size_t length,
                               char *code, unsigned char **answer, size_t *answer_length, char *message,
                               size_t capacity) {
    *answer = NULL, *answer_length = 0;
    if (client->server && uform__kv_server_out_of_memory(client->server)) {
        snprintf(message, capacity, "the rendezvous store this member hosts could not allocate memory for a request");
        return UFORM_OUT_OF_MEMORY;
    }
    if (client->broken) {
        snprintf(message, capacity, "%s: the connection broke earlier", client->where);
        return client->broken_status;
    }
    size_t key_length = strlen(key);
    if (key_length > UFORM__KV_KEY_LIMIT || length > UFORM__KV_VALUE_LIMIT) {
        snprintf(message, capacity, "%s: a key of %zu bytes or a value of %zu bytes is over the store's limits",
                 client->where, key_length, length);
        return UFORM_INTERNAL;
    }
    size_t frame = 4 + 3 + key_length + length;
    unsigned char *out = malloc(frame);
    if (!out) return snprintf(message, capacity, "out of memory"), UFORM_OUT_OF_MEMORY;
    uform__kv_put32(out, (uint32_t)(frame - 4));
    out[4] = (unsigned char)op, out[5] = (unsigned char)(key_length >> 8), out[6] = (unsigned char)key_length;
    memcpy(out + 7, key, key_length);
    if (length) memcpy(out + 7 + key_length, value, length);
    int64_t deadline = uform__milliseconds_now() + client->timeout_ms;
    size_t sent = 0;
    uform_status_t status = UFORM_OK;
    while (status == UFORM_OK && sent < frame) {
        ssize_t wrote = send(client->fd, out + sent, frame - sent, MSG_NOSIGNAL);
        if (wrote > 0) {
            sent += (size_t)wrote;
        } else if (wrote < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (wait_for(client->fd, POLLOUT, deadline) != 1)
                status = broke(client, UFORM_TIMEOUT, message, capacity, "%s did not take a request within the timeout%s", "");
        } else {
            status = broke(client, UFORM_PEER_LOST, message, capacity, "%s closed the connection (%s): member 0 has left",
                           strerror(errno));
        }
    }
    free(out);
    if (status != UFORM_OK) return status;
    unsigned char header[4];
    unsigned char *in = header;
    size_t want = 4, got = 0;
    while (got < want) {
        ssize_t read = recv(client->fd, in + got, want - got, 0);
        if (read > 0) {
            got += (size_t)read;
            if (in == header && got == 4) {
                want = uform__kv_get32(header);
                if (want < 1 || want > UFORM__KV_FRAME_LIMIT)
                    return broke(client, UFORM_IO, message, capacity, "%s answered a malformed frame%s", "");
                in = malloc(want + 1);
                if (!in) return snprintf(message, capacity, "out of memory"), UFORM_OUT_OF_MEMORY;
                got = 0;
            }
            continue;
        }
        if (read < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (wait_for(client->fd, POLLIN, deadline) == 1) continue;
            if (in != header) free(in);
            return broke(client, UFORM_TIMEOUT, message, capacity, "%s did not answer within the timeout%s", "");
        }
        if (in != header) free(in);
        return broke(client, UFORM_PEER_LOST, message, capacity, "%s closed the connection%s: member 0 has left",
                     read == 0 ? "" : " (reset)");
    }
    in[want] = 0;
    *code = (char)in[0];
    memmove(in, in + 1, want - 1);
    in[want - 1] = 0;
    *answer = in, *answer_length = want - 1;
    if (*code == 'X') {
        /* The store's host ran out of memory (the host is member 0: its own bootstrap's failure). */
        int memory = strstr((const char *)in, "out of memory") != NULL;
        snprintf(message, capacity, "%s refused: %s", client->where, (const char *)in);
        free(in);
        *answer = NULL;
        if (memory) client->broken = 1, client->broken_status = UFORM_OUT_OF_MEMORY;
        return memory ? UFORM_OUT_OF_MEMORY : UFORM_IO;
    }
    return UFORM_OK;
}

/* A request whose reply's value does not matter: answers the status, and the reply's code. */
static uform_status_t request(void *state, char op, const char *key, const void *value, size_t length, char *code,
                              char *message, size_t capacity) {
    unsigned char *answer;
    size_t answer_length;
    uform_status_t status = exchange(state, op, key, value, length, code, &answer, &answer_length, message, capacity);
    free(answer);
    return status;
}

static uform_status_t tcp_add(void *state, const char *key, const void *value, size_t length, int64_t ttl_ms,
                              int *added, char *message, size_t capacity) {
    (void)ttl_ms; /* the store lives only as long as the bootstrap */
    char code = 0;
    uform_status_t status = request(state, 'A', key, value, length, &code, message, capacity);
    *added = code == 'O';
    return status;
}

static uform_status_t tcp_set(void *state, const char *key, const void *value, size_t length, int64_t ttl_ms,
                              char *message, size_t capacity) {
    (void)ttl_ms;
    char code = 0;
    return request(state, 'S', key, value, length, &code, message, capacity);
}

static uform_status_t tcp_get(void *state, const char *key, void **value, size_t *length, int *found, char *message,
                              size_t capacity) {
    char code = 0;
    unsigned char *answer;
    uform_status_t status = exchange(state, 'G', key, NULL, 0, &code, &answer, length, message, capacity);
    *found = status == UFORM_OK && code == 'O';
    if (!*found) free(answer), answer = NULL, *length = 0;
    *value = answer;
    return status;
}

static uform_status_t tcp_remove(void *state, const char *key, char *message, size_t capacity) {
    char code = 0;
    return request(state, 'D', key, NULL, 0, &code, message, capacity);
}

static uform_status_t tcp_now(void *state, int64_t *now, char *message, size_t capacity) {
    char code = 0;
    unsigned char *answer;
    size_t answer_length;
    uform_status_t status = exchange(state, 'T', "", NULL, 0, &code, &answer, &answer_length, message, capacity);
    if (status == UFORM_OK && answer_length == 8) *now = (int64_t)uform__kv_get64(answer);
    else if (status == UFORM_OK) status = UFORM_IO, snprintf(message, capacity, "the store's clock answered badly");
    free(answer);
    return status;
}

static void tcp_close(void *state) {
    tcp_client_t *client = state;
    if (!client) return;
    if (client->fd >= 0) close(client->fd);
    free(client);
}

uform_status_t uform__kv_tcp_open(const uform__kv_url_t *url, const char *job, int64_t timeout_ms, uform__gloo_kv_t *kv,
                                  uform_outcome_t *outcome, const char *function) {
    memset(kv, 0, sizeof *kv);
    tcp_client_t *client = calloc(1, sizeof *client);
    if (!client) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the store's client");
    client->fd = -1, client->timeout_ms = timeout_ms;
    snprintf(client->where, sizeof client->where, "the rendezvous store at tcp://%s:%d (member 0)", url->host, url->port);
    int64_t deadline = uform__milliseconds_now() + timeout_ms;
    int resolve_error = 0, last_error = 0;
    while (client->fd < 0) {
        client->fd = connect_once(url, deadline, &resolve_error);
        if (client->fd >= 0) break;
        /* The attempt the deadline cut short says less than the one before it ("refused"). */
        if (errno != ETIMEDOUT || last_error == 0) last_error = errno;
        if (uform__milliseconds_now() >= deadline) {
            char why[160];
            snprintf(why, sizeof why, "%s", resolve_error ? gai_strerror(resolve_error) : strerror(last_error));
            free(client);
            return uform__fail(outcome, UFORM_TIMEOUT, function,
                               "no rendezvous store answered at tcp://%s:%d within %.3g s (%s): member 0 hosts it, "
                               "so start member 0, on the host the address names",
                               url->host, url->port, (double)timeout_ms / 1000.0, why);
        }
        sleep_ms(50);
    }
    char code = 0, said[UFORM_OUTCOME_MESSAGE_CAPACITY];
    unsigned char *answer = NULL;
    size_t answer_length = 0;
    uform_status_t status =
        exchange(client, 'H', UFORM__KV_PROTOCOL, job, strlen(job), &code, &answer, &answer_length, said, sizeof said);
    free(answer);
    if (status != UFORM_OK) {
        tcp_close(client);
        return uform__fail(outcome, status == UFORM_IO ? UFORM_INVALID_ARGUMENT : status, function, "%s", said);
    }
    kv->state = client;
    kv->add = tcp_add, kv->set = tcp_set, kv->get = tcp_get, kv->remove = tcp_remove, kv->now_ms = tcp_now;
    kv->close = tcp_close;
    return UFORM_OK;
}

void uform__kv_tcp_host(uform__gloo_kv_t *kv, uform__kv_server_t *server) {
    tcp_client_t *client = kv->state;
    if (client) client->server = server;
}
