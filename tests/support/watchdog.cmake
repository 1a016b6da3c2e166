# Time limits for every test of the suite (docs/design.md#tests).
#
# Each test runs under tests/support/watchdog.py: when its limit passes, the
# watchdog prints the stack of every thread of every process the test
# started (gdb) and kills them, so a hang fails in minutes with the stuck
# test's name and where it stuck. CTest's own TIMEOUT is the watchdog's limit
# plus PATHLOCK_WATCHDOG_GRACE (time for gdb), so CTest never kills a test
# silently first. The test every_test_has_a_time_limit checks, from CTest's
# own list, that no test escapes this.
#
#   pathlock_test(NAME n SECONDS s COMMAND cmd [args...] [WORKING_DIRECTORY d])
#     add_test() under the watchdog; cmd may be the name of a target defined
#     before the call (else write $<TARGET_FILE:target>). A `;` inside an
#     argument splits it (CMake lists): in `sh -c` scripts use newlines.
#   pathlock_watch_target(target SECONDS s)
#     for tests that CMake or Catch2 register with a target as the command
#     (add_test(COMMAND target), catch_discover_tests, pathlock_add_matrix_tests):
#     the target's CROSSCOMPILING_EMULATOR becomes the watchdog; the caller
#     gives those tests TIMEOUT s + PATHLOCK_WATCHDOG_GRACE.
set(PATHLOCK_WATCHDOG /usr/bin/python3 ${PROJECT_SOURCE_DIR}/tests/support/watchdog.py)
set(PATHLOCK_WATCHDOG_GRACE 90)

function(pathlock_test)
  cmake_parse_arguments(PT "" "NAME;SECONDS;WORKING_DIRECTORY" "COMMAND" ${ARGN})
  if(NOT PT_NAME OR NOT PT_SECONDS OR NOT PT_COMMAND OR PT_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "pathlock_test: NAME, SECONDS and COMMAND are required (unparsed: ${PT_UNPARSED_ARGUMENTS})")
  endif()
  list(POP_FRONT PT_COMMAND program)
  if(TARGET ${program})
    set(program $<TARGET_FILE:${program}>)
  endif()
  set(directory)
  if(PT_WORKING_DIRECTORY)
    set(directory WORKING_DIRECTORY ${PT_WORKING_DIRECTORY})
  endif()
  add_test(NAME ${PT_NAME}
           COMMAND ${PATHLOCK_WATCHDOG} --seconds ${PT_SECONDS} --name ${PT_NAME} -- ${program} ${PT_COMMAND}
           ${directory})
  math(EXPR limit "${PT_SECONDS} + ${PATHLOCK_WATCHDOG_GRACE}")
  set_tests_properties(${PT_NAME} PROPERTIES TIMEOUT ${limit})
endfunction()

function(pathlock_watch_target target)
  cmake_parse_arguments(PW "" "SECONDS" "" ${ARGN})
  if(NOT PW_SECONDS)
    message(FATAL_ERROR "pathlock_watch_target: SECONDS is required")
  endif()
  set_target_properties(${target} PROPERTIES CROSSCOMPILING_EMULATOR "${PATHLOCK_WATCHDOG};--seconds;${PW_SECONDS};--")
endfunction()
