/* The `uform` commands that live in their own files (tools/uform_<command>.c); uform.c dispatches. */
#ifndef UFORM_TOOLS_COMMANDS_H
#define UFORM_TOOLS_COMMANDS_H

/* `uform train ...`: argv[0] is "train". Answers the exit status. */
int uform_command_train(int argc, char **argv);

/* `uform synth DIR ...`: the demo's generated data (tools/uform_synth.c); argv[0] is "synth". */
int uform_command_synth(int argc, char **argv);
/* `uform synth`: replaces the process with uform-synth next to it (tools/synth_exec.c). */
int uform_command_synth_exec(int argc, char **argv);

/* `uform serve CKPT ...`: embeddings, search and choices over HTTP (tools/serve/); argv[0] is "serve". */
int uform_command_serve(int argc, char **argv);

#endif
