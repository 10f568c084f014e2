# dcgym: `make demo` and `make test` are the two commands a new user needs.
# Both create .venv if it is missing, install the pinned dependencies (only
# when pyproject.toml or setup.py changed) and build the C++ engine in place
# (only the sources that changed), then run.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.dcgym-installed
export RAY_USAGE_STATS_ENABLED := 0
export RAY_AUTH_MODE := disabled

.PHONY: demo test install build cpp-test example asan-fuzz bench policy-runtime clean

# A short Malcolm run on the default scenario (Malcolm's heterogeneous rack), its fill actor,
# then the trained nodes against RAND, Po2, JSQ, SED and water-filling: a table, plots in out/demo/.
demo: build
	$(PY) train.py --config demo --out out/demo

test: build cpp-test example asan-fuzz
	$(PY) -m pytest -q -n 2 --dist loadgroup

install: $(STAMP)

# Rebuild only the C++ extension, in place, reusing the objects of unchanged
# sources (a changed header rebuilds all): the edit-compile loop of C++ work.
build: $(STAMP)
	$(PY) setup.py -q build_ext --inplace --build-temp build/temp

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "setuptools==80.9.0" "wheel==0.45.1" "pybind11==3.1.0"

# --no-compile: Python compiles a module when it is first imported; byte-compiling all of the dependencies'
# 14,000 files at install costs about 80 s of CPU, most of it for modules nothing here imports.
$(STAMP): $(VENV)/bin/python pyproject.toml setup.py
	DCGYM_SKIP_EXTENSION=1 $(PY) -m pip install -q --no-compile --no-build-isolation -e ".[test,bench]"
	@touch $@

# C++ unit tests of the kernel and the models (built with -O1: see cpp_core/tests/CMakeLists.txt).
cpp-test: $(VENV)/bin/python
	$(MAKE) -C cpp_core/tests run

# The deployment example, built from the runtime headers alone, acting on a
# demo policy file written by the exporter; a truncated file must be refused.
RUNTIME_BUILD := build/runtime
RUNTIME_FLAGS := -std=c++17 -Wall -Wextra -I cpp_core/include

example: build
	@mkdir -p $(RUNTIME_BUILD)
	$(CXX) $(RUNTIME_FLAGS) -O2 cpp_core/examples/deploy_dispatch.cpp -o $(RUNTIME_BUILD)/deploy_dispatch
	$(PY) -m dcgym.export --demo-file $(RUNTIME_BUILD)/demo.dcpol
	$(RUNTIME_BUILD)/deploy_dispatch $(RUNTIME_BUILD)/demo.dcpol 100000
	head -c 100 $(RUNTIME_BUILD)/demo.dcpol > $(RUNTIME_BUILD)/truncated.dcpol
	! $(RUNTIME_BUILD)/deploy_dispatch $(RUNTIME_BUILD)/truncated.dcpol

# The policy file loader fuzzed under AddressSanitizer + UBSan (about 10 s).
asan-fuzz:
	@mkdir -p $(RUNTIME_BUILD)
	$(CXX) $(RUNTIME_FLAGS) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	    cpp_core/tests/fuzz_policy_file.cpp -o $(RUNTIME_BUILD)/fuzz_policy_file
	$(RUNTIME_BUILD)/fuzz_policy_file 200000

bench: build
	$(PY) benchmarks/engine_speed.py

# The C++ timing program of benchmarks/policy_runtime.py (which runs this target), built as the extension
# is (-O3), from the runtime headers alone.
policy-runtime: $(RUNTIME_BUILD)/policy_runtime

$(RUNTIME_BUILD)/policy_runtime: benchmarks/policy_runtime.cpp $(wildcard cpp_core/include/dcgym/runtime/*.hpp)
	@mkdir -p $(RUNTIME_BUILD)
	$(CXX) $(RUNTIME_FLAGS) -O3 $< -o $@

clean:
	rm -rf build dist *.egg-info cpp_core/_engine*.so cpp_core/tests/build
