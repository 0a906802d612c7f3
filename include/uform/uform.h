/*
 * UForm 4 — multimodal perception engine. The whole public C interface.
 *
 * This header is the specification: every function below documents its arguments, who owns
 * what, how long a pointer must live, its thread contract and the statuses it returns.
 * Licensed under the Apache License, Version 2.0.
 *
 * Contents, in the order of the sections below (each opens with a banner of the same name):
 *   Statuses and outcomes
 *   Version and CPU classes
 *   Enums fixed by UForm's design, Enums this project assigns, Progress: what every call shares
 *   Executors, Arenas and views, Tapes: where a call runs, where its outputs land, how inputs cross
 *   Models, Encoding: loading a checkpoint and its verbs
 *   Media: probing files and preparing inputs ahead of an encode
 *   Indexes: exact search, then approximate search (uform_index_ann_*)
 *   Data: datasets, loaders, recall, the index pipeline
 *   Training: the trainer, its step and save, and its loop over a dataset (uform_trainer_fit)
 *   Mesh: many processes as one run (launch, bootstrap, describe, free, one index and its IVF
 *   structure built together)
 *   Tensor-program session, with its program builder
 *   Appendix: reserved numbers for devices this build does not have
 *
 * Quickstart (compiled and run as the `readme_quickstart` test, so it cannot go stale):
 *
 *     #include <uform/uform.h>
 *     #include <stdio.h>
 *
 *     int main(void) {
 *         uform_outcome_t outcome = {0};
 *         uform_executor_t executor = NULL;
 *         // Two worker threads; 0 would take 7/8 of the cores. NULL options: every NUMA node,
 *         // the best CPU class this machine runs.
 *         if (uform_executor_for_ram(NULL, 2, 0, &executor, &outcome) != UFORM_OK) {
 *             char line[512];
 *             uform_outcome_format(&outcome, line, sizeof line);
 *             fprintf(stderr, "%s\n", line);
 *             return 1;
 *         }
 *         int major, minor, patch;
 *         uform_version(&major, &minor, &patch);
 *         printf("UForm %d.%d.%d on %s\n", major, minor, patch,
 *                uform_cpu_class_name(uform_cpu_class_detect()));
 *         uform_executor_free(executor); // waits for calls in flight; NULL is a no-op
 *         return 0;
 *     }
 *
 * Conventions that hold for the whole interface:
 *
 * - A zeroed struct means "the defaults" everywhere, and wherever a function takes a pointer to
 *   options or a config, NULL means the same as a zeroed one.
 * - Handles are opaque pointers, made and described in one pattern
 *   (docs/abi.md, "Handles: constructors, describe and free"). A constructor is
 *   `uform_<noun>_<verb>(inputs..., &handle, outcome)`, its verb `open` (stored data),
 *   `create` (new and empty), `from` (another handle) or `for` (bound to a resource), except the
 *   names UForm's design fixed (uform_model_load_ram, uform_trainer_init_ram ...); it sets the
 *   handle to NULL on failure, and `uform_<noun>_free` accepts NULL. A describe is
 *   `uform_status_t uform_<noun>_describe(handle, &description)`: UFORM_INVALID_ARGUMENT for a NULL
 *   handle or description.
 * - Every fallible function returns a `uform_status_t` and, where it takes one, fills a
 *   caller-owned `uform_outcome_t` with the status, the function's name and a specific message.
 *   An `outcome` argument may always be NULL (the status is still returned).
 * - The library never aborts, exits or prints because of anything a caller passed or a file held.
 * - Numbers of enums are fixed forever: values are only ever appended.
 */
#ifndef UFORM_UFORM_H
#define UFORM_UFORM_H

#include <stddef.h>
#include <stdint.h>

/* Version of this header. `uform_version` answers the library's, which may differ when a
 * program runs against a newer shared library of the same major version (the soname). */
#define UFORM_VERSION_MAJOR 4
#define UFORM_VERSION_MINOR 0
#define UFORM_VERSION_PATCH 0

/* UFORM_API marks the exported symbols; everything else in libuform has hidden visibility. */
#if defined(_WIN32)
#if defined(UFORM_BUILDING_LIBRARY)
#define UFORM_API __declspec(dllexport)
#else
#define UFORM_API
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define UFORM_API __attribute__((visibility("default")))
#else
#define UFORM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Statuses and outcomes                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* What a call came to. The numbers are fixed by UForm's design (docs/abi.md, "The enums"). */
typedef enum uform_status_t {
    UFORM_OK = 0,                /* success */
    UFORM_DEFERRED = 1,          /* submitted, not final yet (only ever read from an outcome) */
    UFORM_CANCELLED = 2,         /* a progress handler answered UFORM_CANCEL */
    UFORM_CONTENDED = 3,         /* the executor (or arena) is held by another call; nothing was done */
    UFORM_INVALID_ARGUMENT = 4,  /* the caller broke a documented rule (bad tape, stale view, ...) */
    UFORM_IO = 5,                /* the operating system refused a file or socket operation */
    UFORM_FORMAT = 6,            /* bytes that should be a checkpoint, image, recording, video or program are malformed */
    UFORM_UNSUPPORTED = 7,       /* valid, but this build or machine cannot do it */
    UFORM_OUT_OF_MEMORY = 8,     /* an allocation failed */
    UFORM_DEVICE = 9,            /* a device fault, or host access to device memory */
    UFORM_CONFIG_MISMATCH = 10,  /* peers of a mesh, or a checkpoint and its use, disagree */
    UFORM_TIMEOUT = 11,          /* a peer did not arrive or answer in time */
    UFORM_PEER_LOST = 12,        /* a peer of a mesh failed during a collective */
    UFORM_INTERNAL = 13          /* a bug in the engine; the message says where */
} uform_status_t;

/* Sizes of the inline text buffers of an outcome. */
#define UFORM_OUTCOME_FUNCTION_CAPACITY 48
#define UFORM_OUTCOME_MESSAGE_CAPACITY 400

/*
 * The caller-owned record of how a call ended: a status word, the name of the public function
 * that failed and a specific message, all inline (no allocation, nothing to free).
 *
 * `status` is a 32-bit word that the library reads and writes atomically (it is also the futex
 * a waiter sleeps on); read it with `uform_outcome_status`, not directly, while a deferred call
 * may still be running. `function` and `message` are NUL-terminated and fully initialised (no
 * uninitialised bytes) once the status is final; on success `message` is empty. A zeroed outcome
 * reads UFORM_OK. For a deferred call the outcome lives inside the request, which must stay alive
 * and unmoved until the status is final.
 */
typedef struct uform_outcome_t {
    uint32_t status;                                 /* a uform_status_t, accessed atomically */
    uint32_t reserved;                               /* internal: raised while a thread waits; zero it with the rest */
    char function[UFORM_OUTCOME_FUNCTION_CAPACITY];  /* e.g. "uform_model_load_ram" */
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];    /* e.g. "cannot open 'x': No such file or directory" */
} uform_outcome_t;

/* The lower-case name of a status ("ok", "io", "invalid_argument" ...); "unknown" for a number
 * outside the table. The string is static. Thread-safe. */
UFORM_API const char *uform_status_name(uform_status_t status);

/* Reads the outcome's status without blocking (an acquire load). While a deferred call runs it
 * answers UFORM_DEFERRED; once final, every field of the outcome is readable. NULL answers
 * UFORM_INVALID_ARGUMENT. Thread-safe: any thread may poll. */
UFORM_API uform_status_t uform_outcome_status(const uform_outcome_t *outcome);

/* Blocks (on a futex, not spinning) until the outcome's status is final and answers it; answers
 * the same final status as often as it is asked, and at once for an outcome that is already
 * final (including a zeroed one, which reads UFORM_OK). Any number of threads may wait on one
 * outcome. NULL answers UFORM_INVALID_ARGUMENT. */
UFORM_API uform_status_t uform_outcome_wait(const uform_outcome_t *outcome);

/* Writes the one-line form of an outcome into `buffer` (always NUL-terminated when capacity > 0):
 *     UForm: io [uform_model_load_ram]: cannot open 'missing.safetensors': No such file or directory
 * An OK outcome reads "UForm: ok". Answers the length the full line needs, without the NUL, as
 * snprintf does, so a truncated line can be detected. `buffer` may be NULL when capacity is 0.
 * The outcome must be final. */
UFORM_API size_t uform_outcome_format(const uform_outcome_t *outcome, char *buffer, size_t capacity);

/* ------------------------------------------------------------------------------------------ */
/* Version and CPU classes                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* Writes the library's version (4.x.y for UForm 4); any pointer may be NULL. Thread-safe. */
UFORM_API void uform_version(int *major, int *minor, int *patch);

/*
 * The instruction-set class kernels dispatch on. Each x86 class assumes everything of the one
 * before it:
 *   SERIAL          portable C, runs everywhere (the reference)
 *   INTEL_HASWELL   AVX2, FMA, F16C
 *   INTEL_SIERRA    Haswell + AVX-VNNI (Sierra Forest: no AVX-512)
 *   INTEL_SKYLAKE   AVX-512 F, CD, BW, DQ, VL
 *   INTEL_ICELAKE   Skylake + AVX-512 VNNI, VPOPCNTDQ, VBMI, VBMI2, BITALG
 *   AMD_GENOA       Icelake + AVX-512 BF16
 *   INTEL_SAPPHIRE  Genoa + AVX-512 FP16 + AMX (BF16, INT8 tiles)
 *   INTEL_GRANITE   Sapphire + AMX-FP16
 *   INTEL_DIAMOND   Granite + AVX10.2 and AMX-FP8 (recognised, not yet detected)
 * The Arm, RISC-V and WebAssembly classes name the design's other targets; this x86 build
 * reports them unsupported. MONOVERSIONED is a build without dispatch (the baseline only) and is
 * treated like SERIAL.
 */
typedef enum uform_cpu_class_t {
    UFORM_CPU_CLASS_UNKNOWN = 0,
    UFORM_CPU_CLASS_SERIAL = 1,
    UFORM_CPU_CLASS_INTEL_HASWELL = 2,
    UFORM_CPU_CLASS_INTEL_SIERRA = 3,
    UFORM_CPU_CLASS_INTEL_SKYLAKE = 4,
    UFORM_CPU_CLASS_INTEL_ICELAKE = 5,
    UFORM_CPU_CLASS_AMD_GENOA = 6,
    UFORM_CPU_CLASS_INTEL_SAPPHIRE = 7,
    UFORM_CPU_CLASS_INTEL_GRANITE = 8,
    UFORM_CPU_CLASS_INTEL_DIAMOND = 9,
    UFORM_CPU_CLASS_AWS_G2 = 10,
    UFORM_CPU_CLASS_APPLE_M2 = 11,
    UFORM_CPU_CLASS_APPLE_M4 = 12,
    UFORM_CPU_CLASS_AWS_G5 = 13,
    UFORM_CPU_CLASS_NVIDIA_VERA = 14,
    UFORM_CPU_CLASS_ALIBABA_C930 = 15,
    UFORM_CPU_CLASS_WASM32_V128 = 16,
    UFORM_CPU_CLASS_WASM64_EXTENDED = 17,
    UFORM_CPU_CLASS_MONOVERSIONED = 18
} uform_cpu_class_t;

/* The best CPU class this machine runs, decided with CPUID and XGETBV (the operating system must
 * also save the wider registers). The environment variable UFORM_CPU_CLASS (a class name such as
 * "haswell" or "intel_haswell", or its number) lowers the answer for tests and bug reports; a value
 * the machine cannot run, or cannot parse, is ignored here and makes executors refuse to start
 * with UFORM_UNSUPPORTED. Computed once; thread-safe. */
UFORM_API uform_cpu_class_t uform_cpu_class_detect(void);

/* Non-zero when this machine can run kernels of `cpu_class` (independent of UFORM_CPU_CLASS). */
UFORM_API int uform_cpu_class_supported(uform_cpu_class_t cpu_class);

/* The lower-case name of a class ("serial", "intel_haswell", "amd_genoa" ...), "unknown" outside
 * the table. The string is static. */
UFORM_API const char *uform_cpu_class_name(uform_cpu_class_t cpu_class);

/* ------------------------------------------------------------------------------------------ */
/* Enums fixed by UForm's design (docs/abi.md, "The enums")                                   */
/* ------------------------------------------------------------------------------------------ */

/* How a verb returns. */
typedef enum uform_completion_t {
    UFORM_COMPLETION_BLOCKING = 0, /* return with the final status stored and every output readable */
    UFORM_COMPLETION_DEFERRED = 1  /* return once submitted; the status reads UFORM_DEFERRED until final */
} uform_completion_t;

/* What an executor's idle threads do. */
typedef enum uform_mood_t {
    UFORM_MOOD_PARKED = 0,  /* sleep on futexes: no CPU while idle, a few microseconds to wake */
    UFORM_MOOD_SPINNING = 1 /* poll: a core each while idle, a fraction of a microsecond to wake */
} uform_mood_t;

/* What a progress handler answers. */
typedef enum uform_continuation_t {
    UFORM_CONTINUE = 0,
    UFORM_CANCEL = 1
} uform_continuation_t;

/* ------------------------------------------------------------------------------------------ */
/* Enums this project assigns (fixed from the day they landed)                                 */
/* ------------------------------------------------------------------------------------------ */

typedef enum uform_modality_t {
    UFORM_MODALITY_TEXT = 0,
    UFORM_MODALITY_IMAGE = 1,
    UFORM_MODALITY_VIDEO = 2,
    UFORM_MODALITY_AUDIO = 3
} uform_modality_t;

/*
 * The scalar type of an output matrix.
 *   F32, F16, BF16  IEEE binary32, binary16 and bfloat16, converted with round-to-nearest-even.
 *   I8              the L2-normalised value times 127, rounded to nearest and clamped to [-127, 127].
 *   B1              the sign bits, eight dimensions a byte, most significant bit first: bit 7 of
 *                   byte 0 is dimension 0; a bit is 1 where the value is > 0. A row of C columns
 *                   takes ceil(C / 8) bytes, the last byte's unused low bits are 0.
 */
typedef enum uform_scalar_kind_t {
    UFORM_SCALAR_F32 = 0,
    UFORM_SCALAR_F16 = 1,
    UFORM_SCALAR_BF16 = 2,
    UFORM_SCALAR_I8 = 3,
    UFORM_SCALAR_B1 = 4
} uform_scalar_kind_t;

/* Which outputs an encode keeps; flags, combined with `|`. */
typedef enum uform_outputs_t {
    UFORM_OUTPUTS_EMBEDDINGS = 1,    /* one row per item */
    UFORM_OUTPUTS_TOKEN_VECTORS = 2, /* ragged: one row per token, width E */
    UFORM_OUTPUTS_STATES = 4         /* ragged: one row per token, width d */
} uform_outputs_t;

/* ------------------------------------------------------------------------------------------ */
/* Progress                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Called with the units of work done and the total. Answer UFORM_CANCEL to stop the call at its
 * next unit of work: it then finishes with UFORM_CANCELLED, its outputs are not readable, and the
 * model, executor and arena stay usable. */
typedef uform_continuation_t (*uform_progress_callback_t)(size_t completed, size_t total, void *state);

/*
 * A progress handler. A call reports at most `steps` times (0 derives 10), the last report at
 * completion (completed == total) unless it was cancelled or failed first. The handler is never
 * invoked concurrently, nor after the call's status is final; for a deferred call it runs on one of
 * the executor's threads. `state` is passed through untouched. A NULL callback reports nothing.
 */
typedef struct uform_progress_t {
    uform_progress_callback_t callback;
    void *state;
    size_t steps;
} uform_progress_t;

/* ------------------------------------------------------------------------------------------ */
/* Executors — where a call runs                                                               */
/* ------------------------------------------------------------------------------------------ */

/* An executor. NULL is the calling-thread executor: it owns nothing and runs every call inline,
 * including deferred ones (they are final when the verb returns). */
typedef struct uform_executor_s *uform_executor_t;

/* The scalar type of activations in matrix products; float accumulation is always F32. */
typedef enum uform_compute_t {
    UFORM_COMPUTE_F32 = 0,  /* F32 activations (the default) */
    UFORM_COMPUTE_BF16 = 1, /* activations rounded to BF16 (nearest even) before each matrix product */
    UFORM_COMPUTE_I8 = 2    /* the trunk's products in int8 (model loads only; see below) */
} uform_compute_t;
/* BF16 compute, like PyTorch's BF16 autocast: attention multiplies BF16 Q·Kᵀ and P·V with the
 * softmax in F32, and the MLP's GELU is an erf form accurate to 2e-7·max(1,|x|) (its output is
 * rounded to BF16 next anyway). text_choose's byte head still runs in F32 (one row per text; its
 * logits are exponentiated, which magnifies rounding). Expect ~1e-2 relative differences from F32
 * compute; F32 compute stays within 1e-4 of an exact reference.
 *
 * I8 compute (inference only: model loads; a trainer refuses it): every linear layer of the trunk
 * (attn.qkv, attn.out, mlp.up, mlp.down) multiplies int8 weights, quantized symmetrically per
 * output channel at load (or read from a checkpoint `uform_model_quantize` wrote), by activations
 * quantized symmetrically per row (per token) on the fly, q = rint(x·127/max|x|), sums the
 * products exactly in int32 and scales back to F32 with the bias fused. Everything else — the
 * stems' patch projections, the norms, softmax, GELU, attention's two products, the heads'
 * projections and text_choose's head — stays in the float compute the CPU class does best: BF16
 * (as BF16 compute does) on classes with BF16 dot products (AMD_GENOA, SAPPHIRE and later), F32
 * elsewhere. docs/int8.md states the scheme to the last rounding and the accuracy measured: on
 * `small` and on a trained model's held-out items, embeddings within cosine ≥ 0.995 (mean) of F32
 * compute's for every modality. Outputs keep their scalar kinds. */

/* The default compute for `cpu_class`: the float compute measured fastest on it, which is also the
 * most accurate. Today F32 on every class: even with native BF16 dot products (`vdpbf16ps` on
 * AMD_GENOA and later) BF16 compute measured slower than F32 on both machines of that class we ran
 * (bench/README.md), and on the other classes BF16 is emulated (rounding, then F32 products). It is
 * the zero value of `uform_ram_options_t.compute` and of `uform_trainer_config_t.compute`, and what the
 * `uform` commands, `uform serve` and Python use without a compute flag (docs/abi.md, "One default
 * compute"). UNKNOWN asks about uform_cpu_class_detect()'s class. Thread-safe. */
UFORM_API uform_compute_t uform_compute_best(uform_cpu_class_t cpu_class);

/*
 * Where a host executor places its threads and memory, and which kernels it dispatches.
 * `memory_domains` lists NUMA node numbers (`memory_domains_count` of them, borrowed for the call);
 * none means every node the process may use. `cpu_class` UNKNOWN (0) means `uform_cpu_class_detect()`;
 * naming a class forces its kernels (tests, bug reports), and one this CPU cannot run is
 * UFORM_UNSUPPORTED.
 */
typedef struct uform_ram_options_t {
    const size_t *memory_domains;
    size_t memory_domains_count;
    uform_cpu_class_t cpu_class;
    uform_compute_t compute; /* model loads only: F32 (0), BF16 (1) or I8 (2); executors ignore it */
} uform_ram_options_t;

/* GPU devices for a VRAM executor: `devices` lists ordinals as `uform_gpu_devices` answers them. */
typedef struct uform_vram_options_t {
    const size_t *devices;
    size_t devices_count;
} uform_vram_options_t;

/* One unit of work of a borrowed pool: `thread` is in [0, threads(context)), `prong` in [0, n). */
typedef void (*uform_prong_t)(void *fn_context, size_t thread, size_t prong);

/*
 * A borrowed thread pool. `threads(context)` answers how many threads `for_n` may use; `for_n`
 * runs `fn(fn_context, thread, prong)` for every prong in [0, n), each exactly once, no two prongs
 * with the same `thread` at once, and returns when all are done. A ForkUnion pool, an OpenMP team
 * or any other pool adapts to this in a few lines. The pool must outlive the executor.
 */
typedef struct uform_pool_t {
    void *context;
    size_t (*threads)(void *context);
    void (*for_n)(void *context, size_t n, uform_prong_t fn, void *fn_context);
} uform_pool_t;

/*
 * Makes an executor with its own host threads.
 *
 * `threads` compute threads (0 takes 7/8 of the cores of the memory domains, at least 1) are pinned
 * to the CPUs of `ram_options->memory_domains` (every node when none are named) and idle parked
 * (UFORM_MOOD_PARKED) until `uform_executor_drain` says otherwise. A blocking call runs on the
 * calling thread, which takes the place of the first compute thread for its duration; a deferred
 * call runs on the executor's own first thread. `deferred_limit` bounds the deferred calls queued
 * and not yet started (0 takes 64).
 *
 * Statuses: UFORM_OK; UFORM_UNSUPPORTED (a CPU class this machine cannot run); UFORM_INVALID_ARGUMENT
 * (a memory domain that does not exist, or a NULL `executor`); UFORM_OUT_OF_MEMORY (also when the
 * system has no memory or thread slots left to start a thread); UFORM_INTERNAL (the system refused
 * a thread for another reason). On failure `*executor` is NULL.
 */
UFORM_API uform_status_t uform_executor_for_ram(const uform_ram_options_t *ram_options, size_t threads,
                                                size_t deferred_limit, uform_executor_t *executor,
                                                uform_outcome_t *outcome);

/*
 * Makes an executor over a borrowed pool: every parallel loop of a call goes through `pool->for_n`.
 * The struct is copied; the pool it describes must outlive the executor. Blocking calls run on the
 * calling thread; deferred calls run on one internal thread the executor starts, which then drives
 * the pool. `ram_options` chooses the CPU class (its memory domains are ignored: the pool's threads
 * stay where their owner placed them). Statuses as `uform_executor_for_ram`, plus
 * UFORM_INVALID_ARGUMENT for a pool without `threads` or `for_n`, or one that answers 0 threads.
 */
UFORM_API uform_status_t uform_executor_on_pool(const uform_pool_t *pool, const uform_ram_options_t *ram_options,
                                                size_t deferred_limit, uform_executor_t *executor,
                                                uform_outcome_t *outcome);

/*
 * Makes an executor over GPU streams. This build has no GPU support, so it answers
 * UFORM_UNSUPPORTED (and sets `*executor` to NULL).
 */
UFORM_API uform_status_t uform_executor_for_vram(const uform_vram_options_t *vram_options,
                                                 const uform_ram_options_t *ram_options, size_t streams,
                                                 size_t scratch_limit, size_t deferred_limit,
                                                 uform_executor_t *executor, uform_outcome_t *outcome);

