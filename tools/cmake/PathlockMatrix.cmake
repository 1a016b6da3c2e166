# PathlockMatrix.cmake: compile a matrix JSON file, and test it.
#
# Loaded by pathlock's own CMakeLists.txt (in-tree and as a subproject) and by
# an installed package's pathlockConfig.cmake; both set, before including it:
#   PATHLOCK_MATRIX_LUA_DIR       the Lua sources of the Redis backend (for reference;
#                                 the generator has them built in)
#   PATHLOCK_MATRIX_CHECK_SOURCE  pathlock_matrix_check.cpp (the test runner)
#   PATHLOCK_MATRIX_HAS_REDIS     whether the library has the Redis backend
# and define the targets pathlock::pathlock, pathlock::headers and
# pathlock::pathlock-matrixc (the generator). The values are kept in global
# properties, so the functions work from any directory of the build.
#
# pathlock_compile_matrix(TARGET name JSON file NAMESPACE cxx::ns HEADER file.hpp)
#
#   Compiles a matrix JSON file at build time with pathlock-matrixc and creates
#   an INTERFACE library `name` whose include directory holds HEADER (with
#   `inline constexpr pathlock::MatrixTable <NAMESPACE>::kMatrix`). Outputs go
#   to ${CMAKE_CURRENT_BINARY_DIR}/pathlock_matrix/<name>/, never the source
#   tree: include/HEADER, matrix_cases.inc, conversion_cases.inc (and the same cases as
#   matrix_cases.json, for clients in other languages), <matrix name>.md and .html, and
#   redis/pathlock_library.lua: the Redis Functions library of the matrix
#   (what the Redis backend builds from the table at run time; for services
#   in other languages and packaging). Target properties: PATHLOCK_MATRIX_DIR
#   (that directory), PATHLOCK_MATRIX_HEADER, PATHLOCK_MATRIX_NAMESPACE and
#   PATHLOCK_MATRIX_REDIS_DIR (the redis/ folder). Editing the JSON or the
#   generator (which has lua/*.lua built in) re-runs the generator; it
#   rewrites only outputs whose content changed.
#   LUA_DIR (from earlier versions) is accepted and ignored.
#
# pathlock_add_matrix_tests(TARGET name [BACKENDS memory redis] [TIMEOUT seconds])
#
#   For a target made by pathlock_compile_matrix: builds `<name>_matrix_check`
#   (pathlock_matrix_check.cpp with this matrix compiled in; links only
#   pathlock) and registers one CTest test per backend, `<name>_matrix_<backend>`,
#   running every case derived from the matrix (held code x requested code x
#   relation). The redis test starts its own redis-server on a free loopback
#   port ($PATHLOCK_REDIS_SERVER, else redis-server from PATH) and is reported
#   as skipped when there is none. BACKENDS defaults to every backend the
#   library has. Each test has CTest's TIMEOUT (default 300 s). Call
#   enable_testing() (or include(CTest)) first.
#
include_guard(GLOBAL)

foreach(pathlock_var PATHLOCK_MATRIX_LUA_DIR PATHLOCK_MATRIX_CHECK_SOURCE PATHLOCK_MATRIX_HAS_REDIS)
  if(NOT DEFINED ${pathlock_var})
    message(FATAL_ERROR "PathlockMatrix.cmake: set ${pathlock_var} before including it (use find_package(pathlock))")
  endif()
  set_property(GLOBAL PROPERTY ${pathlock_var} "${${pathlock_var}}")
endforeach()

