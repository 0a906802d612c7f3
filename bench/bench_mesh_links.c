/*
 * bench_mesh --links: the mesh on rate-limited links (bench/README.md, "The mesh on shaped links").
 * 2–4 members, each in a network namespace of its own whose veth link to a bridge (in a hub
 * namespace) is shaped with tc: `tbf` at the link rate (a host's NIC into a non-blocking switch) and,
 * where the kernel has it, `netem` delay. Members are forked children that enter their namespace and
 * meet in a scratch folder; everything is torn down at the end (and on a signal).
 *
 *   1. the all-reduce of 4 KiB and of 1 to 64 MiB on every link rate and member count, the slowest
 *      member's median: a fit of t = α + w / β to the large ones against the ring's wire bytes
 *      w = 2 (K − 1) / K · bytes gives β (against the tbf rate), and the 4 KiB call, whose wire time is
 *      negligible, gives α (against the ring's 2 (K − 1) hops): the measured link model;
 *   2. training steps of tiny and small on 2 members at the slowest rate, with the gradients'
 *      all-reduce beside the backward and after it, each meshed step followed by the same share
 *      stepped without a mesh (so both see the same load): the step time, how long it waited for the
 *      all-reduce, and the efficiency (alone / meshed);
 *   3. from the measured model, the scaling efficiency of small and base on 2–64 hosts at 10, 25 and
 *      100 Gbit/s, 32 pairs a host (weak scaling), with and without overlap (see scaling()).
 *
 *   bench_mesh --links [--rates 1,2.5,10,25] [--members 2,3,4] [--repeats N] [--steps N]
 *                      [--models tiny,small] [--delay-us N] [--no-realtime] [--json bench/results/mesh_links.json]
 *
 * Needs root, iproute2's ip and tc, and the kernel's veth, bridge and tbf; without them it says so
 * and stops (a benchmark never fails the build).
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_mesh_batch.h"
#include "bench_mesh_links.h"
#include "demo_media.h"
#include "mesh/mesh.h"
#include "train/trainer.h"

#define MOST_MEMBERS 4
#define SIZES 5
#define MOST_RATES 8

/* 4 KiB measures the latency (its wire time is a few µs); the others the bandwidth. */
static const double sizes_mib[SIZES] = {1.0 / 256, 1, 4, 16, 64};
static char folder[256];
static char hub[64], names[MOST_MEMBERS][64];
static int made_members = 0;

