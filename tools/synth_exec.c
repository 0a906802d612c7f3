/* `uform synth ...` runs `uform-synth ...` from the folder of the running `uform` (see
 * uform_synth_main.c for why the two are apart). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

/* argv[0] is "synth"; answers 1 (with a message) when the program cannot be started. */
int uform_command_synth_exec(int argc, char **argv) {
    (void)argc;
    char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length < 0) {
        fprintf(stderr, "uform synth: cannot find the running program (/proc/self/exe): %s\n", strerror(errno));
        return 1;
    }
    path[length] = '\0';
    char *slash = strrchr(path, '/');
    const char *name = "/uform-synth";
    if (!slash || (size_t)(slash - path) + strlen(name) + 1 > sizeof path) {
        fprintf(stderr, "uform synth: the running program's path '%s' is too long\n", path);
        return 1;
    }
    strcpy(slash, name);
    argv[0] = path;
    execv(path, argv);
    fprintf(stderr, "uform synth: cannot run %s: %s\n", path, strerror(errno));
    return 1;
}
