/*
 * uform_tiny_checkpoint <path> [--seed N] [--size tiny|small|base]
 *
 * Writes a checkpoint with every modality and weights drawn deterministically from the seed
 * (docs/model.md, "The tiny checkpoint"), so tests, examples and benchmarks have a model without
 * downloads. `--size small` writes the `small` shape with random weights (for benchmarks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/layout.h"

static int usage(void) {
    fprintf(stderr, "usage: uform_tiny_checkpoint <path> [--seed N] [--size tiny|small|base]\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *path = NULL, *size = "tiny";
    unsigned long long seed = 42;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            char *end = NULL;
            seed = strtoull(argv[++i], &end, 10);
            if (!end || *end) return usage();
        } else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            size = argv[++i];
        } else if (argv[i][0] == '-' || path) {
            return usage();
        } else {
            path = argv[i];
        }
    }
    if (!path) return usage();
    uform_outcome_t outcome = {0};
    uform__model_config_t config;
    if (uform__model_config_named(size, &config, &outcome, "uform_tiny_checkpoint") != UFORM_OK ||
        uform__model_write_random(path, &config, seed, &outcome, "uform_tiny_checkpoint") != UFORM_OK) {
        char line[600];
        uform_outcome_format(&outcome, line, sizeof line);
        fprintf(stderr, "%s\n", line);
        return 1;
    }
    printf("wrote %s (%s, seed %llu)\n", path, size, seed);
    return 0;
}
