/* `uform-serve`: the program behind `uform serve`. It lives apart from `uform` because HTTP
 * (libmicrohttpd, and through Debian's build of it GnuTLS with nine more libraries) would otherwise
 * be mapped by every command at start; `uform serve ...` replaces itself with this program
 * (tools/uform.c runs a registered command's program), as `uform synth` does with uform-synth. */
#include "serve.h"

int main(int argc, char **argv) {
    argv[0] = "serve";
    return uform_command_serve(argc, argv);
}
