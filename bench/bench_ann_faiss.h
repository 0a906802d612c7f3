/*
 * FAISS itself in peer_ann_worker's process (bench_ann_faiss.cpp): the worker's own `.faiss` read
 * with faiss::read_index and searched with the same knob, so uform's call path is timed against a
 * direct call in the same process, on a copy of the same structure, under the same memory
 * conditions. Entries answer 0, or -1 with FAISS's message.
 */
#ifndef UFORM_BENCH_ANN_FAISS_H
#define UFORM_BENCH_ANN_FAISS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int bench_ann_faiss_open(const char *path, void **index, char *error, size_t error_size);
/* `knob` is "nprobe" or "efSearch" (FAISS's ParameterSpace names); ids: [count, top], best first. */
int bench_ann_faiss_search(void *index, const char *knob, size_t value, int threads, const float *queries, size_t count,
                           size_t top, float *scores, int64_t *ids, char *error, size_t error_size);
void bench_ann_faiss_free(void *index);

#ifdef __cplusplus
}
#endif

#endif