/*
 * Waits until every call submitted to the executor before this one is final, then makes its idle
 * threads adopt `mood` (parked threads sleep; spinning threads poll and answer a new call faster
 * at the price of a core each). NULL (the calling-thread executor) answers UFORM_OK at once.
 * Must not be called from inside a progress handler of a call on the same executor (it would
 * wait for itself): that is UFORM_INVALID_ARGUMENT. Thread-safe.
 */
UFORM_API uform_status_t uform_executor_drain(uform_executor_t executor, uform_mood_t mood, uform_outcome_t *outcome);

/* The number of compute threads a call on this executor uses (1 for NULL). Thread-safe. */
UFORM_API size_t uform_executor_threads(uform_executor_t executor);

/* The CPU class whose kernels calls on this executor dispatch to (the detected one for NULL). */
UFORM_API uform_cpu_class_t uform_executor_cpu_class(uform_executor_t executor);

/*
 * Frees an executor: waits for its calls in flight and queued, then stops its threads. Arenas made
 * for it keep its memory description alive; the executor itself must not be used afterwards.
 * NULL is a no-op. Must not be called from one of the executor's own calls.
 */
UFORM_API void uform_executor_free(uform_executor_t executor);

/* ------------------------------------------------------------------------------------------ */
/* Arenas and views — where outputs land                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Memory that a call's outputs are written into. Not thread-safe for concurrent calls: one call
 * holds an arena at a time (others get UFORM_CONTENDED). */
typedef struct uform_arena_s *uform_arena_t;

/*
 * Makes an arena whose pages live where `executor` computes (its NUMA nodes; host memory for NULL).
 * Every call that writes outputs rewinds the arena first and bumps its generation, so older views
 * become stale; the arena keeps its largest footprint, so a steady loop allocates once.
 * Statuses: UFORM_OK, UFORM_INVALID_ARGUMENT (NULL `arena`), UFORM_OUT_OF_MEMORY.
 */
UFORM_API uform_status_t uform_arena_for_executor(uform_executor_t executor, uform_arena_t *arena,
                                                  uform_outcome_t *outcome);

/* Makes an arena of ordinary host pages for the calling thread. Statuses as above. */
UFORM_API uform_status_t uform_arena_for_host(uform_arena_t *arena, uform_outcome_t *outcome);

/* The arena's generation: it starts at 1 and grows by one with every call that writes into it. */
UFORM_API uint64_t uform_arena_generation(uform_arena_t arena);

/* Bytes the arena holds from the system now (its capacity, not what the last call used). */
UFORM_API size_t uform_arena_capacity(uform_arena_t arena);

/* Frees an arena and its pages. An arena held by an unfinished deferred call is freed once that
 * call is final (this waits for it). Views into it must not be used afterwards. NULL is a no-op. */
UFORM_API void uform_arena_free(uform_arena_t arena);

/*
 * A view of a matrix in an arena: `rows` rows of `columns` scalars, row `r` at
 * `data + r * stride_bytes`. For UFORM_SCALAR_B1, `columns` counts dimensions (bits) and a row takes
 * ceil(columns / 8) bytes. A view is valid while its arena's generation equals `generation`: the
 * next call that writes into the arena, and freeing it, make it stale. The accessors below refuse
 * stale views; reading `data` directly skips that check.
 */
typedef struct uform_matrix_t {
    void *data;
    size_t rows;
    size_t columns;
    size_t stride_bytes;
    uform_scalar_kind_t scalar;
    uform_arena_t arena;
    uint64_t generation;
} uform_matrix_t;

/* Ragged rows: item `i` owns rows `offsets[i] .. offsets[i + 1]` of `matrix` (`count + 1` offsets,
 * in the same arena, stale together with the matrix). */
typedef struct uform_rows_t {
    uform_matrix_t matrix;
    const size_t *offsets;
    size_t count;
} uform_rows_t;

/* Bytes one row of `columns` scalars of `scalar` takes (B1 rounds up to whole bytes); 0 for an
 * unknown scalar kind. */
UFORM_API size_t uform_scalar_row_bytes(uform_scalar_kind_t scalar, size_t columns);

/* UFORM_OK when the view is current; UFORM_INVALID_ARGUMENT (stale, NULL, or no arena) otherwise. */
UFORM_API uform_status_t uform_matrix_check(const uform_matrix_t *view);

/* Points `*pointer` at row `row` of a current view. UFORM_INVALID_ARGUMENT for a stale view, a NULL
 * argument or a row out of range (and `*pointer` is set to NULL). */
UFORM_API uform_status_t uform_matrix_row(const uform_matrix_t *view, size_t row, const void **pointer);

/* Fills `*item_view` with the rows of item `item` of a current ragged view (a matrix whose `rows`
 * may be 0). UFORM_INVALID_ARGUMENT for a stale view, NULL arguments or an item out of range. */
UFORM_API uform_status_t uform_rows_item(const uform_rows_t *view, size_t item, uform_matrix_t *item_view);

/* ------------------------------------------------------------------------------------------ */
/* Tapes — how inputs cross                                                                    */
/* ------------------------------------------------------------------------------------------ */

/*
 * `count` items laid end to end in `data`, with `count + 1` byte offsets: item `i` is
 * `data[offsets[i] .. offsets[i + 1])`. Offsets must not decrease; the first need not be 0. What an
 * item holds depends on the verb (UTF-8 text, a whole file, RGB8 pixels, float32 samples). Both
 * arrays are borrowed for the call (for a deferred call, until it is final).
 */
typedef struct uform_tape_t {
    const void *data;
    const size_t *offsets;
    size_t count;
} uform_tape_t;

/* Checks a tape's structure: NULL arrays where items exist, decreasing offsets. UFORM_OK or
 * UFORM_INVALID_ARGUMENT with a message naming the item ("offsets[17] < offsets[16] (12 < 40)"). */
UFORM_API uform_status_t uform_tape_validate(const uform_tape_t *tape, uform_outcome_t *outcome);

/* ------------------------------------------------------------------------------------------ */
/* Models — loading a checkpoint                                                               */
/* ------------------------------------------------------------------------------------------ */

/* A loaded perception model (docs/model.md). Immutable after load: several executors may use one model
 * at once, each running its own calls. */
typedef struct uform_model_s *uform_model_t;

/* Where a model's weights live. */
typedef enum uform_residency_t {
    UFORM_RESIDENCY_RAM = 0,
    UFORM_RESIDENCY_VRAM = 1
} uform_residency_t;

/*
 * Maps the checkpoint at `path` (a safetensors file whose `__metadata__` holds "uform.format": "4"
 * and "uform.config"; docs/model.md), checks every tensor against the config and prepares the weights
 * (BF16 matrices are used in place from the mapping, or repacked once for the kernels of the
 * executor's CPU class; norms and embedding tables are widened to F32). The load runs on
 * `executor` (NULL: the calling thread); `ram_options` chooses the CPU class as for executors
 * (UNKNOWN: the executor's) and the activations' type (`compute`, F32 by default). The file must not change
 * while the model lives. Calls on executors of other CPU classes are allowed and use unpacked weights.
 *
 * Statuses: UFORM_OK; UFORM_IO (cannot open or map, with the path and the system's reason);
 * UFORM_FORMAT (not a safetensors file, a missing or malformed config key, a missing, extra or
 * misshapen tensor — the message names the tensor and what was expected); UFORM_UNSUPPORTED (a
 * CPU class this machine cannot run, a newer checkpoint format); UFORM_INVALID_ARGUMENT (NULL
 * `path` or `model`); UFORM_OUT_OF_MEMORY. On failure `*model` is NULL.
 */
UFORM_API uform_status_t uform_model_load_ram(uform_executor_t executor, const char *path,
                                              const uform_ram_options_t *ram_options, uform_model_t *model,
                                              uform_outcome_t *outcome);

/* Frees a model and unmaps its checkpoint. Calls using it must be final. NULL is a no-op. */
UFORM_API void uform_model_free(uform_model_t model);

/* One tower of a model: the transformer that encodes one modality (docs/checkpoints.md). A
 * native checkpoint's modalities share one; a published folder's towers differ (CLIP's text
 * tower is 512 wide where its vision tower is 768). Zero for a modality the model lacks. */
typedef struct uform_tower_description_t {
    size_t hidden, depth, heads, mlp;
} uform_tower_description_t;

/* Everything `uform_model_describe` answers about a model. For a published folder, `hidden` ..
 * `mlp` are its image tower's (else its text tower's) and `towers` holds each one. */
typedef struct uform_model_description_t {
    char size[16];                 /* the config's informative "size" ("tiny", "small" ...) */
    size_t hidden, depth, heads, mlp, embedding;
    size_t matryoshka[8];          /* embedding prefixes the model was trained for */
    size_t matryoshka_count;
    size_t temperature_groups;
    unsigned modalities;           /* bit (1 << uform_modality_t) for every modality present */
    size_t text_bytes;             /* T: bytes per text item (longer texts are truncated) */
    size_t image_size, image_patch;
    size_t video_size, video_patch, video_frames, video_tubelet;
    size_t audio_rate, audio_seconds, audio_mels;
    uint64_t parameters;           /* scalars in the weights */
    uint64_t weight_bytes;         /* bytes of the weights as stored in the checkpoint */
    uform_residency_t residency;
    uform_cpu_class_t cpu_class;   /* the class its weights were prepared for */
    uform_compute_t compute;
    /* What family of checkpoint this is (docs/checkpoints.md): "uform4" for a native checkpoint;
     * for a published folder "clip", "open_clip", "siglip", "uform3", "sentence-transformers",
     * "bert", "roberta" or "xlm-roberta". NUL-terminated. */
    char family[32];
    /* How texts become tokens: "bytes" (native: UTF-8 bytes are the tokens), "wordpiece", "bpe",
     * "unigram" (a tokenizer.json), "sentencepiece" (a .model file); "" without a text tower. */
    char tokenizer[32];
    size_t text_tokens;            /* the most tokens a text keeps, special tokens included */
    uform_tower_description_t towers[4]; /* by uform_modality_t */
} uform_model_description_t;

/* A request to describe a model. Answers at once on the calling thread. */
typedef struct uform_model_describe_t {
    uform_model_t model;                   /* in */
    uform_outcome_t outcome;               /* out */
    uform_model_description_t description; /* out */
} uform_model_describe_t;

/* Fills `request->description`. UFORM_INVALID_ARGUMENT for a NULL request or model. */
UFORM_API uform_status_t uform_model_describe(uform_model_describe_t *request);

/* Bytes of a fingerprint's text: 32 lower-case hex digits and a NUL. */
#define UFORM_FINGERPRINT_CAPACITY 33

/*
 * Writes the checkpoint's fingerprint, 128 bits as 32 hex digits: a hash of everything the encoder
 * reads from the file (the "uform.config" text, and every tensor's name, dtype, shape and bytes;
 * `optimizer.*` training state is left out). Two checkpoints that encode alike share it; any
 * change to a weight changes it. Indexes record it, so a search with another checkpoint is refused
 * (UFORM_CONFIG_MISMATCH) instead of answering nonsense. Not cryptographic. The first call reads
 * the whole checkpoint (milliseconds for `small`); the result is kept with the model. Statuses:
 * UFORM_OK, UFORM_INVALID_ARGUMENT (NULL model or buffer). Thread-safe.
 */
UFORM_API uform_status_t uform_model_fingerprint(uform_model_t model, char fingerprint[UFORM_FINGERPRINT_CAPACITY],
                                                 uform_outcome_t *outcome);

/*
 * Writes a quantized copy of the checkpoint at `path` to `output` (atomically, like every
 * checkpoint writer here): each matrix that I8 compute runs in int8 (the trunk's attn.qkv,
 * attn.out, mlp.up and mlp.down weights) becomes NAME as I8 [out, in] plus NAME_scale as F32 [out],
 * quantized per output channel exactly as a load with UFORM_COMPUTE_I8 quantizes it, so that
 * loading the copy with I8 compute gives bit-identical outputs; every other tensor and the metadata
 * are copied unchanged (`optimizer.*` training state is dropped), and the metadata gains
 * "uform.quantization": "int8-per-channel". About half the bytes of a BF16 checkpoint. Loads with
 * F32 or BF16 compute dequantize the matrices (w = q·scale). Quantizing a quantized checkpoint
 * copies it. docs/int8.md names the tensors. The copy has its own fingerprint: an index built
 * with the original is searched with the original. Runs on the calling thread (for `small`, a
 * fraction of a second). Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL `path` or `output`, or
 * both the same file); UFORM_IO and UFORM_FORMAT as uform_model_load_ram answers them for `path`,
 * or UFORM_IO naming `output` when it cannot be written; UFORM_OUT_OF_MEMORY.
 */
UFORM_API uform_status_t uform_model_quantize(const char *path, const char *output, uform_outcome_t *outcome);

/* ------------------------------------------------------------------------------------------ */
/* Encoding — the verbs                                                                        */
/* ------------------------------------------------------------------------------------------ */

/* What a call measured, written when it is final (including on failure, as far as it got). */
typedef struct uform_encode_stats_t {
    size_t items;            /* items encoded */
    size_t tokens;           /* tokens through the trunk */
    uint64_t input_bytes;    /* bytes read from the tape */
    double decode_seconds;   /* decoding and preprocessing media */
    double compute_seconds;  /* stems, trunk and heads */
    double flops;            /* floating-point operations of the matrix products and attention */
    size_t arena_bytes;      /* bytes the call used in its arena (outputs and scratch) */
} uform_encode_stats_t;

/*
 * Options of an encode. Zeroed: F32 outputs, no progress, no stats, the full embedding.
 *   outputs_scalar  the scalar of EMBEDDINGS and TOKEN_VECTORS (STATES are always F32);
 *   progress        reports per unit of work (decoding, each trunk layer, the heads);
 *   stats           optional, written when the call is final (must live as long as the request);
 *   dimensions      0 keeps the whole embedding, otherwise a Matryoshka prefix of that many columns,
 *                   taken before L2-normalisation (so the prefix is renormalised); at most E.
 */
typedef struct uform_encode_config_t {
    uform_scalar_kind_t outputs_scalar;
    uform_progress_t progress;
    uform_encode_stats_t *stats;
    size_t dimensions;
} uform_encode_config_t;

/*
 * Where an encode's outputs land, as views into the request's arena (readable once the call is
 * final with UFORM_OK, stale after the arena's next call). Outputs not asked for are zeroed views.
 *   embeddings     [items, E or dimensions] of outputs_scalar: the L2-normalised CLS projection;
 *   token_vectors  ragged, item i owns rows offsets[i]..offsets[i+1]: one row per token (CLS first),
 *                  [tokens, E or dimensions] of outputs_scalar;
 *   states         ragged like token_vectors: [tokens, d] F32, the final normalised token states.
 */
typedef struct uform_encoded_t {
    uform_matrix_t embeddings;
    uform_rows_t token_vectors;
    uform_rows_t states;
} uform_encoded_t;

/*
 * The request structs of the encode verbs share one shape: what runs where, one input tape, which
 * outputs to keep, the arena they land in, options, and what comes back. One struct per call (on
 * the stack for a blocking call; for a deferred call it must stay alive and unmoved until
 * `uform_outcome_status(&request.outcome)` is final, and so must the tape and any arrays it points to).
 *
 *   model, executor, completion   in: which model, where it runs (NULL: the calling thread), how it returns
 *   <inputs>                      in: the items (named per verb: texts, images, pixels, videos, recordings, samples)
 *   outputs                       in: UFORM_OUTPUTS_* flags; 0 means EMBEDDINGS
 *   arena                         in: where outputs (and the call's scratch) go; required
 *   config                        in: zeroed = defaults
 *   outcome, encoded              out
 *
 * Items of a batch are packed end to end without padding; an item's outputs never depend on the
 * other items of its batch beyond float rounding. Statuses of every verb: UFORM_OK; UFORM_DEFERRED
 * (a deferred call was queued); UFORM_CONTENDED (executor or arena held; nothing done);
 * UFORM_CANCELLED; UFORM_INVALID_ARGUMENT (bad tape, a NULL model or arena, a modality the model
 * lacks, dimensions above E, an unknown scalar, mismatched pixel sizes — the message names the item);
 * UFORM_FORMAT (an item that is not decodable media of the verb's modality, naming the item);
 * UFORM_UNSUPPORTED (a format this build cannot decode, or FFmpeg not loadable); UFORM_OUT_OF_MEMORY
 * (whenever an allocation fails, also inside a codec library: never reported as FORMAT).
 */

/* Texts: each item is UTF-8 bytes (not validated; bytes are the tokens), truncated to the model's
 * `text_bytes`. An empty text is allowed (its only token is [CLS]). */
typedef struct uform_text_encode_t {
    uform_model_t model;
    uform_executor_t executor;
    uform_completion_t completion;
    uform_tape_t texts;
    uform_outputs_t outputs;
    uform_arena_t arena;
    uform_encode_config_t config;
    uform_outcome_t outcome;
    uform_encoded_t encoded;
} uform_text_encode_t;
UFORM_API uform_status_t uform_text_encode(uform_text_encode_t *request);

/* Images: each item is a whole file (JPEG, PNG, WebP; GIF, BMP and others with FFmpeg), decoded in
 * memory, EXIF-rotated, alpha composited over white, resized (shorter side, antialiased) and
 * centre-cropped to the model's size. Items decode in parallel on the executor's threads. */
typedef struct uform_image_encode_t {
    uform_model_t model;
    uform_executor_t executor;
    uform_completion_t completion;
    uform_tape_t images;
    uform_outputs_t outputs;
    uform_arena_t arena;
    uform_encode_config_t config;
    uform_outcome_t outcome;
    uform_encoded_t encoded;
} uform_image_encode_t;
UFORM_API uform_status_t uform_image_encode(uform_image_encode_t *request);

/* Images as RGB8 pixels: item i holds heights[i] * widths[i] * 3 bytes, rows packed. */
typedef struct uform_image_encode_pixels_t {
    uform_model_t model;
    uform_executor_t executor;
    uform_completion_t completion;
    uform_tape_t pixels;
    const size_t *heights; /* [pixels.count] */
    const size_t *widths;  /* [pixels.count] */
    uform_outputs_t outputs;
    uform_arena_t arena;
    uform_encode_config_t config;
    uform_outcome_t outcome;
    uform_encoded_t encoded;
} uform_image_encode_pixels_t;
UFORM_API uform_status_t uform_image_encode_pixels(uform_image_encode_pixels_t *request);

/* Videos: each item is a whole file (MP4, WebM, MKV ... through FFmpeg); F frames at the centres of
 * F equal segments of the stream. UFORM_UNSUPPORTED in a build without FFmpeg, or when FFmpeg
 * cannot be loaded (see UFORM_FFMPEG_DIR above). */
typedef struct uform_video_encode_t {
    uform_model_t model;
    uform_executor_t executor;
    uform_completion_t completion;
    uform_tape_t videos;
    uform_outputs_t outputs;
    uform_arena_t arena;
    uform_encode_config_t config;
    uform_outcome_t outcome;
    uform_encoded_t encoded;
} uform_video_encode_t;
UFORM_API uform_status_t uform_video_encode(uform_video_encode_t *request);

/* Recordings: each item is a whole file (WAV always; FLAC, Ogg, MP3, AAC ... with FFmpeg, loaded on
 * first use), mixed to mono by averaging, resampled to the model's rate, cropped or zero-padded to
 * its seconds. */
typedef struct uform_audio_encode_t {
    uform_model_t model;
    uform_executor_t executor;
    uform_completion_t completion;
    uform_tape_t recordings;
    uform_outputs_t outputs;
    uform_arena_t arena;
    uform_encode_config_t config;
    uform_outcome_t outcome;
    uform_encoded_t encoded;
} uform_audio_encode_t;
UFORM_API uform_status_t uform_audio_encode(uform_audio_encode_t *request);

/* Recordings as float32 mono samples (the tape's offsets count bytes, 4 per sample) at
 * `sample_rate` Hz, any rate, resampled like files. */
typedef struct uform_audio_encode_samples_t {
    uform_model_t model;
    uform_executor_t executor;
    uform_completion_t completion;
    uform_tape_t samples;
    size_t sample_rate;
    uform_outputs_t outputs;
    uform_arena_t arena;
    uform_encode_config_t config;
    uform_outcome_t outcome;
    uform_encoded_t encoded;
} uform_audio_encode_samples_t;
UFORM_API uform_status_t uform_audio_encode_samples(uform_audio_encode_samples_t *request);

/*
 * Constrained next-byte choice (docs/model.md, text_choose). `texts` are prefixes (a prefix longer than
 * the model's `text_bytes` keeps its last `text_bytes` bytes, the ones next to the byte being
 * chosen, where encoding keeps a text's first bytes); `choices` holds one
 * entry per text listing its legal next bytes (distinct; an empty or duplicated list is
 * UFORM_INVALID_ARGUMENT naming the text); `groups` optionally gives each text's temperature group
 * (NULL: group 0; a group at or above the model's `temperature_groups` is UFORM_INVALID_ARGUMENT).
 * The answer, `probabilities`, is ragged F32: text i owns rows offsets[i]..offsets[i+1] of a
 * [total legal bytes, 1] matrix, in the order its choices listed them, summing to 1.
 * `config.outputs_scalar` and `config.dimensions` are ignored. Other fields as for the encode verbs.
 */
typedef struct uform_text_choose_t {
    uform_model_t model;
    uform_executor_t executor;
    uform_completion_t completion;
    uform_tape_t texts;
    uform_tape_t choices;
    const size_t *groups;
    uform_arena_t arena;
    uform_encode_config_t config;
    uform_outcome_t outcome;
    uform_rows_t probabilities;
} uform_text_choose_t;

UFORM_API uform_status_t uform_text_choose(uform_text_choose_t *request);

/*
 * The tokens a model's text tower runs for one text (`length` bytes of UTF-8, borrowed for the
 * call): `*count` of them, special tokens included, after the tower's limit (and SigLIP's padding).
 * For a native checkpoint these are [CLS] (256) and the text's first `text_bytes` bytes; for a
 * published folder (docs/checkpoints.md) the ids its tokenizer gives, the ids its text tower reads.
 * With `ids` non-NULL, the first min(*count, capacity) ids are written there (NULL: count only).
 * Runs on the calling thread (microseconds for a sentence; no executor or arena); thread-safe.
 * Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL model or count, NULL text with a non-zero length,
 * a model without text); UFORM_OUT_OF_MEMORY.
 */
UFORM_API uform_status_t uform_text_tokenize(uform_model_t model, const char *text, size_t length, uint32_t *ids,
                                             size_t capacity, size_t *count, uform_outcome_t *outcome);

