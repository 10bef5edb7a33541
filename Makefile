# The two commands of the README: `make book` builds the website, `make test` runs every check.
# Each does its own set-up on a fresh machine: a virtual environment, MathJax, Chromium.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
JB := $(VENV)/bin/jupyter-book
MATHJAX := _mathjax/mathjax/tex-chtml.js
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_WORKERS ?= 2
# Built pages show a training loop's final progress line, not every refresh (attnlib.training).
export ATTNLIB_PROGRESS := summary
# One BLAS/OpenMP thread per process: the suite runs two processes on two cores, and
# multi-threaded BLAS spin-waiting against a busy neighbour was seen to cost 5x in CPU time.
export OMP_NUM_THREADS := 1
export OPENBLAS_NUM_THREADS := 1
export MKL_NUM_THREADS := 1

.PHONY: book test serve setup browser stamp strip bench clean

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -e .
	touch $@

# MathJax 3 from npm, served by the site itself so that the book reads offline.
$(MATHJAX):
	npm install --no-save --no-audit --no-fund --loglevel=error --prefix .cache/npm mathjax@3.2.2
	rm -rf _mathjax && mkdir -p _mathjax
	cp -r .cache/npm/node_modules/mathjax/es5 _mathjax/mathjax

setup: $(VENV)/.installed $(MATHJAX)

# Debian's Chromium, driven by Playwright in the website tests (no browser download).
browser:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium >/dev/null; }

book: setup
	$(JB) build . --keep-going
	@echo "The book is at file://$(CURDIR)/_build/html/index.html (or run: make serve)"

serve:
	@echo "Serving the book at http://127.0.0.1:8000 (Ctrl-C to stop)"
	$(PY) -m http.server 8000 --bind 127.0.0.1 --directory _build/html

test: setup browser
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile tests

# Every benchmark side by side with its peer; results land in attnlib/results/ (committed)
# and the book's benchmarks appendix shows them. `make bench QUICK=1` is the tiny smoke run.
bench: setup
	@for script in benchmarks/[a-z]*.py; do \
		echo "== $$script"; $(PY) $$script $(if $(QUICK),--quick) || exit 1; \
	done

# Re-stamp every chapter's setup cell from _config.yml, and strip outputs before committing.
stamp: $(VENV)/.installed
	$(PY) book/notebook_tools.py stamp

strip: $(VENV)/.installed
	$(PY) book/notebook_tools.py strip

clean:
	rm -rf _build .cache _mathjax
