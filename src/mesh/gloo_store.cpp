/*
 * The stores of the collectives' rendezvous (gloo_store.hpp), and the Redis store the bootstrap uses
 * (gloo.h, uform__gloo_redis_open). Part of the module libuform-gloo.so.4, like gloo.cpp.
 *
 * Gloo's connectFullMesh sets "rank_{r}" (its host name) and "{r}" (its pairs' addresses) and waits
 * for every other member's. It does that through one of three stores:
 *
 * - a FileStore in directory/job/store (the folder rendezvous), whose waits take the mesh's timeout
 *   instead of Debian's fixed 30 s;
 * - Gloo's RedisStore under the prefix "uform/{job}/gloo" (Gloo's PrefixStore), our subclass adding
 *   what the bootstrap needs and RedisStore's API lacks: a timeout on every command (hiredis blocks
 *   forever on a server that stopped answering), keys that expire (a failed run's keys never block a
 *   later one for long), add-if-absent, delete and the server's clock; and its waits bounded by the
 *   mesh's timeout, measured in milliseconds;
 * - any other store (the tcp:// store hosted by member 0, whose client is C in libuform) through the
 *   functions of its uform__gloo_kv_t.
 *
 * A store's failure crosses Gloo as status_error, so gloo.cpp's guard answers the store's status.
 */
#include "mesh/gloo_store.hpp"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <exception>
#include <new>
#include <thread>
#include <vector>

#include <gloo/common/error.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#define HIREDIS_NESTED_INCLUDE 1
#include <gloo/rendezvous/redis_store.h>

namespace uform_gloo {
namespace {

using milliseconds = std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

/* How long a key set for a bootstrap lives in a store that expires keys: the bootstrap's own wait,
 * plus a minute for a slow member's clean-up. */
int64_t ttl_for(milliseconds timeout) { return (int64_t)timeout.count() + 60000; }

/* Waits until `found(key)` holds for every key, polling every 10 ms, at most `timeout`; then throws
 * status_error(UFORM_TIMEOUT) naming the key ("where" says whose store). */
template <typename Found>
void wait_for(const std::vector<std::string> &keys, const milliseconds &timeout, const std::string &where, Found found) {
    auto deadline = steady::now() + timeout;
    for (const std::string &key : keys)
        while (!found(key)) {
            if (steady::now() >= deadline)
                throw status_error(UFORM_TIMEOUT, where + "timed out after " + std::to_string(timeout.count()) +
                                                      " ms waiting for '" + key + "'");
            std::this_thread::sleep_for(milliseconds(10));
        }
}

/* Debian's FileStore::get waits for a key with the store's fixed default (30 s), whatever the
 * context's timeout; every wait here takes the mesh's timeout instead. */
class timed_file_store : public gloo::rendezvous::FileStore {
  public:
    timed_file_store(const std::string &path, milliseconds timeout) : FileStore(path), timeout_(timeout) {}
    void wait(const std::vector<std::string> &keys) override { FileStore::wait(keys, timeout_); }
    void wait(const std::vector<std::string> &keys, const milliseconds &timeout) override {
        FileStore::wait(keys, timeout);
    }

  private:
    milliseconds timeout_;
};

/* ---- Redis ---- */

class redis_store : public gloo::rendezvous::RedisStore {
  public:
    redis_store(const std::string &host, int port, milliseconds timeout)
        : RedisStore(host, port), where_("Redis at " + host + ":" + std::to_string(port)), timeout_(timeout) {
        struct timeval limit;
        limit.tv_sec = (time_t)(timeout.count() / 1000);
        limit.tv_usec = (suseconds_t)(timeout.count() % 1000) * 1000;
        if (redisSetTimeout(redis_, limit) != REDIS_OK) fail(nullptr, "setting the command timeout");
    }

    /* Gloo's keys: added once, expiring. */
    void set(const std::string &key, const std::vector<char> &data) override {
        if (!add(key, data.data(), data.size(), ttl_for(timeout_)))
            throw status_error(UFORM_IO, where_ + ": the key '" + key + "' is already set (a member twice?)");
    }

