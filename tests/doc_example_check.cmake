# Fails unless the first ```cpp block of DOC is exactly the file CODE, so a
# document never shows code that differs from what the suite builds and runs.
#   cmake -DDOC=docs/guard.md -DCODE=docs/examples/move_handler.cpp -P doc_example_check.cmake
file(READ "${DOC}" doc)
file(READ "${CODE}" code)
string(FIND "${doc}" "```cpp\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${DOC} has no ```cpp block")
endif()
math(EXPR start "${start} + 7")
string(SUBSTRING "${doc}" ${start} -1 rest)
string(FIND "${rest}" "```\n" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${DOC}: the ```cpp block is not closed")
endif()
string(SUBSTRING "${rest}" 0 ${end} block)
if(NOT block STREQUAL code)
  message(FATAL_ERROR "${DOC}'s ```cpp block differs from ${CODE}: copy the file into the document")
endif()