/*
 * The positions a model's tower for `modality` runs for one item, as the encode verbs size it
 * (their `stats.tokens` and the rows of an item's token_vectors and states): for text, the count
 * uform_text_tokenize gives for `size` bytes at `bytes`; for an image, a video or a recording, the
 * tower's class row (none for SigLIP), register rows (UForm 3 towers with `num_reg_tokens`) and
 * patch, tubelet or audio-frame rows. Every media item is resized, sampled or cropped to the
 * tower's fixed input, so a media count does not depend on the item: `bytes` is not read (it may be
 * NULL) and a file that would not decode still gets the count. Use it to report usage per item.
 * Runs on the calling thread; thread-safe; allocates only for a published folder's text tokenizer.
 * Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL model or count, a modality outside
 * uform_modality_t or one the model has no tower for, NULL text bytes with a non-zero size);
 * UFORM_OUT_OF_MEMORY (tokenizing a text).
 */
UFORM_API uform_status_t uform_model_tokens(uform_model_t model, uform_modality_t modality, const void *bytes,
                                            size_t size, size_t *count, uform_outcome_t *outcome);

/*
 * A Matryoshka prefix of an embedding the library wrote: `prefix` [dimensions] receives the first
 * `dimensions` columns of `embedding` [width], an L2-normalised F32 row, scaled back to unit length
 * (the squares summed in double, each value divided by the root and rounded once). `dimensions`
 * equal to `width` copies the row untouched: it is of unit length already. A prefix whose columns
 * are all zero stays all zeros (there is no direction to keep). The same direction as an encode
 * with config.dimensions = dimensions, within F32 rounding (~1e-7, not bit for bit: the encode
 * normalises the unnormalised projection). `prefix` may be `embedding`. Runs on the calling thread;
 * thread-safe. Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL rows, dimensions 0 or above width).
 */
UFORM_API uform_status_t uform_embedding_truncate(const float *embedding, size_t width, size_t dimensions, float *prefix,
                                                  uform_outcome_t *outcome);

/* ------------------------------------------------------------------------------------------ */
/* Media — probing files and preparing inputs ahead of an encode                               */
/* ------------------------------------------------------------------------------------------ */

/*
 * FFmpeg (audio other than WAV, video, GIF/BMP/TIFF/PNM/JPEG 2000 images) is not linked: the first
 * call that needs it loads libavutil, libswresample, libswscale, libavcodec and libavformat of the
 * major versions this build was written for (FFmpeg 5.1: 57, 4, 6, 59, 59), from the folder named
 * by the environment variable UFORM_FFMPEG_DIR when it is set (an LGPL build of your own, say),
 * else from the system's library path. A process that only encodes text, JPEG, PNG, WebP or WAV
 * never maps it. When it cannot be loaded (missing, too old), the calls that need it answer
 * UFORM_UNSUPPORTED naming the library and where it was looked for; everything else works.
 */

/*
 * Which modality a file's bytes hold, decided by content (never by a file name) without decoding:
 *   IMAGE  JPEG, PNG, WebP, GIF, BMP, TIFF, PNM, JPEG 2000, HEIF/AVIF (recognised; decoding HEIF
 *          is UFORM_UNSUPPORTED);
 *   AUDIO  WAV, FLAC, MP3, AAC (ADTS), Ogg Vorbis/Opus/FLAC/Speex, and MP4 (M4A), Matroska/WebM
 *          and AVI containers whose tracks hold no video;
 *   VIDEO  MP4, Matroska/WebM and AVI containers with a video track, Ogg Theora;
 *   TEXT   anything else that is non-empty valid UTF-8 without NUL or control bytes (tab, line
 *          feed, carriage return and form feed allowed): the bytes are the text.
 * Containers are walked through their headers (MP4 boxes to each track's handler, Matroska's
 * Tracks element, AVI's stream headers); a container whose track list cannot be found is VIDEO,
 * except an MP4 whose brand says audio (M4A, M4B, M4P). Statuses: UFORM_OK; UFORM_FORMAT (empty
 * bytes, or none of the above: the message says so); UFORM_INVALID_ARGUMENT (NULL `bytes` with a
 * non-zero size, NULL `modality`). Reads nothing past `size`. Thread-safe.
 */
UFORM_API uform_status_t uform_media_probe(const void *bytes, size_t size, uform_modality_t *modality,
                                           uform_outcome_t *outcome);

/*
 * Model-ready inputs of media items, decoded and preprocessed ahead of an encode (docs/preprocessing.md:
 * the stems up to their patch projection): item i owns rows i·rows_per_item .. (i+1)·rows_per_item of
 * `rows`, F32 [count · rows_per_item, patch_width], contiguous (stride = patch_width · 4 bytes):
 *   IMAGE  the (S/p)² patches, each (c, y, x), normalised: rows_per_item = (S/p)², width 3·p·p;
 *   VIDEO  the tubelets, time-major, each (c, frame, y, x): (F/t)·(S/p)² rows of 3·t·p·p;
 *   AUDIO  the log-mel tokens, 4 frames each (frame-major): A rows of 4·M.
 * An item that failed to decode has status ≠ UFORM_OK in `item_outcomes[i]` (with its message)
 * and undefined rows. Everything lives in the prepare call's arena: valid until that arena's next
 * call (check with uform_matrix_check(&prepared.rows)).
 */
typedef struct uform_prepared_t {
    uform_modality_t modality;
    size_t count;                         /* items */
    size_t rows_per_item;
    uform_matrix_t rows;                  /* [count · rows_per_item, patch_width] F32 */
    const uform_outcome_t *item_outcomes; /* [count]: status UFORM_OK, or why item i failed */
    size_t failed;                        /* items whose status is not UFORM_OK */
} uform_prepared_t;

/*
 * Decodes and preprocesses whole files of one media modality (IMAGE, VIDEO or AUDIO) into
 * `prepared`, in parallel on the executor's threads, exactly as the encode verbs do before their
 * patch projection — so that a pipeline can prepare batch n+1 on one executor while another
 * encodes batch n (uform_prepared_encode), or read files while either runs.
 *
 * Unlike the encode verbs, a bad item does not fail the call: the call answers UFORM_OK, and each
 * item's own status and message ("JPEG: premature end of data", "not an image: WAV recording")
 * are in `prepared.item_outcomes` (the message has no "files[i]: " prefix; the function is
 * "uform_media_prepare"). Progress counts items (reported per group of a few items per thread);
 * cancellation stops between groups. Fields as the encode verbs' (`progress` replaces `config`).
 * Statuses: UFORM_OK; UFORM_DEFERRED; UFORM_CONTENDED; UFORM_CANCELLED; UFORM_INVALID_ARGUMENT (a
 * bad tape, NULL model or arena, TEXT or an unknown modality, a modality the model lacks);
 * UFORM_UNSUPPORTED (VIDEO without FFmpeg); UFORM_OUT_OF_MEMORY.
 */
typedef struct uform_media_prepare_t {
    uform_model_t model;
    uform_executor_t executor;
    uform_completion_t completion;
    uform_modality_t modality;
    uform_tape_t files;
    uform_arena_t arena;
    uform_progress_t progress;
    uform_outcome_t outcome;
    uform_prepared_t prepared;
} uform_media_prepare_t;
UFORM_API uform_status_t uform_media_prepare(uform_media_prepare_t *request);

/*
 * Encodes prepared items (uform_media_prepare's output): the patch projection, the trunk and the
 * heads, with results equal to the encode verb of the modality on the same files. Only the items
 * that prepared successfully are encoded, in order: output row (or ragged item) k belongs to the
 * k-th item whose status is UFORM_OK, so `encoded` has `prepared->count - prepared->failed` items.
 * `prepared` (and the arena it lives in) must stay untouched until this call is final, and
 * `arena` must be another arena than the prepared one. Fields and statuses as the encode verbs',
 * plus UFORM_INVALID_ARGUMENT for a NULL or stale `prepared`, one made for another model, or the
 * same arena.
 */
typedef struct uform_prepared_encode_t {
    uform_model_t model;
    uform_executor_t executor;
    uform_completion_t completion;
    const uform_prepared_t *prepared;
    uform_outputs_t outputs;
    uform_arena_t arena;
    uform_encode_config_t config;
    uform_outcome_t outcome;
    uform_encoded_t encoded;
} uform_prepared_encode_t;
UFORM_API uform_status_t uform_prepared_encode(uform_prepared_encode_t *request);

/* ------------------------------------------------------------------------------------------ */
/* Indexes — a corpus's embeddings in one file, searched exactly                               */
/* ------------------------------------------------------------------------------------------ */
/*
 * An index is one safetensors file holding the embeddings of many items of any modalities, made
 * by one checkpoint at one width and scalar kind:
 *
 *   embeddings.text, .image, .video, .audio   [n_m, dims] of the scalar (B1: U8 [n_m, ceil(dims/8)])
 *   items.modality                           U8 [count]: each item's uform_modality_t
 *   items.path_offsets, items.paths          I64 [count + 1], U8 [bytes]: each item's path, a byte tape
 *   __metadata__  uform.index.format "1", uform.index.fingerprint (the checkpoint's, 32 hex digits),
 *                 uform.index.dims, uform.index.scalar ("f32", "f16", "bf16", "i8", "b1"),
 *                 uform.index.count, and any keys a builder's caller added.
 *
 * Items are numbered 0 .. count−1 in the order they were added; item i is row k of its modality's
 * tensor where k counts the earlier items of that modality. A builder collects items in memory (in
 * their final scalar: dims·scalar bytes and the path per item, what the file holds) and writes the
 * file atomically, as often as asked (checkpoints); an opened index maps the file read-only.
 *
 *     uform_index_t index = NULL;
 *     if (uform_index_open("photos.index", model, &index, &outcome) != UFORM_OK) ...; // checks the fingerprint
 *     uform_index_search_t search = {0};
 *     search.index = index, search.executor = executor, search.arena = arena;
 *     search.queries = query_rows, search.queries_count = 1, search.queries_columns = dims, search.top = 10;
 *     if (uform_index_search(&search) != UFORM_OK) ...;
 *     for (size_t i = 0; i < search.hits_per_query; ++i) {
 *         const char *path; size_t length; uform_modality_t modality;
 *         uform_index_item(index, search.hits[i].item, &modality, &path, &length);
 *         printf("%.4f %.*s\n", search.hits[i].score, (int)length, path);
 *     }
 *     uform_index_free(index);
 */
typedef struct uform_index_s *uform_index_t;
typedef struct uform_index_builder_s *uform_index_builder_t;

/* What an index (or a builder) holds. */
typedef struct uform_index_description_t {
    size_t count;                                  /* items */
    size_t counts[4];                              /* items per modality, by uform_modality_t */
    size_t dimensions;                             /* columns per embedding */
    uform_scalar_kind_t scalar;
    char fingerprint[UFORM_FINGERPRINT_CAPACITY];  /* the checkpoint's (uform_model_fingerprint) */
} uform_index_description_t;

/*
 * Makes an empty builder for embeddings of `model` with `dimensions` columns (0: the model's full
 * width E; otherwise at most E, a Matryoshka prefix) in `scalar`. Statuses: UFORM_OK;
 * UFORM_INVALID_ARGUMENT (NULL model or builder, dimensions above E, an unknown scalar);
 * UFORM_OUT_OF_MEMORY. On failure `*builder` is NULL.
 */
UFORM_API uform_status_t uform_index_builder_create(uform_model_t model, size_t dimensions, uform_scalar_kind_t scalar,
                                                    uform_index_builder_t *builder, uform_outcome_t *outcome);

/* Makes a builder holding a copy of every item of an open index (its dimensions, scalar and
 * fingerprint), to extend it: resuming an interrupted run, or adding new files. The index may be
 * freed afterwards. Statuses: UFORM_OK, UFORM_INVALID_ARGUMENT (NULL arguments),
 * UFORM_OUT_OF_MEMORY. */
UFORM_API uform_status_t uform_index_builder_from(uform_index_t index, uform_index_builder_t *builder,
                                                  uform_outcome_t *outcome);

/*
 * Appends `paths.count` items of `modality`: item k's embedding is row k of `embeddings` (copied;
 * a current view with the builder's dimensions and scalar, as an encode with
 * config.dimensions = dims and outputs_scalar = scalar writes it; `rows` must equal the count; a
 * view of some rows of a larger output is fine) and its path is item k of `paths` (copied; any
 * bytes). Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL arguments, a stale view, another width
 * or scalar, a row count that differs, a bad tape, an unknown modality) — the builder is then
 * unchanged; UFORM_OUT_OF_MEMORY (unchanged too). Not thread-safe: one thread per builder.
 */
UFORM_API uform_status_t uform_index_builder_add(uform_index_builder_t builder, uform_modality_t modality,
                                                 const uform_matrix_t *embeddings, const uform_tape_t *paths,
                                                 uform_outcome_t *outcome);

/*
 * Writes every item so far to `path` atomically (a temporary file in the same directory, fsync,
 * rename, fsync of the directory): readers see the old file or the new one, never a part, and a
 * crash leaves the last complete write. `metadata` holds `metadata_count` pairs of NUL-terminated
 * UTF-8 strings (key, value, key, value ...; may be NULL when the count is 0) added to the file's
 * `__metadata__`; keys starting with "uform.index." are reserved (UFORM_INVALID_ARGUMENT). The
 * builder stays usable (write again later: a checkpoint). Statuses: UFORM_OK; UFORM_IO (the path
 * and the system's reason; the old file is untouched); UFORM_INVALID_ARGUMENT; UFORM_OUT_OF_MEMORY.
 */
UFORM_API uform_status_t uform_index_builder_write(uform_index_builder_t builder, const char *path,
                                                   const char *const *metadata, size_t metadata_count,
                                                   uform_outcome_t *outcome);

/* Fills `*description` with what the builder holds so far (its items, width, scalar, fingerprint).
 * UFORM_INVALID_ARGUMENT for a NULL builder or description; a non-NULL description is zeroed first. */
UFORM_API uform_status_t uform_index_builder_describe(uform_index_builder_t builder,
                                                      uform_index_description_t *description);

/* Item `item` of a builder: its modality and path (`*path` points at `*length` bytes owned by the
 * builder, valid until its next add or free; not NUL-terminated). UFORM_INVALID_ARGUMENT for NULL
 * arguments or an item out of range. */
UFORM_API uform_status_t uform_index_builder_item(uform_index_builder_t builder, size_t item,
                                                  uform_modality_t *modality, const char **path, size_t *length);

/* Frees a builder. NULL is a no-op. */
UFORM_API void uform_index_builder_free(uform_index_builder_t builder);

/* The members of a mesh build one index together with uform_index_builder_write_members or
 * uform_index_builder_gather (Mesh section). */

/*
 * Indexes from vectors: embeddings made elsewhere (another model, another library), with no
 * checkpoint to encode queries. Such an index records UFORM_INDEX_NO_CHECKPOINT as its fingerprint
 * unless the caller stamps a checkpoint's (uform_model_fingerprint), and is searched with query
 * vectors; uform_index_open with a model refuses a no-checkpoint index (UFORM_CONFIG_MISMATCH).
 *
 *     uform_index_builder_t builder = NULL;
 *     uform_index_builder_create_vectors(256, UFORM_SCALAR_F32, NULL, &builder, &outcome);
 *     uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, rows, UFORM_SCALAR_F32, count, 256, 0,
 *                                     NULL, UFORM_INDEX_NORMALIZE, &outcome);  // ids "0", "1", ...
 *     uform_index_builder_write(builder, "vectors.index", NULL, 0, &outcome);
 */
#define UFORM_INDEX_NO_CHECKPOINT "00000000000000000000000000000000"
/* uform_index_builder_add_vectors's flags. */
#define UFORM_INDEX_NORMALIZE 1u /* divide each row by its L2 norm (in double) before storing it; zero rows stay zero */

/*
 * Makes an empty builder for rows of `dimensions` columns (1 .. 65,536) in `scalar`, with no model.
 * `fingerprint` is 32 lower-case hex digits to record (a checkpoint's, from uform_model_fingerprint,
 * when the vectors are that checkpoint's embeddings), or NULL for UFORM_INDEX_NO_CHECKPOINT.
 * Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL builder, dimensions 0 or above 65,536, an
 * unknown scalar, a fingerprint that is not 32 lower-case hex digits); UFORM_OUT_OF_MEMORY. On
 * failure `*builder` is NULL.
 */
UFORM_API uform_status_t uform_index_builder_create_vectors(size_t dimensions, uform_scalar_kind_t scalar,
                                                            const char *fingerprint, uform_index_builder_t *builder,
                                                            uform_outcome_t *outcome);

/*
 * Appends `rows` items of `modality` from a row-major matrix: row k is `columns` values of
 * `vectors_scalar` (UFORM_SCALAR_F32 or UFORM_SCALAR_F16) at `vectors` + k·`stride` bytes (0:
 * dense), borrowed for the call. `columns` must equal the builder's dimensions (any builder: one
 * from uform_index_builder_create too). Each row is optionally normalised (`flags`
 * UFORM_INDEX_NORMALIZE), then stored in the builder's scalar exactly as an encode's
 * outputs_scalar converts F32 (F32 rows as given, bit for bit; F16 by rounding to nearest even;
 * BF16 the same; I8 127·x rounded half to even and clamped to ±127, so un-normalised values
 * beyond ±1 saturate; B1 the sign bits). Item k's path is item k of `paths` (copied; any
 * bytes), or with `paths` NULL the decimal number it gets in the index ("0", "1", ... for a new
 * builder).
 * Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL builder, or NULL vectors with rows > 0; a
 * vectors_scalar other than F32 or F16; columns other than the builder's; a stride shorter than a
 * row; a paths tape that is malformed or whose count differs from `rows`; unknown flags or
 * modality; a NaN or infinite value: the message names its row and column); UFORM_OUT_OF_MEMORY.
 * On any failure the builder is unchanged. Not thread-safe: one thread per builder.
 */
UFORM_API uform_status_t uform_index_builder_add_vectors(uform_index_builder_t builder, uform_modality_t modality,
                                                         const void *vectors, uform_scalar_kind_t vectors_scalar,
                                                         size_t rows, size_t columns, size_t stride,
                                                         const uform_tape_t *paths, unsigned flags,
                                                         uform_outcome_t *outcome);

/*
 * Maps the index file at `path` read-only and checks all of it: the metadata, every tensor's dtype
 * and shape against the metadata, modality values, path offsets (from 0, non-decreasing, ending at
 * the tape's length) and per-modality counts. With a `model` (may be NULL: no check), the index
 * must have been built by the same checkpoint: another fingerprint is UFORM_CONFIG_MISMATCH,
 * naming both fingerprints and the index's dims and scalar. The file must not change while the
 * index is open. Statuses: UFORM_OK; UFORM_IO (cannot open or map, with the path and the system's
 * reason); UFORM_FORMAT (not a safetensors file, or not a valid index: the message names the
 * tensor or key and what was expected); UFORM_UNSUPPORTED (a newer index format);
 * UFORM_CONFIG_MISMATCH; UFORM_INVALID_ARGUMENT (NULL `path` or `index`); UFORM_OUT_OF_MEMORY.
 * On failure `*index` is NULL. An open index is immutable: any number of threads may search it.
 */
UFORM_API uform_status_t uform_index_open(const char *path, uform_model_t model, uform_index_t *index,
                                          uform_outcome_t *outcome);

/* Unmaps and frees an index; searches using it must be final. NULL is a no-op. */
UFORM_API void uform_index_free(uform_index_t index);

/* Fills `*description` (UFORM_INVALID_ARGUMENT for a NULL index or description; a non-NULL
 * description is zeroed first). Thread-safe: an open index never changes. */
UFORM_API uform_status_t uform_index_describe(uform_index_t index, uform_index_description_t *description);

/* Item `item`'s modality and path (`*path` points at `*length` bytes inside the mapping, valid
 * while the index is open; not NUL-terminated). UFORM_INVALID_ARGUMENT for NULL arguments or an
 * item out of range. */
UFORM_API uform_status_t uform_index_item(uform_index_t index, size_t item, uform_modality_t *modality,
                                          const char **path, size_t *length);

/* The value of the file's metadata `key` (NUL-terminated, valid while the index is open), or NULL. */
UFORM_API const char *uform_index_metadata(uform_index_t index, const char *key);

/* One result of a search. */
typedef struct uform_index_hit_t {
    uint64_t item;              /* the item's number in the index */
    float score;                /* similarity, higher is closer (see uform_index_search_t) */
    uform_modality_t modality;  /* the item's modality */
} uform_index_hit_t;

/*
 * Exact top-K search: every eligible item of the index is scored against every query and the
 * `top` best per query are kept, best first, ties ordered by item number (so results are the same
 * whatever the threads and timing). Queries are F32 rows of `queries_columns` (the index's dims)
 * values, expected L2-normalised (encode outputs are), `queries_stride` bytes apart (0: dense).
 * Scores, per the index's scalar:
 *   F32   Σ q·x, F32 products and sums: the cosine of normalised embeddings;
 *   F16   the same over the rows widened to F32 (exact);
 *   BF16  Σ bf16(q)·x: the query rounded to BF16 (nearest even), exact products, F32 sums;
 *   I8    (Σ q8·x8) / 127², exact: q8 is the query quantised like the index (round(127·q),
 *         clamped to ±127);
 *   B1    two stages: the `candidates` items nearest by Hamming distance between the query's sign
 *         bits and the rows' (ties by item) are rescored exactly as Σ q·s / √dims, s = ±1 per bit
 *         (the cosine between the query and the stored sign vector, summed in double), and the
 *         best `top` of them are answered. `candidates` 0 takes 4·top (at least top); the answer
 *         equals the exact top-K by that score whenever the candidates hold it.
 * Batches of 8 queries or more (F32, BF16, F16) go through the GEMM (each block of rows packed
 * once, the queries as the product's rows), smaller ones through a matrix-vector kernel that
 * streams the index once; the two differ only in F32 rounding. From 256 queries over F32 rows,
 * rows are first screened by cheaper scores against a proven bound on their error — BF16 products
 * on CPUs with native BF16 (the AMD_GENOA class and later), INT8 products on the HASWELL, SIERRA,
 * SKYLAKE and ICELAKE classes — and only rows that could still enter a query's top K are scored
 * in F32 (by the matrix-vector kernel): the same answer, 1.3 to 2.4 times faster than the F32
 * product by class. Work
 * splits into fixed blocks of rows (never by timing), each thread keeping a bounded top-K heap per
 * query; the heaps merge at the end.
 *
 *   index, executor, completion   in
 *   queries, queries_count, queries_columns, queries_stride   in: borrowed until final
 *   top                           in: K ≥ 1 hits per query (fewer when fewer items are eligible)
 *   modalities                    in: bits (1 << uform_modality_t) of the items to consider; 0: all
 *   candidates                    in: B1 only, see above
 *   arena                         in: the hits and the call's scratch (threads·queries·(top or
 *                                 candidates)·16 bytes, and a few score blocks per thread; with
 *                                 the GEMM, a packed block of 1,024 rows per thread; with
 *                                 a screen also that block in BF16 or int8)
 *   outcome                       out
 *   hits                          out: [queries_count][hits_per_query] in the arena, valid until
 *                                 its next call; best first
 *   hits_per_query                out
 * Statuses: UFORM_OK; UFORM_DEFERRED; UFORM_CONTENDED; UFORM_CANCELLED (the progress handler of
 * `progress`, reported per block); UFORM_INVALID_ARGUMENT (NULL index, arena or queries, top 0,
 * columns other than the index's dims, a stride shorter than a row, unknown modality bits);
 * UFORM_OUT_OF_MEMORY.
 */
