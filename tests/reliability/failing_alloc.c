/* The failing allocator (failing_alloc.h): the process's allocation functions, forwarding to the
 * next definition and failing the armed one. */
#include "failing_alloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*aligned_fn)(size_t, size_t);
typedef void *(*valloc_fn)(size_t);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static malloc_fn next_malloc;
static calloc_fn next_calloc;
static realloc_fn next_realloc;
static free_fn next_free;
static posix_memalign_fn next_posix_memalign;
static aligned_fn next_aligned_alloc, next_memalign;
static valloc_fn next_valloc;
static mmap_fn next_mmap;
static pthread_create_fn next_pthread_create;

/* dlsym may allocate before the functions it looks up are known: those few early blocks come from
 * here, with their size stored in front, and are never given back. */
static _Alignas(64) unsigned char bootstrap[1 << 16];
static size_t bootstrap_used;
static int resolving;

static void *bootstrap_alloc(size_t size) {
    size_t start = (bootstrap_used + 63) / 64 * 64 + 64; /* room for the size header, 64-aligned block */
    if (start + size > sizeof bootstrap) return NULL;
    memcpy(bootstrap + start - sizeof(size_t), &size, sizeof size);
    bootstrap_used = start + size;
    return bootstrap + start;
}

static int from_bootstrap(const void *pointer) {
    return (const unsigned char *)pointer >= bootstrap && (const unsigned char *)pointer < bootstrap + sizeof bootstrap;
}

static void resolve(void) {
    if (next_free || resolving) return;
    resolving = 1;
    next_malloc = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
    next_calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
    next_realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
    next_posix_memalign = (posix_memalign_fn)dlsym(RTLD_NEXT, "posix_memalign");
    next_aligned_alloc = (aligned_fn)dlsym(RTLD_NEXT, "aligned_alloc");
    next_memalign = (aligned_fn)dlsym(RTLD_NEXT, "memalign");
    next_valloc = (valloc_fn)dlsym(RTLD_NEXT, "valloc");
    next_mmap = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
    next_pthread_create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
    next_free = (free_fn)dlsym(RTLD_NEXT, "free");
    resolving = 0;
}

/* ---- arming and counting ---- */

static size_t target;     /* atomic: the allocation number that fails; 0 when disarmed */
static int persistent;    /* atomic */
static size_t counted;    /* atomic */
static size_t failures;   /* atomic */
static long live;         /* atomic */
static int recorded;      /* atomic: the first failure's stack is kept */
static const char *failed_function = "";
static void *failure_stack[32];
static int failure_depth;

void failing_alloc_arm(size_t n, failing_alloc_mode_t mode) {
    resolve();
    static int primed;
    if (!primed) { /* backtrace loads libgcc_s on first use: do it now, not inside a failing malloc */
        void *frames[4];
        backtrace(frames, 4);
        primed = 1;
    }
    __atomic_store_n(&counted, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&failures, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&recorded, 0, __ATOMIC_SEQ_CST);
    failed_function = "";
    failure_depth = 0;
    __atomic_store_n(&persistent, mode == FAILING_ALLOC_PERSISTENT, __ATOMIC_SEQ_CST);
    __atomic_store_n(&target, n, __ATOMIC_SEQ_CST);
}

size_t failing_alloc_disarm(void) {
    __atomic_store_n(&target, 0, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&failures, __ATOMIC_SEQ_CST);
}

size_t failing_alloc_counted(void) { return __atomic_load_n(&counted, __ATOMIC_SEQ_CST); }
long failing_alloc_live(void) { return __atomic_load_n(&live, __ATOMIC_SEQ_CST); }
const char *failing_alloc_failed_function(void) { return failed_function; }

void failing_alloc_print_failure_stack(void) {
    if (failure_depth > 0) backtrace_symbols_fd(failure_stack, failure_depth, STDERR_FILENO);
}

/* Set while a thread looks at its own stack: allocations then pass through uncounted. A plain
 * global, not thread-local: malloc runs before the main thread's TLS exists (the loader calls it),
 * and an instrumented build touches a TLS variable's address on entry. */
static int inspecting; /* atomic */
static int holding;    /* atomic: failing_alloc_hold */

void failing_alloc_hold(int held) { __atomic_store_n(&holding, held, __ATOMIC_SEQ_CST); }

/* Whether the allocation being made comes from a sanitizer's runtime (AddressSanitizer starting a
 * thread asks glibc's pthread_getattr_np, which allocates, and aborts when that fails): those are
 * the test's tools, not the code under test, and are never failed. Only asked for the allocation
 * about to fail, so its cost does not matter. */
