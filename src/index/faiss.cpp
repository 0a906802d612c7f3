/*
 * The shim over FAISS (faiss.h): the only code that includes a FAISS header, built into the module
 * libuform-faiss.so.4 (CMakeLists.txt) that libuform loads on demand (faiss_load.c). Every entry
 * point catches every exception and answers a uform_status_t with FAISS's words; nothing prints.
 *
 * Structures are made for METRIC_INNER_PRODUCT from an index_factory recipe — directly for the
 * recipes the default rule names (made_directly(), below), by faiss::index_factory otherwise — written and read with
 * write_index / read_index through an IOWriter / IOReader over the caller's callback and bytes, and
 * searched with per-call SearchParameters (IVF nprobe, HNSW efSearch, an IDSelector for modality
 * filters), which leave the structure untouched so concurrent searches are safe — except an HNSW
 * graph's efSearch, which FAISS 1.7.3 reads from the graph itself: it is set under a lock (below).
 *
 * OpenMP: FAISS parallelises training, adding and batches of queries with OpenMP. A call that
 * names a thread count sets it for the calling thread (omp_set_num_threads affects that thread's
 * later parallel regions only) and restores the previous value before returning.
 */
#include "index/faiss.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <exception>
#include <stdexcept>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <vector>

#include <faiss/Index.h>
#include <faiss/IndexFlat.h>
#include <faiss/IndexFlatCodes.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIVF.h>
#include <faiss/IndexIVFFastScan.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/IndexIVFPQFastScan.h>
#include <faiss/IndexPQ.h>
#include <faiss/IndexPreTransform.h>
#include <faiss/IndexRefine.h>
#include <faiss/VectorTransform.h>
#include <faiss/impl/FaissException.h>
#include <faiss/impl/HNSW.h>
#include <faiss/impl/IDSelector.h>
#include <faiss/impl/io.h>
#include <faiss/invlists/DirectMap.h>
#include <faiss/invlists/InvertedLists.h>
#include <faiss/invlists/OnDiskInvertedLists.h>
#include <faiss/index_factory.h>
#include <faiss/index_io.h>

struct uform__faiss_s {
    std::unique_ptr<faiss::Index> index;
    /* FAISS 1.7.3's HNSW::search sizes its candidate queue by the graph's member efSearch and
     * ignores SearchParametersHNSW::efSearch there, so a per-call ef alone changes nothing (the
     * queue stays at the default 16). Searches hold this shared while the member already is their
     * ef and exclusive while they set it (uform__faiss_search). */
    std::shared_timed_mutex ef_lock;
};

namespace {

void say(char *message, size_t capacity, const char *text) {
    if (capacity) snprintf(message, capacity, "%s", text);
}

/* FAISS's messages start with "Error in <the C++ signature> at <file>:<line>: ", and one that
 * FAISS caught and threw again from an outer function (IndexIVF::search around
 * search_preassigned) nests them: the part after the last "Error: " (or after the last
 * "<line>: ") is what a person needs. */
const char *last_of(const char *text, const char *needle) {
    const char *found = nullptr;
    for (const char *at = text; (at = strstr(at, needle)); ++at) found = at;
    return found;
}

/* Points into `what` (no allocation: it runs inside a catch handler, where a throw of its own
 * would escape the handler's try and end the process). */
const char *plain(const char *what) {
    if (!what) return "";
    if (const char *at = last_of(what, "Error: ")) return at + 7;
    if (const char *at = last_of(what, ".cpp:"))
        if (const char *colon = strstr(at + 5, ": ")) return colon + 2;
    return what;
}

/* FAISS 1.7.3 cannot let an exception leave an OpenMP region, so inside one (IndexIVF's
 * search_preassigned, its search over slices) it catches it and throws a FaissException of its
 * own whose text carries the demangled type and what() of the one caught: "search interrupted
 * with: std::bad_alloc  std::bad_alloc". That is an allocation failure, not a refusal. */
bool wraps_bad_alloc(const char *what) {
    return what && (strstr(what, "std::bad_alloc") || strstr(what, "std::bad_array_new_length"));
}

/* Runs `body`, turning every exception into `refused` (or OUT_OF_MEMORY) with its words. */
template <typename Body>
uform_status_t guarded(uform_status_t refused, char *message, size_t capacity, Body body) {
    /* libstdc++'s per-thread exception globals live in the dynamic TLS of a library loaded with
     * dlopen (this module brings libstdc++ in), which glibc allocates on a thread's first access:
     * the first throw on a failure path. Touching them here makes that one per-thread block part
     * of a thread's first call, not of some later call's failure path, where it would look like a
     * block the failed call left behind. glibc frees it when the thread exits. (volatile: the
     * function is declared pure, and a discarded call would be dropped.) */
    volatile int touched = std::uncaught_exceptions();
    (void)touched;
    try {
        body();
        if (capacity) message[0] = 0;
        return UFORM_OK;
    } catch (const std::bad_alloc &) {
        say(message, capacity, "FAISS could not allocate memory");
        return UFORM_OUT_OF_MEMORY;
    } catch (const faiss::FaissException &error) {
        if (wraps_bad_alloc(error.what())) {
            if (capacity) snprintf(message, capacity, "FAISS could not allocate memory (%s)", plain(error.what()));
            return UFORM_OUT_OF_MEMORY;
        }
        say(message, capacity, plain(error.what()));
        return refused;
    } catch (const std::exception &error) {
        say(message, capacity, error.what());
        return refused;
    } catch (...) {
        say(message, capacity, "FAISS threw an exception that is not a std::exception");
        return refused;
    }
}

/* OpenBLAS's thread count (process-wide) for FAISS's BLAS products — an IVF's coarse quantiser, k-means
 * — set to the call's count while any call is in, and given back when the last one leaves. Without,
 * OpenBLAS ran its own threads beside a one-thread search, whose yielding took a core: IVF4096,PQ16np
 * over 1 M × 64 on one thread of a 2-vCPU Zen 5 used 0.43 CPU s a search of 3,000 queries, 0.17 with
 * OpenBLAS kept to one thread, and 0.27 s of wall time against 0.17. Looked up by name, so any other
 * BLAS is left alone. Concurrent calls asking for other counts overlap on the last one set (a speed
 * matter only). Never starts OpenBLAS's pool (see the constructor). */
extern "C" void sgemm_(); /* the BLAS FAISS calls; only its address is taken, to find its library */

class blas_threads {
  public:
    explicit blas_threads(size_t threads) {
        static set_fn *set = reinterpret_cast<set_fn *>(blas_symbol("openblas_set_num_threads"));
        static get_fn *get = reinterpret_cast<get_fn *>(blas_symbol("openblas_get_num_threads"));
        static const volatile int *running = reinterpret_cast<const volatile int *>(blas_symbol("blas_server_avail"));
        /* Only while OpenBLAS's pool runs: setting the count starts a pool that is down (after a fork,
         * OpenBLAS stops it in the child), and when it cannot start a thread OpenBLAS raises SIGINT.
         * A pool that is down has no thread to yield beside the call either. */
        set_ = threads && set && get && running && *running ? set : nullptr;
        if (!set_) return;
        std::lock_guard<std::mutex> hold(lock());
        if (active()++ == 0) saved() = get();
        set_((int)threads);
    }
    ~blas_threads() {
        if (!set_) return;
        std::lock_guard<std::mutex> hold(lock());
        if (--active() == 0) set_(saved());
    }