typedef struct uform_index_search_t {
    uform_index_t index;
    uform_executor_t executor;
    uform_completion_t completion;
    const float *queries;
    size_t queries_count;
    size_t queries_columns;
    size_t queries_stride;
    size_t top;
    unsigned modalities;
    size_t candidates;
    uform_progress_t progress;
    uform_arena_t arena;
    uform_outcome_t outcome;
    const uform_index_hit_t *hits;
    size_t hits_per_query;
} uform_index_search_t;
UFORM_API uform_status_t uform_index_search(uform_index_search_t *request);

/*
 * Approximate search (docs/indexes.md, "Approximate search"): an index can carry an approximate
 * structure built by FAISS — an HNSW graph, inverted lists of product-quantised codes, or any
 * other FAISS `index_factory` recipe — kept in FAISS's own file format beside the index (X.index,
 * X.faiss), so Python's faiss can open it. Vector k of the structure is item k of the index. The
 * FAISS part lives in a module, libuform-faiss.so.4, that libuform opens on first use; without it
 * every function here answers UFORM_UNSUPPORTED naming the module and dlopen's reason.
 *
 * Pairing: after FAISS's bytes, the file ends with a 256-byte record that names the index it was
 * built from — the checkpoint's fingerprint, count, dims, scalar and a 128-bit hash of every
 * item's modality and row — and hashes the FAISS bytes themselves. Opening checks both, so a
 * structure built from another index (or an older version of this one) is refused with
 * UFORM_CONFIG_MISMATCH, and damaged or foreign bytes with UFORM_FORMAT, before FAISS reads them.
 * FAISS's reader stops at the end of its own bytes and ignores the record.
 *
 *     uform_index_ann_options_t options = {0};                          // the default recipe
 *     if (uform_index_ann_build(index, "photos.faiss", &options, &outcome) != UFORM_OK) ...;
 *     uform_index_ann_t ann = NULL;
 *     if (uform_index_ann_open(index, "photos.faiss", &ann, &outcome) != UFORM_OK) ...;
 *     uform_index_ann_search_t search = {0};
 *     search.ann = ann, search.arena = arena, search.queries = query_rows, search.queries_count = 1;
 *     search.queries_columns = dims, search.top = 10, search.rerank = 40; // 40 candidates rescored exactly
 *     if (uform_index_ann_search(&search) != UFORM_OK) ...;                // hits as uform_index_search's
 *     uform_index_ann_free(ann);
 */
typedef struct uform_index_ann_s *uform_index_ann_t;

/* How uform_index_ann_build makes the structure; all zero for the defaults. */
typedef struct uform_index_ann_options_t {
    /* A FAISS index_factory string ("HNSW32", "IVF4096,PQ32", "OPQ32_128,IVF65536_HNSW32,PQ32" …),
     * built for inner products, at most 127 bytes. NULL or "": the default rule — "HNSW32" below
     * 100,000 items, "IVF<n>,Flat" from 100,000 up to 1,000,000, above that "IVF<n>,PQ<m>np"; n the
     * power of two nearest 4·√count and m the largest divisor of dims at most dims/4 ("np": without
     * FAISS's polysemous training, which the search does not use; docs/indexes.md has the
     * measurements). */
    const char *recipe;
    /* Rows the quantisers are trained on. 0: min(count, 256·C) where C is the most centroids any
     * of the recipe's k-means has (IVF lists, 256 per 8-bit PQ; FAISS's k-means uses at most 256
     * rows per centroid). The rows are the items chosen by selection sampling with a fixed seed,
     * in item order: the same index and size always train on the same rows. Above count: count. */
    size_t train_rows;
    /* OpenMP threads FAISS uses for this call; 0: OpenMP's default (OMP_NUM_THREADS or the cores).
     * HNSW graphs built on more than one thread depend on timing; 1 gives the same file every time. */
    size_t threads;
    /* Nonzero: keep the inverted lists on disk, in FAISS's OnDiskInvertedLists file beside the
     * structure — X.faiss's lists in X.ivfdata (another name gets ".ivfdata" appended), named in the
     * .faiss without its folder, so the two can be moved together — for IVF recipes whose lists FAISS
     * merges (IVF…,Flat, IVF…,PQ…, IVF…,SQ8, under OPQ or PCA too); others are UFORM_INVALID_ARGUMENT.
     * The build writes each batch of 65,536 added rows' lists out as it goes (in a members' build,
     * every member adds 65,536 rows at a time and sends each batch's lists to member 0, which
     * writes them), so no process holds all of them in memory; opening maps the lists file and
     * searches read it through the page cache. Both files are written atomically (temporary names,
     * fsync, the lists renamed just before the .faiss); the .faiss's pairing record holds the lists
     * file's name, size and hash, and opening refuses a lists file that is missing (UFORM_IO) or of
     * another size or hash (UFORM_FORMAT). Python's faiss opens the pair with
     * faiss.read_index("X.faiss", faiss.IO_FLAG_ONDISK_SAME_DIR). Appended last: source that fills
     * the first three fields and zeroes the rest builds unchanged and gets lists inside the .faiss,
     * as before (a binary compiled against the three-field struct must be rebuilt: the library
     * reads this field from the caller's struct). docs/indexes.md, "On-disk lists". */
    int ondisk;
} uform_index_ann_options_t;

/*
 * Builds an approximate structure over every item of `index` and writes it to `path` (FAISS's
 * format followed by the pairing record) atomically: a temporary file in the same folder, fsync,
 * rename. Rows of F32 go to FAISS as they are; F16 and BF16 rows are widened exactly, I8 rows as
 * x/127, so FAISS's inner products are on exact search's scale. Blocking, on the calling thread
 * and FAISS's OpenMP threads (`options->threads`); memory: FAISS's structure, the training sample
 * widened to F32 and 65,536 widened rows at a time. Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT
 * (NULL index or path, an empty index, a recipe longer than 127 bytes, a recipe FAISS refuses or
 * a training FAISS refuses — FAISS's message passed on, such as fewer rows than centroids — and
 * OPQ recipes with fewer than 9,984 training rows); UFORM_UNSUPPORTED (B1 indexes: FAISS's binary
 * structures hold Hamming distances, not exact search's scores; a missing FAISS module);
 * UFORM_IO (the path and the system's reason; an older file at `path` is untouched);
 * UFORM_OUT_OF_MEMORY.
 */
UFORM_API uform_status_t uform_index_ann_build(uform_index_t index, const char *path,
                                               const uform_index_ann_options_t *options, uform_outcome_t *outcome);

/*
 * Reads the approximate structure at `path` for `index` (which must stay open while `*ann` is
 * used) and checks that it belongs to it: the pairing record must name the index's fingerprint,
 * count, dims, scalar and row hash (hashing the rows streams the index once), and FAISS's part must
 * hash as recorded, parse entirely and hold `count` vectors of `dims` for inner products.
 * A structure built with `ondisk` also needs its lists file, found beside `path` under the name
 * its pairing record gives (X.ivfdata), which must have the recorded size and hash (read once) and
 * is then mapped read-only for the structure's life.
 * Statuses: UFORM_OK; UFORM_IO (cannot open or read, with the path and the system's reason; also a
 * missing lists file);
 * UFORM_FORMAT (no pairing record — a file cut short, not written by UForm, or re-saved by FAISS —,
 * FAISS bytes that do not hash as recorded, or that FAISS cannot read: its message; a lists file of
 * another size or hash, or lists its record does not mention); UFORM_CONFIG_MISMATCH
 * (built from another index: the message names what differs, both values);
 * UFORM_UNSUPPORTED (a newer pairing record, a missing FAISS module); UFORM_INVALID_ARGUMENT (NULL
 * arguments); UFORM_OUT_OF_MEMORY. On failure `*ann` is NULL. An open structure is immutable: any
 * number of threads may search it.
 */
UFORM_API uform_status_t uform_index_ann_open(uform_index_t index, const char *path, uform_index_ann_t *ann,
                                              uform_outcome_t *outcome);

/* Frees a structure; searches using it must be final. NULL is a no-op. */
UFORM_API void uform_index_ann_free(uform_index_ann_t ann);

/* What an approximate structure is. */
typedef struct uform_index_ann_description_t {
    size_t count;         /* vectors: the index's items */
    size_t dimensions;
    size_t lists;         /* IVF: its inverted lists (nlist), which `nprobe` chooses among; 0 otherwise */
    size_t code_bytes;    /* bytes that stand for one vector (4·dims for full vectors, m for PQm) */
    size_t train_rows;    /* rows the quantisers were trained on (0 for structures without training) */
    int graph;            /* 1: an HNSW graph, of the whole structure or of an IVF's quantiser (`ef` applies) */
    char recipe[128];     /* the index_factory string it was built from */
} uform_index_ann_description_t;

/* Fills `*description` (UFORM_INVALID_ARGUMENT for a NULL structure or description; a non-NULL
 * description is zeroed first). Thread-safe: an open structure never changes. */
UFORM_API uform_status_t uform_index_ann_describe(uform_index_ann_t ann, uform_index_ann_description_t *description);

/*
 * Approximate top-K search: FAISS's structure proposes candidates, optionally rescored exactly
 * from the index's stored rows. Queries as uform_index_search's (F32 rows of the index's dims,
 * L2-normalised). A separate request rather than new fields of uform_index_search_t: request
 * structs are allocated by callers, so a struct that grew would be read past its end by a newer
 * library serving an older program (docs/abi.md: a library may be newer than the header a
 * program was built with, within the same major).
 *
 *   ann, executor, completion     in: the call runs on the executor; FAISS's batch parallelism uses
 *                                 as many OpenMP threads as the executor has
 *   queries, queries_count, queries_columns, queries_stride   in: borrowed until final
 *   top                           in: K ≥ 1 hits per query
 *   modalities                    in: bits (1 << uform_modality_t); 0: all. Applied inside FAISS's
 *                                 scan (an IDSelector): HNSW and IVF visit only eligible items
 *   nprobe                        in: IVF lists visited per query; 0: max(1, lists / 32)
 *   ef                            in: HNSW efSearch (of the graph, or of an IVF's HNSW quantiser);
 *                                 0: max(64, candidates fetched)
 *   rerank                        in: R > 0: FAISS proposes max(R, top) candidates, each is
 *                                 rescored exactly as uform_index_search scores it (the same
 *                                 kernels, bit for bit for fewer than 8 queries) and the best `top`
 *                                 are answered; 0: the structure's default, as nprobe's and ef's —
 *                                 where its codes approximate the rows (code_bytes < 4·dims: PQ,
 *                                 SQ, a PCA …) max(10·top, min(1000, scanned / 4)) rescored,
 *                                 `scanned` the codes a query visits (count·nprobe/lists for an
 *                                 IVF, count otherwise), since FAISS's scores alone cap recall
 *                                 (0.42 at 10 M × 64 with the default recipe's 16-byte codes); none
 *                                 over full rows (flat lists, HNSW over F32), whose scores are
 *                                 exact; UFORM_INDEX_ANN_RERANK_NONE:
 *                                 FAISS's candidates and scores as they are
 *   progress                      in: counts queries, reported per batch (64 queries first, then as
 *                                 many as the last batch's rate answers in 0.2 s); cancelling stops
 *                                 between batches. Without a handler every query goes to FAISS in
 *                                 one call
 *   arena                         in: the hits and the call's scratch (FAISS's candidates,
 *                                 12 bytes each, for at most 64 MiB of them at a time: a larger
 *                                 batch goes to FAISS in parts)
 *   outcome                       out
 *   hits                          out: [queries_count][hits_per_query], best first, ties by item;
 *                                 a query that found fewer (an IVF whose probed lists hold fewer
 *                                 eligible items) ends its row with item UINT64_MAX, score −inf
 *   hits_per_query                out: min(top, eligible items)
 * Scores without rescoring are FAISS's inner products over the rows it holds (the widened rows,
 * or their codes' approximation). Statuses: UFORM_OK; UFORM_DEFERRED; UFORM_CONTENDED;
 * UFORM_CANCELLED; UFORM_INVALID_ARGUMENT (NULL ann, arena or queries, top 0, columns other than
 * the index's dims, a short stride, unknown modality bits, knobs FAISS refuses: its message);
 * UFORM_OUT_OF_MEMORY.
 */
/* uform_index_ann_search_t.rerank: answer FAISS's candidates and scores without rescoring any. */
#define UFORM_INDEX_ANN_RERANK_NONE ((size_t)-1)
typedef struct uform_index_ann_search_t {
    uform_index_ann_t ann;
    uform_executor_t executor;
    uform_completion_t completion;
    const float *queries;
    size_t queries_count;
    size_t queries_columns;
    size_t queries_stride;
    size_t top;
    unsigned modalities;
    size_t nprobe;
    size_t ef;
    size_t rerank;
    uform_progress_t progress;
    uform_arena_t arena;
    uform_outcome_t outcome;
    const uform_index_hit_t *hits;
    size_t hits_per_query;
} uform_index_ann_search_t;
UFORM_API uform_status_t uform_index_ann_search(uform_index_ann_search_t *request);

/* The trainer and mesh handles, declared ahead of their sections: a loader (below) feeds a trainer,
 * and a trainer's config names its mesh. */
typedef struct uform_trainer_s *uform_trainer_t;
typedef struct uform_mesh_s *uform_mesh_t;

/* ------------------------------------------------------------------------------------------ */
/* Data — datasets, batches for a trainer, recall, the index pipeline (docs/data.md)           */
/* ------------------------------------------------------------------------------------------ */
/*
 * A dataset is a source of samples opened once and read many times:
 *
 *   MANIFEST  a JSON-lines file, one object per line, paths relative to its folder:
 *               {"text": "a red star", "image": "img/1.png"}        a pair ("video", "audio" too)
 *               {"text": "is it red? ", "choices": "yn", "target": "y"}   a choice example
 *               {"path": "a.jpg", "modality": "image"}               an item to index ("modality" optional)
 *               {"text": "a caption", "id": "name"}                  a text item to index
 *   FOLDER    a folder tree, walked recursively in byte order of names (hidden entries skipped unless
 *             `hidden`, links to folders not followed); every file is an item, recognised by content;
 *             for training, files that share a key (the path up to the first dot of the file name:
 *             photos/17.jpg and photos/17.txt) are one sample, as in a shard
 *   SHARDS    WebDataset tar shards, the layout of img2dataset and OpenCLIP: members grouped by key
 *             (000012.jpg, 000012.txt, 000012.json are one sample); the text is the .txt member, else
 *             the JSON member's "caption" or "text"; .jpg .jpeg .png .webp are images, .mp4 .webm .mkv
 *             videos, .flac .wav .mp3 .ogg recordings; a sample with a text and one medium is a pair.
 *             `path` lists shards as OpenCLIP does: brace ranges ("data/{00000..00099}.tar", zero
 *             padding kept), several lists joined with "::", plain paths; .tar or .tar.gz (libarchive:
 *             ustar, pax and GNU long names). Shards are streamed: a shard is never held whole, memory
 *             holds the shuffle buffer's samples and one batch (docs/data.md states the bound).
 *
 * Two ways to read one:
 *   - item by item, in stored order (uform_dataset_read): what an index is built from;
 *   - in training batches for a trainer (uform_loader_*): an order reshuffled every epoch from the
 *     seed, no sample twice in a batch, two samples with the same text kept apart (and said when
 *     impossible), each mesh member its share, media decoded for batch n+1 while the trainer steps
 *     batch n, and a cursor — text to store in the checkpoint — from which a later run continues the
 *     exact same order.
 *
 * Where a failure is: every failure of a sample carries a uform_data_error_t (status, manifest line,
 * shard, key, content index and the reason) in the request or result that failed, so no caller
 * parses a message. The outcome's message says the same in words.
 *
 * Thread contract: a dataset is read by one caller at a time (a loader made over it is its reader
 * while it lives); different datasets are independent. Every function here blocks the calling thread.
 */
typedef struct uform_dataset_s *uform_dataset_t;
typedef struct uform_loader_s *uform_loader_t;

typedef enum uform_dataset_source_t {
    UFORM_DATASET_MANIFEST = 0,
    UFORM_DATASET_FOLDER = 1,
    UFORM_DATASET_SHARDS = 2
} uform_dataset_source_t;

/* The capacity of the text fields of a uform_data_error_t. */
#define UFORM_DATA_ERROR_PATH_CAPACITY 512

/*
 * Where a sample failed and why. Fields that do not apply hold 0 (line), SIZE_MAX (shard, content)
 * or "" (source, key). All text is NUL-terminated and fully initialised.
 *   status   the failure (UFORM_FORMAT for a malformed line, member or medium; UFORM_IO for a file
 *            that cannot be read; UFORM_UNSUPPORTED for a format this build cannot decode)
 *   line     MANIFEST: the 1-based line of the manifest
 *   shard    SHARDS: the shard's index in the expanded list
 *   content  a batch's content index, when the failure was found decoding a batch
 *   source   the manifest, the file (FOLDER, a manifest's media file) or the shard's path
 *   key      SHARDS: the sample's key ("000012"), FOLDER: the sample's key; MANIFEST: the media path
 *   message  the reason, without the location ("JPEG: premature end of data", "no text member")
 */
typedef struct uform_data_error_t {
    uform_status_t status;
    size_t line;
    size_t shard;
    size_t content;
    char source[UFORM_DATA_ERROR_PATH_CAPACITY];
    char key[UFORM_DATA_ERROR_PATH_CAPACITY];
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
} uform_data_error_t;

/*
 * How to open a dataset. Zeroed fields take the defaults noted.
 *   source, path       which kind, and its manifest file, folder (or file) or shard list
 *   paths, path_count  several of them instead of `path`, read one after the other as one dataset
 *                      (MANIFEST: manifests; FOLDER: folders and files; SHARDS: shard lists); `path`
 *                      is then NULL. One of the two is required.
 *   seed               the order of every epoch (shards and samples), and nothing else
 *   shuffle_buffer     SHARDS: samples held to shuffle the stream (0: 2,000; 1: no sample shuffle,
 *                      shards still reshuffled per epoch)
 *   sequential         non-zero: batches in stored order, one pass, no shuffling (evaluation, tests)
 *   partitions         SHARDS: the stream is split into this many partitions (0: the loader's mesh
 *                      member count); see uform_loader_options_t
 *   skip_bad           non-zero: a bad sample (a malformed line or member, a sample without text, an
 *                      undecodable medium) is counted, listed (uform_loader_stats_t) and replaced
 *                      instead of failing the batch
 *   hidden             FOLDER: also walk hidden files and folders
 *   max_sample_bytes   SHARDS and FOLDER: a member or file above this is a bad sample (0: 1 GiB)
 * Everything is copied during the call.
 */
typedef struct uform_dataset_options_t {
    uform_dataset_source_t source;
    const char *path;
    const char *const *paths;
    size_t path_count;
    uint64_t seed;
    size_t shuffle_buffer;
    int sequential;
    size_t partitions;
    int skip_bad;
    int hidden;
    size_t max_sample_bytes;
} uform_dataset_options_t;

/*
 * Opens a dataset: reads and checks a manifest whole (every line; a malformed one is
 * UFORM_FORMAT naming it, or with skip_bad counted and left out), walks a folder (and reads the
 * texts of its samples), or expands a shard list and checks that every shard exists (shards are
 * read later, streaming). Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL `dataset` or path, an
 * unknown source, a malformed shard list such as "{1..}", an empty result); UFORM_IO (a file or
 * folder that cannot be read, naming it and the system's reason); UFORM_FORMAT (a malformed
 * manifest line, with `error` filled when given); UFORM_OUT_OF_MEMORY. On failure `*dataset` is NULL.
 * `error` may be NULL.
 */
UFORM_API uform_status_t uform_dataset_open(const uform_dataset_options_t *options, uform_dataset_t *dataset,
                                            uform_data_error_t *error, uform_outcome_t *outcome);

/* Frees a dataset (after every loader made over it). NULL is a no-op. */
UFORM_API void uform_dataset_free(uform_dataset_t dataset);

/* What a dataset holds as far as it is known without reading shards. */
typedef struct uform_dataset_description_t {
    uform_dataset_source_t source;
    size_t shards;         /* SHARDS: shards in the expanded list */
    size_t samples;        /* MANIFEST and FOLDER: usable samples (lines, files or keys); SHARDS: 0 until read */
    size_t pairs[4];       /* MANIFEST and FOLDER: text-media pairs by uform_modality_t of the medium */
    size_t choices;        /* MANIFEST: choice examples */
    size_t items;          /* MANIFEST and FOLDER: what uform_dataset_read answers in one pass */
    size_t bad;            /* lines or samples left out so far (skip_bad) */
    char fingerprint[17];  /* 16 hex digits of the list of shards, files or lines: a cursor must match it */
} uform_dataset_description_t;

/* Fills `*description` (UFORM_INVALID_ARGUMENT for a NULL dataset or description; a non-NULL
 * description is zeroed first). */
UFORM_API uform_status_t uform_dataset_describe(uform_dataset_t dataset, uform_dataset_description_t *description);

/* One item of a dataset read in stored order. */
typedef struct uform_dataset_item_t {
    uform_modality_t modality;  /* what `bytes` hold (decided by the manifest, the member's extension,
                                   or uform_media_probe for files) */
    const char *key;            /* how an index names it: the file's path, a manifest's "id" (else
                                   "manifest.jsonl:LINE"), or "SHARD:MEMBER" for a shard's member */
    size_t key_length;
    const void *bytes;          /* the item: the file's or member's bytes, or the text */
    size_t size;
    const char *text;           /* its caption when the source pairs it with one, else NULL */
    size_t text_length;
    size_t ordinal;             /* 0, 1, 2 ... in stored order (a resumed read counts the skipped ones) */
} uform_dataset_item_t;

