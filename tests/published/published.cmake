# The engine's side of the published checkpoints' parity: published_dump loads a folder and writes
# what the engine answers; each family's <family>_compare.py checks it against its reference.
add_executable(published_dump ${CMAKE_CURRENT_SOURCE_DIR}/published_dump.c)
target_link_libraries(published_dump PRIVATE uform_internal m)
target_include_directories(published_dump PRIVATE ${PROJECT_SOURCE_DIR}/tools)

# One parity check: tests/published/run_parity.py writes the folder, the inputs, runs the dumper and
# the family's comparison (and its negative control with NEGATIVE). Label `published`; base-size
# folders (the published dimensions) are `slow` and stay out of `make asan` (minutes in a Debug build),
# and so do (NOASAN) the variants whose engine code paths a family's first check already runs under
# ASan — their time is the Python reference's, which ASan does not instrument. The references'
# self-tests (pure Python) stay out of it too.
function(uform_published_parity name family variant size compute)
  cmake_parse_arguments(P "NEGATIVE;SLOW;NOASAN" "TIMEOUT" "OPTIONS" ${ARGN})
  set(arguments $<TARGET_FILE:published_dump> ${family} ${variant} ${size} ${CMAKE_CURRENT_BINARY_DIR}/${name}
                --compute "${compute}" ${P_OPTIONS})
  if(P_NEGATIVE)
    list(APPEND arguments --negative)
  endif()
  add_test(NAME ${name} COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/run_parity.py ${arguments})
  if(NOT P_TIMEOUT)
    set(P_TIMEOUT 300)
  endif()
  uform_test_timeout(timeout ${P_TIMEOUT})
  set(labels published)
  if(P_SLOW)
    list(APPEND labels slow noasan)
  elseif(P_NOASAN)
    list(APPEND labels noasan)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS "${labels}"
                       ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE;OMP_NUM_THREADS=1")
endfunction()

# Tiny folders of every family and layout. The first of each family runs every compute (F32, BF16,
# I8) with the negative control (the folder and inputs written once); CLIP's and SigLIP's also run
# the AVX2 class's kernels (HASWELL: F32 compute, its resize and attention code) on whatever machine
# runs the suite — on an AVX2-only CPU that is the native class anyway.
uform_published_parity(test_published_minilm bert minilm tiny f32,bf16,i8 NEGATIVE)
uform_published_parity(test_published_bge bert bert-cls tiny f32 NOASAN OPTIONS --format sharded)
uform_published_parity(test_published_roberta bert roberta tiny f32 NEGATIVE NOASAN OPTIONS --format bin)
uform_published_parity(test_published_xlm_roberta bert xlm-roberta tiny f32)
uform_published_parity(test_published_dense bert dense tiny f32 NOASAN OPTIONS --dtype bf16)
uform_published_parity(test_published_plain_bert bert plain tiny f32 NOASAN OPTIONS --dtype f16)
uform_published_parity(test_published_plain_bert_legacy bert plain tiny f32 NOASAN OPTIONS --format bin-legacy)
uform_published_parity(test_published_clip clip clip tiny f32,bf16,i8 NEGATIVE OPTIONS --classes native,intel_haswell)
uform_published_parity(test_published_clip_new clip clip-new tiny f32 NOASAN OPTIONS --format bin)
uform_published_parity(test_published_openclip openclip openclip-ls tiny f32 NEGATIVE)
uform_published_parity(test_published_openclip_laion openclip openclip-laion tiny f32 NOASAN OPTIONS --format bin)
uform_published_parity(test_published_siglip siglip siglip tiny f32,bf16,i8 NEGATIVE OPTIONS --classes native,intel_haswell)
uform_published_parity(test_published_uform3 uform3 small tiny f32,bf16,i8 NEGATIVE)
uform_published_parity(test_published_uform3_pt uform3 multilingual tiny f32 NOASAN OPTIONS --format pt-nested)
# The published dimensions the issue names: ViT-B/32 CLIP, MiniLM-L6, BERT-base, SigLIP B/16, UForm 3
# small (the references in F32 there: F64 at these sizes costs minutes and checks nothing more at
# these bounds).
uform_published_parity(test_published_clip_base clip clip base f32 SLOW TIMEOUT 900
                       OPTIONS --texts 4 --images 2 --reference-dtype f32)
uform_published_parity(test_published_minilm_base bert minilm base f32 SLOW TIMEOUT 900 OPTIONS --texts 6)
uform_published_parity(test_published_bert_base bert bert-base base f32 SLOW TIMEOUT 900 OPTIONS --texts 4)
uform_published_parity(test_published_siglip_base siglip siglip base f32 SLOW TIMEOUT 900
                       OPTIONS --texts 4 --images 2 --reference-dtype f32)
uform_published_parity(test_published_uform3_base uform3 small base f32 SLOW TIMEOUT 900 OPTIONS --texts 4 --images 2)

# Folders the engine cannot run, each with its status and message (test_published_errors.c), from a
# tiny all-MiniLM and a tiny CLIP folder written at test time.
add_test(NAME published_fixture_minilm
         COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/bert_write.py minilm tiny
                 ${CMAKE_CURRENT_BINARY_DIR}/fixture_minilm)
add_test(NAME published_fixture_clip
         COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/clip_write.py clip-new tiny
                 ${CMAKE_CURRENT_BINARY_DIR}/fixture_clip)
set_tests_properties(published_fixture_minilm published_fixture_clip PROPERTIES FIXTURES_SETUP published_fixtures
                     LABELS published TIMEOUT 120)
uform_add_test(NAME test_published_errors SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_published_errors.c
               ARGS ${CMAKE_CURRENT_BINARY_DIR}/fixture_minilm ${CMAKE_CURRENT_BINARY_DIR}/fixture_clip
                    ${CMAKE_CURRENT_BINARY_DIR}/errors LABELS published TIMEOUT 120)
set_tests_properties(test_published_errors PROPERTIES FIXTURES_REQUIRED published_fixtures)
