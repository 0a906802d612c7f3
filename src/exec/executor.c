/*
 * Executors: where calls run, one at a time, in submission order.
 *
 * Every executor has a lead thread that runs deferred calls. A blocking call runs on the calling
 * thread instead, taking the lead's place (thread 0 of the parallel loops) for its duration; it is
 * accepted only when no call is running or queued, so calls never overlap and start in order.
 */
#include "exec/executor.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/cpu.h"
#include "core/futex.h"
#include "core/numa.h"
#include "core/outcome.h"

enum { default_deferred_limit = 64 };

/* The executor whose call this thread is running, so drain and free can refuse to wait on themselves. */
static __thread uform_executor_t current_executor = NULL;

void uform__executor_retain(uform_executor_t executor) { __atomic_add_fetch(&executor->references, 1, __ATOMIC_RELAXED); }

void uform__executor_release(void *pointer) {
    uform_executor_t executor = pointer;
    if (__atomic_sub_fetch(&executor->references, 1, __ATOMIC_ACQ_REL) != 0) return;
    pthread_mutex_destroy(&executor->lock);
    free(executor->queue);
    free(executor);
}

/* Runs a call's body on this thread and leaves its text in the public outcome; answers its status. */
static uform_status_t execute(uform_executor_t executor, const uform__call_t *call, uform_cpu_class_t cpu_class) {
    uform_outcome_t private_outcome;
    memset(&private_outcome, 0, sizeof private_outcome);
    uform__call_context_t context;
    memset(&context, 0, sizeof context);
    context.parallel = executor ? &executor->parallel : NULL;
    context.cpu_class = cpu_class;
    context.arena = call->arena;
    context.progress_options = call->progress;
    context.outcome = &private_outcome;
    context.function = call->function;
    uform__progress_begin(&context.progress, call->progress, 0);
    uform_executor_t previous = current_executor;
    current_executor = executor;
    uform_status_t status = UFORM_OK;
    if (call->arena) status = uform__arena_rewind(call->arena, &private_outcome, call->function);
    if (status == UFORM_OK) status = call->run(call->request, &context);
    current_executor = previous;
    if (status == UFORM_CANCELLED && !private_outcome.message[0])
        uform__fail(&private_outcome, UFORM_CANCELLED, call->function, "the progress handler asked to cancel");
    if (status != UFORM_OK && call->arena) uform__arena_bump(call->arena); /* outputs of a failed call are unreadable */
    if (status == UFORM_OK) {
        memset(private_outcome.message, 0, sizeof private_outcome.message);
    } else if (!private_outcome.function[0]) {
        strncpy(private_outcome.function, call->function, sizeof private_outcome.function - 1);
    }
    strncpy(private_outcome.function, call->function, sizeof private_outcome.function - 1);
    uform__outcome_copy_text(call->outcome, &private_outcome);
    return status;
}

/* Marks the running call final: publish its status under the lock, so that a thread which saw the
 * status and submits next finds the executor free, and drain sees the status before the count.
 * The lead is woken only when it has something to do now: a queued call, a stop, or spinning to
 * resume. A parked lead with an empty queue sleeps on: a later submission pokes it itself, and
 * waking it after every blocking call cost a futex wake and a context switch per call (≈ 9 µs of
 * CPU for a batch-1 text on a 1-thread executor, measured by the Python binding's benchmark). */
static void finish(uform_executor_t executor, const uform__call_t *call, uform_status_t status) {
    if (call->arena) uform__arena_release(call->arena);
    pthread_mutex_lock(&executor->lock);
    executor->running = 0;
    uform__outcome_publish(call->outcome, status);
    executor->finished += 1;
    __atomic_add_fetch(&executor->finished_word, 1, __ATOMIC_SEQ_CST);
    int wake_lead = executor->queue_count || executor->stopping ||
                    __atomic_load_n(&executor->mood, __ATOMIC_RELAXED) == UFORM_MOOD_SPINNING;
    if (wake_lead) __atomic_add_fetch(&executor->lead_word, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&executor->lock);
    /* Syscalls only for threads that announced they sleep (see wait_word). */
    if (__atomic_load_n(&executor->drain_waiters, __ATOMIC_SEQ_CST)) uform__futex_wake_all(&executor->finished_word);
    if (wake_lead && __atomic_load_n(&executor->lead_sleeping, __ATOMIC_SEQ_CST))
        uform__futex_wake_all(&executor->lead_word);
}

