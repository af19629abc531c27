# embed.cmake - turns a file into a C array: cmake -DINPUT=f -DOUTPUT=f.c -DNAME=sym -P embed.cmake
# Defines `const unsigned char NAME[]` and `const unsigned long NAME_len`.
# SPDX-License-Identifier: Apache-2.0
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR len "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}" "/* Generated from ${INPUT} by cmake/embed.cmake; do not edit. */\n"
     "const unsigned char ${NAME}[] = {\n${bytes}0x00 };\n"
     "const unsigned long ${NAME}_len = ${len};\n")
