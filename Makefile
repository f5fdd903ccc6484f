# GPUs for Machine Learning, with live labs.
#   make lab    set up everything and open the course in JupyterLab (127.0.0.1, token on)
#   make test   set up everything and run the whole test suite (what CI runs)
# Every target creates the virtual environment it needs; nothing is installed by hand.

SHELL  := /bin/bash
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8888
# The pinned set for this machine: the NVIDIA driver's CUDA version (cuDriverGetVersion through
# ctypes, no numba) picks requirements/course-cu12.txt (a CUDA 12 driver, older than 580: Colab,
# many clouds) or requirements/course.txt (a CUDA 13 driver, or no GPU). `make lab LOCK=...` forces one.
LOCK ?= $(shell $(PYTHON) gpu_utils/colab.py lock 2>/dev/null || echo requirements/course.txt)
COURSE_STAMP := $(VENV)/.course-installed$(if $(findstring cu12,$(LOCK)),-cu12)
OTHER_CUPY   := $(if $(findstring cu12,$(LOCK)),cupy-cuda13x,cupy-cuda12x)
DEV_STAMP    := $(VENV)/.dev-installed
# The browser test drives Debian's chromium; Playwright never downloads a browser.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
PYTEST_NB := $(BIN)/pytest -p no:cacheprovider -n 2 --dist loadfile --durations=15 \
	--nbval-current-env --nbval-cell-timeout=600
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: lab test test-gpu benchmarks gpu-check unit notebooks lint format labs labs-check execute \
	doctor lock lock-check slides clean test-cu12 test-colab tiers-ci python-check

# The pinned NumPy 2.4.6 needs Python 3.11 or newer (its Requires-Python); an older Python is told
# so here, before pip fails on it.
python-check:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
		echo "The course needs Python 3.11 or newer (its pinned packages do); '$(PYTHON)' is" \
			"$$($(PYTHON) --version 2>/dev/null || echo 'not found')."; \
		echo "Install Python 3.11, 3.12 or 3.13 (your system's packages, pyenv, or" \
			"'uv python install 3.11'), then run make again with it, e.g. 'make lab PYTHON=python3.11'."; \
		exit 1; }

$(BIN)/python: | python-check
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(COURSE_STAMP): $(LOCK) pyproject.toml | $(BIN)/python
	@cuda=$$($(PYTHON) gpu_utils/colab.py cuda); if [ "$$cuda" = none ]; then \
		echo "Installing $(LOCK) (no NVIDIA driver found: the course runs on the simulator)"; \
	else echo "Installing $(LOCK) (the NVIDIA driver supports CUDA $$cuda)"; fi
	$(BIN)/pip uninstall --quiet --yes $(OTHER_CUPY) 2>/dev/null || true  # one CuPy at a time
	$(BIN)/pip install --quiet -r $(LOCK)
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	mkdir -p $(VENV)/share/jupyter/lab/settings  # no "Jupyter news" pop-up over the course
	echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}' \
		> $(VENV)/share/jupyter/lab/settings/overrides.json
# Switching sets reinstalls: the other set's stamp goes (the line is empty, and not echoed, when none).
	$(if $(filter-out $@,$(wildcard $(VENV)/.course-installed*)),rm -f $(filter-out $@,$(wildcard $(VENV)/.course-installed*)))
	touch $@

# Test tools. nbgrader is used only to strip solutions; its JupyterLab panels are switched off.
$(DEV_STAMP): requirements/dev.txt $(COURSE_STAMP)
	$(BIN)/pip install --quiet -r requirements/dev.txt -c $(LOCK)
	$(BIN)/jupyter server extension disable --sys-prefix nbgrader >/dev/null 2>&1 || true
	$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1 || true
	touch $@

lab: $(COURSE_STAMP)
	@echo "JupyterLab prints a URL with a token"
	@echo "(http://127.0.0.1:$(PORT)/lab/tree/notebooks/00_start_here.ipynb?token=...): copy it into your"
	@echo "browser; it opens chapter 00. A headless machine, or one where you run as root, opens no"
	@echo "browser by itself."
	$(BIN)/jupyter lab --ip=127.0.0.1 --port=$(PORT) $(ROOT_FLAG) --ServerApp.root_dir="$(CURDIR)" \
		--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb

doctor: $(COURSE_STAMP)
	$(BIN)/python -m gpu_utils doctor