static int run(const char *command) {
    int status = system(command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- the namespaces ---- */

static void teardown(void) {
    char command[1024];
    for (int i = 0; i < made_members; ++i) {
        snprintf(command, sizeof command, "ip netns del %s 2>/dev/null", names[i]);
        run(command);
    }
    if (hub[0]) {
        snprintf(command, sizeof command, "ip netns del %s 2>/dev/null", hub);
        run(command);
    }
    made_members = 0, hub[0] = 0;
}

static void on_signal(int number) {
    teardown();
    signal(number, SIG_DFL);
    raise(number);
}

/* The hub with its bridge, and `count` members each with a veth into it; 0 on success. */
static int make_namespaces(int count) {
    char command[2048];
    long pid = (long)getpid();
    snprintf(hub, sizeof hub, "ub-hub-%ld", pid);
    snprintf(command, sizeof command,
             "ip netns add %s && ip -n %s link add name hubbr type bridge && ip -n %s link set hubbr up && ip -n %s link set lo up",
             hub, hub, hub, hub);
    if (run(command) != 0) return -1;
    for (int i = 0; i < count; ++i) {
        snprintf(names[i], sizeof names[i], "ub-m%d-%ld", i, pid);
        made_members = i + 1;
        snprintf(command, sizeof command,
                 "ip netns add %1$s && ip link add m%2$d netns %1$s type veth peer name h%2$d netns %3$s && "
                 "ip -n %1$s addr add 10.88.0.%4$d/24 dev m%2$d && ip -n %1$s link set m%2$d up && "
                 "ip -n %1$s link set lo up && ip -n %3$s link set h%2$d master hubbr && ip -n %3$s link set h%2$d up",
                 names[i], i, hub, i + 1);
        if (run(command) != 0) return -1;
    }
    return 0;
}

static int netem_works = -1;

/* Every member's link: tbf at `gbit`, and netem `delay_us` before it where the kernel has netem. */
static int shape(int count, double gbit, double delay_us) {
    char command[1024];
    double bytes_per_second = gbit * 1e9 / 8;
    long burst = (long)fmax(131072.0, bytes_per_second * 0.002); /* two ms of the rate */
    for (int i = 0; i < count; ++i) {
        snprintf(command, sizeof command, "ip netns exec %s tc qdisc del dev m%d root 2>/dev/null", names[i], i);
        run(command);
        if (delay_us > 0 && netem_works != 0) {
            snprintf(command, sizeof command,
                     "ip netns exec %1$s tc qdisc add dev m%2$d root handle 1: netem delay %3$.0fus limit 100000 "
                     "2>/dev/null && ip netns exec %1$s tc qdisc add dev m%2$d parent 1: handle 2: tbf rate %4$.0fmbit "
                     "burst %5$ld latency 50ms",
                     names[i], i, delay_us, gbit * 1000, burst);
            netem_works = run(command) == 0;
            if (netem_works) continue;
            snprintf(command, sizeof command, "ip netns exec %s tc qdisc del dev m%d root 2>/dev/null", names[i], i);
            run(command);
        }
        snprintf(command, sizeof command, "ip netns exec %s tc qdisc add dev m%d root tbf rate %.0fmbit burst %ld latency 50ms",
                 names[i], i, gbit * 1000, burst);
        if (run(command) != 0) return -1;
    }
    return 0;
}

static int enter(int member) {
    char path[128];
    snprintf(path, sizeof path, "/var/run/netns/%s", names[member]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
        fprintf(stderr, "bench_mesh --links: member %d cannot enter %s\n", member, path);
        return -1;
    }
    close(fd);
    return 0;
}

/* ---- members ---- */

typedef struct job_t {
    int members;
    int collective;           /* 1: all-reduce sizes; 0: training steps */
    size_t repeats, steps;
    const char *model;
    uform_mesh_overlap_t overlap;
    char name[64];
} job_t;

typedef struct member_result_t {
    int ok;
    double reduce[SIZES];                 /* median seconds per size */
    double step, alone, wait, exchange, backward; /* medians, seconds */
    size_t total;
} member_result_t;

static uform_mesh_t join(const job_t *job, int index, uform_executor_t executor) {
    char address[32];
    snprintf(address, sizeof address, "10.88.0.%d", index + 1);
    uform_mesh_options_t options = {0};
    options.host_domain_index = (size_t)index, options.host_domain_count = (size_t)job->members;
    options.directory = folder, options.job = job->name, options.timeout_seconds = 600, options.address = address;
    options.overlap = job->overlap;
    uform_outcome_t outcome = {0};
    uform_mesh_t mesh = NULL;
    if (uform_mesh_bootstrap(executor, &options, &mesh, &outcome) != UFORM_OK)
        fprintf(stderr, "bench_mesh --links: bootstrap: %s\n", outcome.message);
    return mesh;
}

static void time_reduces(const job_t *job, uform_mesh_t mesh, member_result_t *result) {
    size_t most = (size_t)(sizes_mib[SIZES - 1] * 1048576 / sizeof(float));
    float *values = calloc(most, sizeof(float)), token = 0;
    uform_outcome_t outcome = {0};
    if (!values) return;
    for (int s = 0; s < SIZES; ++s) {
        size_t count = (size_t)(sizes_mib[s] * 1048576 / sizeof(float));
        double times[32];
        size_t repeats = s == 0 ? 31 : job->repeats < 32 ? job->repeats : 32; /* latency is noisy: more */
        for (size_t r = 0; r <= repeats; ++r) {
            /* A one-float all-reduce first: no timed call pays for a late member. */
            if (uform__mesh_allreduce_f32(mesh, &token, 1, "a barrier", &outcome, "bench") != UFORM_OK) goto done;
            double start = bench_seconds();
            if (uform__mesh_allreduce_f32(mesh, values, count, "a benchmark", &outcome, "bench") != UFORM_OK) goto done;
            if (r) times[r - 1] = bench_seconds() - start;
        }
        result->reduce[s] = bench_median(times, repeats);
    }
    result->ok = 1;
done:
    free(values);
}

static int realtime = 1; /* the all-reduce's members run SCHED_FIFO when they may */

static int member(size_t member_index, void *context, void *answer) {
    const job_t *job = context;
    int index = (int)member_index;
    member_result_t result;
    memset(&result, 0, sizeof result);
    made_members = 0, hub[0] = 0; /* the namespaces are the parent's to remove */
    if (enter(index) != 0) return 1;
    /* On a machine that other jobs keep busy, a member woken by a packet waits for a time slice,
     * milliseconds that say nothing about the link. The collectives' members run SCHED_FIFO (their
     * threads inherit it), which the kernel still caps at 95% of a second: the links' latency, not
     * the neighbours'. Training steps run as usual (they compute, and would starve the others). */
    if (job->collective && realtime) {
        struct sched_param priority = {.sched_priority = 10};
        if (sched_setscheduler(0, SCHED_FIFO, &priority) != 0) realtime = 0;
    }
    uform_executor_t executor = NULL;
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, 1, 0, &executor, &outcome) != UFORM_OK ||
        uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK)
        return 1;
    uform_mesh_t mesh = join(job, index, executor);
    if (mesh && job->collective) time_reduces(job, mesh, &result);
    if (mesh && !job->collective) {
        int images = strcmp(job->model, "tiny") == 0;
        size_t pairs = images ? BENCH_MESH_PAIRS : BENCH_MESH_SMALL_PAIRS;
        bench_batch_t batch;
        bench_batch_make(&batch, images, pairs * (size_t)index / (size_t)job->members,
                         pairs * (size_t)(index + 1) / (size_t)job->members);
        /* The meshed and the lone trainer step in turn, one step each, so that both see the same
         * load from whatever else runs on the machine; the first step of each is a warm-up. */
        uform_trainer_t trainer = bench_trainer(executor, job->model, mesh);
        uform_trainer_t single = trainer ? bench_trainer(executor, job->model, NULL) : NULL;
        double meshed[32], alone[32], waited[32], exchange[32], backward[32];
        size_t steps = job->steps < 31 ? job->steps : 31;
        int failed = !trainer || !single;
        for (size_t s = 0; s <= steps && !failed; ++s) {
            uform_trainer_stats_t stats, ignored;
            double a = bench_batch_step(trainer, arena, &batch, &stats);
            double b = a < 0 ? -1 : bench_batch_step(single, arena, &batch, &ignored);
            failed = a < 0 || b < 0;
            if (failed || !s) continue;
            meshed[s - 1] = a, alone[s - 1] = b, waited[s - 1] = stats.exchange_wait_seconds;
            exchange[s - 1] = stats.exchange_seconds, backward[s - 1] = stats.backward_seconds;
        }
        if (trainer) result.total = trainer->total;
        if (!failed) {
            result.step = bench_median(meshed, steps), result.alone = bench_median(alone, steps);
            result.wait = bench_median(waited, steps), result.exchange = bench_median(exchange, steps);
            result.backward = bench_median(backward, steps), result.ok = 1;
        }
        uform_trainer_free(single);
        uform_trainer_free(trainer);
        free(batch.data);
    }
    memcpy(answer, &result, sizeof result);
    uform_mesh_free(mesh);
    uform_arena_free(arena);
    uform_executor_free(executor);
    return result.ok ? 0 : 1;
}