/* Sleeps on `word` while it still reads `seen`, having raised `*sleepers` first, so a publisher that
 * bumps the word and then reads `*sleepers` (both sequentially consistent) never misses us. */
static void wait_word(uint32_t *word, uint32_t seen, uint32_t *sleepers) {
    __atomic_add_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(word, __ATOMIC_SEQ_CST) == seen) uform__futex_wait(word, seen);
    __atomic_sub_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
}

/* Wakes the lead after bumping its word. */
static void poke_lead(uform_executor_t executor) {
    __atomic_add_fetch(&executor->lead_word, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&executor->lead_sleeping, __ATOMIC_SEQ_CST)) uform__futex_wake_all(&executor->lead_word);
}

static void *lead_main(void *argument) {
    uform_executor_t executor = argument;
    for (;;) {
        uint32_t word = __atomic_load_n(&executor->lead_word, __ATOMIC_ACQUIRE);
        pthread_mutex_lock(&executor->lock);
        if (executor->stopping && executor->queue_count == 0 && !executor->running) {
            pthread_mutex_unlock(&executor->lock);
            break;
        }
        if (executor->queue_count && !executor->running) {
            uform__call_t call = executor->queue[executor->queue_head];
            executor->queue_head = (executor->queue_head + 1) % executor->queue_limit;
            executor->queue_count -= 1;
            executor->running = 1;
            pthread_mutex_unlock(&executor->lock);
            uform_status_t status = execute(executor, &call, executor->cpu_class);
            finish(executor, &call, status);
            continue;
        }
        /* While a blocking call runs on its caller's thread, the lead sleeps even when spinning:
         * it would only take a core from that call. */
        int busy = executor->running;
        pthread_mutex_unlock(&executor->lock);
        if (!busy && __atomic_load_n(&executor->mood, __ATOMIC_RELAXED) == UFORM_MOOD_SPINNING) {
            while (__atomic_load_n(&executor->lead_word, __ATOMIC_ACQUIRE) == word &&
                   __atomic_load_n(&executor->mood, __ATOMIC_RELAXED) == UFORM_MOOD_SPINNING)
                uform__spin_pause();
        } else {
            wait_word(&executor->lead_word, word, &executor->lead_sleeping);
        }
    }
    return NULL;
}

static void pool_for_n(void *self, size_t n, uform__prong_fn fn, void *context) {
    uform_executor_t executor = self;
    executor->pool.for_n(executor->pool.context, n, fn, context);
}

static uform_status_t call_inline(const uform__call_t *call) {
    uform_cpu_class_t cpu_class;
    uform_outcome_t *outcome = call->outcome;
    uform_status_t status = uform__cpu_class_resolve(UFORM_CPU_CLASS_UNKNOWN, &cpu_class, outcome, call->function);
    if (status != UFORM_OK) return status;
    if (call->arena) {
        status = uform__arena_acquire(call->arena, outcome, call->function);
        if (status != UFORM_OK) return status;
        uform__arena_bump(call->arena);
    }
    status = execute(NULL, call, cpu_class);
    if (call->arena) uform__arena_release(call->arena);
    uform__outcome_publish(outcome, status);
    return status;
}

