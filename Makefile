# One command runs the system, one runs the tests; both set themselves up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo up test lint schemas bench clean tools

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m clusternet_nats.devsystem demo

# make up NATS_CLUSTER=3: NATS as a 3-node JetStream cluster with R3 buckets.
NATS_CLUSTER ?= 1
up: $(STAMP)
	$(BIN)/python -m clusternet_nats.devsystem up --nats-cluster $(NATS_CLUSTER)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m clusternet_nats.api.schemas --check proto-schemas
	$(BIN)/python -m clusternet_nats.api.crds --check deploy/k8s/crds
	$(BIN)/python -m clusternet_nats.runtime.natsconf --check deploy

# etcd, kube-apiserver, kube-controller-manager, kubectl, helm and the NATS CLI, built from Go
# modules once and cached by version (see hack/tools.sh); the tests run the real binaries.
tools:
	bash hack/tools.sh

test: lint tools
	$(BIN)/pytest -q -p no:cacheprovider

schemas: $(STAMP)
	$(BIN)/python -m clusternet_nats.api.schemas proto-schemas
	$(BIN)/python -m clusternet_nats.api.crds deploy/k8s/crds

bench: $(STAMP)
	$(BIN)/python bench/replication_rollout.py

clean:
	rm -rf $(VENV) .cnet-up .mypy_cache .ruff_cache