/*
 * Reads the next item in stored order (every file of a folder; a manifest's media file or text per
 * line; a shard sample's medium, or its text when it has none; choice examples are not items).
 * `skip` items are passed over first without reading their bytes (cheap for plain .tar: headers
 * only), so a build that stopped after n items continues with skip = n on a fresh dataset.
 *   dataset   in
 *   rewind    in: non-zero: start again from the first item (a read goes on where the last stopped)
 *   skip      in: items to pass over first
 *   outcome   out
 *   done      out: 1 when no item was left (then `item` is zeroed)
 *   item      out: valid until the next read or the dataset's free
 *   error     out: when the item could not be read (status ≠ UFORM_OK), where and why; the item's
 *             `key` and `ordinal` are still set and the next read goes on after it
 * Statuses: UFORM_OK (also for done); UFORM_IO, UFORM_FORMAT, UFORM_UNSUPPORTED (this item: go on
 * reading); UFORM_INVALID_ARGUMENT (NULL dataset, a dataset a loader is reading); UFORM_OUT_OF_MEMORY.
 */
typedef struct uform_dataset_read_t {
    uform_dataset_t dataset;
    int rewind;
    size_t skip;
    uform_outcome_t outcome;
    int done;
    uform_dataset_item_t item;
    uform_data_error_t error;
} uform_dataset_read_t;
UFORM_API uform_status_t uform_dataset_read(uform_dataset_read_t *request);

/*
 * A loader: training batches of a dataset for one trainer, with decoding ahead.
 *   dataset    borrowed: the loader is its only reader while it lives (it must outlive the loader)
 *   trainer    the trainer the batches are for: its model's geometry and CPU class decide how media
 *              are decoded, exactly as the trainer's own step would decode them
 *   batch      samples per step, over every member of a mesh together (required)
 *   member, members  this member's share of each batch (0 and 0: one process, the whole batch).
 *              MANIFEST and FOLDER: every member draws the same global batch and keeps its contiguous
 *              share [batch·m/k, batch·(m+1)/k), as uform_trainer_step's mesh expects. SHARDS: the
 *              stream is split into `partitions` (the dataset's, else `members`): partition p reads
 *              the shards at positions p, p + P, ... of every epoch's shard order (by sample when
 *              there are fewer shards than partitions: every P-th sample of each), with its own
 *              shuffle buffer; a global batch is the partitions' shares end to end, so k members
 *              reading their own partitions and one process reading all k partitions give the same
 *              batches. Each member reads only its own shards. skip_bad needs members ≤ 1.
 *   ahead      batches decoded ahead of the one the trainer steps (0: 1)
 *   decode_threads  threads that decode ahead (0: 1)
 *   cursor     NULL, or the text of uform_loader_cursor from an earlier run over the same dataset,
 *              seed, batch and partitions: the first batch is the one that run would have drawn next
 * Everything is copied during the call. Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL dataset,
 * trainer or loader, batch 0, member not below members, skip_bad with several members, a dataset
 * another loader reads, a malformed cursor); UFORM_CONFIG_MISMATCH (a cursor of another dataset,
 * seed, batch or partitioning: its fingerprint, seed or sizes differ, both named); UFORM_IO;
 * UFORM_OUT_OF_MEMORY. On failure `*loader` is NULL.
 */
typedef struct uform_loader_options_t {
    uform_dataset_t dataset;
    uform_trainer_t trainer;
    size_t batch;
    size_t member, members;
    size_t ahead;
    size_t decode_threads;
    const char *cursor;
} uform_loader_options_t;
UFORM_API uform_status_t uform_loader_open(const uform_loader_options_t *options, uform_loader_t *loader,
                                           uform_outcome_t *outcome);

/* Stops the loader's thread and frees it; the last batch's inputs are invalid after it. NULL is a no-op. */
UFORM_API void uform_loader_free(uform_loader_t loader);

/*
 * Hands over the next batch (blocking until it is decoded): sets `step`'s inputs — modalities,
 * contents, bags, bag_count, sides, relations, choices, choice_targets and prepared — and leaves
 * every other field (trainer, arena, progress, ...) as it was. A pair is two bags (its text on side
 * 0, its medium on side 1) and one relation in temperature group modality − 1 (image 0, video 1,
 * audio 2); a choice example is a text content after the bags, with its legal bytes and target. The
 * inputs point into the loader's buffers and stay valid (and unchanged) until the next call of
 * uform_loader_next or uform_loader_free: call it again only once the step that uses them is final.
 *   loader, step   in
 *   outcome        out
 *   done           out: 1 when a sequential dataset has no sample left (then `step` is untouched)
 *   samples        out: this member's samples in the batch (pairs and choice examples)
 *   twins          out: 1 when some sample had to share the batch with another of the same text
 *                  (the contrastive loss then counts the twin as a wrong match)
 *   error          out: on failure, the sample that failed (UFORM_FORMAT, UFORM_IO, UFORM_UNSUPPORTED)
 * Statuses: UFORM_OK; UFORM_FORMAT, UFORM_IO, UFORM_UNSUPPORTED (a bad sample without skip_bad: the
 * loader is then finished, every later call answers the same); UFORM_INVALID_ARGUMENT (NULL
 * arguments); UFORM_OUT_OF_MEMORY.
 */
typedef struct uform_loader_next_t {
    uform_loader_t loader;
    struct uform_trainer_step_t *step;
    uform_outcome_t outcome;
    int done;
    size_t samples;
    int twins;
    uform_data_error_t error;
} uform_loader_next_t;
UFORM_API uform_status_t uform_loader_next(uform_loader_next_t *request);

/*
 * The cursor after the batches handed over so far: NUL-terminated JSON text (docs/data.md, "The
 * cursor") that uform_loader_options_t.cursor takes back — store it in the checkpoint
 * (uform_trainer_save_t.user_metadata) to resume exactly. Writes at most `capacity` bytes into
 * `buffer` (always NUL-terminated when capacity > 0; `buffer` may be NULL when capacity is 0) and
 * the length the whole text needs, without the NUL, into `*length` — call again with a larger
 * buffer when it did not fit (the second call returns the same text without recomputing it). A
 * shard cursor names the samples in the shuffle buffer: a few bytes each.
 * Over a mesh with SHARDS, where each member reads its own partitions, the first call after a batch
 * is collective: every member calls it after the same number of batches, and each gets the cursor
 * of every partition (so member 0 can store it for all). Other sources exchange nothing.
 * Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL loader or length); UFORM_OUT_OF_MEMORY; over a
 * mesh the collectives' UFORM_TIMEOUT and UFORM_PEER_LOST.
 */
UFORM_API uform_status_t uform_loader_cursor(uform_loader_t loader, char *buffer, size_t capacity, size_t *length,
                                             uform_outcome_t *outcome);

/* What a loader did so far. */
typedef struct uform_loader_stats_t {
    size_t batches;          /* handed over */
    size_t samples;          /* this member's samples in them */
    uint64_t epoch;          /* the epoch the next batch draws from (0 first) */
    size_t skipped;          /* bad samples left out (skip_bad) */
    double wait_seconds;     /* time uform_loader_next waited for a batch: the step's wait on data */
    double read_seconds;     /* the loader thread reading files and shards */
    double decode_seconds;   /* the loader thread decoding media */
    uint64_t bytes_read;     /* bytes of files and shard members read */
} uform_loader_stats_t;

/* Fills `stats` (zeroed for a NULL loader); `errors`, when not NULL, receives up to `capacity` of
 * the bad samples left out so far, oldest first, and `*count` (may be NULL) how many there were. */
UFORM_API void uform_loader_stats(uform_loader_t loader, uform_loader_stats_t *stats, uform_data_error_t *errors,
                                  size_t capacity, size_t *count);

/*
 * Recall@K of query embeddings against candidates, where a hit is any candidate whose label equals
 * the query's (captions repeat, so a query may have several right answers: the demo's "scored by
 * caption"). Scores are dot products in double precision; a candidate ranks above another when its
 * score is higher, ties by the lower index; R@k counts the queries whose best-ranked hit is among the
 * first k. A query without any hit counts as a miss.
 *   queries, queries_count, columns        in: F32 rows, dense
 *   candidates, candidates_count           in: F32 rows of the same columns
 *   query_labels, candidate_labels         in: [queries_count], [candidates_count]
 *   ks, ks_count                           in: up to 8 cut-offs (each ≥ 1)
 *   recall                                 out: [ks_count] fractions in [0, 1]
 * Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL arrays with non-zero counts, columns 0, a k of 0,
 * more than 8 ks); UFORM_OUT_OF_MEMORY. Thread-safe.
 */
typedef struct uform_recall_t {
    const float *queries;
    size_t queries_count;
    size_t columns;
    const float *candidates;
    size_t candidates_count;
    const uint64_t *query_labels;
    const uint64_t *candidate_labels;
    const size_t *ks;
    size_t ks_count;
    uform_outcome_t outcome;
    double recall[8];
} uform_recall_t;
UFORM_API uform_status_t uform_recall(uform_recall_t *request);

/* Held-out recall of one media modality, both ways. */
typedef struct uform_evaluation_t {
    size_t pairs;               /* held-out pairs of the modality (0: none, the rest is 0) */
    double text_to_media[8];    /* recall@ks[i] of each caption against the media */
    double media_to_text[8];    /* recall@ks[i] of each medium against the captions */
} uform_evaluation_t;

/*
 * Held-out recall per modality (text→media and media→text, scored by caption: a hit is any item
 * whose caption equals the query's) of a model on every pair of a dataset (choice examples and
 * items without captions are passed over): each side encoded with the model in batches of `batch`
 * (0: 32), then uform_recall per modality. Results by uform_modality_t of the medium (results[0]
 * unused). `ks` as uform_recall's (ks_count 0: {1, 5}). Progress counts items encoded; cancelling
 * stops between batches.
 * Statuses: UFORM_OK; UFORM_CANCELLED; the encode verbs' (an undecodable medium: UFORM_FORMAT with
 * `error` naming it); the dataset's; UFORM_INVALID_ARGUMENT (NULL model, dataset or arena).
 */
typedef struct uform_evaluate_t {
    uform_model_t model;
    uform_executor_t executor;
    uform_dataset_t dataset;
    uform_arena_t arena;
    size_t batch;
    const size_t *ks;
    size_t ks_count;
    uform_progress_t progress;
    uform_outcome_t outcome;
    uform_evaluation_t results[4];
    uform_data_error_t error;
} uform_evaluate_t;
UFORM_API uform_status_t uform_evaluate(uform_evaluate_t *request);

/*
 * Builds an index file of every item of a dataset (uform_dataset_read's items) with a model: a
 * reader thread reads and probes items into batches of one modality and hands them over through a
 * bounded queue (so reading overlaps decoding and computing and memory holds a few batches), media
 * batches are decoded (uform_media_prepare, on `decoder` ahead of compute when given) and encoded,
 * and the embeddings added to a builder. Bad items never stop the build: each is appended to
 * `errors_path` as a JSON line {"path", "status", "message"} and counted. Every `checkpoint` items,
 * every partial batch is encoded and the index written atomically, its metadata recording the
 * items consumed and the error lines so far (uform.build.consumed, uform.build.errors); `resume`
 * reopens `out` (when it exists), keeps the recorded error lines, skips the consumed items and cuts
 * the same batches an uninterrupted build cuts, so the final file is the same bytes.
 *   model, executor     in: the checkpoint and where it computes
 *   decoder             in: optional executor that decodes batch n+1 while `executor` computes batch n
 *   datasets, dataset_count  in: read in stored order from their start, one after the other (the
 *                       build is their only reader)
 *   out                 in: the index file (written atomically)
 *   errors_path         in: NULL takes out + ".errors.jsonl"
 *   dimensions, scalar  in: as uform_index_builder_create
 *   modalities          in: bits of the modalities to index (0: all the model has); others are skipped
 *   batch               in: items per batch (0: 32)
 *   checkpoint          in: items between checkpoints (0: only the end)
 *   resume              in: non-zero: continue `out` as above
 *   progress            in: items consumed of ... (the total when the dataset knows it, else 0);
 *                       cancelling stops at the next batch: `out` keeps the last checkpoint. Over a
 *                       mesh: see `mesh`
 *   mesh                in: optional (NULL: one process). Collective: every member of the mesh calls
 *                       it with the same datasets and settings; every member reads every item (cheap:
 *                       no decoding) and cuts the same batches one process cuts, and member r of K
 *                       decodes and encodes only the batches handed over at positions in
 *                       (W·r/K, W·(r+1)/K] of W, a position counting the items read so far, or for
 *                       shards the shards opened (docs/indexes.md, "Many members, one index"); the
 *                       members' error lines are gathered in member order, member 0 writes
 *                       `errors_path`, and the members' items stream to member 0, which writes `out`
 *                       (uform_index_builder_write_members: no member holds more than its own
 *                       items): the same bytes one process writes. Not with `resume`
 *                       (UFORM_INVALID_ARGUMENT); no checkpoint is written before the end (batches
 *                       are still cut every `checkpoint` items, as one process cuts them). Members
 *                       whose datasets differ from member 0's (fingerprints or weights) all fail
 *                       (UFORM_CONFIG_MISMATCH). A member that fails makes every member fail at once
 *                       (UFORM_PEER_LOST naming it); one that cannot even make its request (no
 *                       model: its checkpoint failed to load) still calls with `mesh` set, and fails
 *                       with UFORM_INVALID_ARGUMENT after telling the others. The share is encoded
 *                       on a thread of the build's own while the calling thread answers the members'
 *                       rounds (every 100 ms), so members that finish early wait past the mesh's
 *                       timeout for live ones; `progress` is called on that thread and counts this
 *                       member's positions of its share
 *   ann                 in: optional (NULL: no approximate structure). Once `out` is written, also
 *                       builds an approximate structure over it into `ann_path` with these options
 *                       (as uform_index_ann_build does); with `mesh`, every member takes part through
 *                       uform_index_ann_build_members with the rows it encoded (member r's batches
 *                       are the r-th contiguous block of the gathered index), so IVF recipes are
 *                       trained on member 0, filled by every member and merged on member 0 — the
 *                       same file as one process; other recipes are built by member 0 from every
 *                       row. Over a mesh every member must pass `ann` alike (members that differ
 *                       fail with UFORM_CONFIG_MISMATCH at the build's start). A failure here is the
 *                       build's failure; `out` and `errors_path` stay written
 *   ann_path            in: where the structure goes (NULL: `out` with ".index" replaced by
 *                       ".faiss", or ".faiss" appended); only with `ann`
 *   outcome             out
 *   indexed, failed, skipped, duplicates, resumed   out: items added, bad items listed, items of
 *                       other modalities, items whose key was already in the index, items a resume
 *                       found done (over a mesh, every member answers the whole index's counts)
 *   error               out: the last bad item's (when failed > 0)
 * Statuses: UFORM_OK (also when items failed: see `failed`); UFORM_CANCELLED; UFORM_IO (out or
 * errors_path cannot be written); UFORM_CONFIG_MISMATCH (resume of an index of another checkpoint,
 * width or scalar); the encode verbs' and the builder's; UFORM_INVALID_ARGUMENT; UFORM_OUT_OF_MEMORY.
 */
typedef struct uform_index_build_t {
    uform_model_t model;
    uform_executor_t executor;
    uform_executor_t decoder;
    const uform_dataset_t *datasets;
    size_t dataset_count;
    const char *out;
    const char *errors_path;
    size_t dimensions;
    uform_scalar_kind_t scalar;
    unsigned modalities;
    size_t batch;
    size_t checkpoint;
    int resume;
    uform_progress_t progress;
    uform_mesh_t mesh;
    const uform_index_ann_options_t *ann;
    const char *ann_path;
    uform_outcome_t outcome;
    size_t indexed, failed, skipped, duplicates, resumed;
    uform_data_error_t error;
} uform_index_build_t;
UFORM_API uform_status_t uform_index_build(uform_index_build_t *request);

/* ------------------------------------------------------------------------------------------ */
/* Training (docs/training.md)                                                                 */
/* ------------------------------------------------------------------------------------------ */
/*
 * A trainer owns a model's F32 master weights, its AdamW moments and the scratch its steps need.
 * It is made over one executor and every verb of it runs there (a trainer has only executor
 * receivers): a blocking step that finds the executor busy answers UFORM_CONTENDED, deferred steps
 * and saves run in submission order. Typical use:
 *
 *     uform_trainer_config_t config = {0};          // tiny, docs/training.md's optimizer, seed 0
 *     config.total_steps = 1000;
 *     uform_trainer_t trainer = NULL;
 *     uform_trainer_init_ram(executor, &config, &trainer, &outcome);
 *     for (each batch) {
 *         uform_trainer_step_t step = {0};
 *         step.trainer = trainer, step.arena = arena;
 *         step.modalities = modalities, step.contents = contents;   // n contents
 *         step.bags = bags, step.bag_count = b;                      // b + 1 offsets
 *         step.sides = sides, step.relations = relations;
 *         if (uform_trainer_step(&step) != UFORM_OK) ...;           // step.loss, step.grad_norm ...
 *     }
 *     uform_trainer_save_t save = {0};
 *     save.trainer = trainer, save.path = "model.safetensors";
 *     uform_trainer_save(&save);                     // loads with uform_model_load_ram
 *     uform_trainer_free(trainer);
 *
 * Every step is deterministic: the same weights, batch and thread count give bit-identical
 * weights (the kernels' reductions do not depend on timing; in this build not even on the
 * thread count).
 *
 * The whole loop over a dataset — batches from a loader, periodic saves with the data cursor,
 * held-out evaluations, resume, cancel — is one call, uform_trainer_fit, at the end of this section.
 */

/*
 * What a trainer is made of. A zeroed config is a fresh `tiny` model (docs/model.md) with
 * docs/training.md's optimizer and seed 0. Fields, and what zero means:
 *
 * Architecture (docs/model.md's config keys; zero takes the value of `size`, whose own zero is "tiny"):
 *   size                 "tiny", "small" or "base" (the informative "size" of the checkpoint)
 *   hidden ... audio_mels  as docs/model.md; `matryoshka` lists `matryoshka_count` prefixes (0: E/4,
 *                        E/2, E); `modalities` is a mask of (1 << uform_modality_t) (0: all four);
 *                        `audio_rate` is always 16000.
 * Optimizer (AdamW with torch.optim.AdamW's semantics, dense; docs/training.md):
 *   learning_rate        peak rate (0: 1e-3)
 *   beta1, beta2         (0: 0.9, 0.98)
 *   epsilon              added after the square root (0: 1e-6)
 *   weight_decay         decoupled, on matrices and tables but position tables (0: 0.1; negative: none)
 *   clip_norm            global gradient-norm clipping (0: 1.0; negative: no clipping)
 *   warmup_steps         linear warmup from 0 (0: none)
 *   total_steps          the cosine reaches 0.1·lr at this step and stays there; 0 keeps lr after warmup
 *   contrastive_weight, choice_weight  the total loss's weights (0: 1; negative: that loss is off)
 * Run:
 *   seed                 draws the initial weights (N(0, 0.02) for matrices, tables, text.positions and
 *                        modality vectors; N(0, 0.2) for the media position tables; biases and CLS rows 0; norms 1 and 0;
 *                        temperatures ln(1/0.07))
 *   compute              F32, or BF16 operands with F32 accumulation and F32 master weights
 *                        (attention and the losses stay F32; see uform_compute_t)
 *   cpu_class            the kernels (UNKNOWN: the executor's class)
 *   resume               a checkpoint to continue from (NULL: a fresh model): its weights (from its
 *                        `optimizer.weights.*` when present, else its stored weights widened), its
 *                        moments and step count when present, its optimizer settings (stored in the
 *                        metadata "uform.optimizer") for every optimizer field left at zero, and its
 *                        architecture — a non-zero architecture field that disagrees with it is
 *                        UFORM_CONFIG_MISMATCH naming the field and both values. `seed` is then unused.
 *   mesh                 NULL for a run in this process alone, or a mesh (uform_mesh_bootstrap) that
 *                        this trainer borrows: it must outlive the trainer. Init is then collective:
 *                        every member calls it, the members' resolved configs (architecture, optimizer,
 *                        compute, CPU class, seed, steps taken) must agree (else UFORM_CONFIG_MISMATCH
 *                        naming the field and both values, on every member), and member 0's weights,
 *                        moments and step count are copied to every other member. A member whose init
 *                        fails makes every member's init fail ("member 2: ..."); see uform_trainer_step
 *                        for steps over a mesh.
 */
typedef struct uform_trainer_config_t {
    char size[16];
    size_t hidden, depth, heads, mlp, embedding;
    size_t matryoshka[8];
    size_t matryoshka_count;
    size_t temperature_groups;
    unsigned modalities;
    size_t text_bytes;
    size_t image_size, image_patch;
    size_t video_size, video_patch, video_frames, video_tubelet;
    size_t audio_seconds, audio_mels;

    double learning_rate, beta1, beta2, epsilon, weight_decay, clip_norm;
    uint64_t warmup_steps, total_steps;
    double contrastive_weight, choice_weight;

    uint64_t seed;
    uform_compute_t compute;
    uform_cpu_class_t cpu_class;
    const char *resume;
    uform_mesh_t mesh;
} uform_trainer_config_t;

/*
 * Makes a trainer over `executor` (NULL: the calling thread) with host memory for its weights, as
 * `config` says (NULL: all defaults); the work (drawing or reading the weights) runs on the
 * executor. The config is copied (and `resume` read) during the call.
 * Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL `trainer`, an inconsistent architecture such
 * as hidden not divisible by heads, an unknown size, an optimizer value out of range — the
 * message names the field); UFORM_IO and UFORM_FORMAT (the resume checkpoint, naming it);
 * UFORM_CONFIG_MISMATCH (see `resume` and `mesh`); UFORM_UNSUPPORTED (a CPU class this machine
 * cannot run, a head width above the kernels' 128); UFORM_CONTENDED; UFORM_OUT_OF_MEMORY; with a mesh
 * also UFORM_TIMEOUT and UFORM_PEER_LOST (a member did not answer, or left).
 * On failure `*trainer` is NULL.
 */
UFORM_API uform_status_t uform_trainer_init_ram(uform_executor_t executor, const uform_trainer_config_t *config,
                                                uform_trainer_t *trainer, uform_outcome_t *outcome);

/* The same with the weights in GPU memory. This build has no GPU support: it answers
 * UFORM_UNSUPPORTED, saying so, and sets `*trainer` to NULL. */
UFORM_API uform_status_t uform_trainer_init_vram(uform_executor_t executor, const uform_trainer_config_t *config,
                                                 uform_trainer_t *trainer, uform_outcome_t *outcome);

/* Frees a trainer after waiting for its calls in flight. NULL is a no-op. */
UFORM_API void uform_trainer_free(uform_trainer_t trainer);