  private:
    typedef void set_fn(int);
    typedef int get_fn(void);
    /* `name` in the library that holds the sgemm_ this module calls: libuform loads the module with
     * RTLD_LOCAL, so its BLAS is not in the global scope that RTLD_DEFAULT searches. */
    static void *blas_symbol(const char *name) {
        Dl_info info;
        if (!dladdr(reinterpret_cast<void *>(&sgemm_), &info) || !info.dli_fname) return nullptr;
        void *library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (!library) return nullptr;
        void *symbol = dlsym(library, name);
        dlclose(library); /* the module's own dependency stays loaded, and the symbol with it */
        return symbol;
    }
    static std::mutex &lock() {
        static std::mutex shared;
        return shared;
    }
    static int &active() {
        static int calls = 0;
        return calls;
    }
    static int &saved() {
        static int count = 0;
        return count;
    }
    set_fn *set_;
};

/* Sets OpenMP's thread count for this thread's parallel regions while alive, and OpenBLAS's. */
class omp_threads {
  public:
    explicit omp_threads(size_t threads) : saved_(omp_get_max_threads()), set_(threads != 0), blas_(threads) {
        if (set_) omp_set_num_threads((int)threads);
    }
    ~omp_threads() {
        if (set_) omp_set_num_threads(saved_);
    }

