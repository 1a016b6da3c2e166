# PathlockInstall.cmake: install rules, the CMake package, pathlock.pc and
# the Debian package. Included by CMakeLists.txt when PATHLOCK_INSTALL is ON
# (the default at top level). docs/packaging.md describes the layout:
#
#   bin/pathlock, bin/pathlock-matrixc
#   include/pathlock/*.hpp (with the generated version.hpp)
#   <libdir>/libpathlock.a, libpathlock_matrix.a (pathlock::matrix: pathlock/matrix.hpp)
#   <libdir>/cmake/pathlock/   pathlockConfig*.cmake, pathlockTargets*.cmake,
#                              PathlockMatrix.cmake, pathlock_matrix_check.cpp
#                              and its two headers
#   <libdir>/pkgconfig/pathlock.pc
#   share/pathlock/lua/        Lua templates (pathlock_compile_matrix reads them)
#   share/pathlock/redis/      the Redis side generated from the shipped matrix
#   share/pathlock/matrix/     cloud-drive.json, matrix.schema.json
#   share/pathlock/test-vectors/ paths.json, matrix-cases.json (for other clients)
#   share/doc/pathlock/        README, docs/ and the files they link to
#
# Extending: a new public target goes into install(TARGETS ... EXPORT
# pathlockTargets); a new private link dependency of `pathlock` must either
# be build-only ($<BUILD_INTERFACE:...>) or be found by consumers in
# cmake/pathlockConfig.cmake.in and listed in pathlock.pc's Requires.
include(CMakePackageConfigHelpers)

set(PATHLOCK_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/pathlock" CACHE STRING
    "Where pathlockConfig.cmake is installed (relative to the prefix)")
set(PATHLOCK_INSTALL_LUADIR "${CMAKE_INSTALL_DATADIR}/pathlock/lua")
set(PATHLOCK_INSTALL_REDISDIR "${CMAKE_INSTALL_DATADIR}/pathlock/redis")
set(PATHLOCK_INSTALL_MATRIXDIR "${CMAKE_INSTALL_DATADIR}/pathlock/matrix")

# Libraries, programs and their export set.
set_target_properties(pathlock_cli PROPERTIES EXPORT_NAME pathlock-cli)
install(TARGETS pathlock pathlock_matrix_model pathlock_headers pathlock-matrixc pathlock_cli
        EXPORT pathlockTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT pathlockTargets NAMESPACE pathlock:: DESTINATION ${PATHLOCK_INSTALL_CMAKEDIR})

# Public headers.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/pathlock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
install(FILES ${PROJECT_BINARY_DIR}/include/pathlock/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pathlock)

# The CMake package.
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/pathlockConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/pathlockConfig.cmake
                              INSTALL_DESTINATION ${PATHLOCK_INSTALL_CMAKEDIR}
                              PATH_VARS PATHLOCK_INSTALL_LUADIR PATHLOCK_INSTALL_REDISDIR PATHLOCK_INSTALL_MATRIXDIR)
# 0.x: a new minor version may break the API, so only the same major.minor
# satisfies find_package(pathlock 0.2); from 1.0 on, any 1.x satisfies
# find_package(pathlock 1.y) for y up to its own minor (semantic versioning).
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(pathlock_version_compatibility SameMinorVersion)
else()
  set(pathlock_version_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pathlockConfigVersion.cmake
                                 COMPATIBILITY ${pathlock_version_compatibility})
install(FILES ${PROJECT_BINARY_DIR}/pathlockConfig.cmake ${PROJECT_BINARY_DIR}/pathlockConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/tools/cmake/PathlockMatrix.cmake
              ${PROJECT_SOURCE_DIR}/tools/cmake/pathlock_matrix_check.cpp
              ${PROJECT_SOURCE_DIR}/tools/cmake/pathlock_matrix_cases.hpp
              ${PROJECT_SOURCE_DIR}/tools/cmake/pathlock_child_process.hpp
        DESTINATION ${PATHLOCK_INSTALL_CMAKEDIR})