/* Runs a job's members; the slowest member's figures into *slowest; 0 when all succeeded. */
static int run_job(const job_t *job, member_result_t *slowest) {
    member_result_t results[MOST_MEMBERS];
    int failed = bench_members_run(folder, (size_t)job->members, sizeof results[0], member, (void *)job, results, 1200);
    memset(slowest, 0, sizeof *slowest);
    for (int i = 0; i < job->members && !failed; ++i) {
        const member_result_t *result = &results[i];
        for (int s = 0; s < SIZES; ++s) slowest->reduce[s] = fmax(slowest->reduce[s], result->reduce[s]);
        slowest->step = fmax(slowest->step, result->step), slowest->alone = fmax(slowest->alone, result->alone);
        slowest->wait = fmax(slowest->wait, result->wait), slowest->exchange = fmax(slowest->exchange, result->exchange);
        slowest->backward = fmax(slowest->backward, result->backward), slowest->total = result->total;
    }
    return failed;
}

/* β: least squares t = c + w / β over the sizes from 1 MiB (w the ring's wire bytes); α: the 4 KiB
 * call's time less its wire time. */
static void fit(const double *seconds, int members, double *alpha, double *beta) {
    double k = members, sx = 0, sy = 0, sxx = 0, sxy = 0, n = SIZES - 1;
    for (int s = 1; s < SIZES; ++s) {
        double w = 2 * (k - 1) / k * sizes_mib[s] * 1048576, t = seconds[s];
        sx += w, sy += t, sxx += w * w, sxy += w * t;
    }
    double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    *beta = 1 / slope;
    *alpha = fmax(0, seconds[0] - 2 * (k - 1) / k * sizes_mib[0] * 1048576 * slope);
}

