/* `uform train --eval` (train_eval.h): the table of uform_evaluate's results. */
#include <string.h>

#include "cli.h"
#include "train_eval.h"

void train_eval_print(const uform_evaluation_t results[4], uint64_t step, const char *label, FILE *log) {
    for (int m = 1; m < 4; ++m) {
        const uform_evaluation_t *result = &results[m];
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
}
