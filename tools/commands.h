/* The `uform` commands that live in their own files (tools/uform_<command>.c); uform.c dispatches. */
#ifndef UFORM_TOOLS_COMMANDS_H
#define UFORM_TOOLS_COMMANDS_H

/* `uform train ...`: argv[0] is "train". Answers the exit status. */
int uform_command_train(int argc, char **argv);

/* `uform synth DIR ...`: the demo's generated data (tools/uform_synth.c); argv[0] is "synth". */
int uform_command_synth(int argc, char **argv);
/* `uform synth`: replaces the process with uform-synth next to it (tools/synth_exec.c). */
int uform_command_synth_exec(int argc, char **argv);
/* Replaces the process with `program` from the running `uform`'s folder, argv[0] (the command's
 * name) becoming its path; answers 1 (with a message) when it cannot be started. */
int uform_command_exec_sibling(const char *program, int argc, char **argv);

/* `uform serve CKPT ...`: embeddings, search and choices over HTTP (tools/serve/), run by the
 * program uform-serve (tools/serve/serve_program.c); argv[0] is "serve". */
int uform_command_serve(int argc, char **argv);

#endif
