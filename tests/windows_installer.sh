#!/usr/bin/env bash
# The Windows installer's contents (scripts/build-windows.sh --test): `7z l` lists what
# nq-client-setup.exe (NSIS) installs -- nq-client.exe, nq-solve.exe, nq-verify.exe, README.txt
# and the uninstaller -- and nothing else: no key, no CA (they come from the owner's bundle at
# install time), no DLL (the programs are static).
#
#   bash tests/windows_installer.sh SETUP_EXE
set -euo pipefail
SETUP=${1:?usage: windows_installer.sh SETUP_EXE}
TAG=windows_installer
fail() { echo "$TAG: FAIL: $*"; exit 1; }
[ -s "$SETUP" ] || fail "$SETUP missing"
list=$(7z l -slt "$SETUP") || fail "7z cannot read $SETUP"
# The entries after the archive's own; $PLUGINSDIR holds the installer's own plugins (nsExec,
# nsDialogs), unpacked to a temporary folder while it runs, never installed.
files=$(sed -n 's/^Path = //p' <<<"$list" | tail -n +2 | grep -v '^\$PLUGINSDIR' |
  sed 's|.*[/\\]||' | sort -u | tr '\n' ' ')
want="README.txt nq-client.exe nq-solve.exe nq-verify.exe uninstall.exe "
[ "$files" = "$want" ] || fail "installer files: '$files', want '$want'"
echo "$TAG: nq-client-setup.exe installs: $files($(stat -c %s "$SETUP") bytes)"
