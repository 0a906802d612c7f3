/*
 * The uform side of the approximate-search benchmark (issue 35): a worker that bench/bench_ann.py
 * drives line by line over stdin, so that each sweep point is timed for uform and for Python's
 * FAISS one right after the other, in the same run, on the same vectors. Everything it times goes
 * through the public API only (uform_index_builder_add_vectors, uform_index_ann_build/open/search,
 * uform_index_search), as a program linked with libuform would call it.
 *
 *   peer_ann_worker --vectors V.f32 --queries Q.f32 --rows N --dims D --count Q --work DIR
 *
 * V.f32 and Q.f32 are raw little-endian float32 matrices [N, D] and [Q, D] (the driver writes them).
 * Commands, one per line; each answers one JSON line on stdout:
 *   index                          builds DIR/bench_ann.index from V (F32 rows, as `uform index --vectors`)
 *   build RECIPE THREADS TRAIN     uform_index_ann_build into DIR/bench_ann.faiss, then opens it
 *                                  → {"seconds", "cpu_seconds", "bytes", "train_rows", "lists"}
 *   attach                         opens an existing DIR/bench_ann.index and DIR/bench_ann.faiss (another
 *                                  worker's, copied there) → {"bytes"}; bench/ann_ab.py uses it
 *   search KNOB VALUE THREADS [R]  every query at once, top 10, R candidates rescored (0 or absent: none,
 *                                  FAISS's scores, which the drivers compare with FAISS's plain search —
 *                                  not the library's default of 0); KNOB is ef or nprobe;
 *                                  the ids go to DIR/ours.ids (int64 [Q, 10]) → {"seconds", "cpu_seconds"}
 *   exact THREADS                  uform_index_search of every query → {"seconds", "cpu_seconds"}, ids as above
 *   direct KNOB VALUE THREADS      FAISS itself in this process (built with libfaiss-dev): DIR/bench_ann.faiss
 *                                  read once with faiss::read_index, every query searched at once with
 *                                  the knob set as Python's side sets it; ids to DIR/direct.ids → as search.
 *                                  The same structure and process as `search`, so the two differ by
 *                                  uform's call path alone, not by where each process's memory sits
 *   quit
 * A failure answers {"error": "..."} and the worker goes on; the driver stops at the first one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_clock.h"
#include "uform/uform.h"
#ifdef BENCH_WITH_FAISS
#include "bench_ann_faiss.h"
#endif

#define TOP 10

typedef struct worker_t {
    size_t rows, dims, count;
    const char *vectors_path, *work;
    float *queries;             /* [count, dims] */
    int64_t *ids;               /* [count, TOP] */
    char index_path[4096], faiss_path[4096], ids_path[4096];
    uform_index_t index;
    uform_index_ann_t ann;
    uform_executor_t executor;  /* made for `threads`, remade when a command asks for another count */
    uform_arena_t arena;
    size_t threads;
    void *direct;               /* FAISS's own copy of DIR/bench_ann.faiss (direct), or NULL */
} worker_t;

static void answer_error(const char *what, const char *message) {
    printf("{\"error\": \"%s: ", what);
    for (const char *c = message; *c; ++c) putchar(*c == '"' || *c == '\\' ? '\'' : *c == '\n' ? ' ' : *c);
    printf("\"}\n");
    fflush(stdout);
}

static float *read_matrix(const char *path, size_t rows, size_t dims) {
    FILE *file = fopen(path, "rb");
    float *data = file ? malloc(rows * dims * sizeof *data) : NULL;
    size_t got = data ? fread(data, sizeof *data, rows * dims, file) : 0;
    if (file) fclose(file);
    if (got != rows * dims) free(data), data = NULL;
    return data;
}

/* The executor (and its arena) for `threads`; the same one is kept while the count stays. */
static int use_threads(worker_t *worker, size_t threads) {
    if (worker->executor && worker->threads == threads) return 0;
    uform_arena_free(worker->arena), uform_executor_free(worker->executor);
    worker->arena = NULL, worker->executor = NULL;
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, threads, 0, &worker->executor, &outcome) != UFORM_OK ||
        uform_arena_for_executor(worker->executor, &worker->arena, &outcome) != UFORM_OK) {
        answer_error("executor", outcome.message);
        return -1;
    }
    worker->threads = threads;
    return 0;
}

/* worker->ids [count, TOP] to `path` (int64); answers the error and -1 when the write fails. */
static int write_ids(worker_t *worker, const char *path) {
    FILE *file = fopen(path, "wb");
    size_t wrote = file ? fwrite(worker->ids, sizeof *worker->ids, worker->count * TOP, file) : 0;
    if (file && fclose(file) != 0) wrote = 0;
    if (wrote != worker->count * TOP) {
        answer_error("ids", path);
        return -1;
    }
    return 0;
}

static int save_ids(worker_t *worker, const uform_index_hit_t *hits, size_t per_query) {
    for (size_t q = 0; q < worker->count; ++q)
        for (size_t k = 0; k < TOP; ++k)
            worker->ids[q * TOP + k] = k < per_query && hits[q * per_query + k].item != UINT64_MAX
                                           ? (int64_t)hits[q * per_query + k].item : -1;
    return write_ids(worker, worker->ids_path);
}

