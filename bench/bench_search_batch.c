/*
 * Batched exact search against FAISS's IndexFlatIP in the same run (issue 35): an index built from
 * generated unit vectors (default 1,000,000 × 256 F32, through uform_index_builder_add_vectors),
 * queried with batches of 32 and 1,024 unit vectors for the top 10. The two sides run one after the
 * other, never interleaved: first uform_index_search on T threads (round 0 of each batch warms up,
 * then R timed rounds), then the index is closed, FAISS's copy of the rows is built and searched the
 * same way at every thread count of --faiss-threads (OpenMP and OpenBLAS set alike). The best round
 * of each side counts, and FAISS's best is the best over its thread counts. Then checks the top-10
 * ids are the same query by query.
 *
 *   bench_search_batch [--rows N] [--dims D] [--batches 32,1024] [--threads T] [--faiss-threads 1,2]
 *                      [--no-faiss] [--rounds R] [--top K] [--work DIR] [--json PATH] [--class NAME]
 *                      [--pause MS] [--interleave]
 *
 * Why one side at a time: on the PVM guests of bench/README.md, a search that streams 1 GB of rows
 * slows down by half once the process has touched some 3 GB since its previous pass (the host's
 * shadow page tables, inferred: no guest fault shows it), so rounds that alternated the two sides,
 * each with its own 1 GB copy, charged the second side for the first one's pages. --interleave
 * brings back the alternating order (our search of each batch, then FAISS's) to show the effect.
 *
 * --pause MS idles that long before every timed search of either side.
 *
 * --class runs the engine under another CPU class than the detected one (intel_haswell: the AVX2
 * kernels a Zen 3 runs, here on this CPU, which is not a Zen 3).
 *
 * Besides wall-clock time, each side's best process CPU time (every thread) is printed: on a
 * shared machine, where two threads do not always get two cores, CPU seconds per search say how
 * much work each side does, whatever the neighbours take.
 *
 * Prints a table and one JSON object; exits 0 even when the ids differ (a benchmark never fails a
 * build), but says so in the table and the JSON ("same_ids").
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "bench_clock.h"
#include "uform/uform.h"
#ifdef BENCH_WITH_FAISS
#include "bench_search_faiss.h"
#endif

#define MAX_LIST 8

static uint64_t state = 0x5EA2C4BA7C4ull;
static double gaussian(void) { /* Box–Muller over a 64-bit LCG: reproducible, no libc rand */
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double u = ((double)(state >> 11) + 0.5) / 9007199254740992.0;
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double v = (double)(state >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* [rows, dims] unit vectors. */
static float *unit_rows(size_t rows, size_t dims) {
    float *data = malloc(rows * dims * sizeof(float));
    if (!data) return NULL;
    for (size_t r = 0; r < rows; ++r) {
        double sum = 0;
        for (size_t c = 0; c < dims; ++c) {
            double value = gaussian();
            data[r * dims + c] = (float)value, sum += value * value;
        }
        for (size_t c = 0; c < dims; ++c) data[r * dims + c] = (float)(data[r * dims + c] / sqrt(sum));
    }
    return data;
}

static size_t parse_list(const char *text, size_t *values) {
    size_t count = 0;
    while (*text && count < MAX_LIST) {
        char *end;
        values[count++] = strtoull(text, &end, 10);
        text = *end == ',' ? end + 1 : end;
        if (end == text && *end != ',') break;
    }
    return count;
}

static int fail(const char *what, const uform_outcome_t *outcome) {
    fprintf(stderr, "bench_search_batch: %s: %s\n", what, outcome->message);
    return 1;
}

typedef struct side_t {
    double best[MAX_LIST];   /* by batch: wall-clock seconds */
    double cpu[MAX_LIST];    /* by batch: the process's CPU seconds (every thread), best round */
    size_t threads[MAX_LIST]; /* FAISS: the thread count of the best */
} side_t;

/* Sleeps `ms` milliseconds (none when 0). */
static void pause_for(long ms) {
    if (ms <= 0) return;
    struct timespec wait = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&wait, &wait) != 0) {
    }
}

