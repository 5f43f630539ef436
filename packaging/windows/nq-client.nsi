; nq-client-setup.exe: the Windows client's installer (NSIS; scripts/build-windows.sh runs
; makensis with -DSRC=<the source tree> -DBUILD=<the build folder> -DVERSION=<x.y.z> -DOUT=<the
; installer's path>).
;
; It installs nq-client.exe, nq-solve.exe, nq-verify.exe and the README into
; %ProgramFiles%\nq, takes the server's address, ca.pem and the enrolment key from an owner's
; bundle (nq-admin owner add NAME --bundle DIR: server.txt, ca.pem, enrol.key; the folder the
; installer is started from, or one the volunteer picks), copies the two files into the
; volunteer's own state folder (%LOCALAPPDATA%\nq-client\setup: readable by that user only), and
; has Task Scheduler start the client at the volunteer's log-on, in a minimised console window
; (closing it, logging off or shutting down saves the running unit's checkpoint). The
; uninstaller stops the client, removes the task and the programs, and asks whether to keep the
; state folder (the enrolment and any unit in progress).

Unicode true
!ifndef VERSION
  !define VERSION 0.1.0
!endif
!ifndef OUT
  !define OUT nq-client-setup.exe
!endif
Name "nq-client ${VERSION}"
OutFile "${OUT}"
InstallDir "$PROGRAMFILES64\nq"
RequestExecutionLevel admin
SetCompressor /SOLID lzma
ShowInstDetails show

!include "LogicLib.nsh"
!include "FileFunc.nsh"

Var Bundle
Var Server

Page directory
Page instfiles
UninstPage uninstConfirm
UninstPage instfiles

; The bundle: server.txt's first line, ca.pem and enrol.key, beside the installer or picked.
Function FindBundle
  StrCpy $Bundle "$EXEDIR"
  ${IfNot} ${FileExists} "$Bundle\server.txt"
  ${OrIfNot} ${FileExists} "$Bundle\ca.pem"
  ${OrIfNot} ${FileExists} "$Bundle\enrol.key"
    nsDialogs::SelectFolderDialog "The folder of your nq bundle (server.txt, ca.pem, enrol.key)" "$EXEDIR"
    Pop $Bundle
  ${EndIf}
  ${IfNot} ${FileExists} "$Bundle\server.txt"
  ${OrIfNot} ${FileExists} "$Bundle\ca.pem"
  ${OrIfNot} ${FileExists} "$Bundle\enrol.key"
    MessageBox MB_OK|MB_ICONSTOP "No nq bundle (server.txt, ca.pem, enrol.key) in $Bundle. Ask the project for yours."
    Abort
  ${EndIf}
  FileOpen $0 "$Bundle\server.txt" r
  FileRead $0 $Server
  FileClose $0
  ; the line without its end
  trim:
    StrCpy $1 $Server 1 -1
    ${If} $1 == "$\n"
    ${OrIf} $1 == "$\r"
      StrCpy $Server $Server -1
      Goto trim
    ${EndIf}
  ${If} $Server == ""
    MessageBox MB_OK|MB_ICONSTOP "$Bundle\server.txt names no server."
    Abort
  ${EndIf}
FunctionEnd

Section "nq-client"
  SetShellVarContext current
  Call FindBundle
  SetOutPath "$INSTDIR"
  File "${BUILD}\nq-client.exe"
  File "${BUILD}\nq-solve.exe"
  File "${BUILD}\nq-verify.exe"
  File /oname=README.txt "${SRC}\packaging\windows\README.txt"
  CreateDirectory "$LOCALAPPDATA\nq-client\setup"
  CopyFiles /SILENT "$Bundle\ca.pem" "$LOCALAPPDATA\nq-client\setup\ca.pem"
  CopyFiles /SILENT "$Bundle\enrol.key" "$LOCALAPPDATA\nq-client\setup\enrol.key"
  WriteUninstaller "$INSTDIR\uninstall.exe"
  ; Started at this user's log-on, minimised; --name is the machine's name.
  nsExec::ExecToLog 'schtasks /Create /F /TN nq-client /SC ONLOGON /RL LIMITED /TR "cmd /c start \"nq-client\" /min \"$INSTDIR\nq-client.exe\" --server $Server --ca \"$LOCALAPPDATA\nq-client\setup\ca.pem\" --enrol-file \"$LOCALAPPDATA\nq-client\setup\enrol.key\" --name %COMPUTERNAME%"'
  Pop $0
  ${If} $0 != 0
    MessageBox MB_OK|MB_ICONEXCLAMATION "Task Scheduler refused the log-on task (error $0): start $INSTDIR\nq-client.exe yourself (README.txt)."
  ${EndIf}
  nsExec::ExecToLog 'schtasks /Run /TN nq-client'
  Pop $0
  WriteRegStr HKLM "Software\Microsoft\Windows\CurrentVersion\Uninstall\nq-client" "DisplayName" "nq-client ${VERSION}"
  WriteRegStr HKLM "Software\Microsoft\Windows\CurrentVersion\Uninstall\nq-client" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKLM "Software\Microsoft\Windows\CurrentVersion\Uninstall\nq-client" "DisplayVersion" "${VERSION}"
SectionEnd

Section "Uninstall"
  SetShellVarContext current
  nsExec::ExecToLog 'schtasks /End /TN nq-client'
  Pop $0
  nsExec::ExecToLog 'schtasks /Delete /TN nq-client /F'
  Pop $0
  ; The client checkpoints on the console's close; a forced end loses at most the last interval.
  nsExec::ExecToLog 'taskkill /IM nq-client.exe /T'
  Pop $0
  Sleep 2000
  nsExec::ExecToLog 'taskkill /F /IM nq-client.exe /T'
  Pop $0
  Delete "$INSTDIR\nq-client.exe"
  Delete "$INSTDIR\nq-solve.exe"
  Delete "$INSTDIR\nq-verify.exe"
  Delete "$INSTDIR\README.txt"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
  DeleteRegKey HKLM "Software\Microsoft\Windows\CurrentVersion\Uninstall\nq-client"
  MessageBox MB_YESNO|MB_ICONQUESTION "Remove the state folder too ($LOCALAPPDATA\nq-client: this machine's enrolment and the unit in progress)?" IDNO keep
    RMDir /r "$LOCALAPPDATA\nq-client"
  keep:
SectionEnd