  private:
    int saved_;
    bool set_;
    blas_threads blas_;
};

/* The structure under transforms and refinement: what holds the lists, the graph or the codes. */
faiss::Index *core_of(faiss::Index *index) {
    for (;;) {
        if (auto *transformed = dynamic_cast<faiss::IndexPreTransform *>(index)) index = transformed->index;
        else if (auto *refined = dynamic_cast<faiss::IndexRefine *>(index)) index = refined->base_index;
        else return index;
    }
}

/* Every ProductQuantizer and IVF clustering reachable, with `visit(ClusteringParameters&)`. */
template <typename Visit>
void each_clustering(faiss::Index *index, Visit visit) {
    if (auto *transformed = dynamic_cast<faiss::IndexPreTransform *>(index)) {
        each_clustering(transformed->index, visit);
        return;
    }
    if (auto *refined = dynamic_cast<faiss::IndexRefine *>(index)) {
        each_clustering(refined->base_index, visit);
        return;
    }
    if (auto *graph = dynamic_cast<faiss::IndexHNSW *>(index)) {
        if (graph->storage) each_clustering(graph->storage, visit);
        return;
    }
    if (auto *inverted = dynamic_cast<faiss::IndexIVF *>(index)) {
        visit(inverted->cp);
        if (inverted->quantizer) each_clustering(inverted->quantizer, visit);
    }
    if (auto *ivfpq = dynamic_cast<faiss::IndexIVFPQ *>(index)) visit(ivfpq->pq.cp);
    if (auto *fast = dynamic_cast<faiss::IndexIVFPQFastScan *>(index)) visit(fast->pq.cp);
    if (auto *pq = dynamic_cast<faiss::IndexPQ *>(index)) visit(pq->pq.cp);
}

uint64_t centroids_of(faiss::Index *index) {
    uint64_t most = 0;
    auto keep = [&most](uint64_t value) { most = value > most ? value : most; };
    if (auto *transformed = dynamic_cast<faiss::IndexPreTransform *>(index)) {
        for (auto *transform : transformed->chain)
            if (dynamic_cast<faiss::OPQMatrix *>(transform)) keep(256); /* its PQ: 8 bits per code */
        keep(centroids_of(transformed->index));
        return most;
    }
    if (auto *refined = dynamic_cast<faiss::IndexRefine *>(index)) return centroids_of(refined->base_index);
    if (auto *graph = dynamic_cast<faiss::IndexHNSW *>(index)) return graph->storage ? centroids_of(graph->storage) : 0;
    if (auto *inverted = dynamic_cast<faiss::IndexIVF *>(index)) {
        keep(inverted->nlist);
        if (inverted->quantizer) keep(centroids_of(inverted->quantizer));
    }
    if (auto *ivfpq = dynamic_cast<faiss::IndexIVFPQ *>(index)) keep(ivfpq->pq.ksub);
    if (auto *fast = dynamic_cast<faiss::IndexIVFPQFastScan *>(index)) keep(fast->pq.ksub);
    if (auto *pq = dynamic_cast<faiss::IndexPQ *>(index)) keep(pq->pq.ksub);
    return index->is_trained ? 0 : most;
}

/* IOWriter over the caller's callback. */
struct callback_writer : faiss::IOWriter {
    int (*write)(void *, const void *, size_t);
    void *state;
    int error = 0;
    size_t operator()(const void *pointer, size_t size, size_t items) override {
        if (error) return 0;
        error = write(state, pointer, size * items);
        return error ? 0 : items;
    }
};

/* IOReader over borrowed bytes: a short read answers fewer items, which FAISS reports as an error. */
struct memory_reader : faiss::IOReader {
    const unsigned char *bytes;
    size_t size, at = 0;
    bool lists_on_disk = false; /* may the bytes name an on-disk lists file ("ilod")? */
    size_t operator()(void *pointer, size_t size_each, size_t items) override {
        if (size_each == 0 || items == 0) return 0;
        size_t whole = (size - at) / size_each;
        size_t taken = items < whole ? items : whole;
        memcpy(pointer, bytes + at, taken * size_each);
        at += taken * size_each;
        return taken;
    }
};

/* A decimal number of at least one digit, at most INT_MAX, at `*at` (moved past it). */
bool number(const char *&at, int &value) {
    if (*at < '0' || *at > '9') return false;
    long long parsed = 0;
    for (; *at >= '0' && *at <= '9'; ++at)
        if ((parsed = parsed * 10 + (*at - '0')) > INT_MAX) return false;
    value = (int)parsed;
    return true;
}

bool word(const char *&at, const char *expected) {
    size_t length = strlen(expected);
    if (strncmp(at, expected, length) != 0) return false;
    at += length;
    return true;
}

/* The recipes of UForm's default rule (ann_build.c: "HNSW32", "IVF<n>,PQ<m>np") and their close
 * kin ("HNSW<M>", "IVF<n>,Flat", "IVF<n>,PQ<m>[x<bits>][np]"), made with the fields FAISS 1.7.3's
 * index_factory gives them (index_factory.cpp: IndexHNSWFlat(d, M, metric); an IVF structure over
 * IndexFlat(d, metric) with fix_ivf_fields' settings). index_factory matches every recipe against
 * dozens of std::regex patterns, each compiled afresh: about 13,000 allocations for "HNSW32"
 * before the structure's own handful. nullptr: not one of these, left to index_factory. */
faiss::Index *made_directly(const char *recipe, int d) {
    const faiss::MetricType metric = faiss::METRIC_INNER_PRODUCT;
    const char *at = recipe;
    int M = 32, lists = 0, bits = 8;
    if (word(at, "HNSW")) {
        if (*at && (!number(at, M) || *at || M < 1)) return nullptr;
        /* Not IndexHNSWFlat(d, M, metric): it passes `new IndexFlat` to IndexHNSW's constructor
         * and takes ownership only in its own body, so a failed allocation while the graph's
         * tables are made leaks the storage. The same fields, each owned before the next step. */
        std::unique_ptr<faiss::IndexHNSWFlat> graph(new faiss::IndexHNSWFlat()); /* d 0, M 32, no storage */
        if (M != 32) graph->hnsw = faiss::HNSW(M);
        graph->storage = new faiss::IndexFlat(d, metric);
        graph->own_fields = true;
        graph->d = d, graph->metric_type = metric;
        return graph.release();
    }
    if (!word(at, "IVF") || !number(at, lists) || lists < 1 || !word(at, ",")) return nullptr;
    bool flat = false, polysemous = true;
    if (word(at, "Flat")) {
        flat = true;
    } else {
        if (!word(at, "PQ") || !number(at, M) || M < 1) return nullptr;
        if (word(at, "x") && (!number(at, bits) || bits < 1)) return nullptr;
        if (word(at, "np")) polysemous = false;
    }
    if (*at) return nullptr;
    std::unique_ptr<faiss::IndexFlat> quantizer(new faiss::IndexFlat(d, metric));
    std::unique_ptr<faiss::IndexIVF> inverted;
    if (flat) {
        inverted.reset(new faiss::IndexIVFFlat(quantizer.get(), d, (size_t)lists, metric));
    } else {
        auto *pq = new faiss::IndexIVFPQ(quantizer.get(), d, (size_t)lists, (size_t)M, (size_t)bits, metric);
        pq->do_polysemous_training = polysemous;
        inverted.reset(pq);
    }
    inverted->own_fields = true; /* the structure now frees its quantiser */
    quantizer.release();
    inverted->quantizer_trains_alone = 0; /* a flat quantiser: k-means trains it */
    inverted->cp.spherical = true;        /* inner products */
    return inverted.release();
}

/* ---- reading the structures made_directly() makes, each part owned as soon as it exists ----
 *
 * FAISS 1.7.3's read_index holds what it reads in raw pointers (`new IndexIVFFlat` before the
 * quantiser, the lists and the direct map are read; `new ArrayInvertedLists` before the lists are
 * sized), so an allocation that fails half-way through leaks everything read so far. This reader
 * follows FAISS's format (index_read.cpp) for the fourccs of those structures — IHNf (IndexHNSWFlat),
 * IwFl (IndexIVFFlat), IwPQ (IndexIVFPQ), IxFI / IxF2 / IxFl (IndexFlat) with "ilar" lists and no
 * or an array direct map — and fills the same fields in the same order under unique_ptr. Anything
 * else (another fourcc, a hash-table direct map, bytes it does not expect) throws not_ours, and
 * the caller reads the bytes afresh with faiss::read_index, whose messages then say what is wrong. */
struct not_ours {};

constexpr uint32_t fourcc(const char (&code)[5]) {
    return (uint32_t)(unsigned char)code[0] | (uint32_t)(unsigned char)code[1] << 8 |
           (uint32_t)(unsigned char)code[2] << 16 | (uint32_t)(unsigned char)code[3] << 24;
}

template <typename T>
void take(memory_reader &reader, T &value) {
    if (reader.size - reader.at < sizeof value) throw not_ours();
    memcpy(&value, reader.bytes + reader.at, sizeof value);
    reader.at += sizeof value;
}

/* READVECTOR (`scale` 1) and READXBVECTOR (`scale` 4: the count is of 4-byte groups). */
template <typename T>
void take_vector(memory_reader &reader, std::vector<T> &vector, size_t scale = 1) {
    uint64_t count;
    take(reader, count);
    if (count >= (uint64_t)1 << 40) throw not_ours();
    count *= scale;
    if ((reader.size - reader.at) / sizeof(T) < count) throw not_ours();
    vector.resize(count);
    if (count) memcpy(vector.data(), reader.bytes + reader.at, count * sizeof(T));
    reader.at += count * sizeof(T);
}

void take_header(memory_reader &reader, faiss::Index &index) {
    faiss::Index::idx_t unused;
    take(reader, index.d), take(reader, index.ntotal), take(reader, unused), take(reader, unused);
    take(reader, index.is_trained), take(reader, index.metric_type);
    if (index.metric_type > 1) take(reader, index.metric_arg);
    index.verbose = false;
}

std::unique_ptr<faiss::IndexFlat> take_flat(memory_reader &reader) {
    uint32_t code;
    take(reader, code);
    std::unique_ptr<faiss::IndexFlat> flat;
    if (code == fourcc("IxFI")) flat.reset(new faiss::IndexFlatIP());
    else if (code == fourcc("IxF2")) flat.reset(new faiss::IndexFlatL2());
    else if (code == fourcc("IxFl")) flat.reset(new faiss::IndexFlat());
    else throw not_ours();
    take_header(reader, *flat);
    flat->code_size = flat->d * sizeof(float);
    take_vector(reader, flat->codes, 4);
    if (flat->codes.size() != (size_t)flat->ntotal * flat->code_size) throw not_ours();
    return flat;
}

void take_ivf_header(memory_reader &reader, faiss::IndexIVF &inverted) {
    take_header(reader, inverted);
    take(reader, inverted.nlist), take(reader, inverted.nprobe);
    inverted.quantizer = take_flat(reader).release();
    inverted.own_fields = true;
    char map_type;
    take(reader, map_type);
    if (map_type != faiss::DirectMap::NoMap && map_type != faiss::DirectMap::Array) throw not_ours();
    inverted.direct_map.type = (faiss::DirectMap::Type)map_type;
    take_vector(reader, inverted.direct_map.array);
}

/* An OnDiskInvertedLists with no lists, no file and nothing mapped. FAISS 1.7.3's constructor
 * makes its lock levels and its prefetcher with two plain `new`s in its member initialisers, so
 * when the second fails the first is lost (the pointer member is not destroyed with the half-built
 * object). It is built here in storage of our own, so that the first block can be found there and
 * given back: the member was written before the second `new` ran, and nothing else touches the
 * storage until it is freed. (The default constructor sizes no lists and names no file, so those
 * two blocks are all it allocates.) */
std::unique_ptr<faiss::OnDiskInvertedLists> empty_disk_lists() {
    void *storage = ::operator new(sizeof(faiss::OnDiskInvertedLists));
    memset(storage, 0, sizeof(faiss::OnDiskInvertedLists));
    try {
        return std::unique_ptr<faiss::OnDiskInvertedLists>(new (storage) faiss::OnDiskInvertedLists());
    } catch (...) {
        /* LockLevels is only declared in FAISS's header: its memory is given back without its
         * destructor, which would only destroy an idle mutex, conditions and an empty set. */
        ::operator delete(static_cast<void *>(static_cast<faiss::OnDiskInvertedLists *>(storage)->locks));
        ::operator delete(storage);
        throw;
    }
}

/* FAISS's "ilod" section (OnDiskInvertedListsIOHook::write): nlist, code_size, the lists' (size,
 * capacity, offset) triples, the free slots, the lists file's name and its size. Read into lists
 * that are not mapped yet: map_lists (below) checks them against the file and maps it. */
void take_disk_lists(memory_reader &reader, faiss::IndexIVF &inverted) {
    std::unique_ptr<faiss::OnDiskInvertedLists> lists = empty_disk_lists();
    take(reader, lists->nlist), take(reader, lists->code_size);
    if (lists->nlist != inverted.nlist || lists->code_size != inverted.code_size) throw not_ours();
    take_vector(reader, lists->lists);
    std::vector<faiss::OnDiskInvertedLists::Slot> slots;
    take_vector(reader, slots);
    lists->slots.assign(slots.begin(), slots.end());
    std::vector<char> name;
    take_vector(reader, name);
    lists->filename.assign(name.begin(), name.end());
    take(reader, lists->totsize);
    lists->read_only = true;
    inverted.invlists = lists.release();
    inverted.own_invlists = true;
}

void take_lists(memory_reader &reader, faiss::IndexIVF &inverted) {
    uint32_t code, kind;
    size_t nlist, code_size;
    take(reader, code);
    if (code == fourcc("ilod") && reader.lists_on_disk) return take_disk_lists(reader, inverted);
    if (code != fourcc("ilar")) throw not_ours();
    take(reader, nlist), take(reader, code_size);
    if (nlist != inverted.nlist || code_size != inverted.code_size) throw not_ours();
    std::vector<size_t> sizes(nlist);
    take(reader, kind);
    if (kind == fourcc("full")) {
        take_vector(reader, sizes);
        if (sizes.size() != nlist) throw not_ours();
    } else if (kind == fourcc("sprs")) {
        std::vector<size_t> pairs;
        take_vector(reader, pairs);
        for (size_t j = 0; j + 1 < pairs.size(); j += 2) {
            if (pairs[j] >= nlist) throw not_ours();
            sizes[pairs[j]] = pairs[j + 1];
        }
    } else {
        throw not_ours();
    }
    size_t left = reader.size - reader.at; /* every list's codes and ids must be there */
    for (size_t size : sizes) {
        size_t bytes = code_size + sizeof(faiss::Index::idx_t);
        if (size > left / bytes) throw not_ours();
        left -= size * bytes;
    }
    std::unique_ptr<faiss::ArrayInvertedLists> lists(new faiss::ArrayInvertedLists(nlist, code_size));
    for (size_t i = 0; i < nlist; ++i) {
        lists->ids[i].resize(sizes[i]);
        lists->codes[i].resize(sizes[i] * code_size);
    }
    for (size_t i = 0; i < nlist; ++i) {
        if (!sizes[i]) continue;
        memcpy(lists->codes[i].data(), reader.bytes + reader.at, sizes[i] * code_size);
        reader.at += sizes[i] * code_size;
        memcpy(lists->ids[i].data(), reader.bytes + reader.at, sizes[i] * sizeof(faiss::Index::idx_t));
        reader.at += sizes[i] * sizeof(faiss::Index::idx_t);
    }
    inverted.invlists = lists.release();
    inverted.own_invlists = true;
}

faiss::Index *read_owned(memory_reader &reader) {
    uint32_t code;
    take(reader, code);
    if (code == fourcc("IHNf")) {
        std::unique_ptr<faiss::IndexHNSWFlat> graph(new faiss::IndexHNSWFlat());
        take_header(reader, *graph);
        faiss::HNSW &hnsw = graph->hnsw;
        take_vector(reader, hnsw.assign_probas), take_vector(reader, hnsw.cum_nneighbor_per_level);
        take_vector(reader, hnsw.levels), take_vector(reader, hnsw.offsets), take_vector(reader, hnsw.neighbors);
        take(reader, hnsw.entry_point), take(reader, hnsw.max_level), take(reader, hnsw.efConstruction);
        take(reader, hnsw.efSearch), take(reader, hnsw.upper_beam);
        graph->storage = take_flat(reader).release();
        graph->own_fields = true;
        return graph.release();
    }
    if (code == fourcc("IwFl")) {
        std::unique_ptr<faiss::IndexIVFFlat> inverted(new faiss::IndexIVFFlat());
        take_ivf_header(reader, *inverted);
        inverted->code_size = inverted->d * sizeof(float);
        take_lists(reader, *inverted);
        return inverted.release();
    }
    if (code == fourcc("IwPQ")) {
        std::unique_ptr<faiss::IndexIVFPQ> inverted(new faiss::IndexIVFPQ());
        take_ivf_header(reader, *inverted);
        take(reader, inverted->by_residual), take(reader, inverted->code_size);
        faiss::ProductQuantizer &pq = inverted->pq;
        take(reader, pq.d), take(reader, pq.M), take(reader, pq.nbits);
        pq.set_derived_values();
        take_vector(reader, pq.centroids);
        take_lists(reader, *inverted);
        if (inverted->is_trained) { /* FAISS does not store the table: it recomputes it */
            inverted->use_precomputed_table = 0;
            if (inverted->by_residual) inverted->precompute_table();
        }
        return inverted.release();
    }
    reader.at -= sizeof code;
    return take_flat(reader).release();
}

/* The IVF structure under any transforms, whatever its lists; nullptr for other structures. */
faiss::IndexIVF *inverted_of(faiss::Index *index) {
    while (auto *transformed = dynamic_cast<faiss::IndexPreTransform *>(index)) index = transformed->index;
    return dynamic_cast<faiss::IndexIVF *>(index);
}

/* Adds `count` vectors to the counts of the structure and of every transform above its IVF: the
 * vectors a member's lists bring when they are written to disk instead of merged (merge_from would
 * count them the same way). */
void count_more(faiss::Index *index, faiss::Index::idx_t count) {
    for (;;) {
        index->ntotal += count;
        auto *transformed = dynamic_cast<faiss::IndexPreTransform *>(index);
        if (!transformed) return;
        index = transformed->index;
    }
}

/* A refusal of an on-disk lists file, with the reason (UFORM_FORMAT through guarded's refusal). */
[[noreturn]] void bad_lists(const char *path, const char *why) {
    char text[512];
    snprintf(text, sizeof text, "the lists file '%s' %s", path, why);
    throw std::runtime_error(text);
}

/* Checks the on-disk lists FAISS's bytes describe against the structure and the file at `path`
 * (whose size the pairing record says: `bytes`), then maps it read-only. Every list must lie inside
 * the file, no free slots (UForm writes compact files), the sizes must add up to the structure's
 * count — so no read through the mapping can fall outside it — and the file must be exactly as long
 * as recorded (a shorter one would end a search in SIGBUS). The name FAISS's bytes carry is replaced
 * by `path`, resolved by the caller beside the .faiss. */
void map_lists(faiss::Index *top, const char *path, uint64_t bytes) {
    faiss::IndexIVF *inverted = inverted_of(top);
    auto *lists = inverted ? dynamic_cast<faiss::OnDiskInvertedLists *>(inverted->invlists) : nullptr;
    if (!lists) throw std::runtime_error("the pairing record names a lists file, but FAISS's bytes hold no on-disk lists");
    if (lists->nlist != inverted->nlist || lists->code_size != inverted->code_size || lists->lists.size() != lists->nlist)
        bad_lists(path, "is described with another shape than the structure's lists");
    if (!lists->slots.empty()) bad_lists(path, "is described with free slots (UForm writes compact lists)");
    if (lists->totsize != bytes) bad_lists(path, "is described with another size than its pairing record says");
    const size_t entry = lists->code_size + sizeof(faiss::Index::idx_t);
    uint64_t vectors = 0;
    for (const auto &list : lists->lists) {
        if (list.size > list.capacity) bad_lists(path, "has a list larger than its capacity");
        if (list.capacity == 0) continue;
        if (list.capacity > bytes / entry || list.offset > bytes - list.capacity * entry)
            bad_lists(path, "has a list beyond its end");
        vectors += list.size;
    }
    if (vectors != (uint64_t)inverted->ntotal) bad_lists(path, "holds another number of vectors than the structure");
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) bad_lists(path, strerror(errno));
    struct stat facts;
    if (fstat(descriptor, &facts) != 0 || (uint64_t)facts.st_size != bytes) {
        close(descriptor);
        bad_lists(path, "changed size since it was checked");
    }
    void *mapping = bytes ? mmap(nullptr, (size_t)bytes, PROT_READ, MAP_SHARED, descriptor, 0) : nullptr;
    close(descriptor);
    if (mapping == MAP_FAILED && errno == ENOMEM) throw std::bad_alloc(); /* address space, not the file */
    if (mapping == MAP_FAILED) bad_lists(path, strerror(errno));
    lists->ptr = (uint8_t *)mapping;
    lists->filename = path;
    lists->read_only = true;
    /* IndexIVF's search asks the lists to prefetch the probed ones, which FAISS does with up to 32
     * threads of its own per call; the scan reads the mapped pages anyway, so none are started. */
    lists->prefetch_nthread = 0;
}

