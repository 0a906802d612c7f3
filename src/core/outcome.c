/* Statuses, outcomes and their one-line form. */
#include "core/outcome.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/futex.h"

static const char *const status_names[] = {
    "ok",       "deferred",    "cancelled",   "contended",       "invalid_argument",
    "io",       "format",      "unsupported", "out_of_memory",   "device",
    "config_mismatch", "timeout", "peer_lost", "internal",
};

UFORM_API const char *uform_status_name(uform_status_t status) {
    size_t index = (size_t)status;
    if (index >= sizeof status_names / sizeof status_names[0]) return "unknown";
    return status_names[index];
}

static void copy_bounded(char *to, size_t capacity, const char *from) {
    size_t length = from ? strlen(from) : 0;
    if (length >= capacity) length = capacity - 1;
    if (length) memcpy(to, from, length);
    memset(to + length, 0, capacity - length);
}

/* `reserved` doubles as the "someone may be waiting" flag: a waiter raises it before sleeping and
 * the publisher wakes only when it is raised, so the common case (nobody waits) costs no syscall.
 * Both sides use sequentially consistent operations, so one of them always sees the other. */
void uform__outcome_publish(uform_outcome_t *outcome, uform_status_t status) {
    if (!outcome) return;
    __atomic_store_n(&outcome->status, (uint32_t)status, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&outcome->reserved, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&outcome->reserved, 0, __ATOMIC_RELAXED);
        uform__futex_wake_all(&outcome->status);
    }
}

uform_status_t uform__fail_v(uform_outcome_t *outcome, uform_status_t status, const char *function,
                             const char *format, va_list arguments) {
    if (!outcome) return status;
    copy_bounded(outcome->function, sizeof outcome->function, function);
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    int written = vsnprintf(message, sizeof message, format ? format : "", arguments);
    if (written < 0) message[0] = 0;
    copy_bounded(outcome->message, sizeof outcome->message, message);
    uform__outcome_publish(outcome, status);
    return status;
}

uform_status_t uform__fail(uform_outcome_t *outcome, uform_status_t status, const char *function,
                           const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    uform_status_t result = uform__fail_v(outcome, status, function, format, arguments);
    va_end(arguments);
    return result;
}

uform_status_t uform__succeed(uform_outcome_t *outcome, const char *function) {
    if (!outcome) return UFORM_OK;
    copy_bounded(outcome->function, sizeof outcome->function, function);
    memset(outcome->message, 0, sizeof outcome->message);
    uform__outcome_publish(outcome, UFORM_OK);
    return UFORM_OK;
}

void uform__outcome_copy_text(uform_outcome_t *to, const uform_outcome_t *from) {
    memcpy(to->function, from->function, sizeof to->function);
    memcpy(to->message, from->message, sizeof to->message);
    to->function[sizeof to->function - 1] = 0;
    to->message[sizeof to->message - 1] = 0;
}

UFORM_API uform_status_t uform_outcome_status(const uform_outcome_t *outcome) {
    if (!outcome) return UFORM_INVALID_ARGUMENT;
    return (uform_status_t)__atomic_load_n(&outcome->status, __ATOMIC_ACQUIRE);
}

UFORM_API uform_status_t uform_outcome_wait(const uform_outcome_t *outcome) {
    if (!outcome) return UFORM_INVALID_ARGUMENT;
    uform_outcome_t *mutable_outcome = (uform_outcome_t *)outcome;
    for (int spins = 0;; ++spins) {
        uint32_t status = __atomic_load_n(&outcome->status, __ATOMIC_ACQUIRE);
        if (status != UFORM_DEFERRED) return (uform_status_t)status;
        if (spins < 256) { /* short calls finish within a few microseconds: poll briefly first */
            uform__spin_pause();
            continue;
        }
        __atomic_store_n(&mutable_outcome->reserved, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&outcome->status, __ATOMIC_SEQ_CST) != UFORM_DEFERRED) continue;
        uform__futex_wait(&mutable_outcome->status, UFORM_DEFERRED);
    }
}

UFORM_API size_t uform_outcome_format(const uform_outcome_t *outcome, char *buffer, size_t capacity) {
    char empty[1] = {0};
    if (!buffer || capacity == 0) buffer = empty, capacity = 0;
    int written;
    if (!outcome) {
        written = snprintf(buffer, capacity, "UForm: invalid_argument: no outcome");
    } else {
        uform_status_t status = uform_outcome_status(outcome);
        /* The text fields are bounded copies, but a caller may hand over a struct that never went
         * through the library: read them with explicit bounds. */
        int function_length = (int)strnlen(outcome->function, sizeof outcome->function);
        int message_length = (int)strnlen(outcome->message, sizeof outcome->message);
        if (status == UFORM_OK && message_length == 0)
            written = snprintf(buffer, capacity, "UForm: ok");
        else if (function_length && message_length)
            written = snprintf(buffer, capacity, "UForm: %s [%.*s]: %.*s", uform_status_name(status), function_length,
                               outcome->function, message_length, outcome->message);
        else if (function_length)
            written = snprintf(buffer, capacity, "UForm: %s [%.*s]", uform_status_name(status), function_length,
                               outcome->function);
        else if (message_length)
            written = snprintf(buffer, capacity, "UForm: %s: %.*s", uform_status_name(status), message_length,
                               outcome->message);
        else
            written = snprintf(buffer, capacity, "UForm: %s", uform_status_name(status));
    }
    return written < 0 ? 0 : (size_t)written;
}

UFORM_API void uform_version(int *major, int *minor, int *patch) {
    if (major) *major = UFORM_VERSION_MAJOR;
    if (minor) *minor = UFORM_VERSION_MINOR;
    if (patch) *patch = UFORM_VERSION_PATCH;
}
