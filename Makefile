# One command runs the system, one runs the tests; both set themselves up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo up test lint schemas bench scale clean tools images

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

# The images deploy/compose and deploy/k8s run, built offline (hack/images.sh: a Docker engine
# from Debian's docker.io, Compose from the Go module proxy, a debootstrap base, wheels built here)
# and rebuilt only when their inputs change.
images: $(STAMP)
	bash hack/images.sh

# Images first (a no-op when current) so a first build's progress shows; where no Docker engine
# can run (exit 3), tests/compose skips and says why.
test: lint tools
	bash hack/images.sh || test $$? -eq 3
	$(BIN)/pytest -q -p no:cacheprovider

schemas: $(STAMP)
	$(BIN)/python -m clusternet_nats.api.schemas proto-schemas
	$(BIN)/python -m clusternet_nats.api.crds deploy/k8s/crds

bench: $(STAMP)
	$(BIN)/python bench/rollout.py

# docs/scale.md and docs/scale-*.png from the benches at 100 to 10,000 clusters (about an hour on
# 2 cores; raw results kept in docs/scale-results). SCALE_ARGS=--report-only redraws from those.
SCALE_ARGS ?=
scale: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python bench/scale.py $(SCALE_ARGS)

clean:
	rm -rf $(VENV) .cnet-up .mypy_cache .ruff_cache
