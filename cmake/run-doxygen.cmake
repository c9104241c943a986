# cmake -DDOXYGEN=... -DDOXYFILE=... -DLOG=... -P run-doxygen.cmake
# Runs Doxygen; fails when it fails or when it wrote any warning (printed here).
file(REMOVE ${LOG})
execute_process(COMMAND ${DOXYGEN} ${DOXYFILE} RESULT_VARIABLE result)
set(warnings "")
if(EXISTS ${LOG})
  file(READ ${LOG} warnings)
endif()
if(NOT result EQUAL 0 OR NOT warnings STREQUAL "")
  message("${warnings}")
  message(FATAL_ERROR "docs: Doxygen reported warnings (exit ${result}); see ${LOG}")
endif()
message(STATUS "docs: no warnings")
