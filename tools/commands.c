/*
 * The one registry of `uform` commands: a command is one line here and one file of its own that
 * defines its cli_command_t (cli.h). `uform help` lists them in this order.
 */
#include <string.h>

#include "cli.h"

extern const cli_command_t cli_describe, cli_encode_command, cli_choose, cli_quantize, cli_index, cli_search, cli_train;

/* `uform synth` runs in the program uform-synth next to `uform` (tools/uform_synth_main.c says why),
 * which holds its flags and help. */
static const cli_command_t cli_synth_launcher = {
    .name = "synth",
    .summary = "the demo's generated data: pictures, clips and speech, with manifests or shards",
    .program = "uform-synth",
};

/* `uform serve` runs in the program uform-serve (tools/serve/serve_program.c): libmicrohttpd stays
 * out of `uform`. */
static const cli_command_t cli_serve_launcher = {
    .name = "serve",
    .summary = "embeddings, search and choices over HTTP (OpenAI-compatible), with a page",
    .program = "uform-serve",
};

const cli_command_t *const cli_commands[] = {
    &cli_describe,
    &cli_encode_command,
    &cli_choose,
    &cli_quantize,
    &cli_index,
    &cli_search,
    &cli_train,
    &cli_synth_launcher,
    &cli_serve_launcher,
    NULL,
};

const cli_command_t *cli_command_find(const char *name) {
    for (size_t i = 0; name && cli_commands[i]; ++i)
        if (strcmp(cli_commands[i]->name, name) == 0) return cli_commands[i];
    return NULL;
}