static void command_index(worker_t *worker) {
    float *data = read_matrix(worker->vectors_path, worker->rows, worker->dims);
    if (!data) return answer_error("vectors", worker->vectors_path);
    uform_outcome_t outcome = {0};
    uform_index_builder_t builder = NULL;
    double start = bench_seconds();
    uform_status_t status = uform_index_builder_create_vectors(worker->dims, UFORM_SCALAR_F32, NULL, &builder, &outcome);
    if (status == UFORM_OK)
        status = uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, data, UFORM_SCALAR_F32, worker->rows,
                                                 worker->dims, 0, NULL, 0, &outcome);
    if (status == UFORM_OK) status = uform_index_builder_write(builder, worker->index_path, NULL, 0, &outcome);
    uform_index_builder_free(builder);
    free(data);
    if (status == UFORM_OK) status = uform_index_open(worker->index_path, NULL, &worker->index, &outcome);
    if (status != UFORM_OK) return answer_error("index", outcome.message);
    struct stat info;
    long long bytes = stat(worker->index_path, &info) == 0 ? (long long)info.st_size : -1;
    printf("{\"seconds\": %.3f, \"bytes\": %lld}\n", bench_seconds() - start, bytes);
    fflush(stdout);
}

static void command_build(worker_t *worker, const char *recipe, size_t threads, size_t train_rows) {
    if (!worker->index) return answer_error("build", "no index yet: send 'index' first");
    uform_index_ann_free(worker->ann), worker->ann = NULL;
    uform_index_ann_options_t options = {0};
    options.recipe = recipe, options.threads = threads, options.train_rows = train_rows;
    uform_outcome_t outcome = {0};
    double start = bench_seconds(), start_cpu = bench_cpu_seconds();
    if (uform_index_ann_build(worker->index, worker->faiss_path, &options, &outcome) != UFORM_OK)
        return answer_error("uform_index_ann_build", outcome.message);
    double seconds = bench_seconds() - start, cpu = bench_cpu_seconds() - start_cpu;
    if (uform_index_ann_open(worker->index, worker->faiss_path, &worker->ann, &outcome) != UFORM_OK)
        return answer_error("uform_index_ann_open", outcome.message);
    uform_index_ann_description_t description;
    uform_index_ann_describe(worker->ann, &description);
    struct stat info;
    long long bytes = stat(worker->faiss_path, &info) == 0 ? (long long)info.st_size : -1;
    printf("{\"seconds\": %.3f, \"cpu_seconds\": %.3f, \"bytes\": %lld, \"train_rows\": %zu, \"lists\": %zu, "
           "\"code_bytes\": %zu}\n", seconds, cpu, bytes, description.train_rows, description.lists, description.code_bytes);
    fflush(stdout);
}

/* The structure another worker built: the same graph or lists, so two builds of libuform can be
 * timed on it side by side (bench/ann_ab.py). */
static void command_attach(worker_t *worker) {
    uform_outcome_t outcome = {0};
    uform_index_ann_free(worker->ann), worker->ann = NULL;
    uform_index_free(worker->index), worker->index = NULL;
    if (uform_index_open(worker->index_path, NULL, &worker->index, &outcome) != UFORM_OK)
        return answer_error("uform_index_open", outcome.message);
    if (uform_index_ann_open(worker->index, worker->faiss_path, &worker->ann, &outcome) != UFORM_OK)
        return answer_error("uform_index_ann_open", outcome.message);
    struct stat info;
    long long bytes = stat(worker->faiss_path, &info) == 0 ? (long long)info.st_size : -1;
    printf("{\"bytes\": %lld}\n", bytes);
    fflush(stdout);
}

static void command_search(worker_t *worker, const char *knob, size_t value, size_t threads, size_t rerank) {
    if (!worker->ann) return answer_error("search", "no structure yet: send 'build' first");
    if (use_threads(worker, threads) != 0) return;
    uform_index_ann_search_t search = {0};
    search.ann = worker->ann, search.executor = worker->executor, search.arena = worker->arena;
    search.queries = worker->queries, search.queries_count = worker->count, search.queries_columns = worker->dims;
    search.top = TOP, search.rerank = rerank ? rerank : UFORM_INDEX_ANN_RERANK_NONE;
    if (strcmp(knob, "ef") == 0) search.ef = value;
    else if (strcmp(knob, "nprobe") == 0) search.nprobe = value;
    else return answer_error("search", "the knob is ef or nprobe");
    double start = bench_seconds(), start_cpu = bench_cpu_seconds();
    if (uform_index_ann_search(&search) != UFORM_OK) return answer_error("uform_index_ann_search", search.outcome.message);
    double seconds = bench_seconds() - start, cpu = bench_cpu_seconds() - start_cpu;
    if (save_ids(worker, search.hits, search.hits_per_query) != 0) return;
    printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f}\n", seconds, cpu);
    fflush(stdout);
}

