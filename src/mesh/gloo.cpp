/*
 * The shim over Gloo (gloo.h): with gloo_store.cpp (the rendezvous stores), the project's only C++
 * and the only code that includes a Gloo header. Both are built into the module libuform-gloo.so.4
 * (CMakeLists.txt), which libuform loads on demand (gloo_load.c). Patterns follow PyTorch's ProcessGroupGloo: a store for the rendezvous, one context per
 * group, the context's timeout on every operation. What we add:
 *
 * - No exception escapes: every entry point catches everything and answers a uform_status_t. Gloo
 *   reports a dead peer as an IoException ("Connection closed by peer", "Read error ... reset") and
 *   a silent one as an IoException mentioning a timeout; the first maps to UFORM_PEER_LOST, the
 *   second to UFORM_TIMEOUT.
 * - No SIGPIPE: Gloo's TCP pairs write with writev(2), which raises SIGPIPE when the peer is gone,
 *   and its default action kills the process. A library must not change the process's signal
 *   dispositions, so SIGPIPE is blocked in the threads that write: Gloo's event-loop thread inherits
 *   a mask with SIGPIPE blocked (the device is made while it is blocked here), and each collective
 *   blocks it in the calling thread for its duration and consumes a SIGPIPE it raised itself before
 *   restoring the caller's mask (the technique OpenSSL and libcurl document).
 */
#include "mesh/gloo.h"
#include "mesh/gloo_store.hpp"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <memory>
#include <new>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

struct uform__gloo_s {
    std::shared_ptr<gloo::rendezvous::Context> context;
    std::shared_ptr<gloo::transport::Device> device;
    bool closed = false;
};

namespace {

/* Blocks SIGPIPE in this thread for the guard's life; a SIGPIPE raised meanwhile (and not pending
 * before) is consumed, so the caller never sees it. */
class sigpipe_guard {
  public:
    sigpipe_guard() {
        sigset_t pipe;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        sigset_t pending;
        sigemptyset(&pending);
        sigpending(&pending);
        was_pending_ = sigismember(&pending, SIGPIPE) == 1;
        pthread_sigmask(SIG_BLOCK, &pipe, &saved_);
    }
    ~sigpipe_guard() {
        if (!was_pending_) {
            sigset_t pending;
            sigemptyset(&pending);
            sigpending(&pending);
            if (sigismember(&pending, SIGPIPE) == 1) {
                sigset_t pipe;
                sigemptyset(&pipe);
                sigaddset(&pipe, SIGPIPE);
                struct timespec zero = {0, 0};
                while (sigtimedwait(&pipe, nullptr, &zero) == -1 && errno == EINTR) {
                }
            }
        }
        pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
    }
    sigpipe_guard(const sigpipe_guard &) = delete;
    sigpipe_guard &operator=(const sigpipe_guard &) = delete;

