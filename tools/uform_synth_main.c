/* `uform-synth`: the program behind `uform synth`. It lives apart from `uform` because drawing,
 * encoding and speaking the demo's data links FFmpeg's encoders and espeak-ng (about 150 shared
 * objects), which every other command would otherwise load at start; `uform synth ...` replaces
 * itself with this program (tools/synth_exec.c), the way `git foo` runs `git-foo`. */
#include "commands.h"

int main(int argc, char **argv) {
    argv[0] = "synth";
    return uform_command_synth(argc, argv);
}