/* Vectors whose modality byte has its bit in `mask`. */
struct modality_selector : faiss::IDSelector {
    const uint8_t *allowed;
    unsigned mask;
    uint64_t count;
    bool is_member(idx_t id) const override {
        return id >= 0 && (uint64_t)id < count && ((mask >> allowed[id]) & 1u);
    }
};

/* The IVF whose lists a merge joins: the structure itself or the one under its transforms, with
 * FAISS's array lists. Refined structures keep a second copy of the vectors outside the lists, and
 * fast-scan lists hold codes packed in blocks of 32 that InvertedLists::merge_from (entry by
 * entry) does not unpack; both are left to the single-process build. nullptr: not mergeable. */
faiss::IndexIVF *mergeable_of(faiss::Index *index) {
    while (auto *transformed = dynamic_cast<faiss::IndexPreTransform *>(index)) index = transformed->index;
    auto *inverted = dynamic_cast<faiss::IndexIVF *>(index);
    if (!inverted || dynamic_cast<faiss::IndexIVFFastScan *>(inverted)) return nullptr;
    if (!dynamic_cast<faiss::ArrayInvertedLists *>(inverted->invlists)) return nullptr;
    return inverted;
}

} // namespace

extern "C" uint32_t uform__faiss_module_abi(void) { return UFORM__FAISS_ABI; }