/* ---- the scaling model ---- */

typedef struct model_shape_t {
    const char *name;
    double hidden, mlp, depth, embedding, tokens_per_pair, image_tokens;
    double block_floats, rest_floats; /* parameters: one trunk block, and everything else */
} model_shape_t;

/*
 * One host's step: 32 pairs of a 224×224 image (197 tokens) and a 64-byte caption (66 tokens),
 * 3 × the forward's FLOPs (matrix products 2·(4d² + 2dF) a token and block, attention 4·n·d with n
 * the sequence's tokens), at `host_flops`; the backward is two thirds of it and finishes block
 * L − 1 first. The gradients go in the trainer's buckets: a block each (last first), then the rest;
 * each bucket's ring all-reduce takes 2 (K − 1) / K · bytes / β + 2 (K − 1) · α_hop, one after the
 * other, none before its block's backward is done. Beside it the step's other exchanges (shapes,
 * embeddings, d e, statuses: four collectives of a few MiB at most) are counted whole.
 */
static double step_efficiency(const model_shape_t *model, double hosts, double beta, double hop, double host_flops,
                              int overlap, double *exposed_out) {
    double d = model->hidden, F = model->mlp, L = model->depth, k = hosts;
    double tokens = 32 * model->tokens_per_pair;
    double attention = 32 * 4 * (model->image_tokens * model->image_tokens + 66.0 * 66.0) * d;
    double forward = L * (tokens * 2 * (4 * d * d + 2 * d * F) + attention);
    double compute = 3 * forward / host_flops, backward = compute * 2 / 3;
    double ring = 2 * (k - 1) / k, latency = 2 * (k - 1) * hop;
    double clock = 0, finished = 0;
    for (double block = L - 1; block >= 0; block -= 1) {
        double ready = overlap ? backward * (L - block) / L : backward;
        double start = fmax(ready, finished);
        finished = start + ring * model->block_floats * 4 / beta + latency;
    }
    clock = fmax(backward, finished);
    finished = clock + ring * model->rest_floats * 4 / beta + latency;
    double other = 4 * latency + ring * (32 * k * 2 * model->embedding * 4 * 2) / beta;
    double exposed = finished - backward + other;
    if (exposed_out) *exposed_out = exposed;
    return compute / (compute + exposed);
}

static void model_shape(const char *name, model_shape_t *shape) {
    uform_trainer_config_t config = {0};
    snprintf(config.size, sizeof config.size, "%s", name);
    uform_trainer_t trainer = NULL;
    memset(shape, 0, sizeof *shape);
    if (uform_trainer_init_ram(NULL, &config, &trainer, NULL) != UFORM_OK) return;
    const uform__model_config_t *c = &trainer->config;
    shape->name = name, shape->hidden = (double)c->hidden, shape->mlp = (double)c->mlp, shape->depth = (double)c->depth;
    shape->embedding = (double)c->embedding;
    double side = (double)(c->image_size / c->image_patch);
    shape->image_tokens = side * side + 1, shape->tokens_per_pair = shape->image_tokens + 66;
    double d = shape->hidden, F = shape->mlp;
    shape->block_floats = 4 * d * d + 2 * d * F + 3 * d + d + F + d + 4 * d;
    shape->rest_floats = (double)trainer->total - shape->depth * shape->block_floats;
    uform_trainer_free(trainer);
}

