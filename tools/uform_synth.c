/*
 * uform synth DIR [--seed N] [--pairs N] [--heldout N] [--modalities image,video,audio] — writes the
 * demo's data: pictures of coloured shapes, clips of moving shapes and spoken captions, with three
 * manifests in the format of `uform train`:
 *
 *   DIR/train.jsonl     --pairs renders per modality of the training captions
 *   DIR/heldout.jsonl   --heldout fresh renders per modality (new noise, jitter, voice, speed) of
 *                       training captions, as many distinct captions as fit
 *   DIR/novel.jsonl     the compositional set: one render per caption of the colour–shape
 *                       combinations no training line shows (every held-out shape has its colour
 *                       with other shapes, and other colours itself), up to --heldout per modality
 *
 * Files go to DIR/{train,heldout,novel}/{image,video,audio}-NNNNN.EXT, alternating PNG and JPEG,
 * MP4 and WebM, WAV and FLAC, so every decoder of the engine is exercised. Each manifest line also
 * names the attributes drawn ("shape", "colour", "place", "size", "motion", "voice", "wpm"), which
 * `uform train` ignores and tests check against the pixels. Items are independent, each drawn from
 * its own random stream, so the threads (pictures and clips) never change a byte: the same seed
 * writes the same files. Speech runs in a child process of its own, forked before any thread
 * starts: espeak-ng keeps global state, draws its breath noise from the C library's rand() and
 * reads heap memory whose history the other threads would otherwise share, and a recording once
 * differed between two runs with the same seed when the machine was loaded (see synth_speech.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "synth.h"

static const char *const split_names[3] = {"train", "heldout", "novel"};

/* ---- which captions each split uses ---- */

/* The colour each shape never has in training: circle orange, square blue, triangle black,
 * cross yellow, star purple (colour 3·shape + 1 mod 8: five distinct colours). */
static int novel_pair(int shape, int colour) { return colour == (3 * shape + 1) % SYNTH_COLOURS; }

/* Every scene of a kind, in a fixed order; `novel` picks the compositional ones or the others. */
static size_t list_scenes(int kind, int novel, synth_scene_t *scenes) {
    size_t count = 0;
    int variants = kind == SYNTH_IMAGE ? SYNTH_PLACES * SYNTH_SIZES : kind == SYNTH_VIDEO ? SYNTH_MOTIONS : SYNTH_PLACES;
    for (int shape = 0; shape < SYNTH_SHAPES; ++shape)
        for (int colour = 0; colour < SYNTH_COLOURS; ++colour) {
            if (novel_pair(shape, colour) != novel) continue;
            for (int v = 0; v < variants; ++v) {
                synth_scene_t scene = {shape, colour, -1, -1, -1};
                if (kind == SYNTH_IMAGE) scene.place = v / SYNTH_SIZES, scene.size = v % SYNTH_SIZES;
                else if (kind == SYNTH_VIDEO) scene.motion = v;
                else scene.place = v;
                scenes[count++] = scene;
            }
        }
    return count;
}

/* ---- the work: items made by a pool of threads ---- */

#define LINE_CAPACITY 512

/* What the speech process reports to the parent, in memory both share. */
typedef struct speech_report_t {
    size_t done;      /* atomic: recordings written */
    int failed;       /* set before the child exits */
    char error[8400]; /* the child's first failure */
} speech_report_t;

typedef struct work_t {
    const char *dir;
    int speech_rate;
    synth_item_t *items;
    char *lines;             /* [count][LINE_CAPACITY] manifest lines, written in item order at the end; shared
                                with the speech process */
    size_t count;
    size_t *shared;          /* indexes of the pictures and clips, taken by any thread */
    size_t shared_count;
    size_t next, done;       /* atomic */
    int failed;              /* atomic */
    pthread_mutex_t lock;
    char error[8400];        /* the first failure */
    speech_report_t *speech; /* shared with the speech process */
} work_t;

static int run_item(work_t *work, size_t i) {
    char error[8400];
    if (synth_item_write(&work->items[i], work->dir, work->speech_rate, work->lines + i * LINE_CAPACITY, LINE_CAPACITY,
                         error, sizeof error) == 0) {
        __atomic_fetch_add(&work->done, 1, __ATOMIC_RELAXED);
        return 0;
    }
    pthread_mutex_lock(&work->lock);
    if (!work->failed) snprintf(work->error, sizeof work->error, "%s", error);
    __atomic_store_n(&work->failed, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&work->lock);
    return -1;
}

