/* The one L2 normalisation of an F32 row outside the kernels' tables (truncate.c). */
#ifndef UFORM_MODEL_TRUNCATE_H
#define UFORM_MODEL_TRUNCATE_H

#include <stddef.h>

/* Divides row [columns] by its L2 norm: the squares summed in double in column order, each value
 * divided by the double root and rounded once to F32. A row whose sum is zero stays as it is (all
 * zeros: no direction to keep). Shared by uform_embedding_truncate and the index builder's
 * UFORM_INDEX_NORMALIZE, so that both give the same bytes. */
void uform__row_normalize(float *row, size_t columns);

#endif
