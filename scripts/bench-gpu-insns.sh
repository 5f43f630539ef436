#!/usr/bin/env bash
# Instructions per node of the GPU kernel, without a GPU: the kernel's own source
# (common/solver/gpu_kernel.cl) compiled as C through scripts/gpu-insns/cl_shim.h into a small
# driver (scripts/gpu-insns/gpu_insns.c) that runs N's units at the depth the host's expansion
# reaches (every k-th of them, about RECORDS), counted under callgrind (only the kernel function
# nq_run: deterministic, whatever the machine's load), divided by the kernel's own node count.
# Each kernel's run is first checked exact natively: every record's counts and nodes equal
# nq_fast_solve_unit's. Beside it, the PTX of the same source (clang-14 -target nvptx64):
# the kernel's instructions and those of its main loop (scripts/gpu-insns/ptx_loop.py).
# The C is compiled with -O2 -mpopcnt -mlzcnt -mbmi: a GPU has popcount, count-leading-zeros and
# and-not (lop3) as single instructions, as these make them on x86. A CPU instruction count is not
# a GPU's time (x86 has 16 registers where a GPU thread has up to 255: spills count here); it
# compares kernels on one scale (docs/gpu.md, "Instructions per node").
# ISA=rv64 counts the same program on a second scale: RISC-V RV64GC with Zbb (clang-14
# --target=riscv64-linux-gnu -march=rv64gc_zbb -O2, linked static with the solver's sources it
# needs), run under qemu-riscv64-static and counted from qemu's log of the blocks it runs
# (scripts/gpu-insns/qemu_count.awk): 31 registers and three-operand instructions where x86 has
# 16 and two, and one instruction for popcount, min, and-not and clz, as on a GPU. It also prints
# the share of loads and stores from the stack pointer (spills, reloads, locals in memory) and of
# register copies, and the count per node without them. Needs gcc-riscv64-linux-gnu (its libc)
# and qemu-user-static (installed when missing); a kernel takes 2-4 minutes at N=16, 15-45 at N=18.
#
#   scripts/bench-gpu-insns.sh [N ...]          (default: 16 17 18)
# env: BASE=<git rev>   also measure the kernel at that commit (git show REV:common/solver/gpu_kernel.cl)
#      KERNELS="a.cl b.cl" kernel sources to measure instead of the working tree's
#      RECORDS=2048     records sampled per N
#      BUILD=build      the build whose libnqsolver.a / libnqutil.a the driver links
#      ISA=x86|rv64     the instruction set counted (default x86, callgrind; rv64: qemu, above)
#      EXTRA="flags"    more compiler flags for the kernel's C (e.g. -fno-slp-vectorize): the same
#                       program under another of the compiler's choices (docs/gpu.md: the count
#                       moves by a few per cent with the register allocation alone)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
BUILD=${BUILD:-build}
RECORDS=${RECORDS:-2048}
NS=("$@")
[ ${#NS[@]} -gt 0 ] || NS=(16 17 18)
CC=${CC_CL:-clang-14}
ISA=${ISA:-x86}
command -v "$CC" >/dev/null || { echo "bench-gpu-insns: $CC missing (apt-get install clang-14)" >&2; exit 1; }
case $ISA in
x86)
  command -v valgrind >/dev/null || { echo "bench-gpu-insns: valgrind missing" >&2; exit 1; }
  if [ ! -f "$BUILD/libnqsolver.a" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$BUILD" -j2 --target nqsolver nqutil >/dev/null
  fi
  ;;
rv64) apt_need bench-gpu-insns gcc-riscv64-linux-gnu qemu-user-static ;;
*) echo "bench-gpu-insns: ISA is x86 or rv64" >&2; exit 2 ;;
esac
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

declare -a LABELS SRCS
if [ -n "${BASE:-}" ]; then
  git show "$BASE:common/solver/gpu_kernel.cl" >"$TMP/base.cl"
  LABELS+=("base:$(git rev-parse --short "$BASE")")
  SRCS+=("$TMP/base.cl")
fi
if [ -n "${KERNELS:-}" ]; then
  for k in $KERNELS; do LABELS+=("$(basename "$k")"); SRCS+=("$(cd "$(dirname "$k")" && pwd)/$(basename "$k")"); done
else
  LABELS+=("tree")
  SRCS+=("$PWD/common/solver/gpu_kernel.cl")
fi

ROWS=$(awk '/define NQ_GPU_ROWS_MAX/{print $3}' common/solver/include/nq/gpu.h)
if [ "$ISA" = rv64 ]; then
  printf '%-14s %3s %8s %12s %14s %10s %6s %6s %10s  %s\n' kernel N records nodes instructions insns/node stack copies w/o-both check
