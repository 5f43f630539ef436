# A man page from a program's --help (cmake -P): EXE, PROG, SUMMARY, VERSION, OUT; EMU, the
# emulator that runs EXE in a cross build (qemu-aarch64-static; empty otherwise).
execute_process(COMMAND ${EMU} ${EXE} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --help failed (${rc})")
endif()
# roff: backslashes doubled; a line starting with . or ' would be a request.
string(REPLACE "\\" "\\\\" help "${help}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
string(TOUPPER ${PROG} up)
string(TIMESTAMP year "%Y")
file(WRITE ${OUT} ".TH ${up} 1 \"\" \"nq ${VERSION}\" \"nq\"
.SH NAME
${PROG} \\- ${SUMMARY}
.SH DESCRIPTION
This page is the program's own
.B --help
text.
.PP
.nf
${help}.fi
.SH SEE ALSO
The nq documentation in /usr/share/doc/nq-client and /usr/share/doc/nq-server.
")