# Data: Lua templates, the shipped matrix, and its generated Redis side for
# services written in other languages (docs/lua-protocol.md). Redis hook: the
# generated Redis outputs are the directory in the target property
# PATHLOCK_MATRIX_REDIS_DIR (tools/cmake/PathlockMatrix.cmake).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/lua/ DESTINATION ${PATHLOCK_INSTALL_LUADIR}
        FILES_MATCHING PATTERN "*.lua" PATTERN "*.luainc" PATTERN "README.md")
get_target_property(pathlock_shipped_redis_dir pathlock_cloud_drive PATHLOCK_MATRIX_REDIS_DIR)
install(DIRECTORY ${pathlock_shipped_redis_dir}/ DESTINATION ${PATHLOCK_INSTALL_REDISDIR})
install(FILES ${PROJECT_SOURCE_DIR}/matrix/cloud-drive.json ${PROJECT_SOURCE_DIR}/matrix/matrix.schema.json
        DESTINATION ${PATHLOCK_INSTALL_MATRIXDIR})
# Test vectors for clients in other languages: paths.json, matrix-cases.json
# (docs/lua-protocol.md#test-vectors).
install(FILES ${PATHLOCK_VECTORS_DIR}/paths.json ${PATHLOCK_VECTORS_DIR}/matrix-cases.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/pathlock/test-vectors)
# The documentation, in the source tree's layout so that its relative links
# work where it is installed: README, docs/, and every file they link to
# (tests/consumer/run.cmake checks each link of the installed pages).
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md" PATTERN "*.png"
        PATTERN "*.cpp" PATTERN "*.yml")
foreach(linked CHANGELOG.md matrix/README.md matrix/cloud-drive.json matrix/matrix.schema.json src/README.md tests/README.md
               tools/dev/bench/README.md tools/release/README.md tests/release/README.md)
  get_filename_component(linked_dir ${linked} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${linked} DESTINATION ${CMAKE_INSTALL_DOCDIR}/${linked_dir})
endforeach()

# The license: LICENSE as it is, and Debian's copyright file (machine-readable
# format, License: MIT with the full text) at share/doc/pathlock/copyright.
file(READ ${PROJECT_SOURCE_DIR}/LICENSE pathlock_license_text)
string(REGEX MATCH "Copyright \\(c\\) [^\n]*" pathlock_copyright_line "${pathlock_license_text}")
string(REGEX REPLACE "^Copyright \\(c\\) " "" pathlock_copyright_holder "${pathlock_copyright_line}")
string(REGEX REPLACE "\n\n" "\n.\n" pathlock_license_deb "${pathlock_license_text}")
string(REGEX REPLACE "\n([^\n])" "\n \\1" pathlock_license_deb "${pathlock_license_deb}")
file(WRITE ${PROJECT_BINARY_DIR}/debian-copyright
"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: pathlock

Files: *
Copyright: ${pathlock_copyright_holder}
License: MIT

License: MIT
 ${pathlock_license_deb}")
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_BINARY_DIR}/debian-copyright DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)