/* What a trainer is: the model it trains (as uform_model_describe answers it: parameters, weight
 * bytes as a saved checkpoint stores them), the steps taken so far, and the resolved optimizer. */
typedef struct uform_trainer_description_t {
    uform_model_description_t model;
    uint64_t steps;                /* optimisation steps taken (a resumed run counts the earlier ones) */
    double learning_rate, beta1, beta2, epsilon, weight_decay, clip_norm;
    uint64_t warmup_steps, total_steps;
    double contrastive_weight, choice_weight;
    uint64_t seed;
} uform_trainer_description_t;

/* Fills `*description` (UFORM_INVALID_ARGUMENT for a NULL trainer or description; a non-NULL
 * description is zeroed first). Must not race a running step
 * of the same trainer: call it between steps, from the thread that submits them. */
UFORM_API uform_status_t uform_trainer_describe(uform_trainer_t trainer, uform_trainer_description_t *description);

/* The learning rate of the trainer's schedule (docs/training.md, "Optimizer": linear warmup, then the
 * cosine to 0.1·lr) at `step` (from 1) with its rate and warmup and `total_steps` (0: the trainer's
 * own). Steps may be fractional, so a schedule on another clock maps onto it: `uform train
 * --minutes` without --steps asks for step warmup + f with total warmup + 1 at the fraction f of
 * the time gone. What uform_trainer_step uses when learning_rate_override is 0. 0 for NULL. */
UFORM_API double uform_trainer_schedule(uform_trainer_t trainer, double step, double total_steps);

/* The "uform.user" metadata of the checkpoint the trainer resumed from (what an earlier
 * uform_trainer_save stored from its request's `user_metadata`), or NULL. Owned by the trainer. */
UFORM_API const char *uform_trainer_user_metadata(uform_trainer_t trainer);

/* Positive pairs of bags: relation r joins bag lefts[r] and bag rights[r] and uses the learned
 * temperature groups[r] (`groups` NULL: group 0 for all). */
typedef struct uform_relations_t {
    const size_t *lefts;
    const size_t *rights;
    const size_t *groups;
    size_t count;
} uform_relations_t;

/* What a step measured (written when it is final, also after a failure, as far as it got). */
typedef struct uform_trainer_stats_t {
    size_t items;              /* contents in the batch */
    size_t sequences;          /* sequences through the trunk (a text with choices in a bag counts twice) */
    size_t tokens;             /* tokens through the trunk */
    double decode_seconds;     /* decoding and preprocessing media */
    double forward_seconds;    /* stems, trunk, heads and losses */
    double backward_seconds;
    double optimizer_seconds;  /* gradient norm, clipping, AdamW, BF16 copies */
    double flops;              /* matrix products and attention, forward and backward */
    /* Over a mesh: how long the step waited for the gradients' all-reduce once its backward was done
     * (with overlap only the buckets still in flight; without it the whole all-reduce), and how long
     * the all-reduce ran in all, overlapped or not. 0 without a mesh. */
    double exchange_wait_seconds;
    double exchange_seconds;
    size_t chunks;             /* the chunks the batch ran in (1, or the step's accumulate) */
} uform_trainer_stats_t;

/*
 * One optimisation step over one batch (docs/training.md, "A batch" and "Losses").
 *
 * Inputs (borrowed until the call is final):
 *   modalities [n] and contents (a tape of n items): text bytes, or whole image, video or audio
 *     files, as the encode verbs take them. A text is encoded as [CLS] + its first text_bytes bytes.
 *   bags, bag_count: bag_count + 1 non-decreasing offsets into the contents, bags[0] = 0; bag j is
 *     contents bags[j] .. bags[j+1] (at least one) and its embedding is the L2-normalised mean of its
 *     contents' normalised embeddings (at every Matryoshka prefix). Contents from bags[bag_count]
 *     on belong to no bag. bag_count 0 with bags NULL: every content is its own bag; bag_count 0
 *     with bags = {0}: no bags at all (every content enters only the choice loss).
 *   sides [bag_count]: 0 or 1 per bag; NULL: every bag on side 0. With sides, a relation must join
 *     bags of opposite sides and its candidates are the bags of the opposite side; without, every
 *     other bag.
 *   relations: positive pairs (see uform_relations_t); none: no contrastive loss.
 *   choices (a tape of n entries, or count 0 for none) and choice_targets [n]: the legal next bytes
 *     after each text content (distinct; empty for the contents without) and the byte to choose
 *     (must be among them). Such a text also runs as text_choose's sequence [CLS] + its last
 *     text_bytes bytes + [NEXT] and enters the choice loss (scale exp(temperatures[0])).
 *   arena, outputs_scalar: where the bag embeddings land and their scalar.
 *   progress: one unit for decoding, one per trunk block forward and backward, one for the update;
 *     cancelling stops the step before the update, leaving the trainer unchanged.
 *   stats: optional, written when the call is final.
 *   learning_rate_override: 0 (the default) takes the trainer's schedule for this step's number; a
 *     positive value is the rate this step uses instead (a caller running its own schedule, such
 *     as one on elapsed time). Negative is UFORM_INVALID_ARGUMENT.
 *   accumulate: 0 or 1 runs the batch at once. K > 1 splits the contents into K contiguous chunks
 *     (content counts differing by at most one; K above the count runs one content a chunk) and
 *     gives the same step as the whole batch at once, to float rounding: every chunk's forward runs
 *     first keeping only its embeddings and choice logits, the losses and their gradients are
 *     computed on the whole batch (every relation still sees every candidate), then each chunk's
 *     forward runs again keeping its activations, and its backward runs with those gradients (the
 *     gradient cache of Gao et al., 2021). The activations' memory then follows the largest chunk,
 *     not the batch, for a second forward's time. Progress then counts per chunk. Over a mesh each
 *     member may choose its own K.
 *   prepared: optional, by modality: media decoded ahead (uform_media_prepare on a model of the
 *     trainer's geometry, or a uform_loader, which fills it): prepared[m] holds the batch's contents
 *     of modality m in content order (item k is the k-th content of modality m), all decoded
 *     (failed 0) and current; those contents' bytes are then not read (they may be empty). A step
 *     with prepared inputs equals the step that decodes the same files itself, bit for bit, when
 *     they were prepared on the trainer's CPU class (a loader does that).
 *
 * Outputs (readable once final with UFORM_OK): the losses (total = contrastive_weight ·
 * contrastive + choice_weight · choice; a loss without terms is 0), the learning rate this step
 * used, the global gradient norm before clipping, the step number (from 1), the temperatures'
 * log-scales the losses used ([1, G] F32 view), and the bag embeddings at the full width E
 * ([bags, E] of outputs_scalar), both computed with the weights before the update.
 *
 * Statuses: UFORM_OK; UFORM_DEFERRED; UFORM_CONTENDED; UFORM_CANCELLED; UFORM_INVALID_ARGUMENT
 * (any inconsistency — an index out of range, a relation between a bag and itself or two bags on
 * one side, a target not among its legal bytes, choices on a non-text content, a modality the model
 * lacks, a bag without contents, a NULL arena, prepared inputs that do not fit — naming the field
 * and index); UFORM_FORMAT (a content that is not decodable media of its modality, naming it);
 * UFORM_UNSUPPORTED (a format this build cannot decode); UFORM_OUT_OF_MEMORY. After any failure the
 * trainer's weights, moments and step count are exactly as before. A failure that concerns one
 * content (FORMAT, UNSUPPORTED, or INVALID_ARGUMENT about one content) sets `failed_content` to its
 * index (SIZE_MAX otherwise), so a caller knows which item to blame without reading the message.
 *
 * Over a mesh (config.mesh) a step is collective: every member calls it with its own share, and the
 * global batch is the members' shares end to end in member order (member 1's bags follow member
 * 0's, and so on). A relation joins two bags of the member that passes it, but its candidates are
 * every bag of the global batch (on the opposite side), whose embeddings the members exchange; the
 * losses are the global batch's means, the gradients are summed over the members, and every member
 * applies the same update, so k members with 1/k of a batch each step like one process with all of
 * it (to float rounding). The outputs: the global losses and gradient norm, and this member's bags'
 * embeddings. Every member passes sides, or none does (else UFORM_INVALID_ARGUMENT); member 0's
 * learning_rate_override is the one every member uses. A step that fails on one member before the
 * update (a bad batch, an undecodable content, a cancel) fails on every member with that member's
 * status and its message ("member 2: contents[7] ..."; `failed_member` 2 and `failed_content` 7 on
 * every member), every trainer unchanged and the mesh still
 * usable. A member that dies, hangs or is cut off makes the others' step fail with UFORM_PEER_LOST or
 * UFORM_TIMEOUT within the mesh's timeout (plus a few seconds) — the trainer unchanged, the mesh
 * broken — and a step of a trainer whose mesh is busy with another call answers UFORM_CONTENDED.
 */
typedef struct uform_trainer_step_t {
    uform_trainer_t trainer;                 /* in */
    uform_completion_t completion;           /* in */
    const uform_modality_t *modalities;      /* in: [contents.count] */
    uform_tape_t contents;                   /* in */
    const size_t *bags;                      /* in: [bag_count + 1] or NULL */
    size_t bag_count;                        /* in */
    const uint8_t *sides;                    /* in: [bag_count] (or [contents.count] without bags) or NULL */
    uform_relations_t relations;             /* in */
    uform_tape_t choices;                    /* in: [contents.count] entries, or count 0 */
    const uint8_t *choice_targets;           /* in: [contents.count] when choices are given */
    uform_arena_t arena;                     /* in: required */
    uform_scalar_kind_t outputs_scalar;      /* in */
    uform_progress_t progress;               /* in */
    uform_trainer_stats_t *stats;            /* in: optional */
    double learning_rate_override;           /* in: 0 follows the schedule */
    uform_outcome_t outcome;                 /* out */
    double loss, contrastive, choice;        /* out */
    double learning_rate, grad_norm;         /* out */
    uint64_t step;                           /* out */
    uform_matrix_t temperatures;             /* out */
    uform_matrix_t bag_embeddings;           /* out */
    size_t accumulate;                       /* in: chunks (0 or 1: the whole batch at once) */
    const uform_prepared_t *prepared[4];     /* in: optional, by uform_modality_t (see above) */
    size_t failed_content;                   /* out: the content a failure concerns, or SIZE_MAX */
    size_t failed_member;                    /* out: over a mesh, the member whose content failed, or SIZE_MAX */
} uform_trainer_step_t;
UFORM_API uform_status_t uform_trainer_step(uform_trainer_step_t *request);

/* Whether a checkpoint carries the optimizer's state. */
typedef enum uform_trainer_save_optimizer_t {
    UFORM_TRAINER_SAVE_WITH_OPTIMIZER = 0, /* weights + optimizer.* (F32 masters, moments, step): resumable exactly */
    UFORM_TRAINER_SAVE_WEIGHTS_ONLY = 1    /* only what inference loads (BF16 weights, F32 norms and temperatures) */
} uform_trainer_save_optimizer_t;

/*
 * Writes the trainer's model to `path` as a checkpoint that uform_model_load_ram loads (docs/model.md:
 * BF16 matrices, tables and biases; F32 norms and temperatures; the config in "uform.config"),
 * plus, by default, the optimizer's state: `optimizer.weights.{name}` (F32 master weights),
 * `optimizer.m.{name}`, `optimizer.v.{name}` (F32 moments), `optimizer.step` (I64 [1]) and the
 * optimizer settings in the metadata "uform.optimizer". `user_metadata` (optional text, copied into
 * the metadata "uform.user") lets a caller keep its own state, such as a data loader's position.
 * Over a mesh every member holds the same weights, so saving is local (no collective): one member
 * saves (`uform train` lets member 0 write --out).
 * The write is atomic (a temporary file in the same folder, fsync, rename, fsync of the folder): a
 * crash or a cancel at any moment leaves either the old file or the new one. Progress reports
 * bytes written. Statuses: UFORM_OK; UFORM_DEFERRED; UFORM_CONTENDED; UFORM_CANCELLED;
 * UFORM_INVALID_ARGUMENT (NULL trainer or path, an unknown `optimizer` value); UFORM_IO (naming
 * the path and the system's reason); UFORM_OUT_OF_MEMORY.
 */
typedef struct uform_trainer_save_t {
    uform_trainer_t trainer;                  /* in */
    uform_completion_t completion;            /* in */
    const char *path;                         /* in (borrowed until final) */
    uform_trainer_save_optimizer_t optimizer; /* in */
    const char *user_metadata;                /* in: optional, NUL-terminated UTF-8 */
    uform_progress_t progress;                /* in: bytes written of the file's total */
    uform_outcome_t outcome;                  /* out */
} uform_trainer_save_t;
UFORM_API uform_status_t uform_trainer_save(uform_trainer_save_t *request);

/*
 * Makes an inference model from the trainer's current weights, exactly as saving them and loading
 * the file with `ram_options` would give (BF16 weights), without touching the disk — for
 * evaluation during training. The model is independent of the trainer (free it with
 * uform_model_free). Runs on the trainer's executor, blocking. Statuses: as uform_model_load_ram
 * and uform_trainer_step's UFORM_CONTENDED.
 */
UFORM_API uform_status_t uform_trainer_snapshot(uform_trainer_t trainer, const uform_ram_options_t *ram_options,
                                                uform_model_t *model, uform_outcome_t *outcome);

/*
 * The training loop (docs/training.md, "The loop"): what `uform train` and Python's Trainer.fit run.
 * uform_trainer_fit opens a loader over `dataset` for `trainer` (resuming the data order stored in
 * the checkpoint the trainer resumed from, when asked), steps until `steps` steps are done, the
 * `budget_seconds` are spent, a sequential dataset ends or the callback cancels; evaluates the
 * held-out sets every `eval_every` steps and at the end; writes `save_path` every `save_every` steps
 * and at the end with the loader's cursor as the checkpoint's user metadata. It blocks the calling
 * thread; the steps, saves and evaluations run on the trainer's executor.
 *
 * The callback hears of each event with the request itself, whose outputs are current, and answers
 * UFORM_CONTINUE or UFORM_CANCEL:
 *   UFORM_FIT_STARTED    the loader is open: `order` (and `order_reason`) say how the data order began
 *   UFORM_FIT_STEPPED    a step is done: `step` holds its request and outputs (loss, learning rate,
 *                        step number ...), `twins` its batch's flag, the counters are updated
 *   UFORM_FIT_SAVED      `save_path` was written with the data cursor (`saved_final` 1 at the end)
 *   UFORM_FIT_EVALUATED  held-out set `evaluation_set` was evaluated at step `evaluation_step`:
 *                        `evaluation` by uform_modality_t, as uform_evaluate answers it
 *   UFORM_FIT_ENDED      the loop is over: `outcome` already holds the status the call answers
 *                        (its answer is not read)
 * During a callback `loader` is the loop's loader (for uform_loader_stats' list of skipped samples
 * or uform_loader_cursor); it is freed before the call returns. A cancel stops the loop once the
 * current step's periodic save and evaluation are done (an evaluation stops at the set answered):
 * the trainer keeps every completed step, `save_path` is written as at the end (no final
 * evaluation), and the call answers UFORM_CANCELLED with the outputs readable — the convention of
 * uform_index_build, which keeps its last checkpoint. `step_progress` is handed to every step:
 * cancelling there cancels the step in progress (the trainer stays as before it) and then ends the
 * loop the same way.
 *
 * In (borrowed for the call):
 *   trainer, dataset      required; the loop is the dataset's only reader while it runs
 *   batch, ahead, decode_threads   as uform_loader_options_t's (batch required)
 *   member, members       as uform_loader_options_t's; 0 and 0 over a mesh: the trainer's member
 *                         index and member count (without a mesh: one process, the whole batch)
 *   accumulate            uform_trainer_step_t's, for every step
 *   steps                 steps to take (0: no limit; then budget_seconds is required)
 *   budget_seconds        wall-clock seconds for the loop (0: no limit; the final save is not
 *                         counted). Alone it is checked before each step; over a mesh it cancels
 *                         the step in progress on every member at once (a collective cancel) and
 *                         the loop ends normally. With steps 0 the learning rate runs on elapsed
 *                         time: the warmup by steps, then the cosine at the fraction of the budget
 *                         gone (uform_trainer_schedule at warmup + fraction of warmup + 1).
 *   eval_datasets, eval_count  held-out sets (opened sequential), evaluated at the end and ...
 *   eval_every            ... every N steps (0: only at the end; needs eval_count > 0)
 *   eval_compute, eval_ks, eval_ks_count  the snapshot's compute; uform_evaluate's ks (0: {1, 5})
 *   save_path, save_every the checkpoint (with the optimizer), written atomically at the end and
 *                         every N steps (0: only at the end; needs save_path); NULL: no checkpoint
 *   resume                non-zero: when the trainer's user metadata (uform_trainer_user_metadata)
 *                         is a data cursor, the loader continues that order exactly; metadata that
 *                         is not a cursor, or a cursor of other data, seed, batch or partitioning,
 *                         starts a new order instead (`order` says which, not a failure)
 *   callback, state       optional; see above
 *   step_progress         optional; see above
 * Out:
 *   outcome; order, order_reason (UFORM_FIT_ORDER_MISMATCH: the loader's reason); loader (during
 *   callbacks); step (the last step's request: its outputs, and on a step's failure its
 *   failed_content and failed_member); twins; steps_done (this call's), samples (this member's,
 *   stepped); loss (the last step's); elapsed_seconds (the loop, without the final save);
 *   stepping_seconds (inside uform_trainer_step); loader_stats (before the final save); the last
 *   evaluation (evaluation_step, evaluation_set, evaluation); saved_step (the trainer's step count
 *   in the last checkpoint written, 0 if none), saved_final, saved_at_failure (1: a member of the
 *   mesh was lost and member 0 saved the last completed step with the data order from before the
 *   lost one, so a resume draws its batch again); error (the sample a loader failure names).
 * Over a mesh (the trainer's) every member calls it with the same steps, budget, batch and save
 * settings: the cursor behind each save is collective and member 0 alone writes `save_path` and
 * evaluates (the other members' eval fields are not read). A cancel from the callback must come at
 * the same step on every member; a cancel through step_progress reaches them all by itself.
 * Statuses: UFORM_OK (also when a sequential dataset ended early: see steps_done); UFORM_CANCELLED;
 * UFORM_INVALID_ARGUMENT (NULL request, trainer or dataset; steps 0 with budget_seconds 0; a negative
 * or non-finite budget; eval_every without eval sets; a NULL eval set; save_every without
 * save_path); UFORM_IO (save_path's folder missing or not writable, found before the first step, or
 * a save that failed); the loader's, uform_trainer_step's, uform_trainer_save's and
 * uform_evaluate's, with their messages.
 */
typedef enum uform_fit_event_t {
    UFORM_FIT_STARTED = 0,
    UFORM_FIT_STEPPED = 1,
    UFORM_FIT_SAVED = 2,
    UFORM_FIT_EVALUATED = 3,
    UFORM_FIT_ENDED = 4
} uform_fit_event_t;

/* How the data order of a uform_trainer_fit began. */
typedef enum uform_fit_order_t {
    UFORM_FIT_ORDER_NEW = 0,          /* a new order: no resume asked, or the checkpoint stored nothing */
    UFORM_FIT_ORDER_RESUMED = 1,      /* the stored cursor continues the order exactly */
    UFORM_FIT_ORDER_NOT_A_CURSOR = 2, /* the checkpoint's user metadata is not a data cursor: a new order */
    UFORM_FIT_ORDER_MISMATCH = 3      /* the stored cursor does not fit this data (order_reason): a new order */
} uform_fit_order_t;

struct uform_trainer_fit_t;
typedef uform_continuation_t (*uform_fit_callback_t)(const struct uform_trainer_fit_t *fit, uform_fit_event_t event,
                                                     void *state);

typedef struct uform_trainer_fit_t {
    uform_trainer_t trainer;                   /* in */
    uform_dataset_t dataset;                   /* in */
    size_t batch;                              /* in */
    size_t member, members;                    /* in */
    size_t ahead, decode_threads;              /* in */
    size_t accumulate;                         /* in */
    uint64_t steps;                            /* in */
    double budget_seconds;                     /* in */
    const uform_dataset_t *eval_datasets;      /* in: [eval_count] */
    size_t eval_count;                         /* in */
    uint64_t eval_every;                       /* in */
    uform_compute_t eval_compute;              /* in */
    const size_t *eval_ks;                     /* in: [eval_ks_count] */
    size_t eval_ks_count;                      /* in */
    const char *save_path;                     /* in */
    uint64_t save_every;                       /* in */
    int resume;                                /* in */
    uform_fit_callback_t callback;             /* in */
    void *state;                               /* in */
    uform_progress_t step_progress;            /* in */
    uform_outcome_t outcome;                   /* out */
    uform_fit_order_t order;                   /* out */
    char order_reason[UFORM_OUTCOME_MESSAGE_CAPACITY]; /* out */
    uform_loader_t loader;                     /* out: during callbacks */
    uform_trainer_step_t step;                 /* out */
    int twins;                                 /* out */
    uint64_t steps_done, samples;              /* out */
    double loss;                               /* out */
    double elapsed_seconds, stepping_seconds;  /* out */
    uform_loader_stats_t loader_stats;         /* out */
    uint64_t evaluation_step;                  /* out */
    size_t evaluation_set;                     /* out */
    uform_evaluation_t evaluation[4];          /* out */
    uint64_t saved_step;                       /* out */
    int saved_final, saved_at_failure;         /* out */
    uform_data_error_t error;                  /* out */
} uform_trainer_fit_t;
UFORM_API uform_status_t uform_trainer_fit(uform_trainer_fit_t *request);

/* ------------------------------------------------------------------------------------------ */
/* Mesh (docs/mesh.md)                                                                         */
/* ------------------------------------------------------------------------------------------ */
/*
 * The mesh itself is here: how members find each other (uform_mesh_launch_read), join
 * (uform_mesh_bootstrap), describe the run (uform_mesh_describe) and leave (uform_mesh_free), and
 * one index built by every member (uform_index_builder_write_members, uform_index_builder_gather).
 * What runs over a mesh is documented
 * where it belongs: a trainer's `config.mesh` and steps over it (Training: uform_trainer_config_t,
 * uform_trainer_step), and a loader's share of each batch (Data: uform_loader_options_t).
 */

