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

# CPU seconds of the longest tests of `make test-avx2` under QEMU (UFORM_TEST_EMULATED=1, one at a
# time beside other work on a shared 2-core machine, 2026-12-07: `/usr/bin/time -f %U+%S qemu-x86_64
# -cpu max ./test_x`; docs/testing.md, "Running", its paragraph on CI time). When the build is
# configured for the emulator they become the tests' COST, which CTest orders by and which outranks
# its recorded timings: in CI those are `make test`'s native ones (the stage reuses build/), where test_model takes 0.09 s and
# test_gemm 1.7 s, so the emulated long poles started last and ran on alone at the end of the stage.
set(UFORM_EMULATED_COSTS
    test_gemm_gelu=127 test_nn_attention=177 test_gemm=193 test_nn_attention_backward_bf16=187
    test_model=128 test_nn_attention_bf16=58 test_gemm_i8=90 test_gemm_output=46 test_gemm_pack=72
    test_index_vectors=64)

# How long each libFuzzer target runs in `make fuzz` (label fuzz): CI's short runs, on top of the
# replay of every seed, which each target's replay test does in full. 12 s each since 2026-12-07
# (was 20: the eleven timed targets took 220 CPU-seconds of a CI already at its 45 minutes);
# `make fuzz-long` runs each for FUZZ_SECONDS (an hour by default).
set(UFORM_FUZZ_SHORT_SECONDS 12 CACHE STRING "Seconds each libFuzzer target runs in make fuzz")

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
  if(CMAKE_CROSSCOMPILING_EMULATOR)
    foreach(entry IN LISTS UFORM_EMULATED_COSTS)
      if(entry MATCHES "^${T_NAME}=([0-9]+)$")
        set_tests_properties(${T_NAME} PROPERTIES COST ${CMAKE_MATCH_1})
      endif()
    endforeach()
  endif()
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
