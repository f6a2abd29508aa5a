# Install rules (docs/embedding.md): headers, the combined libraries, tensorplan.pc, the CMake
# package tensorplan::tensorplan, the program and its man page. The per-layer libraries are
# this build's own and are not installed. `cmake --install` writes install_manifest.txt in the
# build folder; `make uninstall` removes the files it lists.
include(CMakePackageConfigHelpers)
# One component for every file, so that a check can install it alone
# (`cmake --install build --component tensorplan` writes install_manifest_tensorplan.txt and
# leaves the install_manifest.txt of a real install alone).
set(CMAKE_INSTALL_DEFAULT_COMPONENT_NAME tensorplan)

install(DIRECTORY include/tensorplan DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")

set_target_properties(tensorplan_static PROPERTIES EXPORT_NAME tensorplan_static)
if(TARGET tensorplan_shared)
  set_target_properties(tensorplan_shared PROPERTIES EXPORT_NAME tensorplan_shared)
  set(TP_DEFAULT_LIB tensorplan_shared)
else()
  set(TP_DEFAULT_LIB tensorplan_static)
endif()
install(TARGETS ${TP_LIB_TARGETS} EXPORT tensorplanTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(TP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tensorplan)
install(EXPORT tensorplanTargets NAMESPACE tensorplan:: DESTINATION ${TP_CMAKE_DIR})
string(REPLACE ";" " " TP_PKG_DEPS_WORDS "${TP_PKG_DEPS}")
configure_package_config_file(cmake/tensorplanConfig.cmake.in
    ${CMAKE_BINARY_DIR}/tensorplanConfig.cmake INSTALL_DESTINATION ${TP_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tensorplanConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tensorplanConfig.cmake
              ${CMAKE_BINARY_DIR}/tensorplanConfigVersion.cmake DESTINATION ${TP_CMAKE_DIR})

# pkg-config: -ltensorplan (the shared library when both are installed); --static adds the
# private dependencies.
# The file finds the prefix from its own place, so it stays right under any --prefix.
file(RELATIVE_PATH TP_PC_UP /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" TP_PC_UP "${TP_PC_UP}")
set(TP_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
set(TP_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
string(REPLACE ";" ", " TP_PC_REQUIRES_PRIVATE "${TP_PKG_DEPS}")
configure_file(cmake/tensorplan.pc.in ${CMAKE_BINARY_DIR}/tensorplan.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/tensorplan.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(TP_BUILD_TOOLS)
  install(TARGETS tensorplan_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES docs/tensorplan.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

add_custom_target(uninstall
    COMMAND ${CMAKE_COMMAND} -DTP_MANIFEST=${CMAKE_BINARY_DIR}/install_manifest.txt
            -P ${CMAKE_SOURCE_DIR}/cmake/uninstall.cmake
    COMMENT "Removing the files listed in install_manifest.txt")