static int from_sanitizer(void) {
    __atomic_store_n(&inspecting, 1, __ATOMIC_SEQ_CST);
    void *frames[24];
    int depth = backtrace(frames, 24), found = 0;
    for (int i = 2; i < depth && !found; ++i) {
        Dl_info where;
        if (dladdr(frames[i], &where) && where.dli_fname)
            found = strstr(where.dli_fname, "libasan") || strstr(where.dli_fname, "libubsan") || strstr(where.dli_fname, "liblsan") ||
                    strstr(where.dli_fname, "libtsan");
    }
    __atomic_store_n(&inspecting, 0, __ATOMIC_SEQ_CST);
    return found;
}

/* Counts one allocation by `function`; answers 1 when it must fail. */
static int should_fail(const char *function) {
    size_t armed = __atomic_load_n(&target, __ATOMIC_RELAXED);
    if (!armed || __atomic_load_n(&inspecting, __ATOMIC_RELAXED) || __atomic_load_n(&holding, __ATOMIC_RELAXED)) return 0;
    size_t number = __atomic_add_fetch(&counted, 1, __ATOMIC_RELAXED);
    if (number != armed && !(number > armed && __atomic_load_n(&persistent, __ATOMIC_RELAXED))) return 0;
    if (from_sanitizer()) { /* spared: in transient mode the next allocation fails instead */
        if (number == armed) __atomic_compare_exchange_n(&target, &armed, armed + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
        return 0;
    }
    __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    if (!__atomic_exchange_n(&recorded, 1, __ATOMIC_ACQ_REL)) {
        failed_function = function;
        failure_depth = backtrace(failure_stack, (int)(sizeof failure_stack / sizeof failure_stack[0]));
    }
    return 1;
}

static void *counted_block(void *block) {
    if (block) __atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
    return block;
}

/* ---- the interposed functions ---- */

/* The build hides symbols by default; these must be seen by every shared library of the process. */
#define INTERPOSED __attribute__((visibility("default")))

INTERPOSED void *malloc(size_t size) {
    resolve();
    if (!next_malloc) return bootstrap_alloc(size);
    if (should_fail("malloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return counted_block(next_malloc(size));
}

INTERPOSED void *calloc(size_t count, size_t size) {
    resolve();
    if (!next_calloc) {
        if (size && count > SIZE_MAX / size) return NULL;
        return bootstrap_alloc(count * size); /* static storage: already zero */
    }
    if (should_fail("calloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return counted_block(next_calloc(count, size));
}

INTERPOSED void *realloc(void *pointer, size_t size) {
    resolve();
    if (pointer && from_bootstrap(pointer)) {
        size_t old;
        memcpy(&old, (unsigned char *)pointer - sizeof(size_t), sizeof old);
        void *moved = malloc(size);
        if (moved) memcpy(moved, pointer, old < size ? old : size);
        return moved;
    }
    if (!next_realloc) return bootstrap_alloc(size);
    if (pointer && size == 0) { /* glibc frees and answers NULL: nothing to fail */
        __atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
        return next_realloc(pointer, size);
    }
    if (should_fail("realloc")) {
        errno = ENOMEM;
        return NULL; /* the old block stays valid, as with a real failure */
    }
    void *moved = next_realloc(pointer, size);
    if (moved && !pointer) __atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
    return moved;
}

INTERPOSED void free(void *pointer) {
    if (!pointer || from_bootstrap(pointer)) return;
    resolve();
    __atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
    next_free(pointer);
}

INTERPOSED int posix_memalign(void **out, size_t alignment, size_t size) {
    resolve();
    if (should_fail("posix_memalign")) return ENOMEM;
    int error = next_posix_memalign(out, alignment, size);
    if (!error) counted_block(*out);
    return error;
}

INTERPOSED void *aligned_alloc(size_t alignment, size_t size) {
    resolve();
    if (should_fail("aligned_alloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return counted_block(next_aligned_alloc(alignment, size));
}

INTERPOSED void *memalign(size_t alignment, size_t size) {
    resolve();
    if (should_fail("memalign")) {
        errno = ENOMEM;
        return NULL;
    }
    return counted_block(next_memalign(alignment, size));
}

INTERPOSED void *valloc(size_t size) {
    resolve();
    if (should_fail("valloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return counted_block(next_valloc(size));
}

INTERPOSED void *mmap(void *address, size_t length, int protection, int flags, int descriptor, off_t offset) {
    resolve();
    if (should_fail("mmap")) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return next_mmap(address, length, protection, flags, descriptor, offset);
}

/* glibc's 64-bit systems export mmap64 as the same function; callers built with
 * _FILE_OFFSET_BITS=64 bind to that name. */
INTERPOSED void *mmap64(void *address, size_t length, int protection, int flags, int descriptor, off_t offset) {
    return mmap(address, length, protection, flags, descriptor, offset);
}

INTERPOSED int pthread_create(pthread_t *thread, const pthread_attr_t *attributes, void *(*start)(void *), void *argument) {
    resolve();
    if (should_fail("pthread_create")) return EAGAIN; /* what glibc answers when the stack cannot be mapped */
    return next_pthread_create(thread, attributes, start, argument);
}