static void command_direct(worker_t *worker, const char *knob, size_t value, size_t threads) {
#ifdef BENCH_WITH_FAISS
    char error[512], path[4200];
    if (!worker->direct && bench_ann_faiss_open(worker->faiss_path, &worker->direct, error, sizeof error) != 0)
        return answer_error("faiss::read_index", error);
    float *scores = malloc(worker->count * TOP * sizeof *scores);
    if (!scores) return answer_error("direct", "cannot allocate the scores");
    const char *name = strcmp(knob, "ef") == 0 ? "efSearch" : knob;
    double start = bench_seconds(), start_cpu = bench_cpu_seconds();
    int failed = bench_ann_faiss_search(worker->direct, name, value, (int)threads, worker->queries, worker->count, TOP,
                                        scores, worker->ids, error, sizeof error);
    double seconds = bench_seconds() - start, cpu = bench_cpu_seconds() - start_cpu;
    free(scores);
    if (failed) return answer_error("faiss search", error);
    snprintf(path, sizeof path, "%s/direct.ids", worker->work);
    if (write_ids(worker, path) != 0) return;
    printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f}\n", seconds, cpu);
    fflush(stdout);
#else
    (void)worker, (void)knob, (void)value, (void)threads;
    answer_error("direct", "this worker was built without FAISS (apt-get install libfaiss-dev)");
#endif
}

static void command_exact(worker_t *worker, size_t threads) {
    if (!worker->index) return answer_error("exact", "no index yet: send 'index' first");
    if (use_threads(worker, threads) != 0) return;
    uform_index_search_t search = {0};
    search.index = worker->index, search.executor = worker->executor, search.arena = worker->arena;
    search.queries = worker->queries, search.queries_count = worker->count, search.queries_columns = worker->dims;
    search.top = TOP;
    double start = bench_seconds(), start_cpu = bench_cpu_seconds();
    if (uform_index_search(&search) != UFORM_OK) return answer_error("uform_index_search", search.outcome.message);
    double seconds = bench_seconds() - start, cpu = bench_cpu_seconds() - start_cpu;
    if (save_ids(worker, search.hits, search.hits_per_query) != 0) return;
    printf("{\"seconds\": %.6f, \"cpu_seconds\": %.6f}\n", seconds, cpu);
    fflush(stdout);
}

int main(int argc, char **argv) {
    worker_t worker = {0};
    const char *queries_path = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--vectors") == 0) worker.vectors_path = argv[i + 1];
        else if (strcmp(argv[i], "--queries") == 0) queries_path = argv[i + 1];
        else if (strcmp(argv[i], "--rows") == 0) worker.rows = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--dims") == 0) worker.dims = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--count") == 0) worker.count = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--work") == 0) worker.work = argv[i + 1];
    }
    if (!worker.vectors_path || !queries_path || !worker.rows || !worker.dims || !worker.count || !worker.work ||
        worker.rows < TOP) {
        fprintf(stderr, "usage: peer_ann_worker --vectors V.f32 --queries Q.f32 --rows N --dims D --count Q --work DIR "
                        "(normally run by bench/bench_ann.py)\n");
        return 2;
    }
    snprintf(worker.index_path, sizeof worker.index_path, "%s/bench_ann.index", worker.work);
    snprintf(worker.faiss_path, sizeof worker.faiss_path, "%s/bench_ann.faiss", worker.work);
    snprintf(worker.ids_path, sizeof worker.ids_path, "%s/ours.ids", worker.work);
    worker.queries = read_matrix(queries_path, worker.count, worker.dims);
    worker.ids = malloc(worker.count * TOP * sizeof *worker.ids);
    if (!worker.queries || !worker.ids) {
        fprintf(stderr, "peer_ann_worker: cannot read %zu queries from %s\n", worker.count, queries_path);
        return 1;
    }
    char line[512], word[64], recipe[160];
    while (fgets(line, sizeof line, stdin)) {
        size_t a = 0, b = 0, c = 0, d = 0;
        if (strncmp(line, "quit", 4) == 0) break;
        else if (strncmp(line, "index", 5) == 0) command_index(&worker);
        else if (strncmp(line, "attach", 6) == 0) command_attach(&worker);
        else if (sscanf(line, "build %159s %zu %zu", recipe, &a, &b) == 3) command_build(&worker, recipe, a, b);
        else if (sscanf(line, "search %63s %zu %zu %zu", word, &c, &a, &d) >= 3) command_search(&worker, word, c, a, d);
        else if (sscanf(line, "exact %zu", &a) == 1) command_exact(&worker, a);
        else if (sscanf(line, "direct %63s %zu %zu", word, &c, &a) == 3) command_direct(&worker, word, c, a);
        else answer_error("command", line);
    }
#ifdef BENCH_WITH_FAISS
    if (worker.direct) bench_ann_faiss_free(worker.direct);
#endif
    uform_index_ann_free(worker.ann);
    uform_arena_free(worker.arena);
    uform_executor_free(worker.executor);
    uform_index_free(worker.index);
    free(worker.queries), free(worker.ids);
    return 0;
}
