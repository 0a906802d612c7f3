/*
 * The tcp:// store's server (store.h): member 0 hosts it on a thread of its own while the members
 * bootstrap. One thread, poll(2) over the listening socket, the connections and a pipe that stops
 * it; keys in a small array (a bootstrap holds a few per member). Nothing here blocks: reads and
 * writes are non-blocking and buffered per connection, so a slow or silent client never holds up
 * the others.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mesh/store.h"
#include "core/clock.h"

typedef struct entry_t {
    char *key;
    unsigned char *value;
    size_t length;
} entry_t;

typedef struct connection_t {
    int fd;
    int greeted;
    unsigned char *in;   /* a frame being read: its 4-byte length, then its bytes */
    size_t in_used, in_capacity;
    unsigned char *out;  /* replies not yet written */
    size_t out_used, out_sent, out_capacity;
} connection_t;

struct uform__kv_server_s {
    pthread_t thread;
    int listener;
    int wake[2];                 /* writing wake[1] stops the thread */
    char job[160];
    uint64_t nonce;
    entry_t *entries;
    size_t entry_count, entry_capacity, stored_bytes;
    connection_t *connections;
    size_t connection_count;     /* written by the thread, read by others: atomic */
    struct pollfd *polls;        /* [UFORM__KV_CONNECTIONS + 2], made before the thread starts */
    int out_of_memory;           /* the thread could not allocate (atomic): member 0's bootstrap fails */
};

static void connection_close(connection_t *connection) {
    if (connection->fd >= 0) close(connection->fd);
    free(connection->in), free(connection->out);
    memset(connection, 0, sizeof *connection);
    connection->fd = -1;
}

/* Without memory for a reply, the client still learns why before the connection closes: this frame
 * is sent as it is (best effort: a non-blocking send of 29 bytes into an empty socket buffer). */
