# What `make install` and the Debian packages hold (scripts/package builds
# them with CPack). Two packages, as Debian splits a library: `chock` (the
# commands, the fetcher, the manual pages and completions; the static
# binaries need nothing at run time, the fetcher its libcurl) and
# `libchock-dev` (the static library, its headers, CMake package and
# pkg-config file, for programs that embed the sandbox).
include(GNUInstallDirs)
install(TARGETS chock chock-connect RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS chock-fetch-hop chock-helper chock-git RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/chock COMPONENT runtime)
install(TARGETS chock_lib EXPORT chockTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
# CPack strips executables only: the archive's debug information (some 150 MB) stays in the build.
install(CODE "execute_process(COMMAND strip --strip-debug \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/libchock.a\")"
        COMPONENT dev)
install(DIRECTORY include/chock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(EXPORT chockTargets NAMESPACE chock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/chock COMPONENT dev)
configure_file(cmake/chockConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/chockConfig.cmake @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/chockConfig.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/chock
        COMPONENT dev)
configure_file(cmake/chock.pc.in ${CMAKE_CURRENT_BINARY_DIR}/chock.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/chock.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# The completion scripts, printed by the chock just built.
set(CHOCK_COMPLETIONS ${CMAKE_BINARY_DIR}/completion/chock ${CMAKE_BINARY_DIR}/completion/_chock)
add_custom_command(OUTPUT ${CHOCK_COMPLETIONS}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/completion
  COMMAND sh -c "$<TARGET_FILE:chock> completion bash > ${CMAKE_BINARY_DIR}/completion/chock"
  COMMAND sh -c "$<TARGET_FILE:chock> completion zsh > ${CMAKE_BINARY_DIR}/completion/_chock"
  DEPENDS chock COMMENT "Writing the completion scripts" VERBATIM)
add_custom_target(chock_completions ALL DEPENDS ${CHOCK_COMPLETIONS})
install(FILES ${CMAKE_BINARY_DIR}/completion/chock DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        COMPONENT runtime)
install(FILES ${CMAKE_BINARY_DIR}/completion/_chock DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions
        COMPONENT runtime)
if(CHOCK_SCDOC)
  install(FILES ${CMAKE_BINARY_DIR}/man/chock.1 ${CMAKE_BINARY_DIR}/man/chock-connect.1
          DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
  install(FILES ${CMAKE_BINARY_DIR}/man/chock.zon.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5 COMPONENT runtime)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME chock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "Chock")
set(CPACK_PACKAGE_CONTACT "Chock developers <chock@invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)  # the build keeps its debug information; the package does not
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/chock-sandbox/chock")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME chock)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)  # the fetcher's libcurl; chock and chock-connect are static
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "git")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "A sandbox for AI-agent tool calls\n Chock runs each tool call of an agent in a throwaway copy of the project,\n behind namespaces, Landlock, seccomp, resource limits and a closed or\n brokered network; work reaches the project only as commits.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libchock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "nlohmann-json3-dev, libmd-dev, libc-ares-dev, zlib1g-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "Chock's sandbox as a static C++ library\n The library under the chock command: spawn a sandboxed call, read its\n result. Headers, the static library, a CMake package and a pkg-config file.")
include(CPack)