/*
 * A mesh joins the trainers of several processes, on one host or many, into one data-parallel run
 * (docs/mesh.md). Every process of a run is a *member* with an index in [0, count); a CPU process
 * counts as one member. The members meet at a *rendezvous*: a folder every member can read and
 * write (`directory`: local for one host, a shared file system such as NFS for several), a Redis
 * server (`rendezvous = "redis://HOST:PORT"`), or a small key–value store that member 0 hosts for
 * the bootstrap's duration (`rendezvous = "tcp://HOST:PORT"`, HOST naming member 0's host) — with
 * the same `job` name; then each makes its trainer over the mesh:
 *
 *     uform_mesh_options_t options = {0};
 *     options.host_domain_index = rank, options.host_domain_count = 4;  // this member, of 4
 *     options.rendezvous = "tcp://10.0.0.5:29501", options.job = "run-17";
 *     options.address = "10.0.0.7";        // where this member's collectives listen
 *     options.trainer_config = &config;    // compared between members at the bootstrap
 *     uform_mesh_t mesh = NULL;
 *     if (uform_mesh_bootstrap(executor, &options, &mesh, &outcome) != UFORM_OK) ...;
 *     config.mesh = mesh;
 *     uform_trainer_init_ram(executor, &config, &trainer, &outcome);   // member 0's weights everywhere
 *     ... every member steps with its own share of each global batch ...
 *     uform_trainer_free(trainer);
 *     uform_mesh_free(mesh);
 *
 * Started by a launcher (torchrun, Open MPI's or MPICH's mpirun, Slurm's srun), a member reads its
 * index, the count, its job and a default rendezvous from the launcher's variables: set
 * `options.launcher = UFORM_MESH_LAUNCHER_AUTO` and leave the index and count at 0 (see
 * uform_mesh_launch_read for the variables and the order they are read in).
 *
 * The bootstrap writes this member's facts (index, count, host name, process id, executor kind and
 * CPU class, the library version, the timeout, the address its collectives bind and, when given,
 * every field of `trainer_config` and the caller's `agreement` lines, with a fingerprint of all that
 * must agree) at the rendezvous — `directory/job/facts.{index}`, written atomically, or the key
 * `uform/{job}/facts.{index}` of the store, added only if absent — waits until every member's facts
 * are there (our own barrier, bounded by the timeout), checks that they agree, and only then
 * connects the collectives (Gloo, over TCP, rendezvous through `directory/job/store` or the same
 * store). A bootstrap that succeeded removes its facts and the collectives' keys again, so a
 * finished or running job leaves nothing; facts or a store left by a run that failed or crashed are
 * refused rather than joined (in a Redis server they also expire, after the timeout plus a minute).
 *
 * The collectives are not linked into libuform: they live in a module, libuform-gloo.so.4 (the only
 * binary that needs Gloo, hiredis and the C++ runtime), which the first bootstrap of more than one
 * member loads; a process that never joins a mesh of two or more maps none of it. Where from, the
 * first that exists: the path in the environment variable UFORM_MESH_MODULE when it is set (then
 * nothing else is tried); the folder of libuform.so (or of the program linked with libuform.a); the
 * install libdir (`make install` puts the module beside libuform); the build folder (for the tests
 * and tools of a build tree). When it cannot be loaded (not there, Gloo missing beneath it, a stale
 * module of another version), a bootstrap of more than one member answers UFORM_UNSUPPORTED naming
 * what is missing in the loader's words, and so does every later one; a mesh of one and everything
 * else work.
 *
 * A step's gradients are all-reduced in buckets (whole trunk blocks, last block first, then the
 * rest) while the backward is still running, as PyTorch's DDP does: each bucket as soon as the
 * backward has finished its blocks (`overlap`; UFORM_MESH_OVERLAP_NONE sends the same buckets after
 * the backward instead, with bit-identical results). The step's stats say how long the step waited
 * for them (uform_trainer_stats_t).
 *
 * Thread contract: bootstrap and free block the calling thread; describe may be called from any
 * thread. A mesh serves one trainer call at a time (a step of a second trainer over the same mesh
 * while one runs answers UFORM_CONTENDED); every member must make its trainers over the mesh, and
 * step them, in the same order. After a collective fails (a peer died, hung or was cut off) the mesh
 * is broken for good: every later step answers UFORM_PEER_LOST at once, naming the first failure;
 * restart the run (from the last checkpoint) with a fresh bootstrap.
 */

/*
 * Who started this process, as uform_mesh_launch_read finds it. Numbers are fixed.
 *   NONE      nobody we know: the options say everything (a member started by hand)
 *   AUTO      (options only) read the launcher's variables
 *   TORCHRUN  torchrun / torch.distributed.run: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE;
 *             job TORCHELASTIC_RUN_ID; rendezvous tcp://MASTER_ADDR:(MASTER_PORT + 1), the port
 *             after the agent's own store
 *   OPEN_MPI  Open MPI's mpirun: OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE; job
 *             OMPI_MCA_ess_base_jobid (else PMIX_NAMESPACE)
 *   MPICH     MPICH's and Intel MPI's mpiexec (Hydra): PMI_RANK, PMI_SIZE, MPI_LOCALRANKID,
 *             MPI_LOCALNRANKS
 *   SLURM     Slurm's srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID with
 *             SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE); job SLURM_JOB_ID; rendezvous
 *             tcp://FIRST_NODE:(20000 + SLURM_JOB_ID mod 10000), FIRST_NODE the first host of
 *             SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST), where srun starts task 0
 */
typedef enum uform_mesh_launcher_t {
    UFORM_MESH_LAUNCHER_NONE = 0,
    UFORM_MESH_LAUNCHER_AUTO = 1,
    UFORM_MESH_LAUNCHER_TORCHRUN = 2,
    UFORM_MESH_LAUNCHER_OPEN_MPI = 3,
    UFORM_MESH_LAUNCHER_MPICH = 4,
    UFORM_MESH_LAUNCHER_SLURM = 5,
} uform_mesh_launcher_t;

/* "none", "auto", "torchrun", "open-mpi", "mpich", "slurm"; "unknown" for other values. */
UFORM_API const char *uform_mesh_launcher_name(uform_mesh_launcher_t launcher);

/* What the launcher's variables say about this process (uform_mesh_launch_read). */
typedef struct uform_mesh_launch_t {
    uform_mesh_launcher_t launcher;  /* NONE when no launcher's variables are set */
    size_t index, count;             /* this member, of `count` */
    size_t local_index, local_count; /* this member among the members on this host */
    size_t threads;                  /* compute threads for this member: the cores it may run on,
                                        divided by local_count unless the launcher bound it to a
                                        subset of them already; at least 1 */
    char job[129];                   /* the launcher's job id made a job name ("" when it has none) */
    char rendezvous[320];            /* the default rendezvous, "tcp://HOST:PORT", or "" */
    char rendezvous_from[96];        /* what it came from ("MASTER_ADDR:MASTER_PORT+1", ...) */
    char variables[96];              /* the variables read, for messages ("RANK, WORLD_SIZE, ...") */
} uform_mesh_launch_t;

/*
 * Reads the launcher's variables of this process's environment into `*launch` (zeroed first). The
 * launchers are tried in this order, and the first whose rank variable is set is the one: torchrun,
 * Open MPI, MPICH / Intel MPI, Slurm — an inner launcher first, since a launcher started by another
 * (torchrun under srun, mpirun inside an sbatch script) sees the outer one's variables too, and those
 * describe the outer launch. Where the launcher gives neither a local rank nor a local count, this
 * member is taken as the only one on its host (0 of 1: pass the threads yourself then).
 *
 * The default rendezvous: tcp://MASTER_ADDR:(MASTER_PORT + 1) whenever both are set (torchrun sets
 * them; export them under Slurm or mpirun to choose member 0's host and port); else Slurm's first
 * node (see SLURM above); else, when every member runs on this host (local_count == count), the
 * loopback tcp://127.0.0.1:(20000 + a hash of the job mod 10000); else "" (the members are on several
 * hosts and nothing says where member 0 is: name a rendezvous).
 *
 * Statuses: UFORM_OK (also when no launcher is found: launcher NONE); UFORM_INVALID_ARGUMENT when the
 * variables contradict each other or are not numbers, naming them ("RANK=5 is not below
 * WORLD_SIZE=4 (torchrun)", "RANK is set but WORLD_SIZE is not", "LOCAL_WORLD_SIZE=8 is above
 * WORLD_SIZE=4"); NULL `launch`. Reads the environment only (getenv); thread-safe as getenv is.
 */
UFORM_API uform_status_t uform_mesh_launch_read(uform_mesh_launch_t *launch, uform_outcome_t *outcome);

/* When a step's gradients are all-reduced (see "Mesh" above). Numbers are fixed. */
typedef enum uform_mesh_overlap_t {
    UFORM_MESH_OVERLAP_BACKWARD = 0, /* bucket by bucket while the backward runs (the default) */
    UFORM_MESH_OVERLAP_NONE = 1,     /* the same buckets, after the backward */
} uform_mesh_overlap_t;

/*
 * How this process joins a mesh. Zeroed fields take the defaults noted.
 *   host_domain_index   this member's index, in [0, host_domain_count)
 *   host_domain_count   members of the run (0 derives 1: a run with no peers, which needs no
 *                       rendezvous and behaves exactly like a trainer without a mesh; with the
 *                       launcher AUTO, 0 takes the launcher's count)
 *   gpus_per_multimem_domain  GPUs sharing memory per domain; must be 0 in this build (no GPUs)
 *   directory, job      the run's folder is directory/job (directory must exist; job is one path
 *                       component of letters, digits, '.', '-' and '_'); the job names the run in a
 *                       store too. One rendezvous is required with peers: `directory` or `rendezvous`
 *   timeout_seconds     how long the bootstrap waits for every member, how long any wait on the
 *                       rendezvous takes at most, and how long any collective of a step waits for a
 *                       peer before the step fails with UFORM_TIMEOUT (0 derives 120; at most one day)
 *   address             the IPv4 or IPv6 address this member's collectives bind and peers connect to
 *                       (NULL: the first configured non-loopback IPv4 address of this host, else
 *                       127.0.0.1). Name the interface the peers reach: host names often resolve to
 *                       127.0.1.1, which other hosts cannot reach.
 *   trainer_config      optional: the config this member's trainer will use; its fields (not `resume`
 *                       nor `mesh`) go into the facts and must agree between members
 *   agreement           optional: the caller's own "key=value" lines (at most 4 KiB) that every member
 *                       must pass with the same keys and values, such as a command line's global batch
 *                       size; a disagreement is reported as "agreement.key"
 *   rendezvous          instead of a directory: "redis://HOST:PORT" (a Redis server every member
 *                       reaches, through Gloo's RedisStore) or "tcp://HOST:PORT" (member 0 hosts the
 *                       store on PORT of every interface of its host while it bootstraps; HOST names
 *                       that host for the others). HOST is a name or a numeric address ("[::1]" for
 *                       IPv6). The protocol is in docs/mesh.md.
 *   launcher            NONE: the fields above say everything; AUTO: the index, count, job (when `job`
 *                       is NULL) and rendezvous (when neither `directory` nor `rendezvous` is given)
 *                       come from the launcher's variables (uform_mesh_launch_read); an index or count
 *                       given as well must agree with them
 *   overlap             when a step's gradients are all-reduced (uform_mesh_overlap_t); agreed
 * Everything given is copied during the call.
 */
typedef struct uform_mesh_options_t {
    size_t host_domain_index;
    size_t host_domain_count;
    size_t gpus_per_multimem_domain;
    const char *directory;
    const char *job;
    double timeout_seconds;
    const char *address;
    const struct uform_trainer_config_t *trainer_config;
    const char *agreement;
    const char *rendezvous;
    uform_mesh_launcher_t launcher;
    uform_mesh_overlap_t overlap;
} uform_mesh_options_t;

/*
 * Joins the run `options` describes as member `host_domain_index` (see above), recording the kind
 * and CPU class of `executor` (NULL: the calling thread) in its facts. Blocks until every member is
 * there and the collectives are connected, or fails within the timeout (plus a few seconds).
 * Statuses:
 *   UFORM_OK
 *   UFORM_INVALID_ARGUMENT  NULL `mesh`; an index not below the count; peers without a rendezvous or
 *                       job, or with both a directory and a rendezvous; a rendezvous that is not
 *                       redis://HOST:PORT or tcp://HOST:PORT; a job name that is not one path
 *                       component; a malformed agreement; a timeout out of range; the launcher AUTO
 *                       without a launcher's variables, with variables that contradict each other, or
 *                       with an index or count that disagrees with them, or with members on several
 *                       hosts and no rendezvous named; another live process already holding this index
 *                       ("index 1 of job 'j' is already claimed by process 4242 on host h: give
 *                       every member its own index"); a job left by an earlier run (facts of
 *                       processes that have gone, facts older than the timeout, or a store: "remove
 *                       it or choose another job name")
 *   UFORM_TIMEOUT       some member did not arrive within the timeout (the message lists the missing
 *                       indices); nobody answered at the rendezvous (a tcp:// store whose member 0
 *                       never came, a Redis server that does not answer)
 *   UFORM_CONFIG_MISMATCH  members disagree: the message names the field and both values ("count:
 *                       member 2 has 3, member 0 (this process) has 4"); compared are the protocol,
 *                       the library version, the count, gpus_per_multimem_domain, the timeout, the
 *                       overlap, the executor's memory and CPU class, the trainer config's fields and
 *                       the agreement lines — everything that fixes the size or order of what the
 *                       collectives exchange, because the collectives library cannot survive a size
 *                       mismatch. A store tells every member of the first disagreement any member saw
 *   UFORM_UNSUPPORTED   GPUs asked for (gpus_per_multimem_domain, a VRAM executor); more than one
 *                       member, and the collectives module cannot be loaded (see above)
 *   UFORM_IO            the job folder cannot be made or written; the address cannot be bound; member
 *                       0 cannot host a tcp:// store on its port (in use); a Redis server refuses a
 *                       command
 *   UFORM_PEER_LOST     a member left while the collectives connected; the host of a tcp:// store
 *                       (member 0) left during the bootstrap
 *   UFORM_OUT_OF_MEMORY (also when loading the collectives module ran out of memory; a later call
 *                       tries again)
 * On failure `*mesh` is NULL and this member's facts are removed again.
 */
UFORM_API uform_status_t uform_mesh_bootstrap(uform_executor_t executor, const uform_mesh_options_t *options,
                                              uform_mesh_t *mesh, uform_outcome_t *outcome);

/* How GPUs of one multimem domain share memory (used by the mesh). */
typedef enum uform_multimem_tier_t {
    UFORM_MULTIMEM_TIER_SWITCH_REDUCED = 0,
    UFORM_MULTIMEM_TIER_PEER_READ = 1
} uform_multimem_tier_t;

typedef enum uform_gpu_class_t {
    UFORM_GPU_CLASS_UNKNOWN = 0,
    UFORM_GPU_CLASS_NVIDIA_AMPERE = 1,
    UFORM_GPU_CLASS_NVIDIA_ADA = 2,
    UFORM_GPU_CLASS_NVIDIA_HOPPER = 3,
    UFORM_GPU_CLASS_NVIDIA_BLACKWELL = 4,
    UFORM_GPU_CLASS_NVIDIA_BLACKWELLRTX = 5,
    UFORM_GPU_CLASS_NVIDIA_RUBIN = 6,
    UFORM_GPU_CLASS_AMD_CDNA3 = 7,
    UFORM_GPU_CLASS_AMD_CDNA4 = 8,
    UFORM_GPU_CLASS_AMD_CDNA5 = 9,
    UFORM_GPU_CLASS_APPLE_METAL7 = 10,
    UFORM_GPU_CLASS_APPLE_METAL9 = 11,
    UFORM_GPU_CLASS_APPLE_METAL10 = 12
} uform_gpu_class_t;

/* The shape of a mesh. The first seven fields are the design's (docs/mesh.md; GPU fields are 0 for CPU
 * processes); a CPU process counts as one member, so members_per_host_domain is 1 and a member's
 * index is its host_domain_index. The last four say how the run was launched. */
typedef struct uform_mesh_description_t {
    size_t gpus_per_host_domain;
    size_t gpus_per_multimem_domain;
    size_t gpus_per_colocated_domain;
    size_t host_domain_index;
    size_t first_gpu_index;
    uform_multimem_tier_t multimem_tier;
    uform_gpu_class_t gpu_class;
    size_t members_per_host_domain;
    size_t members_total;
    size_t first_member_index;
    uform_mesh_launcher_t launcher;  /* who started the members (NONE: by hand) */
    size_t local_member_index;       /* this member among those on its host, as the launcher says */
    size_t local_members;            /* (0 and 1 when started by hand: unknown) */
    uform_mesh_overlap_t overlap;
} uform_mesh_description_t;

/* Fills `*description` (UFORM_INVALID_ARGUMENT for a NULL mesh or description; a non-NULL
 * description is zeroed first). Thread-safe: the shape never changes. */
UFORM_API uform_status_t uform_mesh_describe(uform_mesh_t mesh, uform_mesh_description_t *description);

/* Closes the collectives and frees the mesh; call it after freeing every trainer made over it. Peers
 * still stepping see UFORM_PEER_LOST. NULL is a no-op. */
UFORM_API void uform_mesh_free(uform_mesh_t mesh);

/*
 * One index built by the members of a mesh (docs/indexes.md, "Many members, one index"). Collective:
 * every member calls it, each with the builder of its own share of the corpus, and each gets in
 * `*gathered` a new builder holding member 0's items, then member 1's, and so on, rows, modalities
 * and paths as they were added; `builder` is left as it was. When every member built a contiguous
 * block of the inputs in input order, the gathered builder is the one a single process would have
 * made, and writes the same bytes. Every member receives every row (an all-gather), so each needs
 * memory for the whole index; to write the index without that, use
 * uform_index_builder_write_members. A member whose own work failed calls it with `builder` NULL, so the
 * others fail at once rather than after the mesh's timeout.
 * Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL mesh or gathered); UFORM_PEER_LOST (a member
 * called with NULL, or left); UFORM_TIMEOUT (a member did not answer within the mesh's timeout);
 * UFORM_CONFIG_MISMATCH (builders of other dimensions, scalars or fingerprints);
 * UFORM_OUT_OF_MEMORY (on any member: all fail); UFORM_CONTENDED (another call holds the mesh).
 * A failed exchange breaks the mesh, as a trainer's does. On failure `*gathered` is NULL.
 */
UFORM_API uform_status_t uform_index_builder_gather(uform_index_builder_t builder, uform_mesh_t mesh,
                                                    uform_index_builder_t *gathered, uform_outcome_t *outcome);

/*
 * Writes one index from the builders of the members of a mesh (docs/indexes.md, "Many members, one
 * index"). Collective: every member calls it with the builder of its own share, and member 0 writes
 * at `path` (with `metadata`, as uform_index_builder_write takes it) the very file that
 * uform_index_builder_gather followed by uform_index_builder_write would: member 0's items, then
 * member 1's, and so on. Unlike the gather, no member holds the whole index: the items stream to
 * member 0 in pieces of 1 MiB, tensor by tensor in the file's order, and it writes them as they come,
 * so each member needs memory for its own builder, two pieces, and on member 0 the writer's 8 MiB
 * chunk. Each piece is broadcast from its member, so with more than two members every member also
 * receives (and drops) the others' pieces. The other members' `path` and `metadata` are ignored and
 * may be NULL. A member whose own work failed calls it with `builder` NULL, so the others fail at
 * once rather than after the mesh's timeout. Every member answers the same status; member 0's
 * failure to write reaches the others as "member 0 of K could not write the index: its message".
 * Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT (NULL mesh; on member 0 a NULL path or a reserved
 * metadata key); UFORM_PEER_LOST (a member called with NULL, or left); UFORM_TIMEOUT (a member did not
 * answer within the mesh's timeout); UFORM_CONFIG_MISMATCH (builders of other dimensions, scalars or
 * fingerprints); UFORM_OUT_OF_MEMORY (on any member: all fail); UFORM_IO (member 0's write; the
 * target is then untouched); UFORM_CONTENDED (another call holds the mesh). A failed exchange breaks
 * the mesh, as a trainer's does.
 */
UFORM_API uform_status_t uform_index_builder_write_members(uform_index_builder_t builder, uform_mesh_t mesh, const char *path,
                                                           const char *const *metadata, size_t metadata_count,
                                                           uform_outcome_t *outcome);

/*
 * Builds one approximate structure over an index whose items the members of `mesh` hold in
 * contiguous blocks (docs/indexes.md, "Many members, one index"). Every member calls it with `own`,
 * its block as a builder (member 0 the first items, member 1 the next …, as
 * uform_index_builder_gather lays them end to end); member 0 also passes `index`, the whole index
 * opened (written from the gathered builder), and `path`, where it writes the structure; the
 * others' `index` and `path` are ignored. A member whose own work failed still calls it with
 * `own` NULL, so the others fail at once instead of at the mesh's timeout.
 *
 * For recipes whose inverted lists FAISS merges (IVF…,Flat, IVF…,PQ…, with OPQ or other transforms
 * in front): member 0 trains on a sample gathered from the members' blocks — the same items, in
 * the same order, as uform_index_ann_build draws from the whole index —, broadcasts the trained
 * empty structure, every member adds its block under the items' numbers, and member 0 merges the
 * members' lists in member order (FAISS's merge_from) and writes the file with the index's
 * pairing record — or, with options->ondisk (member 0's), the members add their blocks in rounds
 * of 65,536 rows, each round's lists sent to member 0 (every member holds one batch's lists at a
 * time, not its block's) and written by it to the lists file instead of merged in memory (the same
 * files as one process writes). Other recipes (HNSW, refined or fast-scan IVFs) are built by member 0 alone from
 * `index`, as uform_index_ann_build does. `options` are member 0's (the others' `threads` apply to
 * their own adds). Every member answers the same status: member r's failure reaches the others as
 * "member r of K failed …: its message". Long work (training, adds, the write, a graph built
 * alone) runs on a thread of its own while the members answer a one-byte round every 100 ms, so
 * the mesh's timeout bounds how long a dead member goes unnoticed, not how long the work may
 * take. Statuses: those of uform_index_ann_build; UFORM_CONFIG_MISMATCH (blocks whose dims, scalar
 * or total count differ from the index's); UFORM_PEER_LOST (a member that failed before, or left);
 * UFORM_TIMEOUT (a member that stopped answering); UFORM_CONTENDED (the mesh serves another call).
 */
UFORM_API uform_status_t uform_index_ann_build_members(uform_index_t index, uform_index_builder_t own, uform_mesh_t mesh,
                                                       const char *path, const uform_index_ann_options_t *options,
                                                       uform_outcome_t *outcome);

