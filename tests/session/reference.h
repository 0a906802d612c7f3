/*
 * A straightforward double-precision evaluator of tensor programs, written apart from the
 * session's compiler: it reads its own description of a program (the one the tests also hand to
 * the builder), derives every result's dtype and dims itself and computes every value in binary64
 * (integers in int64), rounding each result to its dtype the way docs/wire.md and uform.h define:
 * F32 by a cast, F16 and BF16 to nearest even by scaling, integers wrapping.
 */
#ifndef UFORM_TESTS_SESSION_REFERENCE_H
#define UFORM_TESTS_SESSION_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#define REF_MAX_NODES 96
#define REF_MAX_RANK 8

enum { REF_PARAMETER = 1, REF_CONSTANT = 2, REF_OPERATION = 3 };

typedef struct ref_node_t {
    int kind;
    int opcode;               /* uform_session_opcode_t for operations */
    int operands[8];
    int operand_count;
    int64_t attributes[24];
    int attribute_count;
    int dtype;                /* given for parameters, constants and CONVERT; derived otherwise */
    int rank;                 /* given for parameters, constants, RESHAPE and BROADCAST; derived otherwise */
    size_t dims[REF_MAX_RANK];
    size_t count;
    double *real;             /* float dtypes: count values (given for parameters and constants) */
    int64_t *integer;         /* integer dtypes and BOOL */
} ref_node_t;

typedef struct ref_program_t {
    ref_node_t nodes[REF_MAX_NODES];
    int count;
    int outputs[8];
    int output_count;
} ref_program_t;

int ref_is_float(int dtype);
size_t ref_dtype_size(int dtype);
/* The value a dtype can hold nearest to x (round to nearest even; F16/BF16 overflow to ±inf). */
double ref_round(int dtype, double x);
/* Wraps an integer to a dtype (BOOL: != 0). */
int64_t ref_wrap(int dtype, int64_t x);
/* Writes element i of a node in its dtype's bytes (little-endian) into `out`. */
void ref_encode(const ref_node_t *node, size_t i, void *out);

/* Evaluates every operation node in order. Answers 0, or -1 with `why` filled when the
 * reference itself finds the program invalid. Allocates `real`/`integer` of operation nodes. */
int ref_evaluate(ref_program_t *program, char *why, size_t why_size);
void ref_free(ref_program_t *program);

#endif
