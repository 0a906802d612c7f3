/*
 * The command line's flag parser (tools/cli_flags.c) under failing allocations: each allocation a
 * parse makes fails in turn (and, persistently, every one from it on). A parse whose allocation
 * failed must answer 1 (a failure, said as out of memory), never 2 (a usage error such as "--text
 * needs at least one value", which is what it answered before when a list of values could not
 * grow); a parse where nothing failed must answer -1 with every value kept in order. Flags: a
 * CLI_VALUES list (`--text a b c`, `--text=d`) and a repeatable CLI_TEXTS one (`--path`).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "common/check.h"
#include "reliability/failing_alloc.h"

typedef struct options_t {
    cli_texts_t texts, paths;
    size_t batch;
} options_t;

static const cli_flag_t flags[] = {
    CLI_FLAG("--text", CLI_VALUES, options_t, texts, "TEXT...", "texts"),
    CLI_FLAG("--path", CLI_TEXTS, options_t, paths, "PATH", "a path (repeatable)"),
    CLI_FLAG("--batch", CLI_SIZE, options_t, batch, "N", "a number"),
    CLI_FLAGS_END,
};

static int run_nothing(void *options, const cli_parsed_t *parsed) { return (void)options, (void)parsed, 0; }

static const cli_command_t command = {
    .name = "oomtest", .summary = "", .usage = "[flags] ARG", .description = "", .statuses = "",
    .flags = flags, .options_size = sizeof(options_t), .positional_min = 1, .positional_max = 2, .run = run_nothing,
};

static char *arguments[] = {"oomtest", "--text", "a", "b", "c", "d", "e", "--path", "p1", "positional",
                            "--path=p2", "--text=f", "--batch", "4", "--path", "p3", NULL};
enum { argument_count = sizeof arguments / sizeof arguments[0] - 1 };

/* A parse with nothing failing: every value in order. */
static void check_values(const options_t *options, const cli_parsed_t *parsed) {
    static const char *texts[] = {"a", "b", "c", "d", "e", "f"}, *paths[] = {"p1", "p2", "p3"};
    CHECK_EQ_INT(options->texts.count, 6);
    for (size_t i = 0; i < 6 && i < options->texts.count; ++i) CHECK_MSG(strcmp(options->texts.items[i], texts[i]) == 0, "text %zu: %s, expected %s", i, options->texts.items[i], texts[i]);
    CHECK_EQ_INT(options->paths.count, 3);
    for (size_t i = 0; i < 3 && i < options->paths.count; ++i) CHECK_MSG(strcmp(options->paths.items[i], paths[i]) == 0, "path %zu: %s, expected %s", i, options->paths.items[i], paths[i]);
    CHECK_EQ_INT(options->batch, 4);
    CHECK_EQ_INT(parsed->positional_count, 1);
}

/* Fails allocation n (1-based) in `mode`; answers 0 once n is past the parse's allocations. */
static int parse_failing(size_t n, failing_alloc_mode_t mode, size_t *allocations) {
    options_t options;
    cli_parsed_t parsed;
    failing_alloc_arm(n, mode);
    int status = cli_parse(&command, argument_count, arguments, &options, &parsed);
    size_t counted = failing_alloc_counted();
    size_t failed = failing_alloc_disarm();
    if (failed == 0) {
        CHECK_MSG(status == -1, "allocation %zu (%s) was not reached, yet the parse answered %d", n,
                  mode == FAILING_ALLOC_PERSISTENT ? "persistent" : "transient", status);
        if (status == -1) check_values(&options, &parsed), cli_parsed_free(&command, &options, &parsed);
        *allocations = counted;
        return 0;
    }
    CHECK_MSG(status == 1, "allocation %zu of %s failed (%s): the parse answered %d, expected 1 (out of memory)", n,
              failing_alloc_failed_function(), mode == FAILING_ALLOC_PERSISTENT ? "persistent" : "transient", status);
    if (status == -1) cli_parsed_free(&command, &options, &parsed);
    return 1;
}

int main(void) {
    size_t allocations = 0, swept = 0;
    for (int mode = FAILING_ALLOC_TRANSIENT; mode <= FAILING_ALLOC_PERSISTENT; ++mode)
        for (size_t n = 1; n < 200 && parse_failing(n, (failing_alloc_mode_t)mode, &allocations); ++n) swept += 1;
    printf("%zu allocations per parse, %zu failing parses, each answered 1\n", allocations, swept);
    /* The parse allocates the positional list and grows two lists value by value: a sweep that
     * failed nothing would pass on a parser that never allocates. */
    CHECK_MSG(allocations >= 10, "a parse made %zu allocations; expected at least 10", allocations);
    CHECK_MSG(swept == 2 * allocations, "%zu failing parses for %zu allocations in two modes", swept, allocations);
    return check_finish();
}
