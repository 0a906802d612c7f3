# The two commands a newcomer runs: `make demo` and `make test`. Everything else is for developers.
# Each target installs what is missing (scripts/install-deps.sh), configures and builds first.

BUILD ?= build
JOBS ?= 2
PREFIX ?= /usr/local
CMAKE_FLAGS ?=

.PHONY: all deps configure build test test-avx2 test-ann-members-opq test-index-encode-members-slow demo install asan tsan fuzz fuzz-long bench sweep clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) \
	  -UCMAKE_CROSSCOMPILING_EMULATOR -UUFORM_TEST_TIMEOUT_SCALE $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# Every test through CTest, then one summary: counts, skips and their reasons, and the CPU classes
# this machine could not exercise (scripts/test_summary.py). Under CI=true a skip for a missing
# dependency fails.
test: build
	scripts/run-tests.sh $(BUILD) -j$(JOBS)

# The tests of label avx2 on an emulated AVX2-only CPU (QEMU -cpu max): an AVX-512 instruction
# where the CPU lacks it dies of SIGILL here, as on a Zen 3 (scripts/test-avx2.sh).
test-avx2: build
	scripts/test-avx2.sh $(BUILD) $(JOBS)

# OPQ in front of an IVF built by 1 and 3 members (tests/index/test_index_members_opq.py): the same
# .faiss bytes, searched with python3-faiss. Not in `test`: FAISS's OPQ training wants 9,984 rows and
# takes 24-81 s here on two shared cores (the whole test).
# A member of an encoded index that finishes early waits past a 1-second mesh timeout
# (tests/index/test_index_encode_members_slow.py). Not in `test`: about 10 s here.
test-index-encode-members-slow: configure
	cmake --build $(BUILD) -j$(JOBS) --target uform_cli uform_tiny_checkpoint
	UFORM_PYTEST_CLI=$(BUILD)/tools/uform PYTHONDONTWRITEBYTECODE=1 \
	  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/index/test_index_encode_members_slow.py

test-ann-members-opq: configure
	cmake --build $(BUILD) -j$(JOBS) --target uform uform_cli uform_faiss uform_gloo
	UFORM_PYTEST_CLI=$(BUILD)/tools/uform UFORM_LIBRARY=$(BUILD)/libuform.so PYTHONPATH=python PYTHONDONTWRITEBYTECODE=1 \
	  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/index/test_index_members_opq.py

# The main job on generated data: synth, train, recall, index and search, build/demo/report.html.
# Builds only what the demo runs (the command line and the report writer), not the tests.
demo: configure
	cmake --build $(BUILD) -j$(JOBS) --target uform_cli uform_demo_report
	scripts/demo.sh $(BUILD)

install: build
	cmake --install $(BUILD)

# The suite under AddressSanitizer and UndefinedBehaviorSanitizer (CI runs it), the allocation-failure
# sweep with leak detection included. Left out (label noasan), and why:
#   test_python          the binding loads libuform.so into Debian's uninstrumented python3, which an
#                        ASan-instrumented library cannot be loaded into (the plain build runs it)
#   test_install_package installs the build and links an outside program without -fsanitize
#   model_parity_dump_small, test_parity_small   small's dump takes minutes in a Debug ASan build;
#                        tiny's parity, which runs every code path small does, is in
#   test_train_learns, test_demo_learns (and test_demo_report, test_demo_render, which read the
#                        reduced demo's folder)   minutes of training each, 10x slower here
#   test_published_* variants (layouts, BF16, I8, the AVX2 class), *_base and the references'
#                        self-tests   their time is the Python reference's, which ASan does not
#                        instrument; one parity check per family and test_published_errors run here
#   test_reference_self, test_train_reference_self, test_train_bf16_self, bench_train_torch_tiny
#                        PyTorch and NumPy alone: no UForm code runs in them
# The sanitizer builds compile at -O1, as the sanitizers' own documentation advises for speed: at
# CMake's Debug -O0 every kernel and every checked access ran unoptimised (asserts stay on: no
# NDEBUG; frame pointers stay: UFORM_SANITIZE adds -fno-omit-frame-pointer). Under ASan, 2026-12-06,
# -O1 against CTest's recorded -O0 averages: test_gemm_gelu 15 s (47), test_gemm 14 s (35),
# test_mesh_resume 42 s (90), test_index_cli 41 s (89); the sweep, which is fork and exec and
# LeakSanitizer, hardly moved (761 s against 793), hence its split into three tests.
SANITIZE_OPT = "-DCMAKE_C_FLAGS_DEBUG=-g -O1" "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1"

asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug $(SANITIZE_OPT) -DUFORM_SANITIZE=address,undefined -DUFORM_BUILD_BENCH=OFF -DUFORM_TEST_TIMEOUT_SCALE=2 $(CMAKE_FLAGS)
	cmake --build build-asan -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build-asan --output-on-failure -j$(JOBS) -LE "noasan"

# The allocation-failure sweep (tests/reliability/sweep.h) at every allocation of every entry point,
# transient and persistent, in the plain build. `make test` runs a sample; `make asan` runs it with
# LeakSanitizer (FFmpeg's rows at every 8th allocation there, for CI's time).
sweep: build
	ctest --test-dir $(BUILD) -R '^(media_fixtures|model_checkpoint_tiny|published_fixture_minilm)$$' --output-on-failure
	$(BUILD)/tests/reliability/reliability_sweep $(BUILD)/tests/model/tiny.safetensors $(BUILD)/tests/media/fixtures --long-persistent \
	  --published $(BUILD)/tests/published/fixture_minilm

# The threading tests (label tsan) under ThreadSanitizer, with one suppression for a report inside
# Gloo that its own design makes safe (tests/mesh/tsan_gloo.supp says why). Builds only what they run
# (scripts/test-targets.sh), as `fuzz` does.
tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug $(SANITIZE_OPT) -DUFORM_SANITIZE=thread -DUFORM_BUILD_BENCH=OFF -DUFORM_TEST_TIMEOUT_SCALE=4 $(CMAKE_FLAGS)
	cmake --build build-tsan -j$(JOBS) --target $$(scripts/test-targets.sh build-tsan -L tsan)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/mesh/tsan_gloo.supp ctest --test-dir build-tsan --output-on-failure -j$(JOBS) -L tsan

# libFuzzer targets (clang): the short runs CTest knows, then `make fuzz-long` for an hour-scale run.
fuzz: deps
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DUFORM_FUZZ=ON -DUFORM_BUILD_BENCH=OFF
	cmake --build build-fuzz -j$(JOBS) --target $$(scripts/test-targets.sh build-fuzz -L fuzz)
	ctest --test-dir build-fuzz --output-on-failure -j$(JOBS) -L fuzz

FUZZ_SECONDS ?= 3600
FUZZ_TARGETS ?= tests/fuzz/safetensors_fuzz tests/session/fuzz_session_compile tests/media/media_image_fuzzer tests/fuzz/index_fuzz \
                tests/fuzz/tokenizer_json_fuzz tests/fuzz/sp_model_fuzz tests/fuzz/torch_pickle_fuzz tests/fuzz/shard_fuzz \
                tests/fuzz/manifest_fuzz tests/fuzz/cursor_fuzz tests/fuzz/serve_body_fuzz
fuzz-long: fuzz
	for target in $(FUZZ_TARGETS); do \
	  [ -x "build-fuzz/$$target" ] || { echo "missing build-fuzz/$$target"; exit 1; }; \
	  corpus=build-fuzz/corpus/$$(basename $$target); mkdir -p $$corpus; \
	  build-fuzz/$$target -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -artifact_prefix=build-fuzz/ $$corpus || exit 1; \
	done

# Benchmarks print tables and write JSON under bench/results/; they never fail the build.
bench: build
	mkdir -p bench/results
	for program in $(BUILD)/bench/bench_*; do [ -x "$$program" ] && "$$program" || true; done

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
