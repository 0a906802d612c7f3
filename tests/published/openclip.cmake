# OpenCLIP folders (tests/published/openclip_*.py): quickgelu, gelu and LayerScale variants read back;
# a dump of the transformers formulation (torch.nn blocks, LayerScale folded into the weights)
# passes openclip_compare.py (hand-written); every negative control fails it; damaged dumps fail.
# Needs no engine: the comparisons of the engine's dumps (openclip_compare.py DUMP
# [--self-check-negative]) are registered beside the C dumper. Tiny folders: seconds on one thread.
uform_test_timeout(openclip_reference_timeout 300)
add_test(NAME test_published_openclip_self
         COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/clip_selftest.py openclip
                 --work ${CMAKE_CURRENT_BINARY_DIR}/openclip_self)
set_tests_properties(test_published_openclip_self PROPERTIES TIMEOUT ${openclip_reference_timeout} LABELS "published;python;noasan"
                     ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=1")

# The same at the published dimensions (ViT-B/32, SigLIP B/16 at 224): minutes, off unless asked for
# (the option is bert.cmake's, declared again here so this list does not depend on the order).
option(UFORM_PUBLISHED_BASE_TESTS "Register the base-size self-tests of the published-checkpoint references" OFF)
if(UFORM_PUBLISHED_BASE_TESTS)
  uform_test_timeout(openclip_reference_base_timeout 1800)
  add_test(NAME test_published_openclip_self_base
           COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/clip_selftest.py openclip --size base
                   --work ${CMAKE_CURRENT_BINARY_DIR}/openclip_self_base)
  set_tests_properties(test_published_openclip_self_base PROPERTIES TIMEOUT ${openclip_reference_base_timeout}
                       LABELS "published;python;published_base" ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=2")
endif()