uform_status_t uform__executor_call(uform_executor_t executor, const uform__call_t *call) {
    if (!call->outcome) return UFORM_INVALID_ARGUMENT;
    if (call->completion != UFORM_COMPLETION_BLOCKING && call->completion != UFORM_COMPLETION_DEFERRED)
        return uform__fail(call->outcome, UFORM_INVALID_ARGUMENT, call->function,
                           "completion %d is neither blocking (0) nor deferred (1)", (int)call->completion);
    if (!executor) return call_inline(call);
    if (current_executor == executor && call->completion == UFORM_COMPLETION_BLOCKING)
        return uform__fail(call->outcome, UFORM_CONTENDED, call->function,
                           "a blocking call from inside a call on the same executor would wait for itself");

    pthread_mutex_lock(&executor->lock);
    if (executor->stopping) {
        pthread_mutex_unlock(&executor->lock);
        return uform__fail(call->outcome, UFORM_INVALID_ARGUMENT, call->function, "the executor is being freed");
    }
    if (call->completion == UFORM_COMPLETION_BLOCKING) {
        if (executor->running || executor->queue_count) {
            size_t queued = executor->queue_count;
            pthread_mutex_unlock(&executor->lock);
            return uform__fail(call->outcome, UFORM_CONTENDED, call->function,
                               "the executor is running another call (%zu more queued); nothing was done", queued);
        }
    } else if (executor->queue_count >= executor->queue_limit) {
        size_t limit = executor->queue_limit;
        pthread_mutex_unlock(&executor->lock);
        return uform__fail(call->outcome, UFORM_CONTENDED, call->function,
                           "the executor's deferred queue is full (%zu calls); nothing was done", limit);
    }
    if (call->arena) {
        uform_status_t status = uform__arena_acquire(call->arena, call->outcome, call->function);
        if (status != UFORM_OK) {
            pthread_mutex_unlock(&executor->lock);
            return status;
        }
        uform__arena_bump(call->arena);
    }
    executor->accepted += 1;
    if (call->completion == UFORM_COMPLETION_BLOCKING) {
        executor->running = 1;
        pthread_mutex_unlock(&executor->lock);
        uform_status_t status = execute(executor, call, executor->cpu_class);
        finish(executor, call, status);
        return status;
    }
    /* Deferred: the outcome reads DEFERRED from now until the lead publishes. */
    memset(call->outcome->message, 0, sizeof call->outcome->message);
    strncpy(call->outcome->function, call->function, sizeof call->outcome->function - 1);
    call->outcome->function[sizeof call->outcome->function - 1] = 0;
    __atomic_store_n(&call->outcome->status, UFORM_DEFERRED, __ATOMIC_RELEASE);
    size_t tail = (executor->queue_head + executor->queue_count) % executor->queue_limit;
    executor->queue[tail] = *call;
    executor->queue_count += 1;
    pthread_mutex_unlock(&executor->lock);
    poke_lead(executor);
    return UFORM_DEFERRED;
}

/* ---- construction ---------------------------------------------------------------------------- */

/* Resolves the memory domains into a node mask and the CPUs this process may use on them. */
static uform_status_t place(const uform_ram_options_t *options, unsigned long *node_mask, cpu_set_t *cpus,
                            size_t *cores, uform_outcome_t *outcome, const char *function) {
    *node_mask = 0;
    CPU_ZERO(cpus);
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &allowed);
    }
    size_t domains = options ? options->memory_domains_count : 0;
    if (domains && !options->memory_domains)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "ram_options.memory_domains is NULL but memory_domains_count is %zu", domains);
    if (domains) {
        int max_node = uform__numa_max_node();
        for (size_t i = 0; i < domains; ++i) {
            size_t node = options->memory_domains[i];
            if ((long)node > max_node || node >= UFORM__NUMA_MAX_NODES || !uform__numa_node_online(node))
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                   "ram_options.memory_domains[%zu] = %zu: this machine has NUMA nodes 0..%d", i, node,
                                   max_node);
            *node_mask |= 1ul << node;
        }
    }
    if (*node_mask) {
        cpu_set_t node_cpus;
        CPU_ZERO(&node_cpus);
        for (size_t node = 0; node < UFORM__NUMA_MAX_NODES; ++node)
            if (*node_mask & (1ul << node)) (void)uform__numa_node_cpus(node, &node_cpus); /* an unreadable list adds none */
        CPU_AND(cpus, &node_cpus, &allowed);
        if (CPU_COUNT(cpus) == 0)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "the named memory domains have no CPUs this process may run on");
    } else {
        *cpus = allowed;
    }
    *cores = (size_t)CPU_COUNT(cpus);
    if (*cores == 0) *cores = 1;
    return UFORM_OK;
}

