/* `uform train --eval` (train_eval.h): the table of uform_evaluate's results. */
#include <string.h>

#include "cli.h"
#include "train_eval.h"

int train_evaluate(uform_trainer_t trainer, uform_executor_t executor, uform_dataset_t dataset, uform_compute_t compute,
                   uint64_t step, const char *label, FILE *log) {
    uform_outcome_t outcome = {0};
    uform_ram_options_t options = {0};
    options.compute = compute;
    uform_model_t model = NULL;
    if (uform_trainer_snapshot(trainer, &options, &model, &outcome) != UFORM_OK) return cli_fail(&outcome, "--eval");
    uform_arena_t arena = NULL;
    int status = uform_arena_for_executor(executor, &arena, &outcome) == UFORM_OK ? 0 : cli_fail(&outcome, "--eval");
    uform_evaluate_t evaluate = {0};
    size_t ks[2] = {1, 5};
    evaluate.model = model, evaluate.executor = executor, evaluate.dataset = dataset, evaluate.arena = arena;
    evaluate.ks = ks, evaluate.ks_count = 2;
    if (status == 0 && uform_evaluate(&evaluate) != UFORM_OK) status = cli_fail(&evaluate.outcome, "--eval");
    for (int m = 1; m < 4 && status == 0; ++m) {
        const uform_evaluation_t *result = &evaluate.results[m];
        if (!result->pairs) continue;
        const char *name = cli_modality_name((uform_modality_t)m);
        printf("eval step %llu  %-5s %4zu pairs  text->%s R@1 %.3f R@5 %.3f | %s->text R@1 %.3f R@5 %.3f%s%s%s\n",
               (unsigned long long)step, name, result->pairs, name, result->text_to_media[0], result->text_to_media[1], name,
               result->media_to_text[0], result->media_to_text[1], label ? "  (" : "", label ? label : "", label ? ")" : "");
        if (log) {
            fprintf(log, "{\"step\": %llu, \"set\": ", (unsigned long long)step);
            cli_json_string(log, label ? label : "", label ? strlen(label) : 0);
            fprintf(log,
                    ", \"modality\": \"%s\", \"pairs\": %zu, \"text_to_media\": {\"1\": %.6f, \"5\": %.6f}, "
                    "\"media_to_text\": {\"1\": %.6f, \"5\": %.6f}}\n",
                    name, result->pairs, result->text_to_media[0], result->text_to_media[1], result->media_to_text[0],
                    result->media_to_text[1]);
            fflush(log);
        }
    }
    fflush(stdout);
    uform_arena_free(arena);
    uform_model_free(model);
    return status;
}
