"""Shared test set-up: every test runs in the mode gpu_utils chose (the simulator on CI)."""

import os
import tempfile
from pathlib import Path

# A test run records checker passes in a scratch file, never in the learner's own progress (the
# Makefile sets the same file; this covers pytest started by hand).
os.environ.setdefault(
    "GPU_COURSE_PROGRESS", str(Path(tempfile.gettempdir()) / "gpu-course-test-progress.json")
)

# Triton checks draw their inputs from one seed in a test run (a learner's draw fresh ones): two
# clean-clone CI runs each failed one hint test, on a draw where the evidence was borderline.
os.environ.setdefault("GPU_COURSE_CHECK_SEED", "20261128")

import pytest

import gpu_utils as gu

ROOT = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(config, items):
    if gu.mode == "gpu":
        return
    skip = pytest.mark.skip(reason="needs a real GPU; this run uses the simulator")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(params=["numba", "course"])
def launch(request):
    """Launch a kernel on numba-cuda's simulator (with gu.warp) or on the course's engine
    (gpu_utils.sim, issue 29): the same tests hold on both (tests/test_warp*.py)."""

    def run(kernel, blocks, threads, *args):
        if request.param == "course":
            from gpu_utils import sim

            sim.launch(kernel.py_func, blocks, threads, *args)
        else:
            kernel[blocks, threads](*args)
        return args

    run.engine = request.param
    return run