# The Functions library of every matrix under matrix/ (the shipped one
# included), as share/pathlock/redis/<file name>.lua: the text pathlock-matrixc
# writes, loadable with `redis-cli -x FUNCTION LOAD < FILE` (tools/release.sh
# copies them into dist/redis/, docs/release.md).
file(GLOB pathlock_matrix_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/matrix/*.json)
list(FILTER pathlock_matrix_files EXCLUDE REGEX "/matrix\\.schema\\.json$")
set(pathlock_matrix_libraries "")
foreach(matrix_json ${pathlock_matrix_files})
  get_filename_component(matrix_stem ${matrix_json} NAME_WE)
  set(matrix_lua ${PROJECT_BINARY_DIR}/matrix-libraries/${matrix_stem}.lua)
  add_custom_command(OUTPUT ${matrix_lua}
                     COMMAND pathlock-matrixc --json ${matrix_json} --source-name matrix/${matrix_stem}.json
                             --lua ${matrix_lua}
                     DEPENDS pathlock-matrixc ${matrix_json}
                     COMMENT "Functions library of matrix/${matrix_stem}.json" VERBATIM)
  list(APPEND pathlock_matrix_libraries ${matrix_lua})
endforeach()
add_custom_target(pathlock_matrix_libraries ALL DEPENDS ${pathlock_matrix_libraries})
install(FILES ${pathlock_matrix_libraries} DESTINATION ${PATHLOCK_INSTALL_REDISDIR})
# The matrix files themselves beside the shipped one (installed above).
list(FILTER pathlock_matrix_files EXCLUDE REGEX "/cloud-drive\\.json$")
if(pathlock_matrix_files)
  install(FILES ${pathlock_matrix_files} DESTINATION ${PATHLOCK_INSTALL_MATRIXDIR})
endif()

# pathlock.pc: written at install time, so its prefix is the one installed
# into (cmake --install --prefix DIR, or /usr inside the Debian package).
# The optional libraries, as pkg-config modules and as the Debian -dev
# packages the .deb recommends (below).
set(PATHLOCK_PC_REQUIRES "fmt")
set(pathlock_optional_dev "")
foreach(part "REDIS;hiredis libssl libcrypto;libhiredis-dev, libssl-dev, " "METRICS_SERVER;cpp-httplib;libcpp-httplib-dev, "
            "POSTGRES;libpq;libpq-dev, ")
  list(GET part 0 option)
  list(GET part 1 modules)
  list(GET part 2 dev)
  if(PATHLOCK_WITH_${option})
    string(APPEND PATHLOCK_PC_REQUIRES " ${modules}")
    string(APPEND pathlock_optional_dev "${dev}")
  endif()
endforeach()
foreach(dir LIBDIR INCLUDEDIR DATADIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(PATHLOCK_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(PATHLOCK_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
set(PATHLOCK_PC_PREFIX "@PATHLOCK_PC_PREFIX@")  # kept for the install step
configure_file(${PROJECT_SOURCE_DIR}/pathlock.pc.in ${PROJECT_BINARY_DIR}/pathlock.pc.in @ONLY)
install(CODE "
  set(PATHLOCK_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(pc \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/pathlock.pc\")
  message(STATUS \"Installing: \${pc}\")
  configure_file(\"${PROJECT_BINARY_DIR}/pathlock.pc.in\" \"\${pc}\" @ONLY)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${pc}\")
")

# The Debian package: `cpack -G DEB` in the build directory (docs/packaging.md).
# Only at top level: a parent project's own CPack settings are left alone.
if(NOT PROJECT_IS_TOP_LEVEL)
  return()
endif()
set(CPACK_PACKAGE_NAME pathlock)
set(CPACK_PACKAGE_VENDOR "pathlock")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")  # MIT; the .deb carries it as share/doc/pathlock/copyright
set(CPACK_PACKAGE_CONTACT "pathlock maintainers <dev@pathlock.invalid>" CACHE STRING "Debian Maintainer field")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
# The synopsis is CPACK_PACKAGE_DESCRIPTION_SUMMARY; this is the long text.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "pathlock decides which operations on a tree of folders may run at the same
time, from a compatibility matrix compiled at build time. Two backends: in
process, and Redis shared by many service instances.

This package holds the static library, its headers, the CMake package
(find_package(pathlock)), pathlock.pc, the command-line tool pathlock,
the matrix compiler pathlock-matrixc and the generated Redis scripts.")
# libc6, libstdc++6, libfmt9, (with Redis) libhiredis0.14 and libssl3, and (with
# the metrics server) libcpp-httplib0.11 come from
# dpkg-shlibdeps on the two programs. Building against the static library
# also needs the -dev packages of what it links; apt installs Recommends by
# default. fonts-noto-cjk: the matrix renderings and the console show the
# shipped matrix's Chinese labels in "Noto Sans CJK SC" (without a CJK font
# they are empty boxes).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(pathlock_recommends "${pathlock_optional_dev}libfmt-dev, cmake | pkg-config, fonts-noto-cjk")
if(PATHLOCK_WITH_REDIS)
  set(CPACK_DEBIAN_PACKAGE_SUGGESTS "redis-server")
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "${pathlock_recommends}")
include(CPack)
