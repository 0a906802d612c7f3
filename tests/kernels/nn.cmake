# Tests of the NN kernels (src/kernels/nn*.c). The torch test needs Debian's python3 with torch;
# without it the test reports itself skipped (exit code 77).
uform_add_test(NAME test_nn_attention SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_attention.c TIMEOUT 120)
uform_add_test(NAME test_nn_ops SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_ops.c TIMEOUT 120)
uform_add_test(NAME test_nn_convert SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_convert.c TIMEOUT 120)
