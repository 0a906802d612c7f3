# UForm 3 (unum-cloud/uform3-image-text-*): the folder writer, the two formulations of the PyTorch
# reference and uform3_compare.py on example dumps written by the reference (f32, BF16 products, a
# Matryoshka prefix), with its negative controls and corrupted dumps. Needs no engine; the parity
# tests against the engine's dumps are registered beside the dumper. About 8 s of CPU on one thread.
uform_test_timeout(uform3_timeout 300)
add_test(NAME test_uform3_reference_self
         COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/uform3_selftest.py)
set_tests_properties(test_uform3_reference_self PROPERTIES TIMEOUT ${uform3_timeout} LABELS "published;python;noasan"
                     ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=1")
