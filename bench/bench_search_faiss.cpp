// FAISS's exact inner-product index (IndexFlatIP) behind a C interface, for bench_search_batch's
// side-by-side run. Linked only into that benchmark (Debian's static libfaiss.a with OpenMP and
// the system BLAS), never into libuform. No C++ exception crosses into C: each entry answers 0
// or -1 with the message in `error`.
#include <dlfcn.h>
#include <omp.h>

#include <cstdio>
#include <exception>

#include <faiss/IndexFlat.h>

#include "bench_search_faiss.h"

extern "C" int bench_faiss_create(const float *rows, size_t count, size_t dims, void **index, char *error,
                                  size_t error_size) {
    try {
        faiss::IndexFlatIP *made = new faiss::IndexFlatIP((faiss::Index::idx_t)dims);
        made->add((faiss::Index::idx_t)count, rows);
        *index = made;
        return 0;
    } catch (const std::exception &failure) {
        std::snprintf(error, error_size, "%s", failure.what());
        return -1;
    }
}

extern "C" int bench_faiss_search(void *index, const float *queries, size_t count, size_t top, float *scores,
                                  int64_t *ids, char *error, size_t error_size) {
    try {
        static_cast<faiss::IndexFlatIP *>(index)->search((faiss::Index::idx_t)count, queries, (faiss::Index::idx_t)top, scores,
                                                         reinterpret_cast<faiss::Index::idx_t *>(ids));
        return 0;
    } catch (const std::exception &failure) {
        std::snprintf(error, error_size, "%s", failure.what());
        return -1;
    }
}

// FAISS splits its heaps over OpenMP threads and hands the product to BLAS (OpenBLAS here, with
// threads of its own): both are set, the BLAS through openblas_set_num_threads when the loaded
// BLAS has it.
extern "C" int bench_faiss_threads(int threads) {
    omp_set_num_threads(threads);
    void (*set_blas)(int) = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    if (set_blas) set_blas(threads);
    return set_blas != nullptr;
}

extern "C" void bench_faiss_free(void *index) { delete static_cast<faiss::IndexFlatIP *>(index); }
