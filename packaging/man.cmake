# A man page from a program's option table (cmake -P): the program writes it itself with its
# hidden --man option (common/util/opts.c, nq_opts_man): NAME, SYNOPSIS, DESCRIPTION, OPTIONS
# (each option's help, bounds, default), ENVIRONMENT. EXE, OUT; EMU, the emulator that runs EXE
# in a cross build (qemu-aarch64-static; empty otherwise).
execute_process(COMMAND ${EMU} ${EXE} --man OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --man failed (${rc})")
endif()
