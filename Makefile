# The two commands of the README: `make run` (main job) and `make test` (every test). Both install what they need.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python

.PHONY: run test install build py-install test-ts test-py test-integrations bench fuzz clean

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: node_modules/.installed

build: install
	npm run build

run: build
	node dist/src/cli/main.js main

PYCONSTRAINTS := bindings/python/constraints-integrations.txt

$(VENV)/.installed: bindings/python/pyproject.toml $(PYCONSTRAINTS)
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e 'bindings/python[test,openenv,verifiers,ray]' -c $(PYCONSTRAINTS)
	@touch $@

py-install: $(VENV)/.installed

test-ts: build
	npx vitest run

test-py: build py-install
	YCGYM_NODE_ENTRY=$(CURDIR)/dist/src/cli/main.js $(VPY) -m pytest -q bindings/python/tests

test: test-ts test-py

# TRL needs torch (several GB from PyPI): its tests live apart from `make test`.
$(VENV)/.installed-trl: $(VENV)/.installed
	$(VPY) -m pip install --quiet -e 'bindings/python[test,openenv,verifiers,ray,trl]' -c $(PYCONSTRAINTS)
	@touch $@

test-integrations: build $(VENV)/.installed-trl
	YCGYM_NODE_ENTRY=$(CURDIR)/dist/src/cli/main.js $(VPY) -m pytest -q bindings/python/tests_integrations

bench: build
	node dist/bench/run.js

clean:
	rm -rf dist node_modules $(VENV)