int main(int argc, char **argv) {
    size_t rows = 1000000, dims = 256, threads = 2, top = 10, rounds = 3;
    size_t batches[MAX_LIST] = {32, 1024}, batch_count = 2, faiss_threads[MAX_LIST] = {1, 2}, faiss_count = 2;
    const char *work = "/tmp", *json_path = "bench/results/search_batch.json";
    uform_ram_options_t ram = {0}; /* --class NAME: another CPU class than the detected one */
    long pause_ms = 0;              /* --pause MS: idle before every timed search, either side */
    int interleave = 0;             /* --interleave: rounds alternate the sides (the old order) */
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) rows = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dims") == 0 && i + 1 < argc) dims = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--top") == 0 && i + 1 < argc) top = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc) batch_count = parse_list(argv[++i], batches);
        else if (strcmp(argv[i], "--faiss-threads") == 0 && i + 1 < argc) faiss_count = parse_list(argv[++i], faiss_threads);
        else if (strcmp(argv[i], "--no-faiss") == 0) faiss_count = 0;
        else if (strcmp(argv[i], "--work") == 0 && i + 1 < argc) work = argv[++i];
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
        else if (strcmp(argv[i], "--pause") == 0 && i + 1 < argc) pause_ms = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--interleave") == 0) interleave = 1;
        else if (strcmp(argv[i], "--class") == 0 && i + 1 < argc) {
            const char *name = argv[++i];
            for (int c = 1; c < 64 && !ram.cpu_class; ++c)
                if (uform_cpu_class_name((uform_cpu_class_t)c) && strcmp(uform_cpu_class_name((uform_cpu_class_t)c), name) == 0)
                    ram.cpu_class = (uform_cpu_class_t)c;
            if (!ram.cpu_class) {
                fprintf(stderr, "bench_search_batch: --class %s is not a CPU class name (intel_haswell, amd_genoa, ...)\n", name);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_search_batch [--rows N] [--dims D] [--batches 32,1024] [--threads T] "
                            "[--faiss-threads 1,2 | --no-faiss] [--rounds R] [--top K] [--work DIR] [--json PATH] [--class NAME] [--pause MS] "
                            "[--interleave]\n");
            return 2;
        }
    }
    if (!rows || !dims || !top || !rounds || !batch_count || top > rows) {
        fprintf(stderr, "bench_search_batch: rows, dims, top, rounds and batches must be positive, top ≤ rows\n");
        return 2;
    }
    size_t most = 0, all = 0;
    for (size_t b = 0; b < batch_count; ++b) most = batches[b] > most ? batches[b] : most, all += batches[b];
    float *data = unit_rows(rows, dims), *queries = unit_rows(most, dims);
    uint64_t *our_ids = malloc(all * top * sizeof *our_ids); /* every batch's answers, batch after batch */
    int64_t *faiss_ids = malloc(most * top * sizeof *faiss_ids);
    float *faiss_scores = malloc(most * top * sizeof *faiss_scores);
    if (!data || !queries || !our_ids || !faiss_ids || !faiss_scores) {
        fprintf(stderr, "bench_search_batch: out of memory for %zu × %zu rows\n", rows, dims);
        return 1;
    }

    /* The index, through the vectors' entry, written and mapped as `uform index --vectors` does. */
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_search_batch.index", work);
    uform_outcome_t outcome = {0};
    uform_index_builder_t builder = NULL;
    if (uform_index_builder_create_vectors(dims, UFORM_SCALAR_F32, NULL, &builder, &outcome) != UFORM_OK ||
        uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, data, UFORM_SCALAR_F32, rows, dims, 0, NULL, 0,
                                        &outcome) != UFORM_OK ||
        uform_index_builder_write(builder, path, NULL, 0, &outcome) != UFORM_OK)
        return fail("building the index", &outcome);
    uform_index_builder_free(builder);
    uform_index_t index = NULL;
    uform_executor_t executor = NULL;
    uform_arena_t arena = NULL;
    if (uform_index_open(path, NULL, &index, &outcome) != UFORM_OK) return fail(path, &outcome);
    if (uform_executor_for_ram(&ram, threads, 0, &executor, &outcome) != UFORM_OK ||
        uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK)
        return fail("making the executor", &outcome);
    const char *class_name = uform_cpu_class_name(uform_executor_cpu_class(executor));

    side_t ours, theirs;
    for (size_t b = 0; b < MAX_LIST; ++b)
        ours.best[b] = theirs.best[b] = ours.cpu[b] = theirs.cpu[b] = INFINITY, theirs.threads[b] = 0;
    size_t same[MAX_LIST] = {0};
#ifdef BENCH_WITH_FAISS
    void *faiss = NULL;
    char error[512] = "";
    int blas_threads_set = 1;
