# The front door. `make test` and `make run` install missing Debian packages themselves.
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=

.PHONY: all build deps test run bench clean asan

all: build

deps:
	@sh scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

# Flags given on the command line are applied to an existing build folder too, so that
# `make test CMAKE_FLAGS=-DTP_WERROR=ON` (CI) never runs on a folder configured without them.
build: $(BUILD)/CMakeCache.txt
	$(if $(strip $(CMAKE_FLAGS)),cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null)
	cmake --build $(BUILD) -j $(JOBS)

test: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

run: deps
	$(MAKE) build
	sh scripts/run.sh $(BUILD)

bench: deps
	$(MAKE) build
	sh bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-asan
