# Every target installs what it needs first, so each works from a fresh clone
# with only Python 3.11 and make present.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup test test-torch lint demo bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,bench,server,stemming,documents,integrations,stores,embed,fastembed]'
	touch $(STAMP)

test: setup
	$(BIN)/python -m pytest -q

# The sentence-transformers adapter's tests need torch (the CPU build on this disk, ~700 MB):
# kept out of setup so that `make test` stays light; they are skipped without it.
test-torch: setup
	$(BIN)/python -m pip install --quiet torch==2.13.0 -e '.[sentence-transformers]'
	$(BIN)/python -m pytest -q tests/embedders

lint: setup
	$(BIN)/ruff check zerda_async sync_api tests bench
	$(BIN)/ruff format --check zerda_async sync_api tests bench
	$(BIN)/mypy

demo: setup
	$(BIN)/zerda demo

bench: setup
	$(BIN)/python bench/bench_sync_latency.py
	$(BIN)/python bench/bench_async.py
	$(BIN)/python bench/bench_overhead.py
	$(BIN)/python bench/bench_scale.py
	$(BIN)/python bench/bench_quality.py --latency
	$(BIN)/python bench/bench_embedders.py
	$(BIN)/python bench/bench_e5.py
	$(BIN)/python bench/bench_e5_quality.py
	$(BIN)/python bench/bench_scaleout.py
	$(BIN)/python bench/bench_replica_soak.py
	$(BIN)/python bench/bench_stage_cost.py
	$(BIN)/python bench/bench_loop_stall.py
	$(BIN)/python bench/bench_readers.py
	$(BIN)/python bench/bench_headings.py
	$(BIN)/python bench/bench_covid.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
