/* Raw Gloo for bench_mesh (bench_mesh_raw.cpp): a context of its own and a bare float all-reduce. */
#ifndef UFORM_BENCH_MESH_RAW_H
#define UFORM_BENCH_MESH_RAW_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_raw_s bench_raw_t;

/* Meets the other members through a FileStore in the existing folder `store`; NULL on failure. */
bench_raw_t *bench_raw_connect(const char *store, const char *address, int rank, int size, int timeout_ms);
/* values[count] ← their sum over the members (gloo::allreduce, ring); 0, or -1 on failure. */
int bench_raw_allreduce(bench_raw_t *raw, float *values, size_t count);
void bench_raw_free(bench_raw_t *raw);

#ifdef __cplusplus
}
#endif

#endif