#endif
    /* Phase by phase: ours alone (every batch), then FAISS alone; --interleave: one phase of both. */
    for (int phase = 0; phase < 2; ++phase) {
        int run_ours = phase == 0, run_faiss = interleave || phase == 1;
        if (interleave && phase == 1) break;
#ifdef BENCH_WITH_FAISS
        if (run_faiss && faiss_count && !faiss) {
            if (!interleave) { /* our side is done: its mapping and threads go before FAISS's rows come */
                uform_arena_free(arena), arena = NULL;
                uform_executor_free(executor), executor = NULL;
                uform_index_free(index), index = NULL;
            }
            if (bench_faiss_create(data, rows, dims, &faiss, error, sizeof error) != 0) {
                fprintf(stderr, "bench_search_batch: FAISS: %s\n", error);
                return 1;
            }
            blas_threads_set = bench_faiss_threads(1);
            free(data), data = NULL;
        }
#else
        run_faiss = 0;
#endif
        if (!run_ours && (!run_faiss || !faiss_count)) break;
        for (size_t b = 0, answered = 0; b < batch_count; answered += batches[b], ++b) {
            uint64_t *ids = our_ids + answered * top;
            for (size_t round = 0; round <= rounds; ++round) { /* round 0 warms up (faults the mapping in) */
                if (run_ours) {
                    uform_index_search_t search = {0};
                    search.index = index, search.executor = executor, search.arena = arena;
                    search.queries = queries, search.queries_count = batches[b], search.queries_columns = dims;
                    search.top = top;
                    pause_for(pause_ms);
                    double start = bench_seconds(), start_cpu = bench_cpu_seconds();
                    if (uform_index_search(&search) != UFORM_OK) return fail("uform_index_search", &search.outcome);
                    double seconds = bench_seconds() - start, cpu = bench_cpu_seconds() - start_cpu;
                    if (round && seconds < ours.best[b]) ours.best[b] = seconds;
                    if (round && cpu < ours.cpu[b]) ours.cpu[b] = cpu;
                    for (size_t i = 0; i < batches[b] * top; ++i) ids[i] = search.hits[i].item;
                }
#ifdef BENCH_WITH_FAISS
                for (size_t t = 0; run_faiss && t < faiss_count; ++t) {
                    bench_faiss_threads((int)faiss_threads[t]);
                    pause_for(pause_ms);
                    double start = bench_seconds(), start_cpu = bench_cpu_seconds();
                    if (bench_faiss_search(faiss, queries, batches[b], top, faiss_scores, faiss_ids, error, sizeof error) != 0) {
                        fprintf(stderr, "bench_search_batch: FAISS search: %s\n", error);
                        return 1;
                    }
                    double seconds = bench_seconds() - start, cpu = bench_cpu_seconds() - start_cpu;
                    if (round && seconds < theirs.best[b]) theirs.best[b] = seconds, theirs.threads[b] = faiss_threads[t];
                    if (round && cpu < theirs.cpu[b]) theirs.cpu[b] = cpu;
                }
                if (run_faiss && faiss_count) {
                    same[b] = 0;
                    for (size_t q = 0; q < batches[b]; ++q) {
                        int equal = 1;
                        for (size_t k = 0; k < top; ++k) equal &= ids[q * top + k] == (uint64_t)faiss_ids[q * top + k];
                        same[b] += (size_t)equal;
                    }
                }
#endif
            }
        }
    }
    free(data);

    printf("%zu x %zu F32, top %zu, uform on %zu threads (%s), best of %zu rounds after a warm-up, %s\n", rows, dims, top,
           threads, class_name, rounds, interleave ? "sides alternating" : "one side after the other");
    printf("queries |  uform ms  GFLOP/s |  FAISS ms (threads) | FAISS / uform | CPU s: uform  FAISS  FAISS / uform | "
           "queries with the same top-%zu ids\n", top);
    FILE *json = fopen(json_path, "w");
    if (json) fprintf(json, "{\"rows\": %zu, \"dims\": %zu, \"top\": %zu, \"threads\": %zu, \"rounds\": %zu, \"interleave\": %d, \"results\": [", rows, dims,
                      top, threads, rounds, interleave);
    for (size_t b = 0; b < batch_count; ++b) {
        double flop = 2.0 * (double)rows * (double)dims * (double)batches[b];
        double ratio = theirs.best[b] / ours.best[b];
        printf("%7zu | %9.1f %8.1f | %9.1f (%zu) %7s | %13.2f | %12.3f %6.3f %13.2f | %zu of %zu\n", batches[b],
               ours.best[b] * 1e3, flop / ours.best[b] * 1e-9, theirs.best[b] * 1e3, theirs.threads[b], "", ratio, ours.cpu[b],
               theirs.cpu[b], theirs.cpu[b] / ours.cpu[b], same[b], batches[b]);
        if (json)
            fprintf(json, "%s{\"queries\": %zu, \"uform_seconds\": %.6f, \"faiss_seconds\": %.6f, \"faiss_threads\": %zu, "
                          "\"ratio\": %.4f, \"uform_cpu_seconds\": %.6f, \"faiss_cpu_seconds\": %.6f, \"same_ids\": %zu}",
                    b ? ", " : "", batches[b], ours.best[b], isinf(theirs.best[b]) ? -1.0 : theirs.best[b], theirs.threads[b],
                    isinf(ratio) || isnan(ratio) ? -1.0 : ratio, ours.cpu[b], isinf(theirs.cpu[b]) ? -1.0 : theirs.cpu[b], same[b]);
    }
    if (json) fprintf(json, "]}\n"), fclose(json);
#ifdef BENCH_WITH_FAISS
    if (!blas_threads_set) printf("note: the BLAS is not OpenBLAS: FAISS's BLAS threads were left as they were\n");
    bench_faiss_free(faiss);
#else
    printf("FAISS was not found at configure time: uform only\n");
#endif
    uform_arena_free(arena);
    uform_executor_free(executor);
    uform_index_free(index);
    remove(path);
    free(queries), free(our_ids), free(faiss_ids), free(faiss_scores);
    return 0;
}
