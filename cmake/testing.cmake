# uform_add_test(NAME name SOURCES a.c [b.c] [LABELS l ...] [LIBRARIES lib ...] [ARGS ...] [TIMEOUT s])
# One executable per test, linked to the static library with internal headers visible.
# Labels: `tsan` marks the tests `make tsan` runs; `noasan` those `make asan` leaves out (the Makefile
# says which and why); `cpu_class` a test about one CPU class, skipped (77) where the CPU lacks it;
# `slow` a test that takes a minute or more on two cores (information only: every stage runs them).
# Timeouts scale by UFORM_TEST_TIMEOUT_SCALE (a whole number): `make test-avx2` runs the tests under an
# emulator, about 13 times slower than the hardware (15); the sanitizers' Debug builds are slower too
# (`make asan` 2, `make tsan` 4).
set(UFORM_TEST_TIMEOUT_SCALE 1 CACHE STRING "Factor applied to every test's timeout (emulated runs)")
function(uform_test_timeout variable seconds)
  math(EXPR scaled "${seconds} * ${UFORM_TEST_TIMEOUT_SCALE}")
  set(${variable} ${scaled} PARENT_SCOPE)
endfunction()

function(uform_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LABELS;LIBRARIES;ARGS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE uform_internal ${T_LIBRARIES})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} ${T_ARGS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  uform_test_timeout(T_TIMEOUT ${T_TIMEOUT})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
endfunction()

# uform_test_failing_alloc(NAME): links the failing allocator (tests/reliability/failing_alloc.c)
# into test NAME, uninstrumented and exported (-rdynamic) so that it stands for malloc and the rest
# in the whole process, as in the allocation-failure sweep. Under AddressSanitizer LeakSanitizer
# reads tests/reliability/lsan_link_map.supp, which suppresses one call site only: the allocator's
# first backtrace loads libgcc_s, whose link map LeakSanitizer misreports at exit. The sweep's own
# lsan.supp and lsan_ffmpeg.supp (third-party libraries' leaks under failing allocations) reach the sweep alone.
function(uform_test_failing_alloc name)
  set(source ${PROJECT_SOURCE_DIR}/tests/reliability/failing_alloc.c)
  target_sources(${name} PRIVATE ${source})
  target_link_libraries(${name} PRIVATE ${CMAKE_DL_LIBS})
  target_link_options(${name} PRIVATE -rdynamic)
  set_source_files_properties(${source} TARGET_DIRECTORY ${name} PROPERTIES COMPILE_OPTIONS "-fno-sanitize=all")
  if(UFORM_SANITIZE MATCHES "address")
    set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT
                 "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/reliability/lsan_link_map.supp:print_suppressions=0")
  endif()
endfunction()
