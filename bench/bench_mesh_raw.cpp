/*
 * Raw Gloo for bench_mesh: its own context (FileStore rendezvous, TCP on an explicit address) and a
 * bare gloo::allreduce of float sums, so the mesh's all-reduce can be timed against the library it
 * wraps on the same bytes in the same run. Bench only; exceptions are caught here.
 */
#include <chrono>
#include <cstdio>
#include <memory>

#include <gloo/allreduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "bench_mesh_raw.h"

struct bench_raw_s {
    std::shared_ptr<gloo::rendezvous::Context> context;
    std::shared_ptr<gloo::transport::Device> device;
};

static void sum(void *c, const void *a, const void *b, size_t n) {
    float *out = static_cast<float *>(c);
    const float *x = static_cast<const float *>(a), *y = static_cast<const float *>(b);
    for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

extern "C" bench_raw_t *bench_raw_connect(const char *store, const char *address, int rank, int size, int timeout_ms) {
    try {
        auto raw = new bench_raw_s();
        gloo::transport::tcp::attr attr;
        attr.hostname = address;
        raw->device = gloo::transport::tcp::CreateDevice(attr);
        raw->context = std::make_shared<gloo::rendezvous::Context>(rank, size);
        raw->context->setTimeout(std::chrono::milliseconds(timeout_ms));
        gloo::rendezvous::FileStore files(store);
        raw->context->connectFullMesh(files, raw->device);
        return raw;
    } catch (const std::exception &error) {
        std::fprintf(stderr, "bench_mesh: raw Gloo: %s\n", error.what());
        return nullptr;
    }
}

extern "C" int bench_raw_allreduce(bench_raw_t *raw, float *values, size_t count) {
    try {
        gloo::AllreduceOptions options(raw->context);
        options.setOutput(values, count);
        options.setReduceFunction(&sum);
        options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        gloo::allreduce(options);
        return 0;
    } catch (const std::exception &error) {
        std::fprintf(stderr, "bench_mesh: raw Gloo: %s\n", error.what());
        return -1;
    }
}

extern "C" void bench_raw_free(bench_raw_t *raw) {
    try {
        delete raw;
    } catch (...) {
    }
}
