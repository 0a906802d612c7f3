/*
 * Atomic saves: a child process overwrites a checkpoint with uform_trainer_save and is killed with
 * SIGKILL at 20 random moments during the save; after every kill the file at the path loads
 * (uform_model_load_ram) and is byte for byte either the old checkpoint or the new one.
 * The writer's output is deterministic (identical requests give identical bytes), so "the new one"
 * is a copy the parent wrote to another path first.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/check.h"
#include "train_test_batch.h"
#include "common/read_file.h"

static int write_all(const char *path, const unsigned char *bytes, size_t size) {
    FILE *file = fopen(path, "wb");
    if (!file) return -1;
    int ok = fwrite(bytes, 1, size, file) == size;
    return (fclose(file) == 0 && ok) ? 0 : -1;
}

static double seconds_now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

static int save(uform_trainer_t trainer, const char *path) {
    uform_trainer_save_t request = {0};
    request.trainer = trainer, request.path = path;
    return uform_trainer_save(&request) == UFORM_OK ? 0 : -1;
}

int main(void) {
    char folder[128], path[256], new_copy[256];
    snprintf(folder, sizeof folder, "/tmp/uform-test-atomic-%d", (int)getpid());
    mkdir(folder, 0755);
    snprintf(path, sizeof path, "%s/model.safetensors", folder);
    snprintf(new_copy, sizeof new_copy, "%s/new.safetensors", folder);
    /* The calling-thread executor: a forked child has only the thread that forked. */
    uform_trainer_config_t config = {0};
    config.seed = 4, config.size[0] = 0;
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_trainer_init_ram(NULL, &config, &trainer, &outcome), UFORM_OK);
    if (!trainer) return check_finish();
    CHECK(save(trainer, path) == 0);
    size_t old_size = 0, new_size = 0;
    unsigned char *old_bytes = test_read_file(path, &old_size);
    /* One step changes every tensor: the new checkpoint. */
    test_batch_t batch;
    memset(&batch, 0, sizeof batch);
    test_batch_text(&batch, "a red disc", NULL, 0);
    test_batch_text(&batch, "a round red thing", NULL, 0);
    test_batch_pairs(&batch, 2, 1);
    uform_arena_t arena = NULL;
    uform_arena_for_host(&arena, NULL);
    uform_trainer_step_t step;
    test_batch_request(&batch, trainer, arena, &step);
    CHECK_STATUS(uform_trainer_step(&step), UFORM_OK);
    double start = seconds_now();
    CHECK(save(trainer, new_copy) == 0);
    double save_seconds = seconds_now() - start;
    unsigned char *new_bytes = test_read_file(new_copy, &new_size);
    CHECK(old_bytes && new_bytes && (old_size != new_size || memcmp(old_bytes, new_bytes, old_size) != 0));
    printf("checkpoint: %zu bytes, one save takes %.1f ms\n", new_size, save_seconds * 1e3);
    size_t olds = 0, news = 0;
    uint64_t state = 12345;
    for (int round = 0; round < 20 && old_bytes && new_bytes; ++round) {
        CHECK(write_all(path, old_bytes, old_size) == 0);
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        /* Kill anywhere from the start of the save to a little after it would have finished. */
        double delay = save_seconds * 1.3 * (double)(state >> 11) / 9007199254740992.0;
        pid_t child = fork();
        if (child == 0) {
            save(trainer, path);
            pause(); /* wait to be killed, so a finished save is still "during" from the parent's view */
            _exit(0);
        }
        struct timespec pause_for = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
        nanosleep(&pause_for, NULL);
        kill(child, SIGKILL);
        int status = 0;
        waitpid(child, &status, 0);
        size_t size = 0;
        unsigned char *bytes = test_read_file(path, &size);
        int is_old = bytes && size == old_size && memcmp(bytes, old_bytes, size) == 0;
        int is_new = bytes && size == new_size && memcmp(bytes, new_bytes, size) == 0;
        CHECK_MSG(is_old || is_new, "round %d (killed after %.2f ms): the file is neither checkpoint (%zu bytes)", round,
                  delay * 1e3, size);
        olds += is_old, news += is_new;
        uform_model_t model = NULL;
        CHECK_STATUS(uform_model_load_ram(NULL, path, NULL, &model, &outcome), UFORM_OK);
        uform_model_free(model);
        free(bytes);
    }
    printf("20 kills: %zu left the old checkpoint, %zu the new one\n", olds, news);
    free(old_bytes), free(new_bytes), free(batch.data);
    uform_arena_free(arena);
    uform_trainer_free(trainer);
    char command[256];
    snprintf(command, sizeof command, "rm -rf %s", folder);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", folder);
    return check_finish();
}
