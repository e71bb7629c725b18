# Makefile — the commands of the README, and nothing clever.
#
# `make demo`, `make test` and `make check` each install what is missing,
# configure, build and then do their job, so a fresh Debian machine needs
# nothing else. CMake owns the real build; this file only sequences set-up and
# the two builds (a normal one with gcc and -Werror, and one with clang under
# ASan/UBSan that also carries the libFuzzer targets).
#
#   make test    the whole suite, in both builds
#   make check   the fast tier only (ctest label `fast`, tests/labels.cmake) of
#                the normal build: under a minute on 2 cores, to check a change
#                while it is written; `make test` before it is committed

DEBIAN_PACKAGES := cmake pkg-config zstd libzstd-dev libsqlite3-dev libcairo2-dev \
                   libunwind-dev libdw-dev clang libclang-rt-14-dev python3 fonts-dejavu-core \
                   patchelf protobuf-compiler zlib1g-dev libmicrohttpd-dev chromium
MAKEFLAGS  += --no-print-directory
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
DEMO_DIR   ?= $(BUILD)/demo

.PHONY: all deps build build-asan test check demo clean

all: build

# Installs the Debian packages that are missing. As root it runs apt-get;
# otherwise it prints the exact command and stops, as the README promises.
deps:
	@missing=""; \
	for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "missing Debian packages; run:"; \
	    echo "  sudo apt-get install -y$$missing"; \
	    exit 1; \
	  fi; \
	fi

# `make test` and `make check` build with -Werror (-DGMT_WERROR=ON); `make demo` keeps what
# the build directory was configured with (off in a fresh one).
WERROR_FLAG :=
test: WERROR_FLAG := -DGMT_WERROR=ON
check: WERROR_FLAG := -DGMT_WERROR=ON

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(WERROR_FLAG) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	@CC=clang cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGMT_SANITIZE=ON $(WERROR_FLAG) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

# The suite twice: a normal build, then clang with ASan/UBSan (+ fuzzers).
test: build build-asan
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

# The fast tier of the normal build (tests/labels.cmake says which tests are slow or need a GPU).
check: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L '^fast$$'

demo: build
	@mkdir -p $(DEMO_DIR)
	@$(BUILD)/samples/synth/synth --steps 50 --leak 262144 --seed 1 --names -o $(DEMO_DIR)/train.zst
	@$(BUILD)/analyzer/memanalyze info $(DEMO_DIR)/train.zst
	@echo
	@GMT_CACHE_DIR=$(DEMO_DIR)/cache $(BUILD)/analyzer/memanalyze report $(DEMO_DIR)/train.zst --plots $(DEMO_DIR)/plots
	@GMT_CACHE_DIR=$(DEMO_DIR)/cache $(BUILD)/analyzer/memanalyze import $(DEMO_DIR)/train.zst -o $(DEMO_DIR)/train.db >/dev/null
	@echo
	@echo "demo trace:    $(DEMO_DIR)/train.zst"
	@echo "its database:  $(DEMO_DIR)/train.db  (memanalyze sql $(DEMO_DIR)/train.db \"SELECT * FROM steps\")"
	@echo "its pictures:  $(DEMO_DIR)/plots/"
	@echo "its tensors:   memanalyze tensors $(DEMO_DIR)/train.zst  (parameters, gradients, AdamW state by layer)"

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
