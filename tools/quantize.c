/* uform quantize CKPT --out Q — a copy of a checkpoint with the trunk's matrices in int8 (docs/int8.md). */
#include <stdio.h>

#include "cli.h"

typedef struct quantize_options_t {
    const char *out;
} quantize_options_t;

static const cli_flag_t flags[] = {
    CLI_FLAG("--out", CLI_TEXT, quantize_options_t, out, "Q", "the quantized checkpoint to write (required; not CKPT itself)"),
    CLI_FLAGS_END,
};

static int run(void *raw, const cli_parsed_t *parsed) {
    quantize_options_t *options = raw;
    if (!options->out) return cli_usage_error(parsed->command, "--out is missing");
    uform_outcome_t outcome = {0};
    double start = cli_now();
    if (uform_model_quantize(parsed->positional[0], options->out, &outcome) != UFORM_OK) return cli_fail(&outcome, NULL);
    fprintf(stderr, "uform: wrote %s in %.2f s\n", options->out, cli_now() - start);
    return 0;
}

const cli_command_t cli_quantize = {
    .name = "quantize",
    .summary = "a copy of a checkpoint with the trunk's matrices in int8, for --int8 (about half the bytes)",
    .usage = "CKPT --out Q",
    .description = "Writes a copy of CKPT whose trunk matrices (attn.qkv, attn.out, mlp.up, mlp.down) are int8 with\n"
                   "one F32 scale per output channel (NAME and NAME_scale), quantized as --int8 quantizes them at\n"
                   "load: loading Q with --int8 gives the same outputs bit for bit, from about half the bytes of a\n"
                   "BF16 file. Other computes dequantize it. Training state is dropped. docs/int8.md names the tensors.\n",
    .statuses = "0 written; 1 failed (the reason is printed: CKPT unreadable or not a checkpoint, Q not\n"
                "writable or the same file as CKPT); 2 usage error.",
    .flags = flags,
    .options_size = sizeof(quantize_options_t),
    .positional_min = 1,
    .positional_max = 1,
    .run = run,
};
