/*
 * The `uform` command line: `uform COMMAND ...` runs the command registered under that name
 * (commands.c), `uform` alone and `uform help` list them. docs/cli.md states the conventions.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int list_commands(FILE *out) {
    fprintf(out, "usage: uform COMMAND [ARGUMENTS] [--help]\n\ncommands:\n");
    for (size_t i = 0; cli_commands[i]; ++i) fprintf(out, "  %-10s %s\n", cli_commands[i]->name, cli_commands[i]->summary);
    fprintf(out, "\n`uform COMMAND --help` explains a command, its flags and exit statuses.\n");
    return 0;
}

/* Replaces this process with the program next to it that runs `command` (as `git foo` runs
 * `git-foo`); answers 1 with the reason when it cannot. */
static int run_program(const cli_command_t *command, char **argv) {
    char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length < 0) return cli_fail_errno(errno, "cannot find the running program (/proc/self/exe)");
    path[length] = '\0';
    char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) + strlen(command->program) + 2 > sizeof path) {
        fprintf(stderr, "uform: the running program's path '%s' is too long\n", path);
        return 1;
    }
    snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "%s", command->program);
    argv[0] = path;
    execv(path, argv);
    return cli_fail_errno(errno, "cannot run %s", path);
}

int main(int argc, char **argv) {
    if (argc < 2) return list_commands(stdout);
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        const cli_command_t *command = argc > 2 ? cli_command_find(argv[2]) : NULL;
        if (command && !command->program) {
            cli_help(command, stdout);
            return 0;
        }
        if (command) {
            char *arguments[] = {argv[2], "--help", NULL};
            return run_program(command, arguments);
        }
        return list_commands(stdout);
    }
    const cli_command_t *command = cli_command_find(argv[1]);
    if (!command) {
        list_commands(stderr);
        fprintf(stderr, "uform: '%s' is not a command\n", argv[1]);
        return 2;
    }
    if (command->program) return run_program(command, argv + 1);
    return cli_run(command, argc - 1, argv + 1);
}
