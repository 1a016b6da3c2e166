# pathlock_compile_matrix(TARGET name JSON file NAMESPACE cxx::ns HEADER file.hpp
#                         [LUA_DIR dir])
#
# Compiles a matrix JSON file at build time with pathlock-matrixc and creates
# an INTERFACE library `name` whose include directory holds HEADER (with
# `inline constexpr pathlock::MatrixTable <NAMESPACE>::kMatrix`). Outputs go to
# ${CMAKE_CURRENT_BINARY_DIR}/pathlock_matrix/<name>/, never the source tree:
#   include/HEADER, matrix_cases.inc, <matrix name>.md and .html, and
#   pathlock_library.lua: the Redis Functions library of the matrix (what the
#   Redis backend loads; for services in other languages and packaging).
# The directory is stored in the target property PATHLOCK_MATRIX_DIR.
# Editing the JSON or the generator re-runs the generator; it rewrites only
# outputs whose content changed. LUA_DIR is accepted and ignored: the Redis
# backend builds its library from the table at run time.
function(pathlock_compile_matrix)
  cmake_parse_arguments(PM "" "TARGET;JSON;NAMESPACE;HEADER;LUA_DIR" "" ${ARGN})
  foreach(required TARGET JSON NAMESPACE HEADER)
    if(NOT PM_${required})
      message(FATAL_ERROR "pathlock_compile_matrix: ${required} is required")
    endif()
  endforeach()
  get_filename_component(json "${PM_JSON}" ABSOLUTE)
  # Banners name the file relative to the project, so outputs do not depend
  # on where the tree is checked out.
  file(RELATIVE_PATH json_name "${PROJECT_SOURCE_DIR}" "${json}")
  set(out "${CMAKE_CURRENT_BINARY_DIR}/pathlock_matrix/${PM_TARGET}")
  add_custom_command(
    OUTPUT "${out}/stamp"
    BYPRODUCTS "${out}/include/${PM_HEADER}" "${out}/matrix_cases.inc" "${out}/pathlock_library.lua"
    COMMAND pathlock-matrixc --json "${json}" --source-name "${json_name}" --out "${out}" --namespace "${PM_NAMESPACE}"
            --header "${PM_HEADER}" --lua "${out}/pathlock_library.lua" --stamp "${out}/stamp"
    DEPENDS pathlock-matrixc "${json}"
    COMMENT "Compiling matrix ${PM_JSON}"
    VERBATIM)
  add_custom_target(${PM_TARGET}_generate DEPENDS "${out}/stamp")
  add_library(${PM_TARGET} INTERFACE)
  target_include_directories(${PM_TARGET} INTERFACE "${out}/include")
  target_link_libraries(${PM_TARGET} INTERFACE pathlock_headers)
  add_dependencies(${PM_TARGET} ${PM_TARGET}_generate)
  set_target_properties(${PM_TARGET} PROPERTIES PATHLOCK_MATRIX_DIR "${out}")
endfunction()
