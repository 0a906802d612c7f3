/*
 * Screening F32 rows with BF16 products (index_search.c, many queries on a class with native BF16
 * dot products): the bound that says which rows could still reach a query's heap. Private to
 * libuform.
 *
 * A row r and query j score s = x_r · q_j. The screen computes s' from both rounded to BF16
 * (round to nearest even) with F32 sums; the heaps hold s_f32, the row's score by the search
 * kernels' dot_f32 (F32 products and sums). Then, with u = 2^-8 (BF16's unit roundoff), n = dims
 * and γ = (n + 2)·2^-24 (n F32 additions, at most two more in the GEMM's K slices):
 *
 *   |q̂ x̂ − q x|  ≤ (2u + u²)·|q||x|     per term (BF16 products are exact in F32)
 *   |s' − Σ q̂ x̂| ≤ γ·(1 + u)²·Σ|q||x|  (the screen's F32 sums)
 *   |s_f32 − s|   ≤ γ·Σ|q||x|            (dot_f32's sums)
 *
 * and Σ|q_i||x_i| ≤ ‖q‖‖x‖ (Cauchy–Schwarz), so s_f32 − s' ≤ C·‖q‖‖x‖ with
 * C = 2u + u² + 2.2γ. Row norms are summed in F32 (16 lanes, cheap beside the product): the sum
 * of squares comes out at least (1 − γ) of its value, the norm at least (1 − γ) of ‖x‖, which
 * the factor 1 + 2γ in A covers; squares below 2^-126 may be flushed or lost, which leaves the
 * norm short by at most √n·2^-63. VDPBF16PS flushes values below 2^-126 to zero (inputs and
 * sums): at most 2^-126·(√n·(‖q‖ + ‖x‖) + n) more. Both are covered by B for n ≤ 2^16. A row
 * whose s' + δ is below the query's bar (its heap's worst score) cannot enter, where
 *
 *   δ = ‖x‖·A + B,  A = 1.01·C·(1 + 2γ)·‖q‖ + 2^-110,  B = 2^-60·‖q‖ + 2^-100
 *
 * (the 1% covers the F32 rounding of δ and of s' + δ). Norms are rounded up to F32; a norm at or
 * past 2^60 counts as infinite (its products could overflow F32 and leave s' meaningless), and so
 * do NaN norms: δ is then infinite or NaN and the test `!(s' + δ < bar)` sends the row to the
 * exact score, as it does for a NaN s'.
 */
#ifndef UFORM_INDEX_SCREEN_H
#define UFORM_INDEX_SCREEN_H

#include <stddef.h>

/* norms[r] = ‖x_r‖ of rows [rows, dims] (row stride `dims`), rounded up to F32 (see above). */
void uform__screen_row_norms(size_t rows, size_t dims, const float *x, float *norms);

/* A query's two terms of δ: *a = A and *b = B for q [dims] (see above). */
void uform__screen_query_terms(size_t dims, const float *q, float *a, float *b);

#endif
