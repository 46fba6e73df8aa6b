# Two commands do all the set-up on a fresh machine:
#   make run    the main job: every suite on the built-in local board
#   make test   everything the tests need (venvs, apt packages, services), then the tests
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.evbench-installed
ARGS ?=
PYTEST_ARGS ?=

.PHONY: run test test-e2e setup lint clean

$(STAMP): agent/pyproject.toml host_tools/pyproject.toml requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e 'agent[fast]' -e host_tools -r requirements-dev.txt
	touch $(STAMP)

# The tests' other environments are built beside .venv: each pip install keeps about one
# core busy, so on two cores the two take the time of the longer (.venv, about 30 s).
setup:
	tests/setup-system.sh
	$(PYTHON) tests/setup_envs.py & envs=$$!; \
	$(MAKE) --no-print-directory $(STAMP); made=$$?; \
	wait $$envs && exit $$made

run: $(STAMP)
	$(BIN)/evbench run --board local $(ARGS)

# Every tier (fast, integration, e2e) with its time budget; PYTEST_ARGS runs
# pytest once with those arguments instead, e.g. PYTEST_ARGS="tests/test_stats.py".
test: setup
ifeq ($(strip $(PYTEST_ARGS)),)
	tests/run-tiers.sh
else
	$(BIN)/python -m pytest $(PYTEST_ARGS)
endif

# The end-to-end tier on the virtual ARM64 board (QEMU): builds or reuses the
# board image, then runs the e2e tests, each within a printed time budget.
test-e2e: setup
	tests/board/run-e2e.sh $(PYTEST_ARGS)

# mypy: the agent strictly; the host at default strictness (mypy.ini), reading the
# agent's modules it imports but reporting their errors only in the agent's own run
# (follow_imports = silent). tests/test_types.py runs every mypy line of this recipe.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict agent/src/evbench_agent agent/src/evbench_core
	$(BIN)/mypy host_tools/src/evbench

clean:
	rm -rf $(VENV) .venv-* .pytest_cache
