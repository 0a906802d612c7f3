# The SentencePiece side of the tokenizers (src/text/sp_*.c): Unigram, the Precompiled normaliser,
# Metaspace and .model files. sp_tool is the engine's side of the parity tests; sp_parity.py trains
# small models with python3-sentencepiece (sp_make_models.py) and compares every id with it.
add_executable(sp_tool ${CMAKE_CURRENT_LIST_DIR}/sp_tool.c)
target_link_libraries(sp_tool PRIVATE uform_internal)

# Python-sentencepiece parity: >= 2,000 strings on four trained models, XLM-R's fairseq ids, SigLIP's
# Python-side text handling (~5 s on two cores).
add_test(NAME test_sp_parity
         COMMAND ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/sp_parity.py $<TARGET_FILE:sp_tool>
                 ${CMAKE_CURRENT_BINARY_DIR}/sp_parity)
set_tests_properties(test_sp_parity PROPERTIES TIMEOUT 300 LABELS text SKIP_RETURN_CODE 77
                     ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

# The tokenizer.json side (Precompiled, Metaspace, Unigram) against Hugging Face's Rust `tokenizers`
# (npm package `tokenizers`, installed into this build folder by the fixture; ~5 s).
add_test(NAME sp_npm COMMAND ${CMAKE_CURRENT_LIST_DIR}/sp_npm_install.sh ${CMAKE_CURRENT_BINARY_DIR}/sp_node)
set_tests_properties(sp_npm PROPERTIES FIXTURES_SETUP sp_npm SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS text)
add_test(NAME test_sp_tokenizers_parity
         COMMAND node ${CMAKE_CURRENT_LIST_DIR}/sp_tokenizers_parity.mjs ${CMAKE_CURRENT_BINARY_DIR}/sp_node
                 ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_LIST_DIR} $<TARGET_FILE:sp_tool>
                 ${CMAKE_CURRENT_BINARY_DIR}/sp_tokenizers)
set_tests_properties(test_sp_tokenizers_parity PROPERTIES FIXTURES_REQUIRED sp_npm TIMEOUT 300 LABELS text
                     ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

# Hand-built and broken .model files, charsmaps and tokenizer.json entries (well under a second).
uform_add_test(NAME test_sp_hostile SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sp_hostile.c LABELS text TIMEOUT 60)
