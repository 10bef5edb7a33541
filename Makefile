# The two commands of the README: `make book` builds the website, `make test` runs every check.
# Each does its own set-up on a fresh machine: a virtual environment, MathJax, Chromium.
# The others: `make pdf` (the book as one PDF, after `make book`), `make serve`, `make lab`,
# and the opt-in `make test-latest` (Python 3.12 with the newest release of every dependency),
# `make test-gpu` (on a machine with CUDA) and `make test-devices` (CUDA simulated on the CPU).

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
JB := $(VENV)/bin/jupyter-book
MATHJAX := _mathjax/mathjax/tex-chtml.js
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
AS_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
PYTEST_WORKERS ?= 2
# `make serve PORT=8001` when 8000 is taken; HTML is the folder that is served.
PORT ?= 8000
HTML ?= _build/html
PDF := $(HTML)/book/attention-before-attention.pdf
# Built pages show a training loop's final progress line, not every refresh (attnlib.training).
export ATTNLIB_PROGRESS := summary
# One BLAS/OpenMP thread per process: the suite runs two processes on two cores, and
# multi-threaded BLAS spin-waiting against a busy neighbour was seen to cost 5x in CPU time.
export OMP_NUM_THREADS := 1
export OPENBLAS_NUM_THREADS := 1
export MKL_NUM_THREADS := 1

.PHONY: book test serve setup browser stamp strip bench clean pdf lab test-latest mutate \
	test-gpu test-devices test-unseen calibrate

$(VENV)/.installed: requirements.txt pyproject.toml
	@python3 -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))' || \
		{ echo "Python 3.11 or newer is needed (pyproject.toml); python3 is $$(python3 -V)"; exit 1; }
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

# No progress line on the built pages (attnlib.training); Jupyter and Colab keep their bars.
book: setup
	ATTNLIB_PROGRESS=off $(JB) build . --keep-going
	@echo "The book is at file://$(CURDIR)/_build/html/index.html (or run: make serve)"

serve:
	@test -f $(HTML)/index.html || { echo "No website in $(HTML): run make book first"; exit 1; }
	@echo "Serving the book at http://127.0.0.1:$(PORT) (Ctrl-C to stop)"
	$(PY) -m http.server $(PORT) --bind 127.0.0.1 --directory $(HTML)

# The whole book as one PDF (title page, contents, bookmarks, page numbers, typeset math),
# printed from the built website by the same headless Chromium that the website tests use.
pdf: setup browser
	@test -f $(HTML)/index.html || { echo "No website in $(HTML): run make book first"; exit 1; }
	$(PY) book/pdf.py --site $(HTML) --output $(PDF)

# JupyterLab on the chapters, with this environment's Python (attnlib installed) as kernel.
lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=book $(AS_ROOT) $(LAB_ARGS)

test: setup browser
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile tests

# Opt-in, not part of `make test`: a Python 3.12 environment (.venv-latest) with the newest
# release of every dependency, as on Colab; runs the library's tests and executes every
# chapter. torch for 3.12 comes from the registry as its CUDA build (about 6 GB).
# The first python3.12 that runs (a pyenv shim may exist and refuse to run).
PYTHON_LATEST ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12.*/bin/python3.12; do \
	$$p -c '' 2>/dev/null && { command -v $$p; break; }; done)