/* ------------------------------------------------------------------------------------------ */
/* Tensor-program session (docs/session.md)                                                    */
/* ------------------------------------------------------------------------------------------ */
/* BEGIN SESSION SECTION */
/*
 * A session compiles small tensor programs (dataflow graphs sent as versioned wire bytes, see
 * docs/wire.md) for this CPU and runs them on buffers the caller supplies. Forward only.
 * This example is compiled and run as the `test_session_example` test:
 *
 *     // y = softmax(x · wᵀ) over rows: x [2, 3], w [4, 3] (a linear layer's layout), y [2, 4].
 *     uform_program_builder_t builder = NULL;
 *     uint32_t x, w, logits, y, operands[2];
 *     size_t x_dims[2] = {2, 3}, w_dims[2] = {4, 3};
 *     int64_t transposes[2] = {0, 1}, axis = 1;
 *     uform_program_builder_init(&builder);
 *     uform_program_builder_parameter(builder, "x", UFORM_SESSION_DTYPE_F32, 2, x_dims, &x);
 *     uform_program_builder_parameter(builder, "w", UFORM_SESSION_DTYPE_F32, 2, w_dims, &w);
 *     operands[0] = x, operands[1] = w;
 *     uform_program_builder_operation(builder, UFORM_SESSION_OP_MATMUL, operands, 2, transposes, 2,
 *                                     UFORM_SESSION_DTYPE_F32, UFORM_SESSION_INFER, NULL, &logits);
 *     uform_program_builder_operation(builder, UFORM_SESSION_OP_SOFTMAX, &logits, 1, &axis, 1,
 *                                     UFORM_SESSION_DTYPE_F32, UFORM_SESSION_INFER, NULL, &y);
 *     uform_program_builder_output(builder, "y", y);
 *     const void *bytes;
 *     size_t length;
 *     uform_program_builder_finish(builder, &bytes, &length);
 *
 *     uform_session_t session = NULL;
 *     uform_program_t program;
 *     if (uform_session_init(&session) != UFORM_SESSION_OK) return 1;
 *     if (uform_session_compile(session, bytes, length, &program) != UFORM_SESSION_OK) {
 *         fprintf(stderr, "%s\n", uform_session_last_cause(session));
 *         return 1;
 *     }
 *     uform_program_builder_free(builder); // the session copied what it needs
 *     float xs[6] = {1, 2, 3, 4, 5, 6}, ws[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, ys[8];
 *     const void *inputs[2] = {xs, ws};
 *     size_t input_sizes[2] = {sizeof xs, sizeof ws}, output_sizes[1] = {sizeof ys};
 *     void *outputs[1] = {ys};
 *     uform_session_status_t status = uform_session_invoke(session, program, inputs, input_sizes, 2,
 *                                                          outputs, output_sizes, 1, NULL, 0);
 *     printf("%s: y[0] = %.4f %.4f %.4f %.4f\n", uform_session_status_name(status), ys[0], ys[1], ys[2], ys[3]);
 *     uform_session_release(session, program);
 *     uform_session_free(session);
 *
 * Thread contract: a session is not thread-safe; use one per thread (programs are not shared
 * between sessions). A program builder is not thread-safe either. Different sessions and builders
 * may be used from different threads at once.
 */

/* What a session call came to. The numbers are fixed by the design (docs/session.md), and each failure
 * maps to exactly one of them. The session keeps its own numbers, since its contract fixes them; the
 * library-wide status each one stands for, which bindings raise it as (Python's session errors are
 * each also that status's error class), is:
 *   OK -> UFORM_OK                             INVALID_BUFFER -> UFORM_INVALID_ARGUMENT
 *   INVALID_PROGRAM -> UFORM_FORMAT            TOO_MANY_PROGRAMS -> UFORM_INVALID_ARGUMENT
 *   UNSUPPORTED_VERSION -> UFORM_UNSUPPORTED   OUT_OF_MEMORY -> UFORM_OUT_OF_MEMORY
 *   INVALID_HANDLE -> UFORM_INVALID_ARGUMENT   COMPILE_FAILED -> UFORM_UNSUPPORTED
 *                                              LAUNCH_FAILED -> UFORM_INTERNAL */
typedef enum uform_session_status_t {
    UFORM_SESSION_OK = 0,
    UFORM_SESSION_INVALID_PROGRAM = 1,     /* malformed wire bytes: truncated, bad magic, id out of range,
                                              forward reference (cycle), a type or shape that does not check,
                                              a payload of the wrong size, an unknown dtype or opcode;
                                              also a NULL argument to compile or to the builder */
    UFORM_SESSION_UNSUPPORTED_VERSION = 2, /* wire bytes of a version newer than UFORM_SESSION_WIRE_VERSION */
    UFORM_SESSION_INVALID_HANDLE = 3,      /* a NULL session, or a program handle that was released or never issued */
    UFORM_SESSION_INVALID_BUFFER = 4,      /* invoke: wrong count, size or alignment, NULL, outputs sharing a byte
                                              with an input or each other, or too small a scratch */
    UFORM_SESSION_TOO_MANY_PROGRAMS = 5,   /* compile: all UFORM_SESSION_MAX_PROGRAMS slots hold programs */
    UFORM_SESSION_OUT_OF_MEMORY = 6,       /* an allocation failed: nothing was loaded (compile), or the
                                              session's scratch or a kernel's own buffers (invoke) */
    UFORM_SESSION_COMPILE_FAILED = 7,      /* a valid program this build cannot plan: a value or the scratch area
                                              exceeds UFORM_SESSION_BYTE_LIMIT */
    UFORM_SESSION_LAUNCH_FAILED = 8        /* invoke: a bound kernel refused to run for a reason other than
                                              memory (the GEMM's packing buffers failing to allocate is OUT_OF_MEMORY) */
} uform_session_status_t;

/* The lower-case name of a session status ("ok", "invalid_program" ...), "unknown" outside the
 * table. The string is static. Thread-safe. */
UFORM_API const char *uform_session_status_name(uform_session_status_t status);

/* How many programs one session holds at once. */
#define UFORM_SESSION_MAX_PROGRAMS 64
/* The newest wire format version this build reads (and the one the builder writes). */
#define UFORM_SESSION_WIRE_VERSION 1
/* The largest value, and the largest scratch area, a compiled program may need: 2^40 bytes. */
#define UFORM_SESSION_BYTE_LIMIT ((uint64_t)1 << 40)
/* The most dimensions a value may have. */
#define UFORM_SESSION_MAX_RANK 8
/* Passed as `rank` to `uform_program_builder_operation`: let the builder infer the result type. */
#define UFORM_SESSION_INFER ((size_t)-1)

/*
 * Scalar types of program values; the numbers are the wire format's dtype bytes.
 *   F32, F64     IEEE binary32 and binary64, computed in their own precision.
 *   F16, BF16    IEEE binary16 and bfloat16, stored as 16 bits, computed in binary32; every
 *                operation's result is rounded to nearest-even on store (also inside fused chains).
 *   I8, I32, I64 two's-complement integers; U8 an unsigned byte. Integer add, sub, mul, neg and abs
 *                wrap modulo 2^bits; div truncates toward zero, x / 0 is 0 and MIN / -1 is MIN.
 *   BOOL         one byte, 0 or 1 (comparisons produce it; any non-zero byte reads as 1).
 */
typedef enum uform_session_dtype_t {
    UFORM_SESSION_DTYPE_F32 = 0,
    UFORM_SESSION_DTYPE_F64 = 1,
    UFORM_SESSION_DTYPE_F16 = 2,
    UFORM_SESSION_DTYPE_BF16 = 3,
    UFORM_SESSION_DTYPE_I8 = 4,
    UFORM_SESSION_DTYPE_I32 = 5,
    UFORM_SESSION_DTYPE_I64 = 6,
    UFORM_SESSION_DTYPE_U8 = 7,
    UFORM_SESSION_DTYPE_BOOL = 8
} uform_session_dtype_t;

/*
 * Operations; the numbers are the wire format's opcodes, fixed forever. Operand counts and
 * attributes (a list of signed 64-bit integers) per opcode; "float" means F32, F64, F16 or BF16;
 * "numeric" means every dtype but BOOL; axes are in [0, rank). Full rules in docs/wire.md.
 *   NEG ABS RELU (numeric), EXP LOG SQRT RSQRT TANH ERF SIGMOID GELU (float): 1 operand, result of
 *     the same type. GELU is the exact form 0.5·x·(1 + erf(x/√2)) (torch.nn.functional.gelu).
 *   ADD SUB MUL DIV MAX MIN (numeric), POW (float): 2 operands of one dtype, NumPy broadcasting.
 *     MAX and MIN propagate NaN and keep the first operand between equal values (torch.maximum).
 *   EQ NE LT LE GT GE: 2 operands of one dtype (any), broadcast, result BOOL.
 *   SELECT: (condition BOOL, a, b) broadcast together; a and b share a dtype, which the result has.
 *   CONVERT: 1 operand, the result dtype is the result value's. Float to integer truncates toward
 *     zero and saturates, NaN gives 0; integer to integer wraps; to BOOL is "!= 0"; to a float
 *     dtype rounds once to nearest even (I64 beyond ±2^53 excepted).
 *   REDUCE_SUM REDUCE_MAX REDUCE_MIN (numeric), REDUCE_MEAN (float): attributes
 *     [keepdims (0 or 1), axis, axis, ...] with distinct axes; float sums accumulate in binary64.
 *   MATMUL (float): (a [..., M, K], b [..., K, N]) -> [..., M, N], attributes [transpose_a,
 *     transpose_b] (0 or 1 each; a transposed operand is stored [..., K, M] or [..., N, K]);
 *     both ranks >= 2, batch dimensions broadcast.
 *   RESHAPE: the result dims are the result value's; element counts must agree.
 *   TRANSPOSE: attributes are a permutation p of the axes: result dims[i] = operand dims[p[i]].
 *   BROADCAST: the operand broadcasts (NumPy rules) to the result value's dims.
 *   SLICE: attributes [start, stop, step] per axis with 0 <= start < stop <= dim, step >= 1.
 *   CONCAT: 1 to 255 operands of one dtype and rank, attributes [axis].
 *   SOFTMAX (float): attributes [axis]. LAYER_NORM (float): operands (x [, weight [, bias]]),
 *     attributes [axis, eps as the bit pattern of a binary64]; normalises over axes axis..rank-1
 *     (torch.nn.functional.layer_norm with normalized_shape = dims[axis:]); weight and bias have
 *     dims[axis:] and x's dtype.
 */
typedef enum uform_session_opcode_t {
    UFORM_SESSION_OP_NEG = 1,
    UFORM_SESSION_OP_ABS = 2,
    UFORM_SESSION_OP_EXP = 3,
    UFORM_SESSION_OP_LOG = 4,
    UFORM_SESSION_OP_SQRT = 5,
    UFORM_SESSION_OP_RSQRT = 6,
    UFORM_SESSION_OP_TANH = 7,
    UFORM_SESSION_OP_ERF = 8,
    UFORM_SESSION_OP_SIGMOID = 9,
    UFORM_SESSION_OP_RELU = 10,
    UFORM_SESSION_OP_GELU = 11,
    UFORM_SESSION_OP_ADD = 20,
    UFORM_SESSION_OP_SUB = 21,
    UFORM_SESSION_OP_MUL = 22,
    UFORM_SESSION_OP_DIV = 23,
    UFORM_SESSION_OP_MAX = 24,
    UFORM_SESSION_OP_MIN = 25,
    UFORM_SESSION_OP_POW = 26,
    UFORM_SESSION_OP_EQ = 30,
    UFORM_SESSION_OP_NE = 31,
    UFORM_SESSION_OP_LT = 32,
    UFORM_SESSION_OP_LE = 33,
    UFORM_SESSION_OP_GT = 34,
    UFORM_SESSION_OP_GE = 35,
    UFORM_SESSION_OP_SELECT = 36,
    UFORM_SESSION_OP_CONVERT = 40,
    UFORM_SESSION_OP_REDUCE_SUM = 50,
    UFORM_SESSION_OP_REDUCE_MAX = 51,
    UFORM_SESSION_OP_REDUCE_MIN = 52,
    UFORM_SESSION_OP_REDUCE_MEAN = 53,
    UFORM_SESSION_OP_MATMUL = 60,
    UFORM_SESSION_OP_RESHAPE = 70,
    UFORM_SESSION_OP_TRANSPOSE = 71,
    UFORM_SESSION_OP_BROADCAST = 72,
    UFORM_SESSION_OP_SLICE = 73,
    UFORM_SESSION_OP_CONCAT = 74,
    UFORM_SESSION_OP_SOFTMAX = 80,
    UFORM_SESSION_OP_LAYER_NORM = 81
} uform_session_opcode_t;

/* A session: up to UFORM_SESSION_MAX_PROGRAMS compiled programs and the scratch it allocates. */
typedef struct uform_session_s *uform_session_t;

/* A program handle, passed by value. `index` is the slot, `generation` changes whenever the slot is
 * released, so a copy of a released handle is refused (UFORM_SESSION_INVALID_HANDLE) even after
 * the slot holds another program. A zeroed handle is never valid. */
typedef struct uform_program_t {
    uint32_t index;
    uint32_t generation;
} uform_program_t;

/* One parameter or output of a compiled program. `dims` (rank entries) belongs to the program and
 * stays valid until it is released. `byte_size` is the exact size the buffer must have (dense,
 * row-major), `alignment` the byte alignment its address must have (the dtype's size). */
typedef struct uform_descriptor_t {
    uform_session_dtype_t dtype;
    size_t rank;
    const size_t *dims;
    size_t byte_size;
    size_t alignment;
} uform_descriptor_t;

/* Makes an empty session and writes it to `*session` (NULL on failure). Statuses: OK,
 * INVALID_HANDLE (NULL `session`), OUT_OF_MEMORY. */
UFORM_API uform_session_status_t uform_session_init(uform_session_t *session);

/* Releases every program and the session's scratch, then the session. NULL is a no-op. */
UFORM_API void uform_session_free(uform_session_t session);

/*
 * Decodes, validates and compiles `length` wire bytes and loads the program into a free slot,
 * writing its handle to `*program` (zeroed on failure). The bytes are borrowed for the call only:
 * names and constant payloads are copied. Statuses: OK; INVALID_HANDLE (NULL session);
 * INVALID_PROGRAM (NULL bytes or `program`, or malformed bytes); UNSUPPORTED_VERSION;
 * TOO_MANY_PROGRAMS (checked first, before the bytes are read); OUT_OF_MEMORY; COMPILE_FAILED.
 * Every failure but INVALID_HANDLE and TOO_MANY_PROGRAMS sets the last cause. Matmul, layer norm
 * and GELU run on the engine's kernels for `uform_cpu_class_detect()`; every call runs on the
 * calling thread.
 */
UFORM_API uform_session_status_t uform_session_compile(uform_session_t session, const void *bytes, size_t length,
                                                       uform_program_t *program);

/* Points `*descriptors` at the program's parameter descriptors (in wire order) and writes their
 * count. Both stay valid until the program is released. Statuses: OK, INVALID_HANDLE (also for
 * NULL out-pointers). */
UFORM_API uform_session_status_t uform_session_inputs(uform_session_t session, uform_program_t program,
                                                      const uform_descriptor_t **descriptors, size_t *count);

/* As `uform_session_inputs`, for the outputs. */
UFORM_API uform_session_status_t uform_session_outputs(uform_session_t session, uform_program_t program,
                                                       const uform_descriptor_t **descriptors, size_t *count);

/* The size of the `scratch` area `uform_session_invoke` needs for this program (any alignment
 * will do: the size includes the slack to align it); 0 for an invalid handle. */
UFORM_API size_t uform_session_scratch_size(uform_session_t session, uform_program_t program);

/*
 * Runs a program on caller buffers: `inputs[i]` holds parameter i (`input_sizes[i]` bytes), the
 * results land in `outputs[i]`. Buffers are used in place where the plan allows: parameters are
 * read where they lie and results are computed straight into the outputs; the plan never writes a
 * parameter's buffer (a value an output must hold twice is copied), so the inputs never change.
 * `scratch` (at least `uform_session_scratch_size` bytes) may be NULL: the session then uses its
 * own, kept for later calls. Every buffer is borrowed for the call only.
 * Statuses: OK; INVALID_HANDLE; INVALID_BUFFER (counts, sizes or alignments other than the
 * descriptors say, a NULL buffer or array, an output sharing a byte with an input or another
 * output, too small a scratch); OUT_OF_MEMORY (the session's own scratch, or the packing buffers
 * the engine's GEMM allocates per call); LAUNCH_FAILED (a kernel refused otherwise). On a
 * failure before running, no output is written.
 */
UFORM_API uform_session_status_t uform_session_invoke(uform_session_t session, uform_program_t program,
                                                      const void *const *inputs, const size_t *input_sizes,
                                                      size_t input_count, void *const *outputs,
                                                      const size_t *output_sizes, size_t output_count,
                                                      void *scratch, size_t scratch_size);

/* Frees a program. Its slot's generation changes, so every copy of the handle is refused from now
 * on. Statuses: OK, INVALID_HANDLE (a stale or never-issued handle, or a NULL session). */
UFORM_API uform_session_status_t uform_session_release(uform_session_t session, uform_program_t program);

/* For logs only: the inner reason behind the latest failure that went through the error mapping
 * (decode, validation or compile details such as "operation 3 (matmul): ..."); "" when none.
 * Failures returned directly (full table, stale handle, buffer mismatch) leave it unchanged. The
 * string belongs to the session and changes with its next failing compile. NULL session: "". */
UFORM_API const char *uform_session_last_cause(uform_session_t session);

/*
 * A program builder writes the wire format, so hosts and tests never assemble bytes by hand.
 * Values are numbered 0, 1, 2 ... in the order they are added. The builder checks only what it
 * needs to write (and, when asked to infer a type, the operation's rule); everything else is left
 * to `uform_session_compile`, so a builder can also write invalid programs on purpose.
 * Every function answers OK, INVALID_PROGRAM (a NULL builder or array where one is needed, a rank
 * above UFORM_SESSION_MAX_RANK, a type the builder cannot infer; `uform_program_builder_cause`
 * says which) or OUT_OF_MEMORY.
 */
typedef struct uform_program_builder_s *uform_program_builder_t;

/* Makes an empty builder (`*builder` is NULL on failure). */
UFORM_API uform_session_status_t uform_program_builder_init(uform_program_builder_t *builder);

/* Frees a builder and the bytes it finished. NULL is a no-op. */
UFORM_API void uform_program_builder_free(uform_program_builder_t builder);

/* Adds parameter (input) number `parameter count so far`; `name` may be NULL (copied). Writes its
 * value id to `*value` (may be NULL). */
UFORM_API uform_session_status_t uform_program_builder_parameter(uform_program_builder_t builder, const char *name,
                                                                 uform_session_dtype_t dtype, size_t rank,
                                                                 const size_t *dims, uint32_t *value);

/* Adds a constant whose `payload_size` bytes (copied; dense, row-major, little-endian) hold its
 * elements. */
UFORM_API uform_session_status_t uform_program_builder_constant(uform_program_builder_t builder,
                                                                uform_session_dtype_t dtype, size_t rank,
                                                                const size_t *dims, const void *payload,
                                                                size_t payload_size, uint32_t *value);

/* Adds an operation and its result value. `operands` (value ids) and `attributes` are copied.
 * With `rank` UFORM_SESSION_INFER the builder infers the result dtype and dims by the same rules
 * compile checks (`dtype` and `dims` are then ignored; RESHAPE and BROADCAST cannot be inferred,
 * and CONVERT takes `dtype`); otherwise the given type is written unchecked. */
UFORM_API uform_session_status_t uform_program_builder_operation(uform_program_builder_t builder,
                                                                 uform_session_opcode_t opcode,
                                                                 const uint32_t *operands, size_t operand_count,
                                                                 const int64_t *attributes, size_t attribute_count,
                                                                 uform_session_dtype_t dtype, size_t rank,
                                                                 const size_t *dims, uint32_t *value);

/* Marks value `value` as the next output; `name` may be NULL (copied). */
UFORM_API uform_session_status_t uform_program_builder_output(uform_program_builder_t builder, const char *name,
                                                              uint32_t value);

/* Writes the wire bytes. `*bytes` belongs to the builder and stays valid until the builder is
 * freed or finishes again; the builder may go on adding after finishing. */
UFORM_API uform_session_status_t uform_program_builder_finish(uform_program_builder_t builder, const void **bytes,
                                                              size_t *length);

/* The dtype and dims of value `value` as the builder recorded or inferred them (rank written to
 * `*rank`, up to UFORM_SESSION_MAX_RANK dims to `dims`). INVALID_PROGRAM for an unknown value. */
UFORM_API uform_session_status_t uform_program_builder_type(uform_program_builder_t builder, uint32_t value,
                                                            uform_session_dtype_t *dtype, size_t *rank,
                                                            size_t *dims);

/* Why the builder's latest call failed ("" when none). Owned by the builder. */
UFORM_API const char *uform_program_builder_cause(uform_program_builder_t builder);
/* END SESSION SECTION */

/* ------------------------------------------------------------------------------------------ */
/* Appendix: reserved numbers for devices this build does not have                             */
/* ------------------------------------------------------------------------------------------ */
/*
 * UForm's design names GPU vendors and classes and CPU classes beyond x86; this build runs on x86
 * CPUs only, so these numbers are reserved rather than used. Here: the GPU vendor enum and the GPU
 * listing (which answers no devices). Elsewhere, because C needs them before their first use: the
 * GPU class and multimem tier enums stand in the Mesh section before uform_mesh_description_t, and
 * uform_cpu_class_t (Version and CPU classes) holds the Arm, RISC-V and WebAssembly classes 10 to 17,
 * which this build reports unsupported. No number here or there ever changes.
 */

typedef enum uform_gpu_vendor_t {
    UFORM_GPU_VENDOR_UNKNOWN = 0,
    UFORM_GPU_VENDOR_NVIDIA = 1,
    UFORM_GPU_VENDOR_AMD = 2,
    UFORM_GPU_VENDOR_APPLE = 3
} uform_gpu_vendor_t;

/* One GPU as `uform_gpu_devices` lists it. */
typedef struct uform_gpu_device_t {
    uform_gpu_vendor_t vendor;
    size_t vendor_ordinal;      /* the device's index in its vendor's runtime */
    uform_gpu_class_t gpu_class;
    size_t compute_units;       /* streaming multiprocessors or compute units */
    uint64_t memory_bytes;
    char name[64];              /* NUL-terminated */
} uform_gpu_device_t;

/* Lists up to `capacity` GPUs into `devices` and the number present into `count`. A build
 * without GPU support answers UFORM_OK with count 0. `devices` may be NULL when capacity is 0. */
UFORM_API uform_status_t uform_gpu_devices(uform_gpu_device_t *devices, size_t capacity, size_t *count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UFORM_UFORM_H */