    std::vector<char> get(const std::string &key) override {
        wait({key});
        std::vector<char> value;
        if (!try_get(key, value)) throw status_error(UFORM_IO, where_ + ": the key '" + key + "' vanished");
        return value;
    }

    void wait(const std::vector<std::string> &keys) override { wait(keys, timeout_); }

    void wait(const std::vector<std::string> &keys, const milliseconds &timeout) override {
        wait_for(keys, timeout, where_ + ": ", [&](const std::string &key) { return exists(key); });
    }

    bool add(const std::string &key, const void *value, size_t length, int64_t ttl_ms) {
        redisReply *reply = command("SET %b %b NX PX %lld", key.data(), key.size(), value, length, (long long)ttl_ms);
        bool added = reply->type == REDIS_REPLY_STATUS;
        freeReplyObject(reply);
        return added;
    }

    bool try_get(const std::string &key, std::vector<char> &value) {
        redisReply *reply = command("GET %b", key.data(), key.size());
        bool found = reply->type == REDIS_REPLY_STRING;
        if (found) value.assign(reply->str, reply->str + reply->len);
        freeReplyObject(reply);
        return found;
    }

    bool exists(const std::string &key) {
        redisReply *reply = command("EXISTS %b", key.data(), key.size());
        bool found = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        freeReplyObject(reply);
        return found;
    }

    void remove(const std::string &key) { freeReplyObject(command("DEL %b", key.data(), key.size())); }

    int64_t now_ms() {
        redisReply *reply = command("TIME");
        int64_t now = -1;
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 && reply->element[0]->type == REDIS_REPLY_STRING &&
            reply->element[1]->type == REDIS_REPLY_STRING)
            now = strtoll(reply->element[0]->str, nullptr, 10) * 1000 + strtoll(reply->element[1]->str, nullptr, 10) / 1000;
        freeReplyObject(reply);
        if (now < 0) throw status_error(UFORM_IO, where_ + ": TIME gave no time");
        return now;
    }

  private:
    template <typename... Arguments> redisReply *command(const char *format, Arguments... arguments) {
        void *answer = redisCommand(redis_, format, arguments...);
        if (!answer) fail(nullptr, format);
        redisReply *reply = static_cast<redisReply *>(answer);
        if (reply->type == REDIS_REPLY_ERROR) fail(reply, format);
        return reply;
    }

    [[noreturn]] void fail(redisReply *reply, const char *what) {
        std::string text = where_ + ": ";
        uform_status_t status = UFORM_IO;
        if (reply) {
            text += std::string("answered '") + what + "' with " + std::string(reply->str, reply->len);
            freeReplyObject(reply);
        } else {
            int timed_out = redis_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
            if (timed_out) status = UFORM_TIMEOUT;
            text += timed_out ? "no answer within " + std::to_string(timeout_.count()) + " ms" : std::string(redis_->errstr);
        }
        throw status_error(status, text);
    }

