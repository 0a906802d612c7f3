/*
 * A failing allocator for tests, in the manner of SQLite's and libuv's OOM tests: once armed, it
 * counts every allocation the process makes — malloc, calloc, realloc, posix_memalign,
 * aligned_alloc, memalign, valloc, mmap and pthread_create (a thread's stack and TLS are memory
 * too) — and fails the N-th (transient: only that one; persistent: that one and every later one).
 *
 * How: the test executable that links failing_alloc.c defines those functions itself, so the
 * dynamic linker binds every call in the process to them — libuform (linked statically into the
 * test), cJSON, TurboJPEG, libspng, libwebp, FFmpeg, glibc's own internal allocations (fopen,
 * opendir, strdup) — exactly as an LD_PRELOAD shim would, without the environment games. Each one
 * forwards to the next definition (dlsym RTLD_NEXT): glibc's, or AddressSanitizer's in an ASan
 * build, so leak detection keeps working. Allocations inside glibc that never go through the
 * symbol table (malloc's own mmap, a thread stack's mmap inside pthread_create) are not counted;
 * pthread_create is failed as a whole instead.
 *
 * A failure answers NULL (MAP_FAILED, ENOMEM or EAGAIN for pthread_create) and sets errno to
 * ENOMEM, as the real ones do. Counting is process-wide (every thread), with atomics.
 */
#ifndef UFORM_TESTS_FAILING_ALLOC_H
#define UFORM_TESTS_FAILING_ALLOC_H

#include <stddef.h>

typedef enum failing_alloc_mode_t {
    FAILING_ALLOC_TRANSIENT = 0,  /* only the N-th allocation fails */
    FAILING_ALLOC_PERSISTENT = 1  /* the N-th and every later one fail, until disarmed */
} failing_alloc_mode_t;

/* Starts counting from zero; allocation number `n` (1-based) will fail. */
void failing_alloc_arm(size_t n, failing_alloc_mode_t mode);

/* Stops counting and failing; answers how many allocations were failed since arming. */
size_t failing_alloc_disarm(void);

/* Allocations counted since the last arm (including the failed ones). */
size_t failing_alloc_counted(void);

/* Blocks handed out and not freed yet (malloc family only, not mmap): a cheap leak check for
 * single-threaded code between two points where nothing should be cached. */
long failing_alloc_live(void);

/* While held (1), allocations pass through neither counted nor failed, as before arming: a row
 * sets up what another row already sweeps (a model's load) and then sweeps only what follows. */
void failing_alloc_hold(int held);

/* Which function failed first since arming ("malloc", "mmap", ...), or "" when none did. */
const char *failing_alloc_failed_function(void);

/* Writes the call stack of the first failure since arming to stderr (symbol names where the
 * dynamic symbol table has them, addresses otherwise; feed those to addr2line). */
void failing_alloc_print_failure_stack(void);

#endif
