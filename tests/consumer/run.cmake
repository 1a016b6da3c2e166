# Packaging test (CTest `packaging_consumers`, tests/CMakeLists.txt):
#   cmake -DPATHLOCK_SOURCE_DIR=... -DPATHLOCK_BINARY_DIR=... -DWORK_DIR=... -DWITH_REDIS=ON|OFF -P run.cmake
# 1. installs the built tree into WORK_DIR/prefix (cmake --install --prefix);
# 2. builds tests/consumer against it with find_package and runs its tests
#    (the matrix-derived cases of its own matrix on every backend, the app,
#    the installed CLI);
# 3. builds app.cpp with `pkg-config --cflags --libs pathlock` and runs it;
# 4. builds tests/consumer with pathlock as a subproject (add_subdirectory),
#    PATHLOCK_WITH_REDIS=OFF and no build type, and runs its tests.
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
message(STATUS "packaging: every consumer built and passed")
