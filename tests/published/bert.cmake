# BERT / RoBERTa / XLM-RoBERTa encoders and sentence-transformers folders (tests/published/bert_*.py).
# The self-test needs no engine: random-weight folders in every published layout and weight format
# read back, the reference's two formulations agree, it passes a dump the hand-written formulation
# makes, every negative control fails, and damaged dumps fail. About 8 s on two cores (tiny folders).
# The comparisons of the engine's dumps (bert_compare.py) are registered with the C dumper.
add_test(NAME test_published_bert_self
         COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/bert_selftest.py ${CMAKE_CURRENT_BINARY_DIR}/bert_self)
set_tests_properties(test_published_bert_self PROPERTIES TIMEOUT 180 LABELS "published;python;noasan"
                     ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=1")

# The same at the published dimensions (12 x 768 and the others): minutes, so off unless asked for.
option(UFORM_PUBLISHED_BASE_TESTS "Register the base-size self-tests of the published-checkpoint references" OFF)
if(UFORM_PUBLISHED_BASE_TESTS)
  add_test(NAME test_published_bert_self_base
           COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/bert_selftest.py
                   ${CMAKE_CURRENT_BINARY_DIR}/bert_self_base --size base)
  set_tests_properties(test_published_bert_self_base PROPERTIES TIMEOUT 1200 LABELS "published;python;published_base"
                       ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=2")
endif()
