# drokit: every target creates the virtual environment it needs (fresh machine: only python3 required).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs-installed

.PHONY: venv demo test bench docs reproductions freshness clean

CORE_STAMP := $(VENV)/.core-installed

# the core install only (drokit and its 9 dependencies): what the demo needs
$(CORE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(CORE_STAMP)

# the test stack: the core plus the cross-check extras (cvxpy, PICOS, ECOS, SCS, matplotlib, dask)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP) $(CORE_STAMP)

# the documentation tooling (mkdocs-material, mkdocstrings) in the same venv; drokit itself is read
# statically by mkdocstrings, but installed too so that the API pages see the package as users do
$(DOCS_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[docs]"
	touch $(DOCS_STAMP)

venv: $(STAMP)

demo: $(CORE_STAMP)
	$(BIN)/python examples/german_credit_demo.py

# the suite on every core (pytest-xdist; 2 cores: 5 min, one process: 10 min)
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_compile_solve.py

# the site goes to site/; the code blocks of the pages are executed by tests/test_docs_snippets.py (make test)
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

# the three reproduction reports at their default presets, regenerated from a clean checkout (about 1.5 h on 2 cores;
# --full: hours to days, on Dask with --backend dask --scheduler ADDRESS, resumable with --resume), then the banners
reproductions: $(STAMP)
	$(BIN)/python -m reproductions.sun2025
	$(BIN)/python -m reproductions.belbasi2023
	$(BIN)/python -m reproductions.belbasi2023 --normalized-metric --losses logistic --out docs/results/belbasi2023-normalized
	$(BIN)/python -m reproductions.selvi2022
	$(BIN)/python -m reproductions.freshness --mark

# which committed reports are current (their run's commit against the code they loaded)
freshness: $(STAMP)
	$(BIN)/python -m reproductions.freshness

clean:
	rm -rf $(VENV) .pytest_cache build site *.egg-info
