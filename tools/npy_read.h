/*
 * Reading NumPy .npy matrices for `uform index --vectors` and `uform search --queries`: format
 * versions 1.0, 2.0 and 3.0, a 2-D C-order array of little-endian float32 ('<f4') or float16
 * ('<f2'), mapped read-only. Anything else is refused with a message that says what the file holds
 * and what is expected (another dtype, Fortran order, another rank, a header that is not NumPy's,
 * fewer data bytes than the shape needs).
 */
#ifndef UFORM_TOOLS_NPY_READ_H
#define UFORM_TOOLS_NPY_READ_H

#include <stddef.h>

#include "uform/uform.h"

typedef struct npy_matrix_t {
    const void *data;          /* [rows, columns] of `scalar`, C order, inside the mapping */
    size_t rows, columns;
    uform_scalar_kind_t scalar; /* UFORM_SCALAR_F32 or UFORM_SCALAR_F16 */
    void *mapping;             /* private: the whole file */
    size_t mapping_size;
} npy_matrix_t;

/* Maps `path` and checks it. Answers 0, or -1 with a one-line reason in `error` (the path is the
 * caller's to add). */
int npy_matrix_open(const char *path, npy_matrix_t *matrix, char *error, size_t error_size);
void npy_matrix_close(npy_matrix_t *matrix);

#endif
