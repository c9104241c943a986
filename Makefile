# weft — the two commands a new user needs:
#   make run    install what is missing, build (release), run weft's quick benchmark suite
#               (weft-bench run all --quick: tables in the terminal, bench-results/report.html)
#   make test   install what is missing, build and run every test under release, asan and tsan
#
# Also: make build | build-<preset> | test-<preset> | deps | clean
#   LABEL=<layer> make test-<preset>   runs only one layer (core, buffer, channel, transport, integration)
#   make demo   the echo demo (weft-echo-server and weft-echo-client)

PRESETS      := release debug asan tsan
TEST_PRESETS := release asan tsan
LABEL        ?=

CTEST_LABEL := $(if $(LABEL),-L $(LABEL))

# TSan in gcc 12 cannot map its shadow memory when the kernel uses more than 28 bits of mmap
# randomness; run the tsan tests without ASLR there.
TSAN_WRAP := $(shell test "$$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)" -gt 28 \
               && command -v setarch >/dev/null && echo "setarch $$(uname -m) -R")

.NOTPARALLEL:
.PHONY: all deps build run demo bench test fuzz clean $(addprefix build-,$(PRESETS)) $(addprefix test-,$(PRESETS))

all: build

deps:
	bash scripts/install-deps.sh

build: build-release

$(addprefix build-,$(PRESETS)): build-%: deps
	cmake --preset $*
	cmake --build --preset $*

run: deps build-release
	build/release/bin/weft-bench run all --quick --html bench-results/report.html

demo: deps build-release
	bash scripts/echo-demo.sh

test: deps $(addprefix test-,$(TEST_PRESETS)) fuzz

bench: run

# libFuzzer targets (clang, build/fuzz), FUZZ_SECONDS each
FUZZ_SECONDS ?= 20
fuzz: deps
	bash scripts/run-fuzz.sh $(FUZZ_SECONDS)

$(addprefix test-,$(PRESETS)): test-%: deps
	cmake --preset $* -DWEFT_WERROR=ON
	cmake --build --preset $*
	$(if $(filter tsan,$*),$(TSAN_WRAP)) ctest --preset $* $(CTEST_LABEL)

clean:
	rm -rf build
