/* `uform-synth`: the program behind `uform synth`. It lives apart from `uform` because drawing,
 * encoding and speaking the demo's data links FFmpeg's encoders and espeak-ng (about 150 shared
 * objects), which every other command would otherwise load at start; `uform synth ...` replaces
 * itself with this program (the registry's `program`, tools/uform.c), the way `git foo` runs `git-foo`. */
#include "cli.h"

extern const cli_command_t cli_synth;

int main(int argc, char **argv) {
    argv[0] = "synth";
    return cli_run(&cli_synth, argc, argv);
}
