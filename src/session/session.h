/*
 * Private types of the tensor-program session: the decoded program (values, parameters,
 * constants, operations, outputs), the type rules both the builder and the validator apply, the
 * compiled plan (steps over storage slots) and the runtime helpers the steps call.
 *
 * Flow: wire bytes -> uform__session_decode (structure, ids, sizes) -> uform__session_check
 * (types, shapes, topological order) -> uform__session_plan (fusion, storage, liveness) ->
 * uform__session_run (steps on caller buffers).
 */
#ifndef UFORM_SESSION_SESSION_H
#define UFORM_SESSION_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

#define UFORM__SESSION_DTYPE_COUNT 9
#define UFORM__SESSION_CAUSE_CAPACITY 400
#define UFORM__SESSION_MAX_OPERANDS 255
#define UFORM__SESSION_MAX_ATTRIBUTES 64
#define UFORM__SESSION_MAX_NAME 4096
#define UFORM__SESSION_MAX_VALUES (1u << 20)

/* A failure's status and its cause, filled by the stage that failed. */
typedef struct uform__session_error_t {
    uform_session_status_t status;
    char cause[UFORM__SESSION_CAUSE_CAPACITY];
} uform__session_error_t;

/* Records a failure and answers its status. */
uform_session_status_t uform__session_error(uform__session_error_t *error, uform_session_status_t status,
                                            const char *format, ...) __attribute__((format(printf, 3, 4)));

/* Every allocation of the session and the builder goes through these, so tests can make the
 * allocator fail on purpose: after uform__session_fail_allocations_after(n) the next n allocations
 * succeed and every later one answers NULL, until it is called again with a negative n (the
 * default: never fail). The countdown is process-wide and meant for single-threaded tests only. */
void *uform__session_malloc(size_t size);
void *uform__session_calloc(size_t count, size_t size);
void *uform__session_realloc(void *pointer, size_t size);
void *uform__session_aligned(size_t alignment, size_t size); /* size is rounded up to the alignment */
void uform__session_fail_allocations_after(long count);

/* A value's static type: dtype, rank and dims; `count` elements, `bytes` bytes (dense). */
typedef struct uform__session_type_t {
    uint8_t dtype;
    uint8_t rank;
    size_t dims[UFORM_SESSION_MAX_RANK];
    size_t count;
    size_t bytes;
} uform__session_type_t;

/* How a value comes to be. */
typedef enum uform__session_origin_t {
    UFORM__SESSION_ORIGIN_NONE = 0,
    UFORM__SESSION_ORIGIN_PARAMETER = 1,
    UFORM__SESSION_ORIGIN_CONSTANT = 2,
    UFORM__SESSION_ORIGIN_OPERATION = 3
} uform__session_origin_t;

typedef struct uform__session_operation_t {
    uint16_t opcode;
    uint32_t result;
    uint32_t operand_count;
    uint32_t attribute_count;
    uint32_t *operands;  /* operand_count value ids */
    int64_t *attributes; /* attribute_count integers */
} uform__session_operation_t;

typedef struct uform__session_named_t {
    uint32_t value;
    char *name; /* NUL-terminated copy, may be NULL */
} uform__session_named_t;

typedef struct uform__session_constant_t {
    uint32_t value;
    void *payload; /* 64-byte aligned copy of the value's bytes */
} uform__session_constant_t;

/* The decoded program; every pointer is owned and freed by uform__session_ir_free. */
typedef struct uform__session_ir_t {
    uint32_t value_count, parameter_count, operation_count, constant_count, output_count;
    uform__session_type_t *types;        /* value_count */
    uint8_t *origins;                    /* value_count, uform__session_origin_t */
    uint32_t *definers;                  /* value_count: index into parameters/constants/operations */
    uform__session_named_t *parameters;  /* parameter_count */
    uform__session_constant_t *constants; /* constant_count */
    uform__session_operation_t *operations; /* operation_count */
    uform__session_named_t *outputs;     /* output_count */
} uform__session_ir_t;

void uform__session_ir_free(uform__session_ir_t *ir);

/* Decodes wire bytes into `ir` (zeroed on entry): magic, version, tables, ids in range, each value
 * defined once, payload sizes. Types are checked by uform__session_check. */
uform_session_status_t uform__session_decode(const void *bytes, size_t length, uform__session_ir_t *ir,
                                             uform__session_error_t *error);

/* Checks that every operation reads only earlier values and that its result type follows its rule. */
uform_session_status_t uform__session_check(const uform__session_ir_t *ir, uform__session_error_t *error);

/*
 * The type rule of one operation: from its operand types and attributes, writes the result type
 * into `result`. When `given` is not NULL it is the result type the program declares (RESHAPE,
 * BROADCAST and CONVERT take their target from it); otherwise those three cannot be inferred,
 * except CONVERT, which reads `result->dtype` on entry.
 */
