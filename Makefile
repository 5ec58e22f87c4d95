# The two commands of the README: `make run` (main job) and `make test` (every test). Both install what they need.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
# Exact pins for pip (-c each): the wheel's runtime dependencies and build tools; the integration extras.
PYCONSTRAINTS := bindings/python/constraints.txt bindings/python/constraints-integrations.txt
PIPC := $(foreach f,$(PYCONSTRAINTS),-c $(f))
# Wheels of the Python package's runtime dependencies, downloaded by py-install: the wheel install test uses them offline.
WHEELHOUSE := .wheelhouse

.PHONY: run test install build py-install test-ts test-py test-static test-integrations test-pythons bench fuzz clean wheel train

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: node_modules/.installed

build: install
	npm run build

run: build
	node dist/src/cli/main.js main

$(VENV)/.installed: bindings/python/pyproject.toml $(PYCONSTRAINTS)
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e 'bindings/python[test,openenv,verifiers,ray]' $(PIPC)
	$(VPY) -c "import importlib.metadata as m; print('\n'.join(r for r in m.requires('ycgym') if 'extra ==' not in r))" > $(VENV)/runtime-requirements.txt
	$(VPY) -m pip download --quiet --only-binary=:all: $(PIPC) -r $(VENV)/runtime-requirements.txt -d $(WHEELHOUSE)
	@touch $@

py-install: $(VENV)/.installed

test-ts: build
	npx vitest run

test-py: build py-install
	YCGYM_NODE_ENTRY=$(CURDIR)/dist/src/cli/main.js YCGYM_WHEELHOUSE=$(CURDIR)/$(WHEELHOUSE) $(VPY) -m pytest -q bindings/python/tests

# bindings/python/dist/: the sdist (server bundled, every platform's ZeroMQ addon) and this platform's wheel, built
# from it. YCGYM_WHEEL_PLAT=manylinux_2_28_aarch64 (etc., see bindings/python/setup.py) builds another platform's.
wheel: build py-install
	rm -rf bindings/python/dist
	cd bindings/python && ../../$(VPY) -m build --no-isolation --outdir dist .

# Static checks: tsc over the TypeScript tests as well as the sources (tsconfig.check.json; vitest runs tests untyped),
# and the Python package's, as configured in bindings/python/pyproject.toml: mypy --strict over the package (its py.typed
# annotations are what users' type checkers read) and ruff over the package, tests, examples and benches.
test-static: install py-install
	npx tsc -p tsconfig.check.json
	cd bindings/python && ../../$(VPY) -m mypy && ../../$(VPY) -m ruff check src tests tests_integrations examples bench

test: test-ts test-py test-static

# TRL, the PPO example and the RLlib example need torch (several GB from PyPI): their tests live apart from `make test`.
# torch from PyPI brings its CUDA libraries: ~3.5 GB of wheels, ~5.5 GB installed. --no-cache-dir: pip would also keep
# a copy of every wheel in its cache (another ~3.5 GB at the install's peak, and after it); the free space is printed
# first, so a full disk reads as one.
$(VENV)/.installed-trl: $(VENV)/.installed bindings/python/constraints-train.txt
	@df -h . $${TMPDIR:-/tmp} | sed 's/^/disk: /'
	$(VPY) -m pip install --quiet --no-cache-dir -e 'bindings/python[test,openenv,verifiers,ray,trl,train,rllib]' $(PIPC) -c bindings/python/constraints-train.txt
	@touch $@

# The MaskablePPO example (bindings/python/examples/train_ppo.py): `make train` prints its JSON line and writes
# the learning curve to docs/img/train_ppo.png (BUDGET seconds of training; EVAL held-out seeds).
BUDGET ?= 300
EVAL ?= 1-10
train: build $(VENV)/.installed-trl
	YCGYM_NODE_ENTRY=$(CURDIR)/dist/src/cli/main.js $(VPY) bindings/python/examples/train_ppo.py --budget-s $(BUDGET) --eval-seeds $(EVAL) --plot docs/img/train_ppo.png

test-integrations: build $(VENV)/.installed-trl
	YCGYM_NODE_ENTRY=$(CURDIR)/dist/src/cli/main.js $(VPY) -m pytest -q bindings/python/tests_integrations

# The Python suite under each interpreter of PYTHONS (the package supports 3.10 on; `make test` runs the one of PY):
# a venv each (.venv-pythons/NAME), the package with its test extra installed from the index, the suite without the
# tests that need the integration extras (OpenEnv, verifiers, Ray: Python 3.11 on) or a wheelhouse of that
# interpreter's wheels (the packaging tests). Not part of `make test`: it downloads per interpreter.
PYTHONS ?= python3.10 python3.12 python3.13
test-pythons: build
	@set -e; for py in $(PYTHONS); do \
	  v=.venv-pythons/$$(basename $$py); echo "== $$py"; \
	  [ -x $$v/bin/python ] || $$py -m venv $$v; \
	  $$v/bin/python -m pip install --quiet --upgrade pip; \
	  $$v/bin/python -m pip install --quiet -e 'bindings/python[test,fast]'; \
	  YCGYM_NODE_ENTRY=$(CURDIR)/dist/src/cli/main.js $$v/bin/python -m pytest -q -p no:cacheprovider bindings/python/tests \
	    --ignore=bindings/python/tests/test_openenv.py --ignore=bindings/python/tests/test_verifiers.py \
	    --ignore=bindings/python/tests/test_ray.py --ignore=bindings/python/tests/test_packaging.py; \
	done

bench: build
	node --expose-gc dist/bench/run.js

# The fuzzing sections of the full reliability suite (docs/reliability.md): 1,000,000 command lines on live
# simulations and 100,000 protocol frames against a real server (a few minutes); `npm run reliability -- --full`
# runs every section.
fuzz: build
	node --expose-gc dist/scripts/reliability/run.js --full --only commands,protocol

clean:
	rm -rf dist node_modules $(VENV) .venv-pythons $(WHEELHOUSE) bindings/python/dist