/* Takes pictures and clips until none are left or an item failed. */
static void *run_shared(void *argument) {
    work_t *work = argument;
    while (!__atomic_load_n(&work->failed, __ATOMIC_RELAXED)) {
        size_t k = __atomic_fetch_add(&work->next, 1, __ATOMIC_RELAXED);
        if (k >= work->shared_count || run_item(work, work->shared[k])) break;
    }
    return NULL;
}

static void draw_progress(work_t *work, double start) {
    size_t done = __atomic_load_n(&work->done, __ATOMIC_RELAXED) + __atomic_load_n(&work->speech->done, __ATOMIC_RELAXED);
    double rate = (double)done / (cli_now() - start + 1e-9);
    fprintf(stderr, "\rsynth  %zu/%zu files  %.0f files/s  ETA %.0f s   ", done, work->count, rate,
            rate > 0 ? (double)(work->count - done) / rate : 0.0);
}

/* The speech process: every recording in item order, on its one thread; never returns. */
static void run_speech(work_t *work) {
    char error[8400];
    for (size_t i = 0; i < work->count; ++i) {
        if (work->items[i].kind != SYNTH_AUDIO) continue;
        if (synth_item_write(&work->items[i], work->dir, work->speech_rate, work->lines + i * LINE_CAPACITY,
                             LINE_CAPACITY, error, sizeof error)) {
            snprintf(work->speech->error, sizeof work->speech->error, "%s", error);
            work->speech->failed = 1;
            _exit(1);
        }
        __atomic_fetch_add(&work->speech->done, 1, __ATOMIC_RELAXED);
    }
    _exit(0);
}

/* Speech in a child process forked before any thread exists, pictures and clips on `threads` threads
 * of this one; answers when both are done. */
static void run_all(work_t *work, size_t threads, int bar, double start) {
    pid_t speech = 0;
    for (size_t i = 0; i < work->count && speech == 0; ++i)
        if (work->items[i].kind == SYNTH_AUDIO) speech = -1;
    if (speech) {
        fflush(NULL); /* nothing buffered is written twice */
        speech = fork();
        if (speech == 0) run_speech(work);
        if (speech < 0) {
            snprintf(work->error, sizeof work->error, "cannot start the speech process: %s", strerror(errno));
            work->failed = 1;
            return;
        }
    }
    pthread_t helpers[64];
    size_t started = 0;
    for (; started + 1 < threads && started < 64; ++started)
        if (pthread_create(&helpers[started], NULL, run_shared, work) != 0) break;
    double last_draw = 0;
    while (!__atomic_load_n(&work->failed, __ATOMIC_RELAXED)) {
        size_t k = __atomic_fetch_add(&work->next, 1, __ATOMIC_RELAXED);
        if (k >= work->shared_count || run_item(work, work->shared[k])) break;
        if (bar && cli_now() - last_draw > 0.1) draw_progress(work, start), last_draw = cli_now();
    }
    for (size_t t = 0; t < started; ++t) pthread_join(helpers[t], NULL);
    if (speech > 0) {
        /* The recordings go on after the pictures; the bar keeps moving while they do. */
        int status = 0;
        pid_t waited;
        while ((waited = waitpid(speech, &status, bar ? WNOHANG : 0)) == 0 || (waited < 0 && errno == EINTR)) {
            if (waited == 0) draw_progress(work, start), usleep(100000);
        }
        int clean = waited == speech && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!clean && !work->failed) {
            if (work->speech->failed) snprintf(work->error, sizeof work->error, "%s", work->speech->error);
            else if (waited == speech && WIFSIGNALED(status))
                snprintf(work->error, sizeof work->error, "the speech process died of signal %d", WTERMSIG(status));
            else snprintf(work->error, sizeof work->error, "the speech process failed (status %d)", status);
            work->failed = 1;
        }
        if (!clean) work->failed = 1;
    }
    if (bar) draw_progress(work, start), fputc('\n', stderr);
}

/* ---- the command ---- */

static int make_folder(const char *path) { return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1; }

/* "N" (every modality) or "I,V,A". */
static int parse_pairs(const char *text, size_t pairs[3]) {
    char copy[96];
    snprintf(copy, sizeof copy, "%s", text);
    char *parts[3] = {copy, strchr(copy, ','), NULL};
    if (!parts[1]) return cli_parse_size(copy, &pairs[0]) ? -1 : (pairs[1] = pairs[2] = pairs[0], 0);
    *parts[1]++ = 0;
    if (!(parts[2] = strchr(parts[1], ','))) return -1;
    *parts[2]++ = 0;
    for (int k = 0; k < 3; ++k)
        if (cli_parse_size(parts[k], &pairs[k])) return -1;
    return 0;
}

