# Only Python 3.11 and make are assumed: everything else is installed into .venv.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test lint stress bench eval-recall clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=/path/to/python3.11"; exit 2; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# Our modules byte-compiled as an installed package's are (a no-op when nothing changed): where
# PYTHONDONTWRITEBYTECODE is set, every start would otherwise compile them from source.
run: $(STAMP)
	@$(BIN)/python -m compileall -q app memory widgets >/dev/null
	$(BIN)/pseudoclaude $(ARGS)

# The tree's rules first (seconds), then the suite on three workers: most tests wait on a subprocess,
# a terminal or the fake API rather than compute, so two cores keep three busy.
test: $(STAMP)
	$(BIN)/ruff format --check app widgets memory tests
	$(BIN)/ruff check app widgets memory tests
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 3 --dist loadgroup

stress: $(STAMP)
	PSEUDOCLAUDE_STRESS_KILLS=$${KILLS:-200} $(BIN)/python -m pytest -q -p no:cacheprovider tests/reliability -k random_sigkill --timeout 1800

# Not part of `test`: every figure of the README's Performance table (10 to 16 minutes on 2 cores).
bench: $(STAMP)
	$(BIN)/python -m tests.bench

# Not part of `test`: memory search and recall on the labelled eval sets, dev and held-out apart
# (README "Retrieval quality"; under a minute on 2 cores). `make test` runs a fixed subset of it.
eval-recall: $(STAMP)
	$(BIN)/python -m tests.eval.recall $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff format --check app widgets memory tests
	$(BIN)/ruff check app widgets memory tests
	$(BIN)/lint-imports
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info
