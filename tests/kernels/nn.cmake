# Tests of the NN kernels (src/kernels/nn*.c). The torch test needs Debian's python3 with torch;
# without it the test reports itself skipped (exit code 77). The attention and ops tests run the
# kernels on 2 and 3 threads, so `make tsan` runs them too.
uform_add_test(NAME test_nn_attention SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_attention.c LABELS kernels tsan
               TIMEOUT 120)
uform_add_test(NAME test_nn_attention_bf16 SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_attention_bf16.c
               LABELS kernels tsan TIMEOUT 120)
uform_add_test(NAME test_nn_attention_backward_bf16
               SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_attention_backward_bf16.c LABELS kernels tsan TIMEOUT 120)
# The same three attention tests on causal shapes (the sources built with NN_ATTENTION_CAUSAL=1):
# separate executables, so that each stays short and `make test-avx2` can pick them apart.
foreach(source IN ITEMS test_nn_attention test_nn_attention_bf16 test_nn_attention_backward_bf16)
  string(REPLACE "test_nn_attention" "test_nn_attention_causal" causal_name ${source})
  uform_add_test(NAME ${causal_name} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/${source}.c LABELS kernels tsan
                 TIMEOUT 120)
  target_compile_definitions(${causal_name} PRIVATE NN_ATTENTION_CAUSAL=1)
endforeach()
uform_add_test(NAME test_nn_ops SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_ops.c LABELS kernels tsan TIMEOUT 120)
uform_add_test(NAME test_nn_convert SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_convert.c LABELS kernels TIMEOUT 120)
uform_add_test(NAME test_nn_torch SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_torch.c LABELS kernels TIMEOUT 120)
target_compile_definitions(test_nn_torch PRIVATE NN_TORCH_PYTHON="${UFORM_TORCH_PYTHON}"
                           NN_REFERENCE_SCRIPT="${CMAKE_CURRENT_SOURCE_DIR}/nn_reference.py")
set_tests_properties(test_nn_torch PROPERTIES SKIP_RETURN_CODE 77)
uform_add_test(NAME test_nn_softmax SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_softmax.c LABELS kernels)
uform_add_test(NAME test_nn_exp SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_exp.c LABELS kernels)
# The published checkpoints' kernels (causal attention, QuickGELU, the tanh GELU) against PyTorch
# in float64 (nn_reference_published.py); skipped (77) without torch.
uform_add_test(NAME test_nn_torch_published SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_torch_published.c
               LABELS kernels TIMEOUT 120)
target_compile_definitions(test_nn_torch_published PRIVATE NN_TORCH_PYTHON="${UFORM_TORCH_PYTHON}"
                           NN_REFERENCE_SCRIPT="${CMAKE_CURRENT_SOURCE_DIR}/nn_reference_published.py")
set_tests_properties(test_nn_torch_published PROPERTIES SKIP_RETURN_CODE 77)
# SERIAL's BF16 rounding, erf GELU and int8 product against exact arithmetic written in Python from
# the definitions (serial_numerics_reference.py: fractions and mpmath), not against another class:
# serial_numerics_dump writes the inputs and SERIAL's outputs, the script checks them.
add_executable(serial_numerics_dump ${CMAKE_CURRENT_SOURCE_DIR}/serial_numerics_dump.c)
target_link_libraries(serial_numerics_dump PRIVATE uform_internal m)
add_test(NAME test_serial_numerics
         COMMAND sh -c "rm -rf \"$1\" && mkdir -p \"$1\" && \"$2\" \"$1\" && \"$3\" \"$4\" \"$1\"" sh
                 ${CMAKE_CURRENT_BINARY_DIR}/serial_numerics $<TARGET_FILE:serial_numerics_dump> ${UFORM_TORCH_PYTHON}
                 ${CMAKE_CURRENT_SOURCE_DIR}/serial_numerics_reference.py)
set_tests_properties(test_serial_numerics PROPERTIES LABELS "kernels;reference" TIMEOUT 120)