function(pathlock_compile_matrix)
  cmake_parse_arguments(PM "" "TARGET;JSON;NAMESPACE;HEADER;LUA_DIR" "" ${ARGN})
  foreach(required TARGET JSON NAMESPACE HEADER)
    if(NOT PM_${required})
      message(FATAL_ERROR "pathlock_compile_matrix: ${required} is required")
    endif()
  endforeach()
  if(PM_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "pathlock_compile_matrix: unknown arguments: ${PM_UNPARSED_ARGUMENTS}")
  endif()
  get_filename_component(json "${PM_JSON}" ABSOLUTE)
  # Banners name the file relative to the calling project, so outputs do not
  # depend on where the tree is checked out.
  file(RELATIVE_PATH json_name "${PROJECT_SOURCE_DIR}" "${json}")
  set(out "${CMAKE_CURRENT_BINARY_DIR}/pathlock_matrix/${PM_TARGET}")
  # The generator: built in this build (pathlock in-tree or a subproject), or
  # imported from the installed package.
  set(generator pathlock::pathlock-matrixc)
  get_target_property(generator_real ${generator} ALIASED_TARGET)
  if(generator_real)
    set(generator_dep ${generator_real})
  else()
    set(generator_dep "$<TARGET_FILE:${generator}>")
  endif()
  add_custom_command(
    OUTPUT "${out}/stamp"
    BYPRODUCTS "${out}/include/${PM_HEADER}" "${out}/matrix_cases.inc" "${out}/conversion_cases.inc" "${out}/matrix_cases.json" "${out}/redis/pathlock_library.lua"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${out}/redis"
    COMMAND "$<TARGET_FILE:${generator}>" --json "${json}" --source-name "${json_name}" --out "${out}"
            --namespace "${PM_NAMESPACE}" --header "${PM_HEADER}" --lua "${out}/redis/pathlock_library.lua"
            --stamp "${out}/stamp"
    DEPENDS ${generator_dep} "${json}"
    COMMENT "Compiling matrix ${PM_JSON}"
    VERBATIM)
  add_custom_target(${PM_TARGET}_generate DEPENDS "${out}/stamp")
  add_library(${PM_TARGET} INTERFACE)
  target_include_directories(${PM_TARGET} INTERFACE "${out}/include")
  target_link_libraries(${PM_TARGET} INTERFACE pathlock::headers)
  add_dependencies(${PM_TARGET} ${PM_TARGET}_generate)
  set_target_properties(${PM_TARGET} PROPERTIES
    PATHLOCK_MATRIX_DIR "${out}"
    PATHLOCK_MATRIX_HEADER "${PM_HEADER}"
    PATHLOCK_MATRIX_NAMESPACE "${PM_NAMESPACE}"
    PATHLOCK_MATRIX_REDIS_DIR "${out}/redis")
endfunction()

function(pathlock_add_matrix_tests)
  cmake_parse_arguments(PT "" "TARGET;TIMEOUT" "BACKENDS" ${ARGN})
  if(NOT PT_TIMEOUT)
    set(PT_TIMEOUT 300)  # seconds; a hung backend fails the test instead of the whole run
  endif()
  if(NOT PT_TARGET)
    message(FATAL_ERROR "pathlock_add_matrix_tests: TARGET is required")
  endif()
  if(PT_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "pathlock_add_matrix_tests: unknown arguments: ${PT_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET ${PT_TARGET})
    message(FATAL_ERROR "pathlock_add_matrix_tests: ${PT_TARGET} is not a target")
  endif()
  get_target_property(dir ${PT_TARGET} PATHLOCK_MATRIX_DIR)
  get_target_property(header ${PT_TARGET} PATHLOCK_MATRIX_HEADER)
  get_target_property(cxx_ns ${PT_TARGET} PATHLOCK_MATRIX_NAMESPACE)
  if(NOT dir OR NOT header OR NOT cxx_ns)
    message(FATAL_ERROR "pathlock_add_matrix_tests: ${PT_TARGET} was not made by pathlock_compile_matrix()")
  endif()
  get_property(has_redis GLOBAL PROPERTY PATHLOCK_MATRIX_HAS_REDIS)
  get_property(source GLOBAL PROPERTY PATHLOCK_MATRIX_CHECK_SOURCE)
  if(has_redis)
    set(available memory redis)
  else()
    set(available memory)
  endif()
  if(NOT PT_BACKENDS)
    set(PT_BACKENDS ${available})
  endif()
  foreach(backend IN LISTS PT_BACKENDS)
    if(NOT backend IN_LIST available)
      message(FATAL_ERROR "pathlock_add_matrix_tests: backend '${backend}' is not in this pathlock "
                          "(available: ${available})")
    endif()
  endforeach()

  set(check ${PT_TARGET}_matrix_check)
  add_executable(${check} "${source}")
  target_include_directories(${check} PRIVATE "${dir}")
  target_compile_definitions(${check} PRIVATE "PATHLOCK_MATRIX_HEADER=\"${header}\""
                                              "PATHLOCK_MATRIX_TABLE=${cxx_ns}::kMatrix"
                                              "PATHLOCK_MATRIX_HAS_REDIS=$<BOOL:${has_redis}>")
  target_compile_features(${check} PRIVATE cxx_std_20)
  target_link_libraries(${check} PRIVATE pathlock::pathlock ${PT_TARGET})
  foreach(backend IN LISTS PT_BACKENDS)
    add_test(NAME ${PT_TARGET}_matrix_${backend} COMMAND ${check} --backend ${backend})
    set_tests_properties(${PT_TARGET}_matrix_${backend} PROPERTIES SKIP_RETURN_CODE 77 LABELS "pathlock;matrix"
                                                                        TIMEOUT ${PT_TIMEOUT})
  endforeach()
endfunction()
