# The two set-up commands of the README: `make demo` (the main job) and `make test` (type check, tests).
# Each installs what it needs: a venv with every package, a running Docker engine, the images.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PACKAGES := -e kit/ -e '.[dev,bench]' $(foreach p,$(wildcard toolsets/*/pyproject.toml environments/*/pyproject.toml),-e $(dir $(p)))

WHEEL_DIRS := . kit $(dir $(wildcard toolsets/*/pyproject.toml environments/*/pyproject.toml))

.PHONY: install engine images demo test test-fast wheels

# The platform's distribution was called `arena` before it became `arena-evals`; a venv that still
# holds that install would have two owners of the `arena` package and command.
$(BIN)/.installed: pyproject.toml kit/pyproject.toml $(wildcard toolsets/*/pyproject.toml environments/*/pyproject.toml)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip uninstall -q -y arena 2>/dev/null || true
	$(BIN)/pip install -q $(PACKAGES)
	touch $@

install: $(BIN)/.installed

engine:
	images/ensure-docker.sh

images: install engine
	$(BIN)/arena images build

demo: images
	$(BIN)/arena demo --skip-build

# The type check runs first (strict on arena/ and runtime_bench/, see [tool.mypy] in pyproject.toml;
# the bench taskset apart, as the package `arena_bench` vf-eval imports), then the linter (`ruff check`, [tool.ruff])
# and the formatter's check (`ruff format --check`: every file as `ruff format` would leave it).
# Tests that kill the Docker engine run alone, after the parallel suite, so no other test loses it.
# tests/support/ensure-chromium.sh installs Debian's chromium and chromium-driver for the viewer's browser tests.
test: images
	tests/support/ensure-chromium.sh
	$(BIN)/mypy
	$(BIN)/mypy -p arena_bench
	$(BIN)/ruff check
	$(BIN)/ruff format --check
	$(BIN)/pytest -n auto -m 'not engine_fault' --durations=30
	$(BIN)/pytest -p no:xdist -m 'engine_fault'

# The fast tier: no Docker engine, nothing marked `slow`, one process (target: under a minute on 2 cores;
# collection alone, mostly importing verifiers, is ~20 s of CPU; see docs/layout.md).
test-fast: install
	$(BIN)/pytest -n 2 -m 'not docker and not slow'

# Every package as a wheel in dist/ (what `pip install --find-links dist/ arena-evals ...` installs).
wheels: install
	for p in $(WHEEL_DIRS); do $(BIN)/uv build --wheel --quiet -o dist "$$p" || exit 1; done
