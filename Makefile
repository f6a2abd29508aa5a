# The front door. `make test` and `make run` install missing Debian packages themselves.
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=

.PHONY: all build deps test run bench clean asan install uninstall check-install

# `make install PREFIX=DIR` (default /usr/local; DESTDIR is honoured); `make uninstall` removes
# what the last install from $(BUILD) wrote, as listed in $(BUILD)/install_manifest.txt.
PREFIX ?= /usr/local

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

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

uninstall:
	cmake --build $(BUILD) --target uninstall

# Installs into a temporary prefix and builds C and C++ consumers against it only.
check-install: build
	bash scripts/check_install.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-asan