/* Writes DIR/SPLIT.jsonl from the items' lines, atomically. */
static int write_manifest(const work_t *work, const char *dir, unsigned split, char *error, size_t capacity) {
    char path[4200], temporary[4300];
    snprintf(path, sizeof path, "%s/%s.jsonl", dir, split_names[split]);
    snprintf(temporary, sizeof temporary, "%s.part", path);
    FILE *file = fopen(temporary, "w");
    int ok = file != NULL;
    for (size_t i = 0; ok && i < work->count; ++i)
        if (work->items[i].split == split) ok = fputs(work->lines + i * LINE_CAPACITY, file) >= 0;
    if (file && fclose(file) != 0) ok = 0;
    if (ok && rename(temporary, path) != 0) ok = 0;
    if (!ok) {
        snprintf(error, capacity, "cannot write '%s': %s", path, strerror(errno));
        unlink(temporary);
    }
    return ok ? 0 : -1;
}

typedef struct synth_options_t {
    const char *pairs, *modalities;
    size_t heldout, threads, shards;
    uint64_t seed;
    int quiet;
} synth_options_t;

static void defaults(void *raw) {
    synth_options_t *options = raw;
    options->heldout = 300;
}

static const cli_flag_t flags[] = {
    CLI_FLAG("--seed", CLI_U64, synth_options_t, seed, "N", "random seed of every render (default 0; the same seed writes the same bytes)"),
    CLI_FLAG("--pairs", CLI_TEXT, synth_options_t, pairs, "N",
             "training pairs per modality, or I,V,A for pictures, clips and speech apart\n(default 2000)"),
    CLI_FLAG("--heldout", CLI_SIZE, synth_options_t, heldout, "N", "held-out pairs per modality, and the most compositional ones (default 300)"),
    CLI_FLAG("--modalities", CLI_TEXT, synth_options_t, modalities, "LIST", "which of image, video, audio to write (default all three)"),
    CLI_FLAG("--threads", CLI_SIZE, synth_options_t, threads, "N", "threads drawing and encoding (default 0: one per core)"),
    CLI_FLAG("--shards", CLI_SIZE, synth_options_t, shards, "N",
             "also write the training split as N WebDataset shards, DIR/shards/train-{00000..N-1}.tar\n"
             "(KEY.png/.jpg/.mp4/.webm/.wav/.flac, KEY.txt, KEY.json; samples shuffled over them)"),
    CLI_QUIET(synth_options_t, quiet),
    CLI_FLAGS_END,
};

