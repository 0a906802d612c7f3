# The tokenizer.json pipeline (src/text/tokenizer*.c): WordPiece, BPE, WordLevel and the stages
# around them, compared id by id with transformers.js and the Rust `tokenizers` on generated
# tokenizers (tests/text/make_tokenizers.py), plus bad-input and fuzz tests.
add_executable(tokenize_dump ${CMAKE_CURRENT_SOURCE_DIR}/tokenize_dump.c)
target_link_libraries(tokenize_dump PRIVATE uform_internal)