static void say_out_of_memory(uform__kv_server_t *server, connection_t *connection) {
    __atomic_store_n(&server->out_of_memory, 1, __ATOMIC_RELEASE);
    static const char text[] = "the store is out of memory";
    unsigned char frame[4 + 1 + sizeof text - 1];
    uform__kv_put32(frame, (uint32_t)sizeof text);
    frame[4] = 'X';
    memcpy(frame + 5, text, sizeof text - 1);
    if (send(connection->fd, frame, sizeof frame, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
    }
}

/* Appends a reply frame; -1 without memory (the connection is then closed, after saying so). */
static int reply(uform__kv_server_t *server, connection_t *connection, char code, const void *value, size_t length) {
    size_t need = connection->out_used + 5 + length;
    if (need > connection->out_capacity) {
        size_t capacity = need * 2;
        unsigned char *grown = realloc(connection->out, capacity);
        if (!grown) return say_out_of_memory(server, connection), -1;
        connection->out = grown, connection->out_capacity = capacity;
    }
    unsigned char *at = connection->out + connection->out_used;
    uform__kv_put32(at, (uint32_t)(1 + length));
    at[4] = (unsigned char)code;
    if (length) memcpy(at + 5, value, length);
    connection->out_used = need;
    return 0;
}

static int reply_text(uform__kv_server_t *server, connection_t *connection, const char *text) {
    return reply(server, connection, 'X', text, strlen(text));
}

static entry_t *find(uform__kv_server_t *server, const char *key) {
    for (size_t i = 0; i < server->entry_count; ++i)
        if (strcmp(server->entries[i].key, key) == 0) return &server->entries[i];
    return NULL;
}

static int out_of_memory(uform__kv_server_t *server, const char **why) {
    __atomic_store_n(&server->out_of_memory, 1, __ATOMIC_RELEASE);
    *why = "the store is out of memory";
    return -1;
}

/* Stores key = value (replacing); -1 with the reason in `why`. */
static int store(uform__kv_server_t *server, const char *key, const unsigned char *value, size_t length,
                 const char **why) {
    entry_t *entry = find(server, key);
    size_t previous = entry ? entry->length : 0;
    if (server->stored_bytes - previous + length > ((size_t)64 << 20)) return *why = "the store holds 64 MiB already", -1;
    unsigned char *copy = malloc(length + 1);
    if (!copy) return out_of_memory(server, why);
    if (length) memcpy(copy, value, length);
    if (!entry) {
        if (server->entry_count == UFORM__KV_KEYS) return free(copy), *why = "the store holds too many keys", -1;
        if (server->entry_count == server->entry_capacity) {
            size_t capacity = server->entry_capacity ? 2 * server->entry_capacity : 64;
            entry_t *grown = realloc(server->entries, capacity * sizeof *grown);
            if (!grown) return free(copy), out_of_memory(server, why);
            server->entries = grown, server->entry_capacity = capacity;
        }
        char *name = strdup(key);
        if (!name) return free(copy), out_of_memory(server, why);
        entry = &server->entries[server->entry_count++];
        entry->key = name, entry->value = NULL, entry->length = 0;
    }
    free(entry->value);
    server->stored_bytes = server->stored_bytes - previous + length;
    entry->value = copy, entry->length = length;
    return 0;
}

static void erase(uform__kv_server_t *server, const char *key) {
    entry_t *entry = find(server, key);
    if (!entry) return;
    server->stored_bytes -= entry->length;
    free(entry->key), free(entry->value);
    *entry = server->entries[--server->entry_count];
}

/* One request (payload of `length` bytes); -1 closes the connection. */
static int serve(uform__kv_server_t *server, connection_t *connection, const unsigned char *payload, size_t length) {
    if (length < 3) return -1;
    char op = (char)payload[0];
    size_t key_length = ((size_t)payload[1] << 8) | payload[2];
    if (key_length > UFORM__KV_KEY_LIMIT || 3 + key_length > length) return -1;
    char key[UFORM__KV_KEY_LIMIT + 1];
    memcpy(key, payload + 3, key_length);
    key[key_length] = 0;
    if (strlen(key) != key_length) return -1; /* no NUL inside a key */
    const unsigned char *value = payload + 3 + key_length;
    size_t value_length = length - 3 - key_length;
    if (!connection->greeted && op != 'H') {
        reply_text(server, connection, "say hello first");
        return -1;
    }
    const char *why = NULL;
    unsigned char word[8];
    switch (op) {
    case 'H': {
        char job[sizeof server->job];
        size_t kept = value_length < sizeof job - 1 ? value_length : sizeof job - 1;
        memcpy(job, value, kept);
        job[kept] = 0;
        char text[UFORM__KV_KEY_LIMIT + 400];
        if (strcmp(key, UFORM__KV_PROTOCOL) != 0) {
            snprintf(text, sizeof text, "this store speaks %s, not '%s'", UFORM__KV_PROTOCOL, key);
            return reply_text(server, connection, text), -1;
        }
        if (value_length != strlen(server->job) || strcmp(job, server->job) != 0) {
            snprintf(text, sizeof text, "this store serves job '%s', not '%s'", server->job, job);
            return reply_text(server, connection, text), -1;
        }
        connection->greeted = 1;
        uform__kv_put64(word, server->nonce);
        return reply(server, connection, 'O', word, 8);
    }
    case 'A':
        if (find(server, key)) return reply(server, connection, 'E', NULL, 0);
        if (store(server, key, value, value_length, &why) != 0) return reply_text(server, connection, why);
        return reply(server, connection, 'O', NULL, 0);
    case 'S':
        if (store(server, key, value, value_length, &why) != 0) return reply_text(server, connection, why);
        return reply(server, connection, 'O', NULL, 0);
    case 'G': {
        entry_t *entry = find(server, key);
        return entry ? reply(server, connection, 'O', entry->value, entry->length) : reply(server, connection, 'M', NULL, 0);
    }
    case 'D':
        erase(server, key);
        return reply(server, connection, 'O', NULL, 0);
    case 'T':
        uform__kv_put64(word, (uint64_t)uform__milliseconds_now());
        return reply(server, connection, 'O', word, 8);
    default: return reply_text(server, connection, "unknown op"), -1;
    }
}

/* Reads what is there; serves every complete frame. -1 closes the connection. */
static int read_some(uform__kv_server_t *server, connection_t *connection) {
    for (;;) {
        size_t want = connection->in_used < 4 ? 4 : 4 + (size_t)uform__kv_get32(connection->in);
        if (connection->in_used >= 4 && (want == 4 || want > 4 + UFORM__KV_FRAME_LIMIT)) return -1;
        if (want > connection->in_capacity) {
            size_t capacity = want < 256 ? 256 : want;
            unsigned char *grown = realloc(connection->in, capacity);
            if (!grown) return say_out_of_memory(server, connection), -1;
            connection->in = grown, connection->in_capacity = capacity;
        }
        if (connection->in_used < want) {
            ssize_t got = recv(connection->fd, connection->in + connection->in_used, want - connection->in_used, 0);
            if (got == 0) return -1;
            if (got < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
            connection->in_used += (size_t)got;
            continue;
        }
        int served = serve(server, connection, connection->in + 4, want - 4);
        connection->in_used = 0;
        if (served != 0) return -1;
    }
}

static int write_some(connection_t *connection) {
    while (connection->out_sent < connection->out_used) {
        ssize_t sent = send(connection->fd, connection->out + connection->out_sent,
                            connection->out_used - connection->out_sent, MSG_NOSIGNAL);
        if (sent < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
        connection->out_sent += (size_t)sent;
    }
    connection->out_used = connection->out_sent = 0;
    return 0;
}

static void accept_all(uform__kv_server_t *server) {
    for (;;) {
        int fd = accept4(server->listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        if (server->connection_count == UFORM__KV_CONNECTIONS) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        connection_t *connection = &server->connections[server->connection_count];
        memset(connection, 0, sizeof *connection);
        connection->fd = fd;
        __atomic_store_n(&server->connection_count, server->connection_count + 1, __ATOMIC_RELEASE);
    }
}

static void *run(void *pointer) {
    uform__kv_server_t *server = pointer;
    struct pollfd *polls = server->polls;
    for (;;) {
        size_t count = server->connection_count;
        polls[0] = (struct pollfd){server->wake[0], POLLIN, 0};
        polls[1] = (struct pollfd){server->listener, POLLIN, 0};
        for (size_t i = 0; i < count; ++i) {
            connection_t *connection = &server->connections[i];
            polls[2 + i] = (struct pollfd){connection->fd, (short)(POLLIN | (connection->out_used ? POLLOUT : 0)), 0};
        }
        if (poll(polls, count + 2, -1) < 0 && errno != EINTR) break;
        if (polls[0].revents) break;
        for (size_t i = 0; i < count; ++i) {
            connection_t *connection = &server->connections[i];
            short events = polls[2 + i].revents;
            int broken = 0;
            if (events & (POLLIN | POLLHUP | POLLERR)) broken = read_some(server, connection) != 0;
            /* A connection closed for breaking a rule still gets its last reply (best effort). */
            if (connection->out_used) broken |= write_some(connection) != 0;
            if (broken) connection_close(connection);
        }
        /* Drop the closed connections, keeping the order of the rest. */
        size_t kept = 0;
        for (size_t i = 0; i < count; ++i)
            if (server->connections[i].fd >= 0) server->connections[kept++] = server->connections[i];
        __atomic_store_n(&server->connection_count, kept, __ATOMIC_RELEASE);
        if (polls[1].revents & POLLIN) accept_all(server);
    }
    return NULL;
}

/* A socket bound to `port` on every interface: IPv6 with IPv4 mapped where the host has IPv6. */
static int bind_any(int port, int *error) {
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1, zero = 0;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        struct sockaddr_in6 any;
        memset(&any, 0, sizeof any);
        any.sin6_family = AF_INET6, any.sin6_addr = in6addr_any, any.sin6_port = htons((uint16_t)port);
        if (bind(fd, (struct sockaddr *)&any, sizeof any) == 0 && listen(fd, 256) == 0) return fd;
        *error = errno;
        close(fd);
        if (*error == EADDRINUSE) return -1;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return *error = errno, -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in any;
    memset(&any, 0, sizeof any);
    any.sin_family = AF_INET, any.sin_addr.s_addr = htonl(INADDR_ANY), any.sin_port = htons((uint16_t)port);
    if (bind(fd, (struct sockaddr *)&any, sizeof any) == 0 && listen(fd, 256) == 0) return fd;
    *error = errno;
    close(fd);
    return -1;
}

uform_status_t uform__kv_server_start(int port, const char *job, uform__kv_server_t **server, uform_outcome_t *outcome,
                                      const char *function) {
    *server = NULL;
    uform__kv_server_t *made = calloc(1, sizeof *made);
    connection_t *connections = calloc(UFORM__KV_CONNECTIONS, sizeof *connections);
    struct pollfd *polls = calloc(UFORM__KV_CONNECTIONS + 2, sizeof *polls);
    if (!made || !connections || !polls) {
        free(made), free(connections), free(polls);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the rendezvous store");
    }
    made->connections = connections, made->polls = polls;
    made->wake[0] = made->wake[1] = -1;
    snprintf(made->job, sizeof made->job, "%s", job);
    made->nonce = (uint64_t)uform__milliseconds_now() * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)made;
    int error = 0;
    made->listener = bind_any(port, &error);
    if (made->listener < 0) {
        free(connections), free(polls), free(made);
        return uform__fail(outcome, UFORM_IO, function,
                           "member 0 cannot host the rendezvous store on port %d: %s (another job's store, or an "
                           "earlier run's; choose another port)",
                           port, strerror(error));
    }
    if (pipe2(made->wake, O_CLOEXEC) != 0) {
        int saved = errno;
        close(made->listener);
        free(connections), free(polls), free(made);
        return uform__fail(outcome, saved == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO, function,
                           "cannot make the rendezvous store's pipe: %s", strerror(saved));
    }
    int started = pthread_create(&made->thread, NULL, run, made);
    if (started != 0) {
        close(made->listener), close(made->wake[0]), close(made->wake[1]);
        free(connections), free(polls), free(made);
        return uform__fail(outcome, started == EAGAIN || started == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_INTERNAL,
                           function, "cannot allocate a thread for the rendezvous store: %s", strerror(started));
    }
    *server = made;
    return UFORM_OK;
}

int uform__kv_server_out_of_memory(uform__kv_server_t *server) {
    return __atomic_load_n(&server->out_of_memory, __ATOMIC_ACQUIRE);
}

size_t uform__kv_server_connections(uform__kv_server_t *server) {
    return __atomic_load_n(&server->connection_count, __ATOMIC_ACQUIRE);
}

void uform__kv_server_stop(uform__kv_server_t *server) {
    if (!server) return;
    char byte = 1;
    while (write(server->wake[1], &byte, 1) < 0 && errno == EINTR) {
    }
    pthread_join(server->thread, NULL);
    for (size_t i = 0; i < server->connection_count; ++i) connection_close(&server->connections[i]);
    for (size_t i = 0; i < server->entry_count; ++i) free(server->entries[i].key), free(server->entries[i].value);
    close(server->listener), close(server->wake[0]), close(server->wake[1]);
    free(server->entries), free(server->connections), free(server->polls);
    free(server);
}