static int run(void *raw, const cli_parsed_t *parsed) {
    synth_options_t *options = raw;
    const char *dir = parsed->positional[0];
    size_t pairs[3] = {2000, 2000, 2000}, heldout = options->heldout, threads = options->threads;
    uint64_t seed = options->seed;
    int mask = 7, quiet = options->quiet;
    if (options->pairs && (parse_pairs(options->pairs, pairs) || pairs[0] > 1000000000 || pairs[1] > 1000000000 || pairs[2] > 1000000000))
        return cli_usage_error(parsed->command, "--pairs %s is not a valid value (N or I,V,A)", options->pairs);
    if (heldout > 1000000000) return cli_usage_error(parsed->command, "--heldout %zu is too many", heldout);
    if (options->modalities) {
        unsigned bits = 0;
        if (cli_parse_modalities(options->modalities, &bits) || (bits & 1) || !bits)
            return cli_usage_error(parsed->command, "--modalities %s is not a list of image, video, audio", options->modalities);
        mask = (int)(bits >> 1);
    }
    if (threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores > 0 ? (size_t)cores : 1;
    }
    if ((mask & (1 << SYNTH_VIDEO)) && !synth_av_available()) {
        fprintf(stderr, "uform: synth: clips need FFmpeg, and this build has none (--modalities image,audio)\n");
        return 1;
    }
    work_t work;
    memset(&work, 0, sizeof work);
    work.dir = dir;
    if ((mask & (1 << SYNTH_AUDIO)) && (work.speech_rate = synth_speech_start(work.error, sizeof work.error)) <= 0) {
        fprintf(stderr, "uform: synth: %s\n", work.error);
        return 1;
    }
    /* The items: per split and kind, training ones cycling through the captions, held-out ones spread
     * over them (so up to one per caption they all differ), compositional ones one per caption. */
    static synth_scene_t scenes[3][2][SYNTH_SHAPES * SYNTH_COLOURS * SYNTH_PLACES * SYNTH_SIZES];
    size_t counts[3][2], total = 0;
    for (int k = 0; k < 3; ++k)
        for (int novel = 0; novel < 2; ++novel) counts[k][novel] = list_scenes(k, novel, scenes[k][novel]);
    size_t sizes[3][3];
    for (unsigned split = 0; split < 3; ++split)
        for (int k = 0; k < 3; ++k) {
            size_t n = split == 0 ? pairs[k] : split == 1 ? heldout : (heldout < counts[k][1] ? heldout : counts[k][1]);
            sizes[split][k] = (mask & (1 << k)) ? n : 0;
            total += sizes[split][k];
        }
    work.items = calloc(total + 1, sizeof *work.items);
    /* Lines and the speech report live in memory shared with the speech process (zeroed by mmap). */
    const size_t lines_bytes = (total + 1) * LINE_CAPACITY + sizeof(speech_report_t);
    void *mapped = mmap(NULL, lines_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mapped != MAP_FAILED) {
        work.speech = mapped;
        work.lines = (char *)mapped + sizeof(speech_report_t);
    }
    work.shared = calloc(total + 1, sizeof *work.shared);
    if (!work.items || !work.lines || !work.shared) {
        fprintf(stderr, "uform: synth: out of memory for %zu items\n", total);
        free(work.items), free(work.shared);
        if (work.speech) munmap(work.speech, lines_bytes);
        synth_speech_stop();
        return 1;
    }
    for (unsigned split = 0; split < 3; ++split)
        for (int k = 0; k < 3; ++k) {
            const synth_scene_t *list = scenes[k][split == 2];
            size_t n = sizes[split][k], c = counts[k][split == 2];
            for (size_t i = 0; i < n; ++i) {
                size_t scene = split == 0 ? i % c : (i * c / n) % c;
                work.items[work.count] = (synth_item_t){(uint64_t)seed, split, k, i, list[scene]};
                if (k != SYNTH_AUDIO) work.shared[work.shared_count++] = work.count;
                work.count += 1;
            }
        }
    pthread_mutex_init(&work.lock, NULL);
    char path[4200];
    snprintf(path, sizeof path, "%s", dir);
    int status = make_folder(dir);
    for (unsigned split = 0; status == 0 && split < 3; ++split) {
        snprintf(path, sizeof path, "%s/%s", dir, split_names[split]);
        status = make_folder(path);
    }
    if (status) snprintf(work.error, sizeof work.error, "cannot create '%s': %s", path, strerror(errno));
    double start = cli_now();
    if (status == 0) {
        run_all(&work, threads, !quiet && isatty(2), start);
        status = work.failed ? -1 : 0;
    }
    for (unsigned split = 0; status == 0 && split < 3; ++split) status = write_manifest(&work, dir, split, work.error, sizeof work.error);
    if (status == 0 && options->shards)
        status = synth_write_shards(work.items, work.count, work.lines, LINE_CAPACITY, dir, options->shards, seed, work.error,
                                    sizeof work.error);
    synth_speech_stop();
    pthread_mutex_destroy(&work.lock);
    free(work.items), free(work.shared);
    munmap(work.speech, lines_bytes);
    if (status) {
        fprintf(stderr, "uform: synth: %s\n", work.error);
        return 1;
    }
    if (!quiet) {
        double seconds = cli_now() - start;
        fprintf(stderr, "uform: %zu files in %.1f s (%.0f files/s, %zu threads) in %s: train.jsonl, heldout.jsonl, novel.jsonl",
                total, seconds, seconds > 0 ? (double)total / seconds : 0.0, threads, dir);
        if (options->shards) fprintf(stderr, ", shards/train-{00000..%05zu}.tar", options->shards - 1);
        fputc('\n', stderr);
    }
    return 0;
}

const cli_command_t cli_synth = {
    .name = "synth",
    .summary = "the demo's generated data: pictures, clips and speech, with manifests or shards",
    .usage = "DIR [options]",
    .description =
        "Writes the demo's generated data into DIR: pictures of 5 shapes x 8 colours x 5 places x 2 sizes\n"
        "(\"a small red star at the top\"; PNG and JPEG), 8-frame clips of a shape moving left, right, up or\n"
        "down (\"a blue circle moving left\"; MP4 and WebM) and captions spoken by espeak-ng (\"a red star at\n"
        "the top\"; WAV and FLAC, about 2 s), with the manifests train.jsonl, heldout.jsonl (fresh renders\n"
        "of training captions) and novel.jsonl (colour-shape combinations never shown in training).\n",
    .statuses = "0 done; 1 failed (the reason is printed); 2 usage error.",
    .flags = flags,
    .options_size = sizeof(synth_options_t),
    .defaults = defaults,
    .positional_min = 1,
    .positional_max = 1,
    .run = run,
};
