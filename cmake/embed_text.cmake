# embed_text.cmake — turns a text file into a C string constant, so the
# binary carries schema/schema.sql and never looks for it at run time.
#   cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed_text.cmake
file(READ "${IN}" HEX HEX)
string(LENGTH "${HEX}" LEN)
math(EXPR BYTES "${LEN} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," BODY "${HEX}")
file(WRITE "${OUT}" "/* generated from ${IN} by cmake/embed_text.cmake: do not edit */\n")
file(APPEND "${OUT}" "const char ${NAME}[${BYTES} + 1] = {${BODY} 0};\n")
