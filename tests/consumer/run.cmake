# Packaging test (CTest `packaging_consumers`, tests/CMakeLists.txt):
#   cmake -DPATHLOCK_SOURCE_DIR=... -DPATHLOCK_BINARY_DIR=... -DWORK_DIR=... -DWITH_REDIS=ON|OFF -P run.cmake
# 1. installs the built tree into WORK_DIR/prefix (cmake --install --prefix);
# 2. builds tests/consumer against it with find_package and runs its tests
#    (the matrix-derived cases of its own matrix on every backend, the app,
#    the installed CLI);
# 3. builds app.cpp with `pkg-config --cflags --libs pathlock` and runs it;
# 4. builds tests/consumer with pathlock as a subproject (add_subdirectory),
#    PATHLOCK_WITH_REDIS=OFF and no build type, and runs its tests;
# 5. builds README.md's snippets as written: its C++ example, its
#    find_package snippet against the prefix, its FetchContent snippet.
# After step 1 it also checks the installed tree as a new user meets it:
# `pathlock --help` names the installed matrix, and every relative link of
# the installed documentation leads to an installed file.
# Steps 2 and 4 compile only what they need, with -j2 ($PATHLOCK_JOBS or
# $CMAKE_BUILD_PARALLEL_LEVEL overrides).
foreach(var PATHLOCK_SOURCE_DIR PATHLOCK_BINARY_DIR WORK_DIR WITH_REDIS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()
set(jobs 2)
if(DEFINED ENV{PATHLOCK_JOBS})
  set(jobs $ENV{PATHLOCK_JOBS})
elseif(DEFINED ENV{CMAKE_BUILD_PARALLEL_LEVEL})
  set(jobs $ENV{CMAKE_BUILD_PARALLEL_LEVEL})
endif()
set(consumer ${PATHLOCK_SOURCE_DIR}/tests/consumer)
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(step name)
  message(STATUS "[${name}] ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "[${name}] failed (${rc}): ${ARGN}")
  endif()
endfunction()

# 1. Install.
step(install ${CMAKE_COMMAND} --install ${PATHLOCK_BINARY_DIR} --prefix ${prefix})
foreach(f bin/pathlock bin/pathlock-matrixc include/pathlock/version.hpp include/pathlock/engine.hpp
          share/pathlock/lua/acquire.lua share/pathlock/matrix/cloud-drive.json)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "[install] ${f} is missing from the installed tree")
  endif()
endforeach()
file(GLOB redis_outputs ${prefix}/share/pathlock/redis/*.lua)
file(GLOB_RECURSE pc_files ${prefix}/*/pathlock.pc)
file(GLOB_RECURSE config_files ${prefix}/*/pathlockConfig.cmake)
if(NOT redis_outputs OR NOT pc_files OR NOT config_files)
  message(FATAL_ERROR "[install] missing: Redis outputs '${redis_outputs}', pathlock.pc '${pc_files}', "
                      "pathlockConfig.cmake '${config_files}'")
endif()

# The installed CLI's default matrix is the installed one, not the source tree's.
execute_process(COMMAND ${prefix}/bin/pathlock --help RESULT_VARIABLE rc OUTPUT_VARIABLE help)
if(NOT rc EQUAL 0 OR NOT help MATCHES "\n  ${prefix}/share/pathlock/matrix/cloud-drive.json\n"
   OR help MATCHES "${PATHLOCK_SOURCE_DIR}/matrix/cloud-drive.json")
  message(FATAL_ERROR "[install] pathlock --help does not name the installed matrix (${rc}):\n${help}")
endif()
step(install ${prefix}/bin/pathlock matrix lint)
# Every relative link of the installed documentation resolves.
file(GLOB_RECURSE installed_docs ${prefix}/share/doc/pathlock/*.md)
if(NOT installed_docs)
  message(FATAL_ERROR "[install] no documentation installed")
endif()
foreach(doc ${installed_docs})
  file(READ ${doc} text)
  get_filename_component(doc_dir ${doc} DIRECTORY)
  # Semicolons and brackets would split or nest CMake lists: mark links first.
  string(REPLACE "](" "@LINK@(" text "${text}")
  string(REGEX REPLACE "[][;]" " " text "${text}")
  string(REGEX MATCHALL "@LINK@\\([^) \t#][^) \t]*\\)" links "${text}")
  foreach(link ${links})
    string(REGEX REPLACE "^@LINK@\\(([^)#]*).*\\)$" "\\1" target "${link}")
    if(target MATCHES "^[a-z]+:" OR target STREQUAL "")
      continue()
    endif()
    if(NOT EXISTS ${doc_dir}/${target})
      message(FATAL_ERROR "[install] ${doc} links to ${target}, which is not installed")
    endif()
  endforeach()
endforeach()

# 2. find_package.
set(build ${WORK_DIR}/find_package)
step(find_package ${CMAKE_COMMAND} -S ${consumer} -B ${build} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
step(find_package ${CMAKE_COMMAND} --build ${build} -j${jobs})
step(find_package ${CMAKE_CTEST_COMMAND} --test-dir ${build} --output-on-failure)
if(WITH_REDIS)
  # The Redis run must have run, not skipped: the consumer's matrix on a real server.
  execute_process(COMMAND ${build}/consumer_rules_matrix_check --backend redis RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "on redis: 27 cases, [0-9]+ refused, 0 failed")
    message(FATAL_ERROR "[find_package] the matrix check on Redis did not pass (${rc}): ${out}")
  endif()
endif()

# 3. pkg-config.
find_program(PKG_CONFIG NAMES pkg-config pkgconf REQUIRED)
get_filename_component(pc_dir ${pc_files} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs pathlock RESULT_VARIABLE rc OUTPUT_VARIABLE flags
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "[pkg-config] pkg-config --cflags --libs pathlock failed")
endif()
execute_process(COMMAND ${PKG_CONFIG} --modversion pathlock OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE)
separate_arguments(flags UNIX_COMMAND "${flags}")
find_program(CXX NAMES c++ g++ REQUIRED)
step(pkg-config ${CXX} -std=c++20 -DPATHLOCK_PKG_CONFIG "-DPATHLOCK_EXPECTED_VERSION=\"${version}\""
     ${consumer}/app.cpp -o ${WORK_DIR}/app_pkg_config ${flags})
step(pkg-config ${WORK_DIR}/app_pkg_config)

# 4. add_subdirectory, without Redis.
set(build ${WORK_DIR}/subproject)
step(subproject ${CMAKE_COMMAND} -S ${consumer} -B ${build} -DPATHLOCK_SOURCE=${PATHLOCK_SOURCE_DIR}
     -DPATHLOCK_WITH_REDIS=OFF -DCONSUMER_EXPECT_BUILD_TYPE_EMPTY=ON)
step(subproject ${CMAKE_COMMAND} --build ${build} -j${jobs})
step(subproject ${CMAKE_CTEST_COMMAND} --test-dir ${build} --output-on-failure)
if(EXISTS ${build}/bin)
  message(FATAL_ERROR "[subproject] pathlock wrote into the parent's bin/ directory")
endif()
# 5. README.md's snippets, taken from the text: the C++ example becomes the
# body of main(), and each CMake snippet the end of a project's
# CMakeLists.txt that defines my_service (and has rules.json beside it).
file(READ ${PATHLOCK_SOURCE_DIR}/README.md readme)
# Semicolons and brackets would split or nest CMake lists: stand-ins until written.
string(REPLACE ";" "@SEMI@" readme "${readme}")
string(REPLACE "[" "@LB@" readme "${readme}")
string(REPLACE "]" "@RB@" readme "${readme}")
string(REGEX MATCHALL "```(cpp|cmake)\n[^`]*```" blocks "${readme}")
set(cpp_snippet "")
set(installed_snippet "")
set(fetch_snippet "")
foreach(block ${blocks})
  string(REGEX REPLACE "^```[a-z]+\n(.*)```$" "\\1" body "${block}")
  if(block MATCHES "^```cpp" AND body MATCHES "make_memory_engine")
    set(cpp_snippet "${body}")
  elseif(block MATCHES "^```cmake" AND body MATCHES "find_package\\(pathlock")
    set(installed_snippet "${body}")
  elseif(block MATCHES "^```cmake" AND body MATCHES "FetchContent_Declare")
    set(fetch_snippet "${body}")
  endif()
endforeach()
if(NOT cpp_snippet OR NOT installed_snippet OR NOT fetch_snippet)
  message(FATAL_ERROR "[readme] README.md lost a snippet: C++ '${cpp_snippet}', installed '${installed_snippet}', "
                      "FetchContent '${fetch_snippet}'")
endif()
# #include lines go above main(), the rest inside it.
string(REGEX MATCHALL "#include[^\n]*\n" includes "${cpp_snippet}")
string(REGEX REPLACE "#include[^\n]*\n" "" statements "${cpp_snippet}")
string(JOIN "" includes ${includes})
set(app "${includes}#include <cstdio>\nint main() {\n${statements}\n  std::puts(r.granted() ? \"granted\" : \"refused\")@SEMI@\n  return r.granted() ? 0 : 1@SEMI@\n}\n")
foreach(var app installed_snippet fetch_snippet)
  string(REPLACE "@SEMI@" ";" ${var} "${${var}}")
  string(REPLACE "@LB@" "[" ${var} "${${var}}")
  string(REPLACE "@RB@" "]" ${var} "${${var}}")
endforeach()
foreach(kind installed fetch)
  set(dir ${WORK_DIR}/readme_${kind})
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/app.cpp "${app}")
  file(COPY ${consumer}/rules.json DESTINATION ${dir})
  file(WRITE ${dir}/CMakeLists.txt "cmake_minimum_required(VERSION 3.22)\nproject(my_service LANGUAGES CXX)\n"
                                   "enable_testing()\nadd_executable(my_service app.cpp)\n${${kind}_snippet}")
endforeach()
step(readme-installed ${CMAKE_COMMAND} -S ${WORK_DIR}/readme_installed -B ${WORK_DIR}/readme_installed/build
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
step(readme-installed ${CMAKE_COMMAND} --build ${WORK_DIR}/readme_installed/build -j${jobs})
step(readme-installed ${WORK_DIR}/readme_installed/build/my_service)
step(readme-installed ${CMAKE_CTEST_COMMAND} --test-dir ${WORK_DIR}/readme_installed/build -R memory
     --output-on-failure)
file(MAKE_DIRECTORY ${WORK_DIR}/readme_fetch/third_party)
file(CREATE_LINK ${PATHLOCK_SOURCE_DIR} ${WORK_DIR}/readme_fetch/third_party/pathlock SYMBOLIC)
step(readme-fetch ${CMAKE_COMMAND} -S ${WORK_DIR}/readme_fetch -B ${WORK_DIR}/readme_fetch/build)
step(readme-fetch ${CMAKE_COMMAND} --build ${WORK_DIR}/readme_fetch/build -j${jobs} --target my_service)
step(readme-fetch ${WORK_DIR}/readme_fetch/build/my_service)
message(STATUS "packaging: every consumer built and passed")
