/* The `uform` commands that live in their own files (tools/uform_<command>.c); uform.c dispatches. */
#ifndef UFORM_TOOLS_COMMANDS_H
#define UFORM_TOOLS_COMMANDS_H

/* `uform train ...`: argv[0] is "train". Answers the exit status. */
int uform_command_train(int argc, char **argv);

#endif
