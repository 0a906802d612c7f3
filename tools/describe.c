/* uform describe CKPT — what a checkpoint holds: its architecture, modalities, geometry and size. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct describe_options_t {
    int compute;
} describe_options_t;

static const cli_flag_t flags[] = {
    CLI_INFERENCE_COMPUTE_FLAGS(describe_options_t, compute),
    CLI_FLAGS_END,
};

static int run(void *raw, const cli_parsed_t *parsed) {
    describe_options_t *options = raw;
    const char *path = parsed->positional[0];
    uform_model_t model = cli_load(path, NULL, cli_compute(options->compute));
    if (!model) return 1;
    uform_model_describe_t request = {model};
    uform_model_describe(&request);
    const uform_model_description_t *d = &request.description;
    int published = strcmp(d->family, "uform4") != 0;
    printf("checkpoint   %s\n", path);
    printf("family       %s\n", d->family);
    if (!published) {
        printf("size         %s\n", d->size[0] ? d->size : "(unnamed)");
        printf("trunk        hidden %zu, depth %zu, heads %zu, mlp %zu\n", d->hidden, d->depth, d->heads, d->mlp);
    } else {
        for (int m = 0; m < 4; ++m)
            if (d->modalities & (1u << m))
                printf("%-6s tower hidden %zu, depth %zu, heads %zu, mlp %zu\n", cli_modality_name((uform_modality_t)m),
                       d->towers[m].hidden, d->towers[m].depth, d->towers[m].heads, d->towers[m].mlp);
    }
    printf("embedding    %zu (matryoshka:", d->embedding);
    for (size_t i = 0; i < d->matryoshka_count; ++i) printf(" %zu", d->matryoshka[i]);
    printf(")\nmodalities  ");
    for (int m = 0; m < 4; ++m)
        if (d->modalities & (1u << m)) printf(" %s", cli_modality_name((uform_modality_t)m));
    printf("\n");
    if (d->modalities & 1 && !published) printf("text         %zu bytes per item\n", d->text_bytes);
    if (d->modalities & 1 && published) printf("text         %s tokenizer, up to %zu tokens\n", d->tokenizer, d->text_tokens);
    if (d->modalities & 2) printf("image        %zu x %zu, patch %zu\n", d->image_size, d->image_size, d->image_patch);
    if (d->modalities & 4)
        printf("video        %zu frames of %zu x %zu, patch %zu, tubelet %zu\n", d->video_frames, d->video_size,
               d->video_size, d->video_patch, d->video_tubelet);
    if (d->modalities & 8) printf("audio        %zu s at %zu Hz, %zu mels\n", d->audio_seconds, d->audio_rate, d->audio_mels);
    if (!published) printf("temperatures %zu groups\n", d->temperature_groups);
    printf("parameters   %llu (%.1f MiB of weights)\n", (unsigned long long)d->parameters, (double)d->weight_bytes / 1048576.0);
    printf("kernels      %s, %s compute\n", uform_cpu_class_name(d->cpu_class), cli_compute_name(d->compute));
    uform_model_free(model);
    return 0;
}

const cli_command_t cli_describe = {
    .name = "describe",
    .summary = "what a checkpoint holds: architecture, modalities, geometry, parameters",
    .usage = "CKPT",
    .description = "Loads CKPT and prints its architecture, the modalities it encodes, each one's geometry, its\n"
                   "parameter count and the kernels this machine runs it with.\n",
    .statuses = "0 printed; 1 the checkpoint cannot be loaded (the reason is printed); 2 usage error.",
    .flags = flags,
    .options_size = sizeof(describe_options_t),
    .positional_min = 1,
    .positional_max = 1,
    .run = run,
};
