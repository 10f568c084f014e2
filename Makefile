# dcgym: `make demo` and `make test` are the two commands a new user needs.
# Both create .venv if it is missing, install the pinned dependencies and
# build the C++ engine (only when the sources changed), then run.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.dcgym-installed
CPP_SOURCES := $(shell find cpp_core -name '*.hpp' -o -name '*.cpp' | grep -v '^cpp_core/tests/build')
export RAY_USAGE_STATS_ENABLED := 0
export RAY_AUTH_MODE := disabled

.PHONY: demo test install cpp-test bench clean

demo: $(STAMP)
	$(PY) evaluate.py --scenario malcolm_hetero_paper_exp --policy random --policy po2 --policy jsq \
	    --loads 0.4,0.7,0.85,0.94 --tasks 1000000 --seed 1 --out out/demo

test: $(STAMP) cpp-test
	$(PY) -m pytest -q

install: $(STAMP)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "setuptools==80.9.0" "wheel==0.45.1" "pybind11==3.1.0"

$(STAMP): $(VENV)/bin/python pyproject.toml setup.py $(CPP_SOURCES)
	$(PY) -m pip install -q --no-build-isolation -e ".[test,bench]"
	@touch $@

# C++ unit tests of the kernel, built with the same flags as the extension.
cpp-test: $(VENV)/bin/python
	$(MAKE) -C cpp_core/tests run

bench: $(STAMP)
	$(PY) benchmarks/engine_speed.py

clean:
	rm -rf build dist *.egg-info cpp_core/_engine*.so cpp_core/tests/build
