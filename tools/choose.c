/* uform choose CKPT PREFIX --choices BYTES — text_choose: the distribution over legal next bytes. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct choose_options_t {
    const char *choices;
    size_t group;
    int compute;
} choose_options_t;

static const cli_flag_t flags[] = {
    CLI_FLAG("--choices", CLI_TEXT, choose_options_t, choices, "BYTES", "the legal next bytes, each once (required)"),
    CLI_FLAG("--group", CLI_SIZE, choose_options_t, group, "G", "the temperature group whose scale sharpens the choice (default 0)"),
    CLI_INFERENCE_COMPUTE_FLAGS(choose_options_t, compute),
    CLI_FLAGS_END,
};

static int run(void *raw, const cli_parsed_t *parsed) {
    choose_options_t *options = raw;
    const char *path = parsed->positional[0], *prefix = parsed->positional[1], *choices = options->choices;
    if (!choices) return cli_usage_error(parsed->command, "--choices is missing");
    uform_model_t model = cli_load(path, NULL, cli_compute(options->compute));
    if (!model) return 1;
    uform_outcome_t outcome = {0};
    uform_arena_t arena = NULL;
    if (uform_arena_for_host(&arena, &outcome) != UFORM_OK) {
        uform_model_free(model);
        return cli_fail(&outcome, NULL);
    }
    size_t text_offsets[2] = {0, strlen(prefix)}, choice_offsets[2] = {0, strlen(choices)}, group = options->group;
    uform_text_choose_t request = {0};
    request.model = model, request.arena = arena, request.groups = &group;
    request.texts = (uform_tape_t){prefix, text_offsets, 1};
    request.choices = (uform_tape_t){choices, choice_offsets, 1};
    int status = 0;
    if (uform_text_choose(&request) != UFORM_OK) {
        status = cli_fail(&request.outcome, NULL);
    } else {
        for (size_t c = 0; c < choice_offsets[1]; ++c) {
            const void *row = NULL;
            uform_matrix_row(&request.probabilities.matrix, c, &row);
            unsigned char byte = (unsigned char)choices[c];
            if (byte >= 32 && byte < 127) printf("'%c'  %.6f\n", byte, *(const float *)row);
            else printf("0x%02x %.6f\n", byte, *(const float *)row);
        }
    }
    uform_arena_free(arena);
    uform_model_free(model);
    return status;
}

const cli_command_t cli_choose = {
    .name = "choose",
    .summary = "the probabilities of the legal next bytes after a text prefix (text_choose)",
    .usage = "CKPT PREFIX --choices BYTES [options]",
    .description = "Prints the probability of each byte of --choices following PREFIX, one line per byte.\n",
    .statuses = "0 printed; 1 failed (the reason is printed); 2 usage error.",
    .flags = flags,
    .options_size = sizeof(choose_options_t),
    .positional_min = 2,
    .positional_max = 2,
    .run = run,
};
