# Turn a text file into a C array (the OpenCL kernel's source is compiled into the binary, so
# nothing is looked up at run time). Usage: cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
file(READ ${IN} _hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" _bytes "${_bytes}")
file(WRITE ${OUT} "/* Made by packaging/embed.cmake from ${IN}: do not edit. */\nconst char ${NAME}[] = {\n${_bytes}0x00};\n")