extern "C" const char *uform__faiss_version(void) { return "1.7.3"; }

extern "C" uform_status_t uform__faiss_create(const char *recipe, size_t dimensions, uform__faiss_t **index,
                                              char *message, size_t capacity) {
    *index = nullptr;
    return guarded(UFORM_INVALID_ARGUMENT, message, capacity, [&] {
        std::unique_ptr<uform__faiss_t> made(new uform__faiss_t);
        made->index.reset(made_directly(recipe, (int)dimensions));
        if (!made->index) made->index.reset(faiss::index_factory((int)dimensions, recipe, faiss::METRIC_INNER_PRODUCT));
        *index = made.release();
    });
}

extern "C" void uform__faiss_describe(const uform__faiss_t *index, uform__faiss_facts_t *facts) {
    memset(facts, 0, sizeof *facts);
    const faiss::Index *top = index->index.get();
    facts->count = (uint64_t)top->ntotal, facts->dimensions = (uint64_t)top->d;
    facts->trained = top->is_trained ? 1 : 0;
    facts->metric_inner_product = top->metric_type == faiss::METRIC_INNER_PRODUCT;
    faiss::Index *core = core_of(const_cast<faiss::Index *>(top));
    facts->code_bytes = 4 * facts->dimensions;
    if (auto *graph = dynamic_cast<faiss::IndexHNSW *>(core)) {
        facts->graph = 1;
        if (auto *codes = dynamic_cast<faiss::IndexFlatCodes *>(graph->storage)) facts->code_bytes = codes->code_size;
    } else if (auto *inverted = dynamic_cast<faiss::IndexIVF *>(core)) {
        facts->inverted = 1, facts->lists = inverted->nlist, facts->code_bytes = inverted->code_size;
        facts->graph = dynamic_cast<faiss::IndexHNSW *>(inverted->quantizer) != nullptr;
    } else if (auto *codes = dynamic_cast<faiss::IndexFlatCodes *>(core)) {
        facts->code_bytes = codes->code_size;
    }
    facts->mergeable = mergeable_of(const_cast<faiss::Index *>(top)) != nullptr;
}