VENV_LATEST := .venv-latest
LIBRARY_TESTS = $(wildcard $(patsubst attnlib/%.py,tests/test_%.py,$(wildcard attnlib/*.py)))
test-latest: $(MATHJAX)
	@test -n "$(PYTHON_LATEST)" || { echo "python3.12 not found: make test-latest PYTHON_LATEST=/path/to/python3.12"; exit 1; }
	test -x $(VENV_LATEST)/bin/python || $(PYTHON_LATEST) -m venv $(VENV_LATEST)
	$(VENV_LATEST)/bin/python -m pip install -q --upgrade pip
	$(VENV_LATEST)/bin/python -m pip install -q --upgrade --upgrade-strategy eager \
		-e . pytest hypothesis entmax nbmake myst-nb ipykernel nbformat nbclient pandas
	$(VENV_LATEST)/bin/python -c 'import sys, torch, numpy, scipy, sklearn, skimage; \
		print("Python", sys.version.split()[0], "torch", torch.__version__, "numpy", numpy.__version__, \
		"scipy", scipy.__version__, "scikit-learn", sklearn.__version__, "scikit-image", skimage.__version__)'
	@# Both halves run even when the first fails; the target fails if either did.
	status=0; \
	$(VENV_LATEST)/bin/python -m pytest -q -p no:cacheprovider $(LIBRARY_TESTS) || status=1; \
	$(VENV_LATEST)/bin/python -m pytest -q -p no:cacheprovider --nbmake --nbmake-timeout=300 book/*.ipynb || status=1; \
	exit $$status

# On a machine with a CUDA GPU (not part of `make test`, whose CI has none): the library's
# tests with CUDA present (tests/test_cuda.py's CUDA-only checks run instead of skipping),
# every chapter executed on CUDA (its setup cell's get_device() picks it), and the GPU
# section of the normalizers benchmark (attnlib/results/normalizers_gpu.json), all with
# the Triton kernels asked for (ATTNLIB_TRITON=1: unverified kernels are off by default),
# so that they are exercised. Who runs it and when: CONTRIBUTING.md ("Devices").
# Every test of the library: all but those of the website, the PDF, JupyterLab, Colab,
# the executed chapters and the packaging.
DEVICE_TESTS = $(filter-out tests/test_site.py tests/test_pdf.py tests/test_lab.py \
	tests/test_colab.py tests/test_notebooks.py tests/test_packaging.py, $(wildcard tests/test_*.py))
test-gpu: setup
	@$(PY) -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else \
		"make test-gpu needs a CUDA GPU: torch.cuda.is_available() is False here")'
	$(PY) -c 'import torch; print("CUDA device:", torch.cuda.get_device_name())'
	export ATTNLIB_TRITON=1; status=0; \
	$(PY) -m pytest -q -p no:cacheprovider -rs $(DEVICE_TESTS) || status=1; \
	$(PY) -m pytest -q -p no:cacheprovider --nbmake --nbmake-timeout=300 book/*.ipynb || status=1; \
	$(PY) benchmarks/normalizers.py $(if $(QUICK),--quick) || status=1; \
	exit $$status

# CUDA simulated on the CPU (tests/simulated_cuda.py), on demand: the library's tests as
# if CUDA were present, and every chapter executed on the simulated device, so that device
# mixing fails here as on a GPU. Slow (every tensor operation passes a Python check);
# `make test` runs the fast part of it, tests/test_devices.py.
test-devices: setup
	status=0; \
	ATTNLIB_SIMULATE_CUDA=1 $(PY) -m pytest -q -p no:cacheprovider $(DEVICE_TESTS) || status=1; \
	$(PY) tools/simulated_chapter.py book/*.ipynb || status=1; \
	exit $$status

# Every benchmark side by side with its peer; results land in attnlib/results/ (committed)
# and the book's benchmarks appendix shows them. `make bench QUICK=1` is the tiny smoke run.
bench: setup
	@for script in benchmarks/[a-z]*.py; do \
		echo "== $$script"; $(PY) $$script $(if $(QUICK),--quick) || exit 1; \
	done

# The unseen-seed audit (on demand, before resolving any change to a claim; not part of
# `make test`): every chapter executed at three seed offsets drawn now (printed; never one
# used while writing, which stay below 10 000), a table of claim by offset, held or
# failed; the audit is added to book/unseen_audit.json (commit it). First, at each offset,
# every committed sweep a claim reads that an offset moves (tools/unseen.py SWEEPS) is
# re-run there, in full, into a scratch folder the chapters then read
# (ATTNLIB_RESULTS_DIR), so that those claims are checked on the re-runs; the ledger counts
# a claim that reads a sweep only at offsets where its sweep was re-run. Cost: the
# chapters (3-6 minutes an offset on 2 cores, by the audits recorded) plus the sweeps
# (the symmetry sweep alone 3.5-5 minutes an offset); `SWEEPS=off` skips the re-runs, `SWEEPS=quick` runs their
# smoke forms (plumbing only: a quick re-run counts for no claim).
# `make test-unseen OFFSETS="123456 654321" CHAPTERS="04 05"` reruns given offsets.
# tools/calibrate.py (`make calibrate`) runs the cheap claims at hundreds of offsets.
SWEEPS ?= full
test-unseen: $(VENV)/.installed
	$(PY) tools/unseen.py --record --sweeps $(SWEEPS) $(if $(OFFSETS),--offsets $(OFFSETS)) \
		$(if $(CHAPTERS),--chapters $(CHAPTERS))

# The calibration of the cheap claims (tools/calibrate.py CHEAP): each claim's own cells
# at 200 fresh offsets within BUDGET seconds (default 600), added to book/calibration.json
# (commit it); the ledger shows each claim's offsets tried, failures and 95 % bound.
BUDGET ?= 600
calibrate: $(VENV)/.installed
	$(PY) tools/calibrate.py --cheap --record --budget-s $(BUDGET)

# The mutation campaign (on demand, not part of `make test`): each named bug of
# tools/mutants.py applied in turn to a copy of the tree, its tests run; writes
# tools/MUTATION.md. `make mutate MUTANTS=name1,name2` runs a subset (report printed).
mutate: $(VENV)/.installed
	$(PY) tools/mutate.py $(if $(MUTANTS),--mutants $(MUTANTS))

# Re-stamp every chapter's setup cell from _config.yml, and strip outputs before committing.
stamp: $(VENV)/.installed
	$(PY) book/notebook_tools.py stamp

strip: $(VENV)/.installed
	$(PY) book/notebook_tools.py strip

clean:
	rm -rf _build .cache _mathjax
