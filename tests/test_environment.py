"""environment.yml (conda) installs the same pinned versions as the Makefile's requirements."""

import re

import yaml

from conftest import ROOT


def _pins(path):
    pins = {}
    for line in (ROOT / path).read_text().splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, version = line.split("==", 1)
            pins[re.sub(r"\[.*\]", "", name).strip().lower()] = version.strip()
    return pins


def _direct(path):
    names = []
    for line in (ROOT / path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            names.append(re.split(r"[\[=<>; ]", line)[0].lower())
    return names


def test_environment_yml_matches_the_locked_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    yml = {}
    for entry in pip_section:
        if "==" in entry:
            name, version = entry.split("==", 1)
            yml[re.sub(r"\[.*\]", "", name).lower()] = version
    locked = _pins("requirements/course.txt") | _pins("requirements/dev.txt")
    for name, version in yml.items():
        assert locked.get(name) == version, (
            f"{name}: environment.yml {version}, lock {locked.get(name)}"
        )
    wanted = set(_direct("requirements/course.in") + _direct("requirements/dev.in"))
    assert wanted <= set(yml), f"missing from environment.yml: {sorted(wanted - set(yml))}"
    assert "-e ." in pip_section


def test_every_direct_requirement_is_locked():
    course, dev = _pins("requirements/course.txt"), _pins("requirements/dev.txt")
    assert set(_direct("requirements/course.in")) <= set(course)
    assert set(_direct("requirements/dev.in")) <= set(course) | set(dev)
    assert not set(course) & set(dev), "a package is pinned in both course.txt and dev.txt"


def test_python_version_agrees():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]


# The CUDA 12 set (requirements/course-cu12.txt): same pins as course.txt except the CUDA packages.
CUDA_SPECIFIC = re.compile(r"^(cuda-(?!pathfinder)|cupy-|nvidia-|torch$|triton$|numba-cuda$)")


def test_cuda_12_lock_pins_its_direct_requirements_with_cuda_12_wheels():
    cu12 = _pins("requirements/course-cu12.txt")
    assert set(_direct("requirements/course-cu12.in")) <= set(cu12)
    assert "cupy-cuda12x" in cu12 and "cupy-cuda13x" not in cu12
    assert cu12["cuda-bindings"].startswith("12.") and cu12["cuda-toolkit"].startswith("12.")
    assert "nvidia-cuda-runtime-cu12" in cu12  # what torch's CUDA 12 wheel requires
    assert not any(name.startswith("nvidia-") and not name.endswith("-cu12") for name in cu12)
    assert "numba-cuda[cu12]" in (ROOT / "requirements/course-cu12.in").read_text()


def test_cuda_12_and_13_locks_agree_on_everything_but_cuda():
    course, cu12 = _pins("requirements/course.txt"), _pins("requirements/course-cu12.txt")
    shared = {n: v for n, v in course.items() if not CUDA_SPECIFIC.match(n)}
    shared_cu12 = {n: v for n, v in cu12.items() if not CUDA_SPECIFIC.match(n)}
    assert shared == shared_cu12, "run `make lock`"
    generic = {n for n in _direct("requirements/course.in") if not CUDA_SPECIFIC.match(n)}
    assert generic == {
        n for n in _direct("requirements/course-cu12.in") if not CUDA_SPECIFIC.match(n)
    }


def test_environment_yml_agrees_with_the_cuda_12_lock_outside_cuda():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    cu12 = _pins("requirements/course-cu12.txt")
    for entry in pip_section:
        if "==" in entry:
            name, version = entry.split("==", 1)
            name = re.sub(r"\[.*\]", "", name).lower()
            if name in cu12 and not CUDA_SPECIFIC.match(name):
                assert cu12[name] == version, (
                    f"{name}: environment.yml {version}, cu12 {cu12[name]}"
                )
    assert "course-cu12.txt" in (ROOT / "environment.yml").read_text()


# Chapter 12: the triton each lock's torch requires on Linux, from the torch wheels' metadata on
# PyPI (torch-2.13.0-cp311-...manylinux_2_28_x86_64.whl: "triton==3.7.1; platform_system ==
# 'Linux'"; torch-2.10.0: "triton==3.6.0; ..."). A CPU-only torch does not require it, so the
# locks pin it directly; a new torch pin needs its triton here too.
TRITON_OF_TORCH = {"2.13.0": "3.7.1", "2.10.0": "3.6.0"}


def test_each_lock_pins_the_triton_its_torch_requires():
    for lock in ("course", "course-cu12"):
        pins = _pins(f"requirements/{lock}.txt")
        assert TRITON_OF_TORCH.get(pins["torch"]) == pins["triton"], (
            f"{lock}.txt: torch {pins['torch']} with triton {pins['triton']}"
        )
        assert "triton" in _direct(f"requirements/{lock}.in")


def test_numpy_stays_below_2_5_everywhere():
    # numba-cuda 0.30.4 registers np.row_stack, which numpy 2.5 removed (NVIDIA/numba-cuda#907).
    for lock in ("course", "course-cu12"):
        assert "numpy<2.5" in (ROOT / f"requirements/{lock}.in").read_text()
        major, minor = map(int, _pins(f"requirements/{lock}.txt")["numpy"].split(".")[:2])
        assert (major, minor) < (2, 5), f"{lock}.txt pins numpy {major}.{minor}"
    assert '"numpy>=1.26,<2.5"' in (ROOT / "pyproject.toml").read_text()