    std::string where_;
    milliseconds timeout_;
};

void write_message(char *message, size_t capacity, const std::string &text) {
    if (!message || capacity == 0) return;
    size_t length = text.size() < capacity - 1 ? text.size() : capacity - 1;
    memcpy(message, text.data(), length);
    message[length] = '\0';
}

/* Runs `body` for a kv function of the Redis store: no exception crosses into C. */
template <typename Body> uform_status_t redis_call(char *message, size_t capacity, Body body) {
    try {
        body();
        return UFORM_OK;
    } catch (const status_error &error) {
        write_message(message, capacity, error.what());
        return error.status;
    } catch (const std::bad_alloc &) {
        write_message(message, capacity, "out of memory");
        return UFORM_OUT_OF_MEMORY;
    } catch (const std::exception &error) {
        write_message(message, capacity, error.what());
        return UFORM_IO;
    } catch (...) {
        write_message(message, capacity, "an unknown C++ exception");
        return UFORM_INTERNAL;
    }
}

redis_store *redis_of(void *state) { return static_cast<redis_store *>(state); }

uform_status_t redis_add(void *state, const char *key, const void *value, size_t length, int64_t ttl_ms, int *added,
                         char *message, size_t capacity) {
    return redis_call(message, capacity, [&] { *added = redis_of(state)->add(key, value, length, ttl_ms); });
}

uform_status_t redis_set(void *state, const char *key, const void *value, size_t length, int64_t ttl_ms,
                         char *message, size_t capacity) {
    return redis_call(message, capacity, [&] {
        redis_store *store = redis_of(state);
        store->remove(key);
        if (!store->add(key, value, length, ttl_ms)) throw status_error(UFORM_IO, "the key was set meanwhile");
    });
}

uform_status_t redis_get(void *state, const char *key, void **value, size_t *length, int *found, char *message,
                         size_t capacity) {
    *value = nullptr, *length = 0, *found = 0;
    return redis_call(message, capacity, [&] {
        std::vector<char> bytes;
        if (!redis_of(state)->try_get(key, bytes)) return;
        void *copy = malloc(bytes.size() + 1);
        if (!copy) throw std::bad_alloc();
        if (!bytes.empty()) memcpy(copy, bytes.data(), bytes.size());
        static_cast<char *>(copy)[bytes.size()] = 0;
        *value = copy, *length = bytes.size(), *found = 1;
    });
}

uform_status_t redis_remove(void *state, const char *key, char *message, size_t capacity) {
    return redis_call(message, capacity, [&] { redis_of(state)->remove(key); });
}

uform_status_t redis_now(void *state, int64_t *now, char *message, size_t capacity) {
    return redis_call(message, capacity, [&] { *now = redis_of(state)->now_ms(); });
}

void redis_close(void *state) {
    char ignored[8];
    redis_call(ignored, sizeof ignored, [&] { delete redis_of(state); });
}

/* ---- any other kv: its functions ---- */

class kv_store : public gloo::rendezvous::Store {
  public:
    kv_store(const uform__gloo_kv_t *kv, const std::string &prefix, milliseconds timeout)
        : kv_(*kv), prefix_(prefix), timeout_(timeout) {}

    void set(const std::string &key, const std::vector<char> &data) override {
        char said[256] = "";
        uform_status_t status =
            kv_.set(kv_.state, (prefix_ + key).c_str(), data.data(), data.size(), ttl_for(timeout_), said, sizeof said);
        if (status != UFORM_OK) throw status_error(status, said);
    }

    std::vector<char> get(const std::string &key) override {
        wait({key});
        std::vector<char> value;
        if (!try_get(key, value)) throw status_error(UFORM_IO, "the key '" + prefix_ + key + "' vanished");
        return value;
    }

    void wait(const std::vector<std::string> &keys) override { wait(keys, timeout_); }

    void wait(const std::vector<std::string> &keys, const milliseconds &timeout) override {
        std::vector<char> ignored;
        wait_for(keys, timeout, "the rendezvous store, under '" + prefix_ + "': ",
                 [&](const std::string &key) { return try_get(key, ignored); });
    }

  private:
    bool try_get(const std::string &key, std::vector<char> &value) {
        char said[256] = "";
        void *bytes = nullptr;
        size_t length = 0;
        int found = 0;
        uform_status_t status = kv_.get(kv_.state, (prefix_ + key).c_str(), &bytes, &length, &found, said, sizeof said);
        if (status != UFORM_OK) throw status_error(status, said);
        if (found) value.assign(static_cast<char *>(bytes), static_cast<char *>(bytes) + length);
        free(bytes);
        return found != 0;
    }