/* ---- main ---- */

static int parse_list(const char *text, double *values, int most) {
    int count = 0;
    char copy[256];
    snprintf(copy, sizeof copy, "%s", text);
    for (char *item = strtok(copy, ","); item && count < most; item = strtok(NULL, ",")) values[count++] = atof(item);
    return count;
}

int bench_mesh_links(int argc, char **argv) {
    double rates[MOST_RATES] = {1, 2.5, 10, 25}, members_list[MOST_MEMBERS] = {2, 3, 4}, delay_us = 100;
    int rate_count = 4, member_count = 3;
    const char *how = "SCHED_FIFO";
    size_t repeats = 5, steps = 3;
    const char *models = "tiny,small", *json_path = "bench/results/mesh_links.json";
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--links")) continue;
        if (!strcmp(argv[i], "--rates") && i + 1 < argc) rate_count = parse_list(argv[++i], rates, MOST_RATES);
        else if (!strcmp(argv[i], "--members") && i + 1 < argc) member_count = parse_list(argv[++i], members_list, 3);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--models") && i + 1 < argc) models = argv[++i];
        else if (!strcmp(argv[i], "--delay-us") && i + 1 < argc) delay_us = atof(argv[++i]);
        else if (!strcmp(argv[i], "--no-realtime")) realtime = 0, how = "normal scheduling";
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else {
            fprintf(stderr, "usage: bench_mesh --links [--rates 1,2.5,10,25] [--members 2,3,4] [--repeats N] "
                            "[--steps N] [--models tiny,small] [--delay-us N] [--no-realtime] [--json PATH]\n");
            return 2;
        }
    }
    if (geteuid() != 0 || run("ip netns list > /dev/null 2>&1") != 0 || run("tc qdisc help > /dev/null 2>&1") > 1) {
        printf("bench_mesh --links: needs root and iproute2's ip and tc (scripts/install-deps.sh installs iproute2): "
               "not run\n");
        return 0;
    }
    snprintf(folder, sizeof folder, "%s/uform-bench-links-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(folder)) return 1;
    atexit(teardown);
    signal(SIGINT, on_signal), signal(SIGTERM, on_signal), signal(SIGHUP, on_signal), signal(SIGPIPE, on_signal);
    int most_members = 0;
    for (int m = 0; m < member_count; ++m) most_members = (int)fmax(most_members, members_list[m]);
    if (make_namespaces(most_members) != 0) {
        printf("bench_mesh --links: this kernel refuses network namespaces joined by veth to a bridge: not run\n");
        teardown();
        return 0;
    }
    cJSON *root = cJSON_CreateObject(), *reduces = cJSON_AddArrayToObject(root, "allreduce");
    /* 1. The all-reduce on every rate and member count. */
    double fitted_alpha[MOST_RATES][MOST_MEMBERS] = {{0}}, fitted_beta[MOST_RATES][MOST_MEMBERS] = {{0}};
    printf("bench_mesh --links: %d members' namespaces on a bridge, tbf per member link%s; the all-reduce's members "
           "run with %s\n\n",
           most_members, delay_us > 0 ? ", netem delay where the kernel has it" : "", how);
    printf("%-8s %-7s", "rate", "members");
    printf(" %11s", "4 KiB");
    for (int s = 1; s < SIZES; ++s) printf(" %9.0f MiB", sizes_mib[s]);
    printf(" %11s %11s %9s\n", "α (ms)", "β GB/s", "β / rate");
    for (int r = 0; r < rate_count; ++r) {
        for (int m = 0; m < member_count; ++m) {
            int k = (int)members_list[m];
            if (shape(k, rates[r], delay_us) != 0) {
                printf("bench_mesh --links: tc refused a tbf at %g Gbit/s\n", rates[r]);
                continue;
            }
            job_t job = {.members = k, .collective = 1, .repeats = repeats};
            snprintf(job.name, sizeof job.name, "reduce-%d-%d", r, k);
            member_result_t result;
            if (run_job(&job, &result)) {
                printf("%-8g %-7d (failed)\n", rates[r], k);
                continue;
            }
            fit(result.reduce, k, &fitted_alpha[r][m], &fitted_beta[r][m]);
            printf("%-8g %-7d", rates[r], k);
            for (int s = 0; s < SIZES; ++s) printf(" %10.2f ms", result.reduce[s] * 1e3);
            (void)0;
            printf(" %11.3f %11.3f %8.0f%%\n", fitted_alpha[r][m] * 1e3, fitted_beta[r][m] * 1e-9,
                   100 * fitted_beta[r][m] / (rates[r] * 1e9 / 8));
            cJSON *row = cJSON_CreateObject();
            cJSON_AddNumberToObject(row, "gbit", rates[r]);
            cJSON_AddNumberToObject(row, "members", k);
            cJSON *times = cJSON_AddArrayToObject(row, "seconds");
            for (int s = 0; s < SIZES; ++s) cJSON_AddItemToArray(times, cJSON_CreateNumber(result.reduce[s]));
            cJSON_AddNumberToObject(row, "alpha_seconds", fitted_alpha[r][m]);
            cJSON_AddNumberToObject(row, "beta_bytes_per_second", fitted_beta[r][m]);
            cJSON_AddItemToArray(reduces, row);
        }
    }
    printf("(netem %s on this kernel)\n", netem_works == 1 ? "applied" : netem_works == 0 ? "unavailable" : "not asked for");
    cJSON_AddBoolToObject(root, "netem", netem_works == 1);
    /* The link model: β as a share of the rate — the mean over the rates the link limited, i.e. where
     * β reached 80% of the rate (above that, the VM's CPU limits veth's copies, ~6 Gbit/s here, and β
     * says nothing about the link) — and α per ring hop. */
    double share = 0, hop = 0;
    int shares = 0, hops = 0;
    for (int r = 0; r < rate_count; ++r)
        for (int m = 0; m < member_count; ++m) {
            if (fitted_beta[r][m] <= 0) continue;
            double fraction = fitted_beta[r][m] / (rates[r] * 1e9 / 8);
            if (fraction >= 0.8) share += fraction, shares += 1;
            if (fitted_alpha[r][m] > 0) hop += fitted_alpha[r][m] / (2 * (members_list[m] - 1)), hops += 1;
        }
    share = shares ? share / shares : 0.9, hop = hops ? hop / hops : 50e-6;
    printf("\nmeasured link model: β = %.0f%% of the tbf rate, α = %.1f µs a ring hop (2 (K − 1) hops a call)\n",
           100 * share, hop * 1e6);
    cJSON_AddNumberToObject(root, "beta_share_of_rate", share);
    cJSON_AddNumberToObject(root, "alpha_seconds_per_hop", hop);
    /* 2. Steps with and without overlap on the slowest link. */
    double slowest = rates[0];
    for (int r = 1; r < rate_count; ++r) slowest = fmin(slowest, rates[r]);
    shape(2, slowest, delay_us);
    printf("\nsteps on 2 members at %g Gbit/s (1 thread each, BF16; tiny: 24 image pairs, small: 12 text pairs):\n",
           slowest);
    printf("%-6s %-9s %10s %10s %12s %13s %11s\n", "model", "overlap", "step ms", "alone ms", "waited ms",
           "all-reduce ms", "efficiency");
    cJSON *steps_json = cJSON_AddArrayToObject(root, "steps");
    char list[128];
    snprintf(list, sizeof list, "%s", models);
    char *save = NULL;
    for (char *model = strtok_r(list, ",", &save); model; model = strtok_r(NULL, ",", &save)) {
        for (int overlap = 1; overlap >= 0; --overlap) {
            job_t job = {.members = 2, .collective = 0, .steps = steps, .model = model,
                         .overlap = overlap ? UFORM_MESH_OVERLAP_BACKWARD : UFORM_MESH_OVERLAP_NONE};
            snprintf(job.name, sizeof job.name, "step-%s-%d", model, overlap);
            member_result_t result;
            if (run_job(&job, &result)) {
                printf("%-6s %-9s (failed)\n", model, overlap ? "backward" : "none");
                continue;
            }
            printf("%-6s %-9s %10.1f %10.1f %12.1f %13.1f %10.0f%%\n", model, overlap ? "backward" : "none",
                   result.step * 1e3, result.alone * 1e3, result.wait * 1e3, result.exchange * 1e3,
                   100 * result.alone / result.step);
            cJSON *row = cJSON_CreateObject();
            cJSON_AddStringToObject(row, "model", model);
            cJSON_AddBoolToObject(row, "overlap", overlap);
            cJSON_AddNumberToObject(row, "step_seconds", result.step);
            cJSON_AddNumberToObject(row, "alone_seconds", result.alone);
            cJSON_AddNumberToObject(row, "waited_seconds", result.wait);
            cJSON_AddNumberToObject(row, "allreduce_seconds", result.exchange);
            cJSON_AddItemToArray(steps_json, row);
        }
    }
    teardown();
    rmdir(folder);
    /* 3. The scaling table from the measured model. */
    bench_mesh_scaling(share, hop, root);
    char *json = cJSON_Print(root);
    FILE *file = fopen(json_path, "w");
    if (file) fputs(json, file), fclose(file);
    free(json);
    cJSON_Delete(root);
    return 0;
}

