# Writes a C file holding a file's bytes (the page of `uform serve`), so the binary needs no files:
#   cmake -DINPUT=page.html -DOUTPUT=page_html.c -DNAME=serve_page_html -P embed.cmake
file(READ ${INPUT} content HEX)
string(LENGTH "${content}" digits)
math(EXPR size "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n" bytes "${bytes}")
file(WRITE ${OUTPUT} "/* Generated from ${INPUT} by tools/serve/embed.cmake: do not edit. */\n#include <stddef.h>\n"
     "const unsigned char ${NAME}[] = {\n${bytes}0};\nconst size_t ${NAME}_size = ${size};\n")