static uform_status_t create(const uform_ram_options_t *ram_options, size_t deferred_limit, uform_executor_t *out,
                             uform_outcome_t *outcome, const char *function) {
    uform_cpu_class_t cpu_class;
    uform_status_t status =
        uform__cpu_class_resolve(ram_options ? ram_options->cpu_class : UFORM_CPU_CLASS_UNKNOWN, &cpu_class, outcome, function);
    if (status != UFORM_OK) return status;
    uform_executor_t executor = calloc(1, sizeof *executor);
    if (!executor) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate an executor");
    executor->queue_limit = deferred_limit ? deferred_limit : default_deferred_limit;
    executor->queue = calloc(executor->queue_limit, sizeof *executor->queue);
    if (!executor->queue) {
        free(executor);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a queue of %zu deferred calls",
                           deferred_limit);
    }
    executor->cpu_class = cpu_class;
    executor->references = 1;
    executor->mood = UFORM_MOOD_PARKED;
    pthread_mutex_init(&executor->lock, NULL);
    *out = executor;
    return UFORM_OK;
}

/* A thread that would not start: EAGAIN (no memory for its stack, or no thread slots left) and
 * ENOMEM are memory exhaustion; anything else is a bug in how it was asked. */
static uform_status_t thread_failure(uform_outcome_t *outcome, const char *function, int error, const char *what) {
    if (error == EAGAIN || error == ENOMEM)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function,
                           "cannot start %s: the system has no memory (or thread slots) left for another thread: %s", what,
                           strerror(error));
    return uform__fail(outcome, UFORM_INTERNAL, function, "cannot start %s: %s", what, strerror(error));
}

static uform_status_t start_lead(uform_executor_t executor, const cpu_set_t *cpus, uform_outcome_t *outcome,
                                 const char *function) {
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    if (cpus) pthread_attr_setaffinity_np(&attributes, sizeof *cpus, cpus);
    int error = pthread_create(&executor->lead, &attributes, lead_main, executor);
    pthread_attr_destroy(&attributes);
    if (error) return thread_failure(outcome, function, error, "the lead thread");
    executor->lead_started = 1;
    return UFORM_OK;
}

UFORM_API uform_status_t uform_executor_for_ram(const uform_ram_options_t *ram_options, size_t threads,
                                                size_t deferred_limit, uform_executor_t *executor_out,
                                                uform_outcome_t *outcome) {
    const char *function = __func__;
    if (!executor_out) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the executor out-pointer is NULL");
    *executor_out = NULL;
    unsigned long node_mask;
    cpu_set_t cpus;
    size_t cores = 1;
    uform_status_t status = place(ram_options, &node_mask, &cpus, &cores, outcome, function);
    if (status != UFORM_OK) return status;
    if (threads == 0) threads = cores * 7 / 8 > 0 ? cores * 7 / 8 : 1;
    uform_executor_t executor;
    status = create(ram_options, deferred_limit, &executor, outcome, function);
    if (status != UFORM_OK) return status;
    executor->kind = uform__executor_own_threads;
    executor->threads = threads;
    executor->node_mask = node_mask;
    const cpu_set_t *placement = node_mask ? &cpus : NULL;
    int error = uform__team_start(&executor->team, threads - 1, &executor->mood, placement);
    if (error) {
        uform__executor_release(executor);
        char what[64];
        snprintf(what, sizeof what, "%zu worker threads", threads - 1);
        return thread_failure(outcome, function, error, what);
    }
    executor->parallel.threads = threads;
    executor->parallel.for_n = uform__team_for_n;
    executor->parallel.self = &executor->team;
    status = start_lead(executor, placement, outcome, function);
    if (status != UFORM_OK) {
        uform__team_stop(&executor->team);
        uform__executor_release(executor);
        return status;
    }
    *executor_out = executor;
    return uform__succeed(outcome, function);
}

