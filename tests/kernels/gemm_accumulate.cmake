uform_add_test(NAME test_gemm_accumulate SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gemm_accumulate.c LABELS kernels)
