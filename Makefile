# Two commands do all the set-up on a fresh machine:
#   make run    the main job: every suite on the built-in local board
#   make test   everything the tests need (venvs, apt packages, services), then the tests
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.evbench-installed
ARGS ?=
PYTEST_ARGS ?=

.PHONY: run test setup lint clean

$(STAMP): agent/pyproject.toml host_tools/pyproject.toml requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e 'agent[fast]' -e host_tools -r requirements-dev.txt
	touch $(STAMP)

setup: $(STAMP)
	tests/setup-system.sh
	$(BIN)/python tests/setup_envs.py

run: $(STAMP)
	$(BIN)/evbench run --board local $(ARGS)

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .venv-* .pytest_cache
