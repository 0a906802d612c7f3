# uform_add_test(NAME name SOURCES a.c [b.c] [LABELS l ...] [LIBRARIES lib ...] [ARGS ...] [TIMEOUT s])
# One executable per test, linked to the static library with internal headers visible.
# Labels: `tsan` marks the tests `make tsan` runs; `noasan` those `make asan` leaves out (the Makefile
# says which and why); `cpu_class` a test about one CPU class, skipped (77) where the CPU lacks it;
# `slow` a test that takes a minute or more on two cores (information only: every stage runs them).
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