UFORM_API uform_status_t uform_executor_on_pool(const uform_pool_t *pool, const uform_ram_options_t *ram_options,
                                                size_t deferred_limit, uform_executor_t *executor_out,
                                                uform_outcome_t *outcome) {
    const char *function = __func__;
    if (!executor_out) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the executor out-pointer is NULL");
    *executor_out = NULL;
    if (!pool || !pool->threads || !pool->for_n)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the pool %s",
                           !pool ? "is NULL" : !pool->threads ? "has no threads() function" : "has no for_n() function");
    size_t threads = pool->threads(pool->context);
    if (threads == 0) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the pool answers 0 threads");
    uform_executor_t executor;
    uform_status_t status = create(ram_options, deferred_limit, &executor, outcome, function);
    if (status != UFORM_OK) return status;
    executor->kind = uform__executor_pool;
    executor->threads = threads;
    executor->pool = *pool;
    executor->parallel.threads = threads;
    executor->parallel.for_n = pool_for_n;
    executor->parallel.self = executor;
    status = start_lead(executor, NULL, outcome, function);
    if (status != UFORM_OK) {
        uform__executor_release(executor);
        return status;
    }
    *executor_out = executor;
    return uform__succeed(outcome, function);
}

UFORM_API uform_status_t uform_executor_for_vram(const uform_vram_options_t *vram_options,
                                                 const uform_ram_options_t *ram_options, size_t streams,
                                                 size_t scratch_limit, size_t deferred_limit,
                                                 uform_executor_t *executor, uform_outcome_t *outcome) {
    if (executor) *executor = NULL;
    return uform__fail(outcome, UFORM_UNSUPPORTED, __func__, "this build of UForm has no GPU support");
}

UFORM_API uform_status_t uform_executor_drain(uform_executor_t executor, uform_mood_t mood, uform_outcome_t *outcome) {
    const char *function = __func__;
    if (mood != UFORM_MOOD_PARKED && mood != UFORM_MOOD_SPINNING)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "mood %d is neither parked (0) nor spinning (1)",
                           (int)mood);
    if (!executor) return uform__succeed(outcome, function);
    if (current_executor == executor)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "drain from inside a call on the same executor would wait for itself");
    pthread_mutex_lock(&executor->lock);
    uint64_t target = executor->accepted;
    pthread_mutex_unlock(&executor->lock);
    for (;;) {
        uint32_t word = __atomic_load_n(&executor->finished_word, __ATOMIC_ACQUIRE);
        pthread_mutex_lock(&executor->lock);
        uint64_t finished = executor->finished;
        pthread_mutex_unlock(&executor->lock);
        if (finished >= target) break;
        wait_word(&executor->finished_word, word, &executor->drain_waiters);
    }
    __atomic_store_n(&executor->mood, (uint32_t)mood, __ATOMIC_RELEASE);
    poke_lead(executor); /* so a sleeping lead notices a switch to spinning */
    return uform__succeed(outcome, function);
}

UFORM_API size_t uform_executor_threads(uform_executor_t executor) { return executor ? executor->threads : 1; }

UFORM_API uform_cpu_class_t uform_executor_cpu_class(uform_executor_t executor) {
    return executor ? executor->cpu_class : uform_cpu_class_detect();
}

UFORM_API void uform_executor_free(uform_executor_t executor) {
    if (!executor) return;
    if (current_executor == executor) return; /* documented misuse: freeing from its own call; refuse quietly */
    uform_executor_drain(executor, UFORM_MOOD_PARKED, NULL);
    pthread_mutex_lock(&executor->lock);
    executor->stopping = 1;
    pthread_mutex_unlock(&executor->lock);
    poke_lead(executor);
    if (executor->lead_started) pthread_join(executor->lead, NULL);
    if (executor->kind == uform__executor_own_threads) uform__team_stop(&executor->team);
    uform__executor_release(executor);
}

UFORM_API uform_status_t uform_arena_for_executor(uform_executor_t executor, uform_arena_t *arena,
                                                  uform_outcome_t *outcome) {
    uform_status_t status = uform__arena_create(executor ? executor->node_mask : 0, arena, outcome, __func__);
    if (status != UFORM_OK || !executor) return status;
    uform__executor_retain(executor);
    (*arena)->owner = executor;
    (*arena)->release_owner = uform__executor_release;
    return UFORM_OK;
}