extern "C" uint64_t uform__faiss_centroids(const uform__faiss_t *index) {
    try {
        return centroids_of(index->index.get());
    } catch (...) {
        return 0;
    }
}

extern "C" uform_status_t uform__faiss_train(uform__faiss_t *index, size_t rows, const float *vectors, size_t threads,
                                             char *message, size_t capacity) {
    return guarded(UFORM_INVALID_ARGUMENT, message, capacity, [&] {
        omp_threads scope(threads);
        each_clustering(index->index.get(), [](faiss::ClusteringParameters &parameters) {
            parameters.min_points_per_centroid = 1; /* no stderr warning; the sample rule decides quality */
            parameters.verbose = false;
        });
        index->index->train((faiss::Index::idx_t)rows, vectors);
    });
}

extern "C" uform_status_t uform__faiss_add(uform__faiss_t *index, size_t rows, const float *vectors, size_t threads,
                                           char *message, size_t capacity) {
    return guarded(UFORM_INVALID_ARGUMENT, message, capacity, [&] {
        omp_threads scope(threads);
        index->index->add((faiss::Index::idx_t)rows, vectors);
    });
}

extern "C" uform_status_t uform__faiss_add_numbered(uform__faiss_t *index, size_t rows, const float *vectors,
                                                    uint64_t first_id, size_t threads, char *message, size_t capacity) {
    return guarded(UFORM_INVALID_ARGUMENT, message, capacity, [&] {
        if (!mergeable_of(index->index.get())) throw std::runtime_error("numbered adds are for IVF structures with array lists");
        std::vector<faiss::Index::idx_t> ids(rows);
        for (size_t i = 0; i < rows; ++i) ids[i] = (faiss::Index::idx_t)(first_id + i);
        omp_threads scope(threads);
        index->index->add_with_ids((faiss::Index::idx_t)rows, vectors, ids.data());
    });
}