  private:
    sigset_t saved_;
    bool was_pending_ = false;
};

void write_message(char *message, size_t capacity, const std::string &text) {
    if (!message || capacity == 0) return;
    size_t length = text.size() < capacity - 1 ? text.size() : capacity - 1;
    memcpy(message, text.data(), length);
    message[length] = '\0';
}

/* Gloo's messages start with "[file:line] "; keep only the words. */
std::string words_of(const char *what) {
    std::string text = what ? what : "";
    for (;;) {
        size_t open = text.find('['), close = text.find("] ");
        if (open != 0 || close == std::string::npos) break;
        text.erase(0, close + 2);
    }
    return text;
}

bool mentions_timeout(const std::string &text) {
    return text.find("imed out") != std::string::npos || text.find("imeout") != std::string::npos;
}

/* What a failure in a phase is about. */
enum class blame {
    host,  /* binding the transport: everything is about this host (UFORM_IO) */
    store, /* the rendezvous: Gloo's checks (GLOO_ENFORCE) are about the store's files (UFORM_IO); its
              IoExceptions are about the peers */
    peers  /* collectives: every failure is about a peer (UFORM_PEER_LOST, or UFORM_TIMEOUT) */
};

/* Gloo reports a failed system call with strerror's words, and a failed std::ofstream (its buffer
 * could not be allocated) only as "File cannot be created": either is memory when the text says so
 * or errno, cleared before the body ran, is ENOMEM when the exception is caught. */
bool out_of_memory(const std::string &text, int saved_errno) {
    return saved_errno == ENOMEM || text.find("Cannot allocate memory") != std::string::npos;
}

/* One of Gloo's own exceptions (an IoException or a failed GLOO_ENFORCE), whose `raw` text says
 * what happened: memory when the text or `saved_errno` says so, a timeout when the text does, else
 * `otherwise`, which depends on the exception and on whom the step blames. */
uform_status_t gloo_failure(const char *what, const char *raw, int saved_errno, uform_status_t otherwise, char *message,
                            size_t capacity) {
    std::string text = words_of(raw);
    if (out_of_memory(text, saved_errno)) {
        write_message(message, capacity, std::string(what) + ": out of memory (" + text + ")");
        return UFORM_OUT_OF_MEMORY;
    }
    write_message(message, capacity, std::string(what) + ": " + text);
    if (mentions_timeout(text)) return UFORM_TIMEOUT;
    return otherwise;
}

/* Runs `body`, translating whatever it throws. */
template <typename Body>
uform_status_t guarded(const char *what, blame about, char *message, size_t capacity, Body body) {
    sigpipe_guard guard;
    errno = 0;
    try {
        body();
        return UFORM_OK;
    } catch (const uform_gloo::status_error &error) { /* a store's answer, its status kept */
        write_message(message, capacity, std::string(what) + ": " + error.what());
        return error.status;
    } catch (const gloo::IoException &error) {
        const int saved = errno;
        return gloo_failure(what, error.what(), saved, about == blame::host ? UFORM_IO : UFORM_PEER_LOST, message, capacity);
    } catch (const gloo::EnforceNotMet &error) {
        const int saved = errno;
        return gloo_failure(what, error.what(), saved, about == blame::peers ? UFORM_PEER_LOST : UFORM_IO, message, capacity);
    } catch (const std::bad_alloc &) {
        write_message(message, capacity, std::string(what) + ": out of memory");
        return UFORM_OUT_OF_MEMORY;
    } catch (const std::system_error &error) {
        /* std::thread's constructor throws EAGAIN when pthread_create cannot have a stack: memory. */
        if (error.code() == std::errc::resource_unavailable_try_again || error.code() == std::errc::not_enough_memory) {
            write_message(message, capacity, std::string(what) + ": out of memory (cannot start a thread: " + error.what() + ")");
            return UFORM_OUT_OF_MEMORY;
        }
        write_message(message, capacity, std::string(what) + ": " + error.what());
        return UFORM_IO;
    } catch (const std::exception &error) {
        write_message(message, capacity, std::string(what) + ": " + words_of(error.what()));
        return UFORM_INTERNAL;
    } catch (...) {
        write_message(message, capacity, std::string(what) + ": an unknown C++ exception");
        return UFORM_INTERNAL;
    }
}

template <typename T>
void sum_into(void *c, const void *a, const void *b, size_t n) {
    T *out = static_cast<T *>(c);
    const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
    for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

bool usable(uform__gloo_t *gloo, char *message, size_t capacity) {
    if (gloo && gloo->context && !gloo->closed) return true;
    write_message(message, capacity, "the collectives are closed");
    return false;
}

} // namespace

extern "C" uint32_t uform__gloo_module_abi(void) { return UFORM__GLOO_ABI; }

extern "C" uform_status_t uform__gloo_connect(const char *folder, const uform__gloo_kv_t *kv, const char *prefix,
                                              const char *address, size_t rank, size_t size, int64_t timeout_ms,
                                              uform__gloo_t **gloo, char *message, size_t capacity) {
    *gloo = nullptr;
    uform__gloo_t *made = nullptr;
    try {
        made = new uform__gloo_t();
    } catch (...) {
        write_message(message, capacity, "out of memory");
        return UFORM_OUT_OF_MEMORY;
    }
    /* The device's event-loop thread is started here and inherits this thread's mask: SIGPIPE
     * stays blocked in it for good (the guard restores only this thread's mask). */
    uform_status_t status = guarded("binding the TCP transport", blame::host, message, capacity, [&] {
        gloo::transport::tcp::attr attr;
        attr.hostname = address;
        made->device = gloo::transport::tcp::CreateDevice(attr);
    });
    /* Gloo resolves the address again (getaddrinfo) and says only "Unable to find address" when that
     * fails. The bootstrap has just resolved and bound this numeric address itself, so a resolver
     * failure here is one of resources (EAI_MEMORY), as the allocation-failure sweep shows. */
    if (status == UFORM_IO && message && strstr(message, "Unable to find address")) {
        write_message(message, capacity, std::string("binding the TCP transport: cannot allocate memory to resolve ") + address);
        status = UFORM_OUT_OF_MEMORY;
    }
    if (status == UFORM_OK)
        status = guarded("connecting to the other members", blame::store, message, capacity, [&] {
            auto context = std::make_shared<gloo::rendezvous::Context>((int)rank, (int)size);
            context->setTimeout(std::chrono::milliseconds(timeout_ms));
            std::unique_ptr<gloo::rendezvous::Store> store =
                uform_gloo::make_store(folder, kv, prefix ? prefix : "", std::chrono::milliseconds(timeout_ms));
            context->connectFullMesh(*store, made->device);
            made->context = context;
        });
    /* FileStore writes each key through a std::ofstream, which says only "File cannot be created" when
     * it cannot allocate its buffer. The store's folder was made by the bootstrap; while it is still
     * writable, that failure is one of memory. */
    if (status == UFORM_IO && message && strstr(message, "File cannot be created") && folder && access(folder, W_OK) == 0) {
        write_message(message, capacity, std::string("connecting to the other members: cannot allocate memory to write a key "
                                                     "of the store in ") + folder);
        status = UFORM_OUT_OF_MEMORY;
    }
    if (status != UFORM_OK) {
        uform__gloo_free(made);
        return status;
    }
    *gloo = made;
    return UFORM_OK;
}

extern "C" uform_status_t uform__gloo_allreduce_sum(uform__gloo_t *gloo, void *values, size_t count,
                                                    uform__gloo_scalar_t scalar, char *message, size_t capacity) {
    if (!usable(gloo, message, capacity)) return UFORM_PEER_LOST;
    if (count == 0) return UFORM_OK;
    return guarded("all-reduce", blame::peers, message, capacity, [&] {
        gloo::AllreduceOptions options(gloo->context);
        if (scalar == UFORM__GLOO_F64) {
            options.setOutput(static_cast<double *>(values), count);
            options.setReduceFunction(&sum_into<double>);
        } else {
            options.setOutput(static_cast<float *>(values), count);
            options.setReduceFunction(&sum_into<float>);
        }
        options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        gloo::allreduce(options);
    });
}

extern "C" uform_status_t uform__gloo_allgatherv(uform__gloo_t *gloo, const void *input, void *output,
                                                 const size_t *bytes, char *message, size_t capacity) {
    if (!usable(gloo, message, capacity)) return UFORM_PEER_LOST;
    return guarded("all-gather", blame::peers, message, capacity, [&] {
        size_t size = (size_t)gloo->context->size, rank = (size_t)gloo->context->rank;
        std::vector<size_t> counts(bytes, bytes + size);
        gloo::AllgathervOptions options(gloo->context);
        /* Gloo wants a non-null input even for zero bytes. */
        static char empty;
        options.setInput(const_cast<char *>(bytes[rank] ? static_cast<const char *>(input) : &empty), bytes[rank]);
        options.setOutput(static_cast<char *>(output), counts);
        gloo::allgatherv(options);
    });
}

extern "C" uform_status_t uform__gloo_broadcast(uform__gloo_t *gloo, void *data, size_t bytes, size_t root,
                                                char *message, size_t capacity) {
    if (!usable(gloo, message, capacity)) return UFORM_PEER_LOST;
    if (bytes == 0) return UFORM_OK;
    return guarded("broadcast", blame::peers, message, capacity, [&] {
        gloo::BroadcastOptions options(gloo->context);
        options.setOutput(static_cast<char *>(data), bytes);
        options.setRoot((int)root);
        gloo::broadcast(options);
    });
}

extern "C" uform_status_t uform__gloo_barrier(uform__gloo_t *gloo, char *message, size_t capacity) {
    if (!usable(gloo, message, capacity)) return UFORM_PEER_LOST;
    return guarded("barrier", blame::peers, message, capacity, [&] {
        gloo::BarrierOptions options(gloo->context);
        gloo::barrier(options);
    });
}

extern "C" void uform__gloo_close(uform__gloo_t *gloo) {
    if (!gloo || gloo->closed) return;
    gloo->closed = true;
    char ignored[8];
    guarded("closing", blame::peers, ignored, sizeof ignored, [&] {
        if (gloo->context) gloo->context->closeConnections();
    });
}

extern "C" void uform__gloo_free(uform__gloo_t *gloo) {
    if (!gloo) return;
    uform__gloo_close(gloo);
    char ignored[8];
    /* Destroying the context closes the pairs; the device's loop thread is joined with the last
     * reference to the device. Neither may throw into C. */
    guarded("freeing", blame::peers, ignored, sizeof ignored, [&] {
        gloo->context.reset();
        gloo->device.reset();
    });
    delete gloo;
}