uform_session_status_t uform__session_infer(uint16_t opcode, const uform__session_type_t *const *operands,
                                            size_t operand_count, const int64_t *attributes,
                                            size_t attribute_count, const uform__session_type_t *given,
                                            uform__session_type_t *result, uform__session_error_t *error);

/* Fills count and bytes from dtype, rank and dims; answers 0 when they overflow 2^62. */
int uform__session_type_finish(uform__session_type_t *type);

size_t uform__session_dtype_size(unsigned dtype);
const char *uform__session_dtype_name(unsigned dtype);
const char *uform__session_opcode_name(unsigned opcode); /* NULL for an unknown opcode */
int uform__session_dtype_is_float(unsigned dtype);

/* Which elementwise family an opcode belongs to. */
int uform__session_is_unary(unsigned opcode);
int uform__session_is_binary(unsigned opcode);
int uform__session_is_compare(unsigned opcode);
int uform__session_is_elementwise(unsigned opcode); /* unary, binary, compare, select, convert */

/* A binary64 value narrowed to binary32 for storing as `dtype`: F32 rounds to nearest even;
 * for F16 and BF16 it rounds to odd, so the later rounding to 16 bits is the correctly rounded
 * result of the binary64 value (binary32 keeps more than two extra bits), never a double rounding. */
float uform__session_narrow(double value, unsigned dtype);

/* IEEE half and bfloat16 conversions, round to nearest even. */
float uform__session_f16_to_f32(uint16_t bits);
uint16_t uform__session_f32_to_f16(float value);
float uform__session_bf16_to_f32(uint16_t bits);
uint16_t uform__session_f32_to_bf16(float value);

/* ------------------------------------------------------------------------------------------ */
/* The compiled plan                                                                          */
/* ------------------------------------------------------------------------------------------ */

/* Where a value's bytes live during a call. */
typedef enum uform__session_home_t {
    UFORM__SESSION_HOME_NONE = 0,
    UFORM__SESSION_HOME_INPUT = 1,    /* the caller's input buffer `index` */
    UFORM__SESSION_HOME_OUTPUT = 2,   /* the caller's output buffer `index` */
    UFORM__SESSION_HOME_CONSTANT = 3, /* the program's copy of constant `index` */
    UFORM__SESSION_HOME_SCRATCH = 4,  /* scratch at byte `offset` */
    UFORM__SESSION_HOME_ALIAS = 5     /* the same bytes as value `index` (a reshape) */
} uform__session_home_t;

typedef struct uform__session_storage_t {
    uint8_t home;
    uint32_t index;
    size_t offset;
} uform__session_storage_t;

typedef enum uform__session_step_kind_t {
    UFORM__SESSION_STEP_FUSED = 1,  /* a chain of elementwise operations, one pass over the data */
    UFORM__SESSION_STEP_SINGLE = 2, /* one non-elementwise operation */
    UFORM__SESSION_STEP_COPY = 3    /* copy value `source` into output `output` */
} uform__session_step_kind_t;

/* One member of a fused chain: an operation and where its operands come from inside the chain. */
typedef struct uform__session_fused_op_t {
    uint32_t operation;                     /* index into ir.operations */
    uint32_t result_register;
    uint32_t operand_registers[3];
    uint8_t store;                          /* 1 when the result is materialised */
} uform__session_fused_op_t;

/* A register loaded from a value outside the chain, with its broadcast to the chain's dims. */
typedef struct uform__session_fused_load_t {
    uint32_t value;
    uint32_t reg;
} uform__session_fused_load_t;

typedef struct uform__session_step_t {
    uint8_t kind;
    uint32_t operation;   /* SINGLE: index into ir.operations */
    /* SINGLE F32 matmul with an epilogue: the ADD of a [N] bias (and the GELU after it) that
     * read only the product are absorbed; the step writes `epilogue_result` directly. */
    uint32_t epilogue_bias, epilogue_result; /* value ids; UINT32_MAX when none */
    uint8_t epilogue_gelu;
    uint32_t source, output; /* COPY */
    /* FUSED */
    uint32_t fused_count, load_count, register_count;
    uform__session_fused_op_t *fused;
    uform__session_fused_load_t *loads;
    uint8_t *register_dtypes;  /* register_count */
} uform__session_step_t;

/* Kernels a plan binds, chosen once per program from the CPU class (kernels.c). Every slot is
 * filled: the session's own portable loops unless the engine's kernels for the class exist. */
/* What a kernel answers when its own allocation failed (any other non-zero answer is a refusal). */
#define UFORM__SESSION_KERNEL_OUT_OF_MEMORY (-2)