extern "C" uform_status_t uform__faiss_merge(uform__faiss_t *into, uform__faiss_t *from, char *message, size_t capacity) {
    return guarded(UFORM_INVALID_ARGUMENT, message, capacity, [&] {
        if (!mergeable_of(into->index.get()) || !mergeable_of(from->index.get()))
            throw std::runtime_error("only IVF structures with array lists are merged");
        /* add_id 0: the ids are already the items' numbers in the whole index. IndexPreTransform's
         * merge_from checks that the transforms are alike and merges the IVFs beneath. */
        into->index->merge_from(*from->index, 0);
    });
}

extern "C" uform_status_t uform__faiss_serialize(const uform__faiss_t *index,
                                                 int (*write)(void *state, const void *bytes, size_t size), void *state,
                                                 int *error, char *message, size_t capacity) {
    callback_writer writer;
    writer.write = write, writer.state = state;
    *error = 0;
    uform_status_t status = guarded(UFORM_INTERNAL, message, capacity, [&] { faiss::write_index(index->index.get(), &writer); });
    if (writer.error) {
        *error = writer.error;
        say(message, capacity, "the write failed");
        return UFORM_IO;
    }
    return status;
}

extern "C" uform_status_t uform__faiss_deserialize(const void *bytes, size_t size, const char *lists_path,
                                                   uint64_t lists_bytes, uform__faiss_t **index, char *message,
                                                   size_t capacity) {
    *index = nullptr;
    memory_reader reader;
    reader.bytes = (const unsigned char *)bytes, reader.size = size, reader.lists_on_disk = lists_path != nullptr;
    std::unique_ptr<uform__faiss_t> made;
    uform_status_t status = guarded(UFORM_FORMAT, message, capacity, [&] {
        made.reset(new uform__faiss_t);
        try {
            made->index.reset(read_owned(reader));
        } catch (const not_ours &) {
            reader.at = 0;
            /* On-disk lists: FAISS reads their description without mapping the file it names
             * (IO_FLAG_SKIP_IVF_DATA), and map_lists maps the file the caller resolved. Without,
             * IO_FLAG_READ_ONLY only matters to bytes that name a lists file anyway (refused
             * below): FAISS then opens it for reading, never for writing. */
            made->index.reset(faiss::read_index(&reader, lists_path ? faiss::IO_FLAG_SKIP_IVF_DATA : faiss::IO_FLAG_READ_ONLY));
        }
        if (lists_path) {
            map_lists(made->index.get(), lists_path, lists_bytes);
        } else if (faiss::IndexIVF *inverted = inverted_of(made->index.get())) {
            /* Lists on disk that the pairing record does not mention: FAISS would have mapped a
             * file by the name in its bytes, relative to the working folder. Refused unread. */
            if (dynamic_cast<faiss::OnDiskInvertedLists *>(inverted->invlists))
                throw std::runtime_error("FAISS's bytes name an on-disk lists file that the pairing record does not");
        }
    });
    if (status != UFORM_OK) return status;
    if (reader.at != size) {
        if (capacity)
            snprintf(message, capacity, "FAISS's reader stopped after %zu of %zu bytes (bytes left over)", reader.at, size);
        return UFORM_FORMAT;
    }
    *index = made.release();
    return UFORM_OK;
}

extern "C" uform_status_t uform__faiss_lists_take(uform__faiss_t *into, uform__faiss_t *from,
                                                  int (*write)(void *state, const void *bytes, size_t size), void *state,
                                                  uint64_t *sizes, int *error, char *message, size_t capacity) {
    *error = 0;
    struct stopped {};
    uform_status_t status = guarded(UFORM_INVALID_ARGUMENT, message, capacity, [&] {
        faiss::IndexIVF *target = mergeable_of(into->index.get()), *source = mergeable_of(from->index.get());
        if (!target || !source) throw std::runtime_error("only IVF structures with array lists keep their lists on disk");
        /* The same checks merge_from makes: the same trained quantisers, transforms and codes. */
        if (from != into) into->index->check_compatible_for_merge(*from->index);
        auto *lists = static_cast<faiss::ArrayInvertedLists *>(source->invlists);
        for (size_t j = 0; j < lists->nlist; ++j) {
            size_t count = lists->ids[j].size();
            sizes[j] = count;
            if (!count) continue;
            if ((*error = write(state, lists->codes[j].data(), count * lists->code_size)) != 0 ||
                (*error = write(state, lists->ids[j].data(), count * sizeof(faiss::Index::idx_t))) != 0)
                throw stopped();
        }
        /* Written: the memory goes back now (clear() alone would keep the vectors' capacity). */
        for (size_t j = 0; j < lists->nlist; ++j) {
            std::vector<uint8_t>().swap(lists->codes[j]);
            std::vector<faiss::Index::idx_t>().swap(lists->ids[j]);
        }
        if (from != into) {
            faiss::Index::idx_t moved = from->index->ntotal;
            count_more(into->index.get(), moved);
            count_more(from->index.get(), -moved);
        }
    });
    if (*error) {
        say(message, capacity, "the write failed");
        return UFORM_IO;
    }
    return status;
}

