# CLIP in the transformers layout (tests/published/clip_*.py): folders of the three published flavours
# (OpenAI's clip, laion's with its OpenCLIP files beside, a recent conversion's clip-new) in f32 /
# bf16 / f16 and safetensors / sharded / bin read back; a dump written by the hand-written OpenCLIP
# formulation on the same weights passes clip_compare.py (torch.nn.TransformerEncoderLayer), both
# ways across laion's two layouts; every negative control fails it; damaged dumps fail.
# Needs no engine: the comparisons of the engine's dumps (clip_compare.py DUMP
# [--self-check-negative]) are registered beside the C dumper. Tiny folders: seconds on one thread.
uform_test_timeout(clip_reference_timeout 300)
add_test(NAME test_published_clip_self
         COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/clip_selftest.py clip
                 --work ${CMAKE_CURRENT_BINARY_DIR}/clip_self)
set_tests_properties(test_published_clip_self PROPERTIES TIMEOUT ${clip_reference_timeout} LABELS "published;python;noasan"
                     ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=1")

# The same at the published dimensions (ViT-B/32, SigLIP B/16 at 224): minutes, off unless asked for
# (the option is bert.cmake's, declared again here so this list does not depend on the order).
option(UFORM_PUBLISHED_BASE_TESTS "Register the base-size self-tests of the published-checkpoint references" OFF)
if(UFORM_PUBLISHED_BASE_TESTS)
  uform_test_timeout(clip_reference_base_timeout 1800)
  add_test(NAME test_published_clip_self_base
           COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/clip_selftest.py clip --size base
                   --work ${CMAKE_CURRENT_BINARY_DIR}/clip_self_base)
  set_tests_properties(test_published_clip_self_base PROPERTIES TIMEOUT ${clip_reference_base_timeout}
                       LABELS "published;python;published_base" ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=2")
endif()
