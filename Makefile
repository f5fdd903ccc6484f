# GPUs for Machine Learning, with live labs.
#   make lab    set up everything and open the course in JupyterLab (127.0.0.1, token on)
#   make test   set up everything and run the whole test suite (what CI runs)
# Every target creates the virtual environment it needs; nothing is installed by hand.

SHELL  := /bin/bash
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8888
COURSE_STAMP := $(VENV)/.course-installed
DEV_STAMP    := $(VENV)/.dev-installed
PYTEST_NB := $(BIN)/pytest -p no:cacheprovider -n 2 --dist loadfile --durations=15 \
	--nbval-current-env --nbval-cell-timeout=600
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: lab test test-gpu benchmarks unit notebooks lint format labs labs-check execute doctor lock clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(COURSE_STAMP): requirements/course.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements/course.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	mkdir -p $(VENV)/share/jupyter/lab/settings  # no "Jupyter news" pop-up over the course
	echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}' \
		> $(VENV)/share/jupyter/lab/settings/overrides.json
	touch $@

# Test tools. nbgrader is used only to strip solutions; its JupyterLab panels are switched off.
$(DEV_STAMP): requirements/dev.txt $(COURSE_STAMP)
	$(BIN)/pip install --quiet -r requirements/dev.txt -c requirements/course.txt
	$(BIN)/jupyter server extension disable --sys-prefix nbgrader >/dev/null 2>&1 || true
	$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1 || true
	touch $@

lab: $(COURSE_STAMP)
	$(BIN)/jupyter lab --ip=127.0.0.1 --port=$(PORT) $(ROOT_FLAG) --ServerApp.root_dir="$(CURDIR)" \
		notebooks/00_start_here.ipynb

doctor: $(COURSE_STAMP)
	$(BIN)/python -m gpu_utils doctor

test: lint unit notebooks

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(DEV_STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Tiers 1-2: unit tests of gpu_utils and the checkers (references pass, known-wrong answers fail).
unit: $(DEV_STAMP)
	$(BIN)/pytest -p no:cacheprovider -n 2 --durations=15 tests

# Tier 3: notebooks and solutions strictly against their stored outputs; labs must run (lax).
notebooks: $(DEV_STAMP)
	$(PYTEST_NB) --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks solutions
	$(PYTEST_NB) --nbval-lax labs

# On a machine with an NVIDIA GPU: the whole suite in GPU mode, its log kept with the date.
test-gpu: $(DEV_STAMP)
	set -o pipefail; GPU_COURSE_MODE=gpu $(MAKE) --no-print-directory unit notebooks 2>&1 \
		| tee gpu_utils/reference_data/test-gpu-$$(date +%Y-%m-%d).log

# On a machine with an NVIDIA GPU: record the reference measurements the notebooks show on the
# simulator (gpu_utils/reference_data/*.json: device, date, command, results).
BENCHMARKS := ch01_cpu_vs_gpu ch03_transfers kernels ch06_tensor_cores ch07_cpu_vs_gpu \
	ch08_collectives trace_vs_ncu
benchmarks: $(DEV_STAMP)
	for b in $(BENCHMARKS); do $(BIN)/python benchmarks/$$b.py || exit 1; done

# Generate labs/ from solutions/ (refuses to overwrite a lab you edited; FORCE=1 backs it up first).
labs: $(DEV_STAMP)
	$(BIN)/python -m gpu_utils.labgen $(if $(FORCE),--force)

labs-check: $(DEV_STAMP)
	$(BIN)/python -m gpu_utils.labgen --check

# Re-run notebooks and solutions top to bottom in simulator mode and keep the outputs, then labs.
execute: $(DEV_STAMP)
	GPU_COURSE_MODE=simulator $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=900 notebooks/*.ipynb solutions/*.ipynb
	$(BIN)/python -m gpu_utils.labgen

# Refresh the exact pins from requirements/*.in in a scratch environment.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet -r requirements/course.in
	.lock-venv/bin/pip freeze --all --exclude-editable > requirements/course.txt.new
	.lock-venv/bin/pip install --quiet -r requirements/dev.in -c requirements/course.txt.new
	.lock-venv/bin/pip freeze --all --exclude-editable > requirements/all.txt.new
	$(PYTHON) requirements/split_lock.py requirements/course.txt.new requirements/all.txt.new
	rm -rf .lock-venv requirements/*.new

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
