# Pillow's resize and the published processors' preprocessing (src/kernels/signal_pil*.c) against
# Pillow 9.4 and the Python processors (tests/reference/published_processors.py), run by
# ${UFORM_TORCH_PYTHON} through tests/kernels/pil_reference.py, which draws the pictures.
uform_add_test(NAME test_signal_pil
               SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_signal_pil.c
               LIBRARIES Threads::Threads
               ARGS ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/pil_reference.py
               LABELS kernels signal
               TIMEOUT 120)
