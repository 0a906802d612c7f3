# SigLIP in the transformers layout (tests/published/siglip_*.py): folders in f32 / bf16 / f16 and
# safetensors / bin / sharded read back; a dump of the hand-written formulation passes
# siglip_compare.py (torch.nn blocks and MultiheadAttention); every negative control fails it,
# including the padding masked out (SigLIP attends to its padding); damaged dumps fail.
# Needs no engine: the comparisons of the engine's dumps (siglip_compare.py DUMP
# [--self-check-negative]) are registered beside the C dumper. Tiny folders: seconds on one thread.
uform_test_timeout(siglip_reference_timeout 300)
add_test(NAME test_published_siglip_self
         COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/clip_selftest.py siglip
                 --work ${CMAKE_CURRENT_BINARY_DIR}/siglip_self)
set_tests_properties(test_published_siglip_self PROPERTIES TIMEOUT ${siglip_reference_timeout} LABELS "published;python;noasan"
                     ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=1")

# The same at the published dimensions (ViT-B/32, SigLIP B/16 at 224): minutes, off unless asked for
# (the option is bert.cmake's, declared again here so this list does not depend on the order).
option(UFORM_PUBLISHED_BASE_TESTS "Register the base-size self-tests of the published-checkpoint references" OFF)
if(UFORM_PUBLISHED_BASE_TESTS)
  uform_test_timeout(siglip_reference_base_timeout 1800)
  add_test(NAME test_published_siglip_self_base
           COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/clip_selftest.py siglip --size base
                   --work ${CMAKE_CURRENT_BINARY_DIR}/siglip_self_base)
  set_tests_properties(test_published_siglip_self_base PROPERTIES TIMEOUT ${siglip_reference_base_timeout}
                       LABELS "published;python;published_base" ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=2")
endif()
