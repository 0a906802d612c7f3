# Signal kernels (src/kernels/signal*.c): each test compares against torch / torchvision / torchaudio
# run by ${UFORM_TORCH_PYTHON} through tests/kernels/signal_reference.py, or against a double DFT.
set(SIGNAL_REFERENCE ${CMAKE_CURRENT_SOURCE_DIR}/signal_reference.py)
foreach(signal_test resize fft mel resample)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/test_signal_${signal_test}.c)
    uform_add_test(NAME test_signal_${signal_test}
                   SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_signal_${signal_test}.c
                   LIBRARIES Threads::Threads
                   ARGS ${UFORM_TORCH_PYTHON} ${SIGNAL_REFERENCE}
                   LABELS kernels signal
                   TIMEOUT 120)
  endif()
endforeach()
