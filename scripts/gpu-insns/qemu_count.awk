# Instructions of nq_run counted from qemu's log (scripts/bench-gpu-insns.sh, ISA=rv64):
# qemu-riscv64 -d in_asm,exec,nochain writes each translation block once as it is translated
# ("IN:", then one "0x<pc>:  <encoding>  <mnemonic>  <operands>" line an instruction, the block's
# first instruction first, a blank line after) and a "Trace" line each time a block runs (its
# guest pc between the first two slashes of the fourth field). Counted: the instructions of every
# block run from an entry of nq_run (pc == run) until the return into main ([mlo, mhi): pcs as 16
# fixed-width hex digits, so they compare as strings), the functions it calls included, as
# callgrind's --toggle-collect counts on x86. Beside the total, the loads and stores addressed from
# the stack pointer (spills and reloads, and locals kept in memory) and the register copies (mv).
# Prints "instructions stack copies".
/^IN:/ { blk = 1; start = ""; next }
blk && /^0x/ {
  pc = substr($1, 3, 16)
  if (start == "") { start = pc; size[pc] = sp[pc] = mv[pc] = 0 }
  size[start]++
  if ($3 ~ /^(l[bhwd]u?|s[bhwd])$/ && $4 ~ /\(sp\)/) sp[start]++
  if ($3 == "mv") mv[start]++
  next
}
blk && /^$/ { blk = 0; next }
/^Trace/ {
  i = index($4, "/")
  pc = substr($4, i + 1, 16)
  if (!inside) {
    if (pc != run) next
    inside = 1
  } else if (pc >= mlo && pc < mhi) {
    inside = 0
    next
  }
  n += size[pc]; s += sp[pc]; m += mv[pc]
}
END { printf "%.0f %.0f %.0f\n", n, s, m }
