/*
 * FAISS's IndexFlatIP for bench_search_batch (bench_search_faiss.cpp): build over [count, dims]
 * F32 rows (copied), search [count, dims] queries for the `top` best by inner product, set the
 * threads of FAISS (OpenMP) and of its BLAS. Entries answer 0, or -1 with FAISS's message.
 */
#ifndef UFORM_BENCH_SEARCH_FAISS_H
#define UFORM_BENCH_SEARCH_FAISS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int bench_faiss_create(const float *rows, size_t count, size_t dims, void **index, char *error, size_t error_size);
/* scores and ids: [count, top], best first. */
int bench_faiss_search(void *index, const float *queries, size_t count, size_t top, float *scores, int64_t *ids,
                       char *error, size_t error_size);
/* Answers 1 when the BLAS's threads could be set too (OpenBLAS), 0 when only OpenMP's were. */
int bench_faiss_threads(int threads);
void bench_faiss_free(void *index);

#ifdef __cplusplus
}
#endif

#endif
