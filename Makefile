# One command runs the system, one runs the tests; both set themselves up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo up test lint schemas bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m clusternet_nats.devsystem demo

up: $(STAMP)
	$(BIN)/python -m clusternet_nats.devsystem up

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m clusternet_nats.api.schemas --check proto-schemas

test: lint
	$(BIN)/pytest -q -p no:cacheprovider

schemas: $(STAMP)
	$(BIN)/python -m clusternet_nats.api.schemas proto-schemas

bench: $(STAMP)
	$(BIN)/python bench/replication_rollout.py

clean:
	rm -rf $(VENV) .cnet-up .mypy_cache .ruff_cache
