# weft — the two commands a new user needs:
#   make run    install what is missing, build (release), run weft's quick benchmark suite
#               (weft-bench run all --quick: tables in the terminal, bench-results/report.html)
#   make test   install what is missing, build and run every test under release, asan and tsan
#               (and, after release, the packaging test: scripts/test-packaging.sh)
#
# Also: make build | build-<preset> | test-<preset> | deps | clean
#   make package  the Debian packages (libweft-dev, weft-tools) in build/release/packages/
#   make docs     the API reference (Doxygen; fails on any warning): build/release/docs/html/index.html
#   make test-packaging  install, find_package, pkg-config, add_subdirectory, .deb and docs checks
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
.PHONY: all deps build run demo bench test fuzz clean package docs test-packaging $(addprefix build-,$(PRESETS)) $(addprefix test-,$(PRESETS))

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

# Every check, phase by phase, with the table of where the time went (scripts/ci.sh): release,
# the packaging test (reusing build/release), asan, tsan, fuzz.
test:
	bash scripts/ci.sh

bench: run

# libFuzzer targets (clang, build/fuzz), FUZZ_SECONDS each
FUZZ_SECONDS ?= 20
fuzz: deps
	bash scripts/run-fuzz.sh $(FUZZ_SECONDS)

$(addprefix test-,$(PRESETS)): test-%: deps
	cmake --preset $* -DWEFT_WERROR=ON
	cmake --build --preset $*
	$(if $(filter tsan,$*),$(TSAN_WRAP)) ctest --preset $* $(CTEST_LABEL)

package: deps build-release
	cd build/release && cpack -G DEB -B packages

docs: deps
	cmake --preset release
	cmake --build --preset release --target docs

test-packaging: deps
	cmake --preset release -DWEFT_WERROR=ON
	cmake --build --preset release
	bash scripts/test-packaging.sh build/release

clean:
	rm -rf build
