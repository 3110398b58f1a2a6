# The two set-up commands of the README: `make demo` (the main job) and `make test` (type check, tests).
# Each installs what it needs: a venv with every package, a running Docker engine, the images.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PACKAGES := -e kit/ -e '.[dev]' $(foreach p,$(wildcard toolsets/*/pyproject.toml environments/*/pyproject.toml),-e $(dir $(p)))

.PHONY: install engine images demo test

$(BIN)/.installed: pyproject.toml kit/pyproject.toml $(wildcard toolsets/*/pyproject.toml environments/*/pyproject.toml)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q $(PACKAGES)
	touch $@

install: $(BIN)/.installed

engine:
	images/ensure-docker.sh

images: install engine
	$(BIN)/arena images build

demo: images
	$(BIN)/arena demo --skip-build

# The type check runs first (strict on arena/ and runtime_bench/, see [tool.mypy] in pyproject.toml).
test: images
	$(BIN)/mypy
	$(BIN)/pytest -n auto