typedef struct uform__session_kernels_t uform__session_kernels_t;
struct uform__session_kernels_t {
    uform_cpu_class_t cpu_class;
    const void *gemm; /* the engine's uform__gemm_kernels_t of the class, NULL when portable loops are bound */
    const void *nn;   /* the engine's uform__nn_kernels_t of the class, likewise */
    /* Y[m, n] = X[m, k] · W[n, k]ᵀ, row-major with leading dimensions in elements (the layout of
     * torch.nn.functional.linear), then + bias[n] when `bias` is not NULL, then exact GELU when
     * `gelu` (the GEMM's epilogue). Y does not alias X or W. Answers 0;
     * UFORM__SESSION_KERNEL_OUT_OF_MEMORY when the kernel's own allocation (the GEMM's packing
     * buffers) failed; any other non-zero value when it could not run for another reason. */
    int (*matmul_f32)(const uform__session_kernels_t *self, size_t m, size_t n, size_t k, const float *x, size_t ldx,
                      const float *w, size_t ldw, float *y, size_t ldy, const float *bias, int gelu);
    /* Softmax of each of `rows` contiguous rows of `n` floats; y may alias x. */
    void (*softmax_f32)(const uform__session_kernels_t *self, size_t rows, size_t n, const float *x, float *y);
    /* torch.nn.functional.layer_norm of each of `rows` rows of `n` floats (biased variance);
     * weight and bias [n] are never NULL; mean and rstd [rows] are scratch. */
    void (*layer_norm_f32)(const uform__session_kernels_t *self, size_t rows, size_t n, const float *x,
                           const float *weight, const float *bias, float eps, float *y, float *mean, float *rstd);
    /* Exact GELU of `n` floats; y may alias x. */
    void (*gelu_f32)(const uform__session_kernels_t *self, size_t n, const float *x, float *y);
    const char *matmul_name, *norm_name; /* which implementation is bound, for logs and the benchmark */
};

/* Fills every slot for `cpu_class`: the engine's GEMM (forward_f32) and NN kernels (LayerNorm,
 * GELU) of that class, the session's portable loops for softmax and wherever `portable` is set. */
void uform__session_kernels_bind(uform__session_kernels_t *kernels, uform_cpu_class_t cpu_class, int portable);

/* A compiled program: its IR, where every value lives, the steps, the sizes. */
typedef struct uform__session_plan_t {
    uform__session_ir_t ir;
    uform__session_storage_t *storage;  /* ir.value_count */
    uform__session_step_t *steps;
    uint32_t step_count;
    size_t value_scratch;     /* bytes of scratch that hold values */
    size_t workspace_offset;  /* where per-step temporaries begin (64-aligned) */
    size_t workspace_size;    /* bytes of the largest step's temporaries */
    size_t scratch_size;      /* workspace_offset + workspace_size + 64 of alignment slack */
    void **addresses;         /* ir.value_count, resolved at each call */
    uform__session_kernels_t kernels;
    uform_descriptor_t *input_descriptors, *output_descriptors;
} uform__session_plan_t;

/* Builds the plan of a checked program; takes ownership of `ir` (also on failure). */
uform_session_status_t uform__session_plan(uform__session_ir_t *ir, uform__session_plan_t *plan,
                                           uform__session_error_t *error);
void uform__session_plan_free(uform__session_plan_t *plan);

/* Runs a plan: resolves addresses from the caller's buffers and `scratch` (64-byte aligned,
 * plan->scratch_size - 64 bytes usable) and executes every step. */
uform_session_status_t uform__session_run(uform__session_plan_t *plan, const void *const *inputs,
                                          void *const *outputs, unsigned char *scratch);

/* Workspace bytes one step needs, and running it. */
size_t uform__session_fused_workspace(const uform__session_plan_t *plan, const uform__session_step_t *step);
void uform__session_fused_run(const uform__session_plan_t *plan, const uform__session_step_t *step,
                              unsigned char *workspace);
size_t uform__session_single_workspace(const uform__session_plan_t *plan, const uform__session_operation_t *op);
/* Answers OK; OUT_OF_MEMORY when a bound kernel could not allocate what it needs; LAUNCH_FAILED
 * when one refused to run for another reason. */
uform_session_status_t uform__session_single_run(const uform__session_plan_t *plan, const uform__session_step_t *step,
                                                 unsigned char *workspace);

/* Converting between storage dtypes and compute registers. A register holds `float` for F32,
 * F16 and BF16, `double` for F64 and `int64_t` for the integers and BOOL. */
typedef enum uform__session_class_t {
    UFORM__SESSION_CLASS_F32 = 0,
    UFORM__SESSION_CLASS_F64 = 1,
    UFORM__SESSION_CLASS_INT = 2
} uform__session_class_t;
unsigned uform__session_dtype_class(unsigned dtype);
/* Loads `count` elements of `dtype` starting at element `first` into a register (8-byte slots for
 * F64/INT, 4-byte for F32 class). */
void uform__session_load(unsigned dtype, const void *source, size_t first, size_t count, void *reg);
void uform__session_store(unsigned dtype, const void *reg, size_t count, void *target, size_t first);

#endif