extern "C" uform_status_t uform__faiss_lists_count(uform__faiss_t *index, uint64_t count, char *message, size_t capacity) {
    return guarded(UFORM_INVALID_ARGUMENT, message, capacity, [&] {
        if (!mergeable_of(index->index.get())) throw std::runtime_error("only IVF structures with array lists keep their lists on disk");
        if (count > (uint64_t)INT64_MAX - (uint64_t)index->index->ntotal) throw std::runtime_error("too many vectors to count");
        count_more(index->index.get(), (faiss::Index::idx_t)count);
    });
}

extern "C" uform_status_t uform__faiss_lists_describe(uform__faiss_t *index, const uint64_t *sizes, const char *name,
                                                      char *message, size_t capacity) {
    return guarded(UFORM_INVALID_ARGUMENT, message, capacity, [&] {
        faiss::IndexIVF *inverted = mergeable_of(index->index.get());
        if (!inverted) throw std::runtime_error("only IVF structures with array lists keep their lists on disk");
        std::unique_ptr<faiss::OnDiskInvertedLists> lists = empty_disk_lists();
        lists->nlist = inverted->nlist, lists->code_size = inverted->code_size;
        lists->filename = name;
        lists->lists.resize(inverted->nlist);
        const size_t entry = inverted->code_size + sizeof(faiss::Index::idx_t);
        size_t offset = 0;
        uint64_t vectors = 0;
        for (size_t j = 0; j < inverted->nlist; ++j) {
            if (inverted->invlists->list_size(j)) throw std::runtime_error("the lists are not all written out");
            lists->lists[j].size = lists->lists[j].capacity = (size_t)sizes[j];
            lists->lists[j].offset = offset;
            offset += (size_t)sizes[j] * entry, vectors += sizes[j];
        }
        if (vectors != (uint64_t)inverted->ntotal) throw std::runtime_error("the lists' sizes do not add up to the vectors added");
        lists->totsize = offset;
        lists->read_only = true;
        inverted->replace_invlists(lists.release(), true);
    });
}

extern "C" uform_status_t uform__faiss_search(const uform__faiss_t *index, const uform__faiss_search_t *search,
                                              char *message, size_t capacity) {
    return guarded(UFORM_INVALID_ARGUMENT, message, capacity, [&] {
        omp_threads scope(search->threads);
        const faiss::Index *top = index->index.get();
        modality_selector selector;
        selector.allowed = search->allowed, selector.mask = search->mask, selector.count = (uint64_t)top->ntotal;
        faiss::IDSelector *filter = search->allowed ? &selector : nullptr;
        /* IndexPreTransform and IndexRefine hand the parameters to what they wrap, so they are made
         * for the core structure. */
        faiss::Index *core = core_of(const_cast<faiss::Index *>(top));
        faiss::SearchParametersHNSW graph_parameters;
        faiss::SearchParametersIVF list_parameters;
        faiss::SearchParameters plain_parameters;
        faiss::SearchParameters *parameters = &plain_parameters;
        if (dynamic_cast<faiss::IndexHNSW *>(core)) {
            if (search->ef) graph_parameters.efSearch = (int)search->ef;
            else graph_parameters.efSearch = dynamic_cast<faiss::IndexHNSW *>(core)->hnsw.efSearch;
            parameters = &graph_parameters;
        } else if (auto *inverted = dynamic_cast<faiss::IndexIVF *>(core)) {
            list_parameters.nprobe = search->nprobe ? search->nprobe : inverted->nprobe;
            if (auto *quantizer = dynamic_cast<faiss::IndexHNSW *>(inverted->quantizer)) {
                graph_parameters.efSearch = search->ef ? (int)search->ef : quantizer->hnsw.efSearch;
                list_parameters.quantizer_params = &graph_parameters;
            }
            parameters = &list_parameters;
        }
        parameters->sel = filter;
        if (parameters == &plain_parameters && !filter) parameters = nullptr; /* some structures refuse any */
        /* The graph whose member efSearch FAISS 1.7.3 reads (see uform__faiss_s), if any. */
        faiss::HNSW *graph = nullptr;
        if (auto *hnsw = dynamic_cast<faiss::IndexHNSW *>(core)) graph = &hnsw->hnsw;
        else if (auto *inverted = dynamic_cast<faiss::IndexIVF *>(core))
            if (auto *quantizer = dynamic_cast<faiss::IndexHNSW *>(inverted->quantizer)) graph = &quantizer->hnsw;
        auto run = [&] {
            top->search((faiss::Index::idx_t)search->queries, search->vectors, (faiss::Index::idx_t)search->k,
                        search->distances, search->labels, parameters);
        };
        auto &lock = const_cast<uform__faiss_t *>(index)->ef_lock;
        if (!graph) return run();
        {
            std::shared_lock<std::shared_timed_mutex> reading(lock);
            if (graph->efSearch == graph_parameters.efSearch) return run();
        }
        /* Another ef: set it and search under the exclusive lock, so the member never changes under
         * a search that reads it; searches asking for the ef it now holds share the lock again. */
        std::unique_lock<std::shared_timed_mutex> writing(lock);
        graph->efSearch = graph_parameters.efSearch;
        run();
    });
}

extern "C" void uform__faiss_free(uform__faiss_t *index) { delete index; }
