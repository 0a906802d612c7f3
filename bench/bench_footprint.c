/*
 * What a process pays to link UForm: the shared objects it maps, the time from exec to main and to
 * a first embedding, and its resident memory. Links the shared libuform through the public header
 * only, so the same file builds against any version of the library (bench/footprint.sh builds it
 * against the one before FFmpeg was loaded on demand).
 *
 *   bench_footprint CHECKPOINT [EXEC_NANOSECONDS]
 *
 * EXEC_NANOSECONDS is CLOCK_REALTIME read just before the exec (footprint.sh passes `date +%s%N`);
 * without it the start-up time is not printed. Prints one JSON object on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "uform/uform.h"

/* Distinct shared objects (paths containing ".so") in /proc/self/maps. */
static int shared_objects(void) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return -1;
    static char seen[1024][256];
    char line[1024];
    int count = 0;
    while (fgets(line, sizeof line, maps)) {
        const char *path = strchr(line, '/');
        if (!path || !strstr(path, ".so")) continue;
        char name[256];
        snprintf(name, sizeof name, "%s", path);
        name[strcspn(name, "\n")] = 0;
        int known = 0;
        for (int i = 0; i < count && !known; ++i) known = !strcmp(seen[i], name);
        if (!known && count < 1024) snprintf(seen[count++], sizeof seen[0], "%s", name);
    }
    fclose(maps);
    return count;
}

/* VmRSS or VmHWM from /proc/self/status, in KiB. */
static long status_kib(const char *key) {
    FILE *status = fopen("/proc/self/status", "r");
    if (!status) return -1;
    char line[256];
    long value = -1;
    size_t length = strlen(key);
    while (fgets(line, sizeof line, status))
        if (!strncmp(line, key, length) && line[length] == ':') value = strtol(line + length + 1, NULL, 10);
    fclose(status);
    return value;
}

int main(int argc, char **argv) {
    double at_main = 1e9 * bench_clock_seconds(CLOCK_REALTIME);
    if (argc < 2) { /* `make bench` runs every program bare: say how, without failing */
        printf("bench_footprint: run through bench/footprint.sh CHECKPOINT RUNS NAME=BUILD_DIR ... (see bench/README.md)\n");
        return 0;
    }
    int objects_at_main = shared_objects();
    long rss_at_main = status_kib("VmRSS");
    uform_model_t model = NULL;
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    if (uform_model_load_ram(NULL, argv[1], NULL, &model, &outcome) != UFORM_OK || uform_arena_for_host(&arena, &outcome) != UFORM_OK) {
        char line[600];
        uform_outcome_format(&outcome, line, sizeof line);
        fprintf(stderr, "%s\n", line);
        return 1;
    }
    static const char text[] = "a photo of a cat";
    size_t offsets[2] = {0, sizeof text - 1};
    uform_text_encode_t request;
    memset(&request, 0, sizeof request);
    request.model = model;
    request.texts = (uform_tape_t){text, offsets, 1};
    request.arena = arena;
    if (uform_text_encode(&request) != UFORM_OK) {
        fprintf(stderr, "%s\n", request.outcome.message);
        return 1;
    }
    double at_embedding = 1e9 * bench_clock_seconds(CLOCK_REALTIME);
    printf("{\"objects_at_main\": %d, \"objects\": %d, \"rss_at_main_kib\": %ld, \"rss_kib\": %ld, \"peak_rss_kib\": %ld, "
           "\"load_and_encode_ms\": %.3f",
           objects_at_main, shared_objects(), rss_at_main, status_kib("VmRSS"), status_kib("VmHWM"), (at_embedding - at_main) / 1e6);
    if (argc > 2) {
        double exec_ns = strtod(argv[2], NULL);
        printf(", \"exec_to_main_ms\": %.3f, \"exec_to_embedding_ms\": %.3f", (at_main - exec_ns) / 1e6, (at_embedding - exec_ns) / 1e6);
    }
    printf("}\n");
    uform_arena_free(arena);
    uform_model_free(model);
    return 0;
}
