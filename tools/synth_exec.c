/* `uform synth ...` runs `uform-synth ...` and `uform serve ...` runs `uform-serve ...`, from the
 * folder of the running `uform` (see uform_synth_main.c and serve/serve_program.c for why they are
 * apart): the way `git foo` runs `git-foo`. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

int uform_command_exec_sibling(const char *program, int argc, char **argv) {
    (void)argc;
    char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length < 0) {
        fprintf(stderr, "uform %s: cannot find the running program (/proc/self/exe): %s\n", argv[0], strerror(errno));
        return 1;
    }
    path[length] = '\0';
    char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) + strlen(program) + 2 > sizeof path) {
        fprintf(stderr, "uform %s: the running program's path '%s' is too long\n", argv[0], path);
        return 1;
    }
    const char *command = argv[0];
    snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "%s", program);
    argv[0] = path;
    execv(path, argv);
    fprintf(stderr, "uform %s: cannot run %s: %s\n", command, path, strerror(errno));
    return 1;
}

int uform_command_synth_exec(int argc, char **argv) { return uform_command_exec_sibling("uform-synth", argc, argv); }
