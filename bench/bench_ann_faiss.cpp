// FAISS's own read and search of an approximate index, behind a C interface, for peer_ann_worker's
// in-process comparison (bench_ann_faiss.h). Linked only into that worker (Debian's static
// libfaiss.a with OpenMP), never into libuform. No C++ exception crosses into C.
#include <omp.h>

#include <cstdio>
#include <exception>
#include <string>

#include <faiss/AutoTune.h>
#include <faiss/Index.h>
#include <faiss/IndexHNSW.h>
#include <faiss/index_io.h>

#include "bench_ann_faiss.h"

extern "C" int bench_ann_faiss_open(const char *path, void **index, char *error, size_t error_size) {
    try {
        *index = faiss::read_index(path);
        return 0;
    } catch (const std::exception &failure) {
        std::snprintf(error, error_size, "%s", failure.what());
        return -1;
    }
}

extern "C" int bench_ann_faiss_search(void *index, const char *knob, size_t value, int threads, const float *queries,
                                      size_t count, size_t top, float *scores, int64_t *ids, char *error,
                                      size_t error_size) {
    try {
        faiss::Index *made = static_cast<faiss::Index *>(index);
        // As Python's side sets it; ParameterSpace refuses efSearch on this worker's HNSW (FAISS 1.7.3's
        // dynamic_cast there fails across the two FAISS copies in this process), so that one is set directly.
        faiss::IndexHNSW *graph = dynamic_cast<faiss::IndexHNSW *>(made);
        if (graph && std::string(knob) == "efSearch") graph->hnsw.efSearch = (int)value;
        else faiss::ParameterSpace().set_index_parameter(made, knob, (double)value);
        omp_set_num_threads(threads);
        made->search((faiss::Index::idx_t)count, queries, (faiss::Index::idx_t)top, scores,
                     reinterpret_cast<faiss::Index::idx_t *>(ids));
        return 0;
    } catch (const std::exception &failure) {
        std::snprintf(error, error_size, "%s", failure.what());
        return -1;
    }
}

extern "C" void bench_ann_faiss_free(void *index) { delete static_cast<faiss::Index *>(index); }