else
  printf '%-14s %3s %8s %12s %14s %10s  %s\n' kernel N records nodes instructions insns/node check
fi
# The solver's sources the driver needs (units, the reference check), built into the rv64 program.
RV_SRCS=(common/solver/unit.c common/solver/solver_ref.c common/solver/solver_fast.c
  common/solver/solver_batch.c common/solver/solver_scalar.c common/solver/totals.c
  common/util/nq.c common/util/switches.c)
QEMU_RV=(qemu-riscv64-static -cpu "rv64,zbb=true")
for i in "${!SRCS[@]}"; do
  src=${SRCS[$i]} label=${LABELS[$i]} exe="$TMP/gi$i"
  if [ "$ISA" = rv64 ]; then
    # shellcheck disable=SC2086 # EXTRA: several flags
    "$CC" --target=riscv64-linux-gnu -march=rv64gc_zbb -O2 -static ${EXTRA:-} -w \
      -Iscripts/gpu-insns -Icommon/solver/include -Icommon/util/include \
      -DNQ_KERNEL_SRC="\"$src\"" -DNQ_ROWS="$ROWS" scripts/gpu-insns/gpu_insns.c "${RV_SRCS[@]}" -o "$exe"
    read -r mlo msz <<<"$(riscv64-linux-gnu-nm -S "$exe" | awk '$4 == "main" {print $1, $2}')"
    run=$(riscv64-linux-gnu-nm "$exe" | awk '$3 == "nq_run" {print $1}')
    mhi=$(printf '%016x' $((0x$mlo + 0x$msz)))
    for n in "${NS[@]}"; do
      chk=$("${QEMU_RV[@]}" "$exe" "$n" --records "$RECORDS" --check) ||
        { echo "$label N=$n: NOT EXACT: $chk"; exit 1; }
      rm -f "$TMP/log"
      mkfifo "$TMP/log"
      LC_ALL=C awk -v run="$run" -v mlo="$mlo" -v mhi="$mhi" -f scripts/gpu-insns/qemu_count.awk \
        "$TMP/log" >"$TMP/cnt" &
      "${QEMU_RV[@]}" -d in_asm,exec,nochain -D "$TMP/log" "$exe" "$n" --records "$RECORDS" >"$TMP/out"
      wait
      read -r ins stk cps <"$TMP/cnt"
      read -r _ recs _ _ _ nodes _ <"$TMP/out"
      read -r per pstk pcps rest <<<"$(python3 -c "print($ins / $nodes, 100 * $stk / $ins, \
        100 * $cps / $ins, ($ins - $stk - $cps) / $nodes)")"
      printf '%-14s %3d %8d %12d %14d %10.2f %5.1f%% %5.1f%% %10.2f  %s\n' "$label" "$n" "$recs" \
        "$nodes" "$ins" "$per" "$pstk" "$pcps" "$rest" "$(awk '{print $NF}' <<<"$chk")"
    done
  else
    # shellcheck disable=SC2086 # EXTRA: several flags
    "$CC" -O2 -mpopcnt -mlzcnt -mbmi ${EXTRA:-} -w -Iscripts/gpu-insns -Icommon/solver/include -Icommon/util/include \
      -DNQ_KERNEL_SRC="\"$src\"" -DNQ_ROWS="$ROWS" scripts/gpu-insns/gpu_insns.c \
      -L"$BUILD" -lnqsolver -lnqutil -lpthread -lm -o "$exe"
    for n in "${NS[@]}"; do
      chk=$("$exe" "$n" --records "$RECORDS" --check) || { echo "$label N=$n: NOT EXACT: $chk"; exit 1; }
      valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" --collect-atstart=no \
        --toggle-collect=nq_run "$exe" "$n" --records "$RECORDS" >"$TMP/out" 2>"$TMP/err"
      ins=$(awk '/^summary:/{print $2}' "$TMP/cg")
      read -r _ recs _ _ _ nodes _ <<<"$(cat "$TMP/out")"
      printf '%-14s %3d %8d %12d %14d %10.2f  %s\n' "$label" "$n" "$recs" "$nodes" "$ins" \
        "$(python3 -c "print($ins / $nodes)")" "$(awk '{print $NF}' <<<"$chk")"
    done
  fi
  "$CC" -target nvptx64 -x cl -cl-std=CL1.2 -Xclang -finclude-default-header \
    -include scripts/gpu-insns/ptx_builtins.h -O3 -DNQ_ROWS="$ROWS" -S -o "$TMP/k$i.ptx" "$src"
  echo "$label $(python3 scripts/gpu-insns/ptx_loop.py "$TMP/k$i.ptx")"
done