test: lint unit notebooks

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(DEV_STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Test runs record checker passes in a scratch progress file, not in the learner's own.
unit notebooks test-gpu: export GPU_COURSE_PROGRESS := $(or $(TMPDIR),/tmp)/gpu-course-test-progress.json

# Tiers 1-2: unit tests of gpu_utils and the checkers (references pass, known-wrong answers fail).
unit: $(DEV_STAMP)
	$(BIN)/pytest -p no:cacheprovider -n 2 --dist loadgroup --durations=15 tests

# Tier 3: notebooks and solutions strictly against their stored outputs. The labs run top to
# bottom in tier 1 (tests/test_notebooks.py), where every check cell must say "not attempted yet".
notebooks: $(DEV_STAMP)
	$(PYTEST_NB) --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks solutions

# On a machine with an NVIDIA GPU: the whole suite in GPU mode, its log kept with the date.
test-gpu: $(DEV_STAMP)
	mkdir -p build
	set -o pipefail; GPU_COURSE_MODE=gpu $(MAKE) --no-print-directory unit notebooks 2>&1 \
		| tee build/test-gpu-$$(date +%Y-%m-%d).log

# On a machine with an NVIDIA GPU: record the reference measurements the notebooks show on the
# simulator (gpu_utils/reference_data/*.json: device, date, command, results). The scripts are
# benchmarks/ch*.py (not checker_corpus.py), kernels.py and trace_vs_ncu.py, each within its time
# limit and all within 4 minutes on an H100 (benchmarks/gpu_check.py says which and how long).
benchmarks: $(DEV_STAMP)
	$(BIN)/python benchmarks/gpu_check.py benchmarks

# On a GPU machine, offline, with its own Python (PYTHON=python3) and a folder of wheels for what
# it lacks (WHEELS=dir; `python3 benchmarks/gpu_check.py download-command` prints the pip line):
# doctor, benchmarks, the GPU-mode unit tier and every notebook and solution, in one archive in
# build/, within 9 minutes on one H100. Installs nothing from the network; see CONTRIBUTING.md.
gpu-check:
	$(PYTHON) benchmarks/gpu_check.py run $(if $(WHEELS),--wheels $(WHEELS))

# CI tiers: the course under the package sets learners really have, each in its own environment
# built from scratch (requirements/tiers.py finds the interpreter and writes the Colab pins):
#   test-cu12   Python 3.11, requirements/course-cu12.txt (torch 2.10, triton 3.6.0), .venv-cu12
#   test-colab  Python 3.13 (pyenv), Colab's dated set (requirements/colab/backend-info-*.txt: numpy
#               2.1.3, numba 0.61.2, torch 2.11.0, triton 3.6.0) with numba-cuda[cu12] as the
#               install cell installs it, .venv-colab; also tests/test_colab_drive.py when present.
# Each runs every notebook and solution top to bottom in simulator mode (nbval --nbval-lax: a cell
# that raises fails, outputs are not compared, they differ across versions), the API test and the
# checker tests of the kernel and Triton labs. TIER_NOTEBOOKS=... runs fewer notebooks.
PYTHON311 ?= $(shell python3 requirements/tiers.py python 3.11 2>/dev/null)
PYTHON313 ?= $(shell python3 requirements/tiers.py python 3.13 2>/dev/null)
TIER_TOOLS := pytest pytest-xdist nbval nbclient nbconvert nbformat ipykernel
TIER_NOTEBOOKS ?= notebooks solutions
TIER_TESTS := tests/test_api_compat.py tests/test_doctor.py tests/test_exercises_ch03.py \
	tests/test_exercises_ch03_streams.py tests/test_exercises_ch04.py \
	tests/test_exercises_ch04_latency.py tests/test_exercises_ch05.py \
	tests/test_exercises_ch05_attention.py tests/test_exercises_ch06.py \
	tests/test_exercises_ch12.py tests/test_exercises_ch12_ramp.py tests/test_checker_verdicts.py
TIER_PYTEST := -p no:cacheprovider -n 2 --durations=10
# The tiers install with uv (pinned; in its own small environment): the same pins as pip, in
# parallel and from uv's cache. Cold, on a 2-core machine, the CUDA 12 set took 1 min 40 s with
# uv 0.13.9 (its torch 2.10 is PyPI's CUDA build, with 2.5 GB of nvidia-* wheels), 14-15 min
# with pip. The Colab tier's second step stays pip: it is the install cell's own pip run.
UV_VERSION := 0.13.9
UV := .venv-tools/bin/uv
TIER_UV = $(UV) pip install --quiet --python $(1)/bin/python

$(UV):
	$(PYTHON) -m venv .venv-tools
	.venv-tools/bin/pip install --quiet uv==$(UV_VERSION)
test-cu12 test-colab: export GPU_COURSE_MODE := simulator
test-cu12 test-colab: export GPU_COURSE_PROGRESS := $(or $(TMPDIR),/tmp)/gpu-course-tier-progress.json

.venv-cu12/.tier-installed: requirements/course-cu12.txt requirements/dev.txt pyproject.toml | $(UV)
	@[ -n "$(PYTHON311)" ] || { python3 requirements/tiers.py python 3.11; exit 1; }
	rm -rf .venv-cu12 && $(PYTHON311) -m venv .venv-cu12
	$(call TIER_UV,.venv-cu12) -r requirements/course-cu12.txt $(TIER_TOOLS) \
		-c requirements/course-cu12.txt -c requirements/dev.txt
	$(call TIER_UV,.venv-cu12) --no-deps -e .
	touch $@

.venv-colab/.tier-installed: requirements/colab requirements/tiers.py requirements/course-cu12.txt \
		requirements/dev.txt pyproject.toml | $(UV)
	@[ -n "$(PYTHON313)" ] || { python3 requirements/tiers.py python 3.13; exit 1; }
	rm -rf .venv-colab && $(PYTHON313) -m venv .venv-colab
	python3 requirements/tiers.py colab .venv-colab/colab-set.txt .venv-colab/install-cell.txt
	$(call TIER_UV,.venv-colab) -r .venv-colab/colab-set.txt $(TIER_TOOLS) -c requirements/dev.txt
	@# the install cell's own pip run; PyPI's torch 2.11.0 is a CUDA 13 build: pip names a conflict
	.venv-colab/bin/pip install --quiet -r .venv-colab/install-cell.txt -c .venv-colab/colab-set.txt
	$(call TIER_UV,.venv-colab) --no-deps -e .
	touch $@

# CI's share of both tiers (.ci/run, every stop): the doctor, the API test (and the Drive install
# test on 3.13), and every notebook and solution top to bottom. The whole tiers add the checker
# tests of the kernel and Triton labs: `make test-cu12 test-colab`, about 23 min each here.
# Measured on this 2-core machine with warm installs (2026-11-28): the CUDA 12 tier's doctor, API
# test and 656 notebook cells in 7 min 53 s at load 3-6 (656 cells: 7 min 14 s).
tiers-ci:
	$(MAKE) test-cu12 TIER_TESTS="tests/test_api_compat.py tests/test_doctor.py"
	@if [ -z "$(PYTHON313)" ]; then python3 requirements/tiers.py python 3.13; \
		echo "tiers-ci: the Colab tier is SKIPPED on this machine (no Python 3.13)"; \
	else $(MAKE) test-colab TIER_TESTS="tests/test_api_compat.py tests/test_doctor.py"; fi

test-cu12 test-colab: test-%: .venv-%/.tier-installed
	.venv-$*/bin/python -m gpu_utils doctor
	.venv-$*/bin/pytest $(TIER_PYTEST) --dist loadgroup $(TIER_TESTS) \
		$(if $(filter colab,$*),$(wildcard tests/test_colab_drive.py))
	.venv-$*/bin/pytest $(TIER_PYTEST) --dist loadfile --nbval-lax --nbval-current-env \
		--nbval-cell-timeout=600 $(TIER_NOTEBOOKS)

# Generate labs/ from solutions/ (refuses to overwrite a lab you edited; FORCE=1 backs it up first).
labs: $(DEV_STAMP)
	$(BIN)/python -m gpu_utils.authoring.labgen $(if $(FORCE),--force)

labs-check: $(DEV_STAMP)
	$(BIN)/python -m gpu_utils.authoring.labgen --check

# Re-run notebooks and solutions top to bottom in simulator mode and keep the outputs, then labs.
# Their check cells record passes in a scratch file, not in the learner's progress (gu.progress()).
execute: export GPU_COURSE_PROGRESS := $(or $(TMPDIR),/tmp)/gpu-course-execute-progress.json
execute: $(DEV_STAMP)
	GPU_COURSE_MODE=simulator $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=900 notebooks/*.ipynb solutions/*.ipynb
	$(BIN)/python -m gpu_utils.authoring.labgen

# Refresh the exact pins from requirements/*.in in a scratch environment: course.txt and dev.txt
# from a real install, course-cu12.txt from a resolver dry run (same versions for shared packages).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet -r requirements/course.in
	.lock-venv/bin/pip freeze --all --exclude-editable > requirements/course.txt.new
	.lock-venv/bin/pip install --quiet -r requirements/dev.in -c requirements/course.txt.new
	.lock-venv/bin/pip freeze --all --exclude-editable > requirements/all.txt.new
	$(PYTHON) requirements/split_lock.py requirements/course.txt.new requirements/all.txt.new
	$(PYTHON) requirements/split_lock.py shared > requirements/shared.txt.new
	.lock-venv/bin/pip install --dry-run --ignore-installed --quiet --report requirements/cu12.json.new \
		-r requirements/course-cu12.in -c requirements/shared.txt.new
	$(PYTHON) requirements/split_lock.py cu12 requirements/cu12.json.new
	rm -rf .lock-venv requirements/*.new

# CI: the CUDA 12 set still resolves against the package index (a pip dry run; skipped offline).
lock-check: | $(BIN)/python
	$(BIN)/python requirements/check_lock.py requirements/course-cu12.txt

# Instructors: reveal.js slides of every chapter in build/slides/, working offline (the assets come
# from npm, instructors/package.json, and are copied next to the slides), plus the syllabi and FAQ.
SLIDES_NPM := build/slides-npm
slides: $(DEV_STAMP)
	mkdir -p $(SLIDES_NPM) && cp instructors/package.json $(SLIDES_NPM)/
	npm install --no-audit --no-fund --silent --prefix $(SLIDES_NPM)
	$(BIN)/python instructors/build_slides.py $(SLIDES_NPM)/node_modules build/slides
	$(BIN)/python -m gpu_utils.workshop syllabi
	$(BIN)/python -m gpu_utils.workshop faq
	@echo "Open build/slides/00_start_here.slides.html in a browser (no network needed)."

clean:
	rm -rf $(VENV) .venv-cu12 .venv-colab .venv-tools .pytest_cache .ruff_cache
