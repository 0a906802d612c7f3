# uform_add_test(NAME name SOURCES a.c [b.c] [LABELS l ...] [LIBRARIES lib ...] [ARGS ...] [TIMEOUT s])
# One executable per test, linked to the static library with internal headers visible.
# Label `tsan` marks tests that `make tsan` runs; `slow` marks those skipped by `make asan`.
function(uform_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LABELS;LIBRARIES;ARGS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE uform_internal ${T_LIBRARIES})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} ${T_ARGS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
endfunction()