    uform__gloo_kv_t kv_;
    std::string prefix_;
    milliseconds timeout_;
};

/* A PrefixStore that owns nothing but keeps the kv's Redis store it wraps. */
class redis_prefix_store : public gloo::rendezvous::PrefixStore {
  public:
    redis_prefix_store(const std::string &prefix, redis_store &store, milliseconds timeout)
        : PrefixStore(prefix, store), timeout_(timeout) {}
    /* PrefixStore waits its fixed 30 s otherwise. */
    void wait(const std::vector<std::string> &keys) override { PrefixStore::wait(keys, timeout_); }
    void wait(const std::vector<std::string> &keys, const milliseconds &timeout) override {
        PrefixStore::wait(keys, timeout);
    }

  private:
    milliseconds timeout_;
};

} // namespace

std::unique_ptr<gloo::rendezvous::Store> make_store(const char *folder, const uform__gloo_kv_t *kv,
                                                    const std::string &prefix, milliseconds timeout) {
    if (folder) return std::unique_ptr<gloo::rendezvous::Store>(new timed_file_store(folder, timeout));
    if (kv->add == &redis_add) {
        /* PrefixStore joins "prefix/key"; ours ends in '/' already. */
        std::string bare = !prefix.empty() && prefix.back() == '/' ? prefix.substr(0, prefix.size() - 1) : prefix;
        return std::unique_ptr<gloo::rendezvous::Store>(new redis_prefix_store(bare, *redis_of(kv->state), timeout));
    }
    return std::unique_ptr<gloo::rendezvous::Store>(new kv_store(kv, prefix, timeout));
}

} // namespace uform_gloo

extern "C" uform_status_t uform__gloo_redis_open(const char *host, int port, int64_t timeout_ms, uform__gloo_kv_t *kv,
                                                 char *message, size_t capacity) {
    using namespace uform_gloo;
    memset(kv, 0, sizeof *kv);
    auto deadline = steady::now() + milliseconds(timeout_ms);
    std::string last;
    for (;;) {
        /* Gloo's RedisStore throws from its constructor when the server refuses, leaking the hiredis
         * context it made (its destructor never runs): knock first with a context of our own. */
        struct timeval knock = {2, 0};
        redisContext *probe = redisConnectWithTimeout(host, port, knock);
        std::string refused = !probe ? std::string("out of memory") : probe->err ? std::string(probe->errstr) : "";
        if (probe) redisFree(probe);
        if (!refused.empty()) {
            if (steady::now() >= deadline) {
                write_message(message, capacity, "no Redis server answered at " + std::string(host) + ":" +
                                                     std::to_string(port) + " within " + std::to_string(timeout_ms) +
                                                     " ms (Connecting to Redis: " + refused + ")");
                return UFORM_TIMEOUT;
            }
            std::this_thread::sleep_for(milliseconds(50));
            continue;
        }
        redis_store *store = nullptr;
        uform_status_t status = redis_call(message, capacity, [&] {
            try {
                store = new redis_store(host, port, milliseconds(timeout_ms));
            } catch (const gloo::IoException &error) {
                /* The constructor's own: the server is not there (yet). Gloo's messages start with
                 * "[file:line] ". */
                std::string text = error.what();
                size_t words = text.rfind("] ");
                throw status_error(UFORM_TIMEOUT, words == std::string::npos ? text : text.substr(words + 2));
            }
        });
        if (status == UFORM_OK) {
            kv->state = store;
            kv->add = &redis_add, kv->set = &redis_set, kv->get = &redis_get, kv->remove = &redis_remove;
            kv->now_ms = &redis_now, kv->close = &redis_close;
            return UFORM_OK;
        }
        if (status != UFORM_TIMEOUT) return status;
        if (steady::now() >= deadline) {
            std::string said = message;
            write_message(message, capacity, "no Redis server answered at " + std::string(host) + ":" +
                                                 std::to_string(port) + " within " + std::to_string(timeout_ms) +
                                                 " ms (" + said + ")");
            return UFORM_TIMEOUT;
        }
        std::this_thread::sleep_for(milliseconds(50));
    }
}
