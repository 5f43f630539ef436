# Install rules and Debian packages (docs/operations.md, "Packages"). Included by CMakeLists.txt.
#
#   cmake -S . -B build-pkg -DCMAKE_INSTALL_PREFIX=/usr && cmake --build build-pkg
#   (cd build-pkg && cpack -G DEB)   -> nq-client_VERSION_ARCH.deb, nq-server_VERSION_ARCH.deb
#
# Components: `client` (nq-client, nq-solve, nq-verify, their man pages, the client unit, the client docs)
# and `server` (nq-server, nq-admin, the schema migrations, the server unit, the system user).
# The client package never needs SQLite; with NQ_CLIENT_ONLY only it is made, and with
# NQ_STATIC_CLIENT its binaries are static and it depends on nothing.

set(NQ_BINDIR ${CMAKE_INSTALL_FULL_BINDIR})
set(NQ_DOCDIR_CLIENT ${CMAKE_INSTALL_FULL_DATADIR}/doc/nq-client)
set(NQ_DOCDIR_SERVER ${CMAKE_INSTALL_FULL_DATADIR}/doc/nq-server)
set(NQ_UNITDIR lib/systemd/system)   # under the prefix: /usr/lib/systemd/system for packages
set(NQ_SYSUSERSDIR ${CMAKE_INSTALL_PREFIX}/lib/sysusers.d)

# Man pages from each program's option table (nq/opts.h): `PROG --man` writes its own, so the
# pages cannot drift from the options; they are built, never checked in.
function(nq_man prog component)
  set(_out ${CMAKE_BINARY_DIR}/man/${prog}.1)
  add_custom_command(OUTPUT ${_out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${prog}> "-DEMU=${CMAKE_CROSSCOMPILING_EMULATOR}"
            -DOUT=${_out} -P ${CMAKE_SOURCE_DIR}/packaging/man.cmake
    DEPENDS ${prog} ${CMAKE_SOURCE_DIR}/packaging/man.cmake VERBATIM)
  add_custom_target(man-${prog} ALL DEPENDS ${_out})
  install(FILES ${_out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
endfunction()

configure_file(${CMAKE_SOURCE_DIR}/packaging/nq-client.service.in
  ${CMAKE_BINARY_DIR}/packaging/nq-client.service @ONLY)
install(TARGETS nq-client nq-solve nq-verify RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT client)
install(FILES ${CMAKE_BINARY_DIR}/packaging/nq-client.service DESTINATION ${NQ_UNITDIR}
  COMPONENT client)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/docs/client.md
  ${CMAKE_SOURCE_DIR}/docs/operations.md ${CMAKE_SOURCE_DIR}/docs/evidence.md DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/nq-client
  COMPONENT client)
nq_man(nq-client client)
nq_man(nq-solve client)
nq_man(nq-verify client)
set(NQ_COMPONENTS client)

if(NOT NQ_CLIENT_ONLY)
  configure_file(${CMAKE_SOURCE_DIR}/packaging/nq-server.service.in
    ${CMAKE_BINARY_DIR}/packaging/nq-server.service @ONLY)
  install(TARGETS nq-server nq-admin RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    COMPONENT server)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/schema/ DESTINATION ${CMAKE_INSTALL_DATADIR}/nq/schema
    COMPONENT server FILES_MATCHING PATTERN "[0-9][0-9][0-9]_*.sql")
  install(FILES ${CMAKE_BINARY_DIR}/packaging/nq-server.service DESTINATION ${NQ_UNITDIR}
    COMPONENT server)
  install(FILES ${CMAKE_SOURCE_DIR}/packaging/nq-server.sysusers DESTINATION lib/sysusers.d
    RENAME nq-server.conf COMPONENT server)
  # The operator's package carries every doc: operations.md links to the others (http.md for
  # the metrics, planning.md for a job's size, ...), and a list by hand left some out (issue 36).
  file(GLOB NQ_SERVER_DOCS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
  install(FILES ${CMAKE_SOURCE_DIR}/README.md ${NQ_SERVER_DOCS}
    DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/nq-server COMPONENT server)
  nq_man(nq-server server)
  nq_man(nq-admin server)
  list(APPEND NQ_COMPONENTS server)
endif()

# ---- CPack: Debian packages ----
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nq)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the nq project")
set(CPACK_PACKAGE_CONTACT "nq maintainers <nq@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed N-Queens counting")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_COMPONENTS_ALL ${NQ_COMPONENTS})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends from the binaries' real shared libraries (dpkg-shlibdeps): libuv1, libjansson4, libssl3
# and libc for both, libsqlite3-0 for the server only; nothing for a static client.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_CLIENT_PACKAGE_NAME nq-client)
# The OpenCL loader is opened at run time (common/solver/ocl_load.c), so it is no dependency: the
# client runs on the CPU without it, and with it uses a GPU whose driver is installed.
set(CPACK_DEBIAN_CLIENT_PACKAGE_RECOMMENDS "ocl-icd-libopencl1")
set(CPACK_COMPONENT_CLIENT_DESCRIPTION "N-Queens volunteer client (nq-client, nq-solve, nq-verify)
nq-client fetches N-Queens work units from an nq-server, solves them at idle priority
(with an optional CPU-use limit and pause file) and reports exact counts. nq-verify checks
a finished job's evidence file with no server and no database.")
set(CPACK_DEBIAN_CLIENT_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/deb/client/postinst
  ${CMAKE_SOURCE_DIR}/packaging/deb/client/prerm)
set(CPACK_DEBIAN_SERVER_PACKAGE_NAME nq-server)
set(CPACK_COMPONENT_SERVER_DESCRIPTION "N-Queens coordinator (nq-server, nq-admin)
nq-server splits an N-Queens count into work units, hands them to volunteers over TLS,
cross-checks redundant results and keeps exact totals in SQLite.")
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS "systemd | adduser")
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/deb/server/postinst
  ${CMAKE_SOURCE_DIR}/packaging/deb/server/prerm)
include(CPack)