void bench_mesh_scaling(double share, double hop, cJSON *root) {
    /* A host: 32 cores at the per-core BF16 rate bench_train measured for small (bench/README.md,
     * "Training": 956 GFLOP a step of 32 image pairs in 2.72 s on 2 cores, 176 GFLOP/s a core). A
     * faster host leaves less compute to hide the all-reduce behind, so this is the demanding side. */
    const double host_flops = 32 * 176e9;
    static const char *const names[2] = {"small", "base"};
    static const double gbits[3] = {10, 25, 100};
    static const double hosts[7] = {2, 4, 8, 16, 32, 64, 0};
    cJSON *table = cJSON_AddArrayToObject(root, "scaling");
    printf("\nscaling efficiency from the measured model (β = %.0f%% of the rate, α = %.1f µs a hop; a host: 32 "
           "cores at %.0f GFLOP/s each, 32 image-text pairs a step), with overlap (without):\n",
           100 * share, hop * 1e6, host_flops / 32 * 1e-9);
    printf("| model | Gbit/s |");
    for (int h = 0; hosts[h] > 0; ++h) printf(" %.0f hosts |", hosts[h]);
    printf("\n| --- | --- |");
    for (int h = 0; hosts[h] > 0; ++h) printf(" --- |");
    printf("\n");
    for (int m = 0; m < 2; ++m) {
        model_shape_t model;
        model_shape(names[m], &model);
        if (!model.name) continue;
        for (int g = 0; g < 3; ++g) {
            double beta = share * gbits[g] * 1e9 / 8;
            printf("| %s | %.0f |", names[m], gbits[g]);
            for (int h = 0; hosts[h] > 0; ++h) {
                double with = step_efficiency(&model, hosts[h], beta, hop, host_flops, 1, NULL);
                double without = step_efficiency(&model, hosts[h], beta, hop, host_flops, 0, NULL);
                printf(" %.1f%% (%.1f%%) |", 100 * with, 100 * without);
                cJSON *row = cJSON_CreateObject();
                cJSON_AddStringToObject(row, "model", names[m]);
                cJSON_AddNumberToObject(row, "gbit", gbits[g]);
                cJSON_AddNumberToObject(row, "hosts", hosts[h]);
                cJSON_AddNumberToObject(row, "efficiency", with);
                cJSON_AddNumberToObject(row, "efficiency_without_overlap", without);
                cJSON_AddItemToArray(table, row);
            }
            printf("\n");
        }
    }
}
