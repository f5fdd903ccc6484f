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


def _minimum_python() -> tuple[int, int]:
    import tomllib

    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    found = re.fullmatch(r">=\s*(\d+)\.(\d+)", spec.strip())
    assert found, f"requires-python {spec!r} is not a plain lower bound"
    return int(found[1]), int(found[2])


def test_every_locked_package_installs_on_the_oldest_python_the_course_claims():
    """README and pyproject name the oldest Python; each pinned package's own Requires-Python
    (read from the installed distributions of this environment, which CI builds from the lock)
    must admit it: NumPy 2.4.6 needs 3.11, and the course once claimed 3.10."""
    from importlib import metadata

    from packaging.specifiers import SpecifierSet

    oldest = "{}.{}".format(*_minimum_python())
    pins = _pins("requirements/course.txt")
    refused = []
    for name in pins:
        try:
            requires = metadata.metadata(name).get("Requires-Python")
        except metadata.PackageNotFoundError:
            continue
        if requires and not SpecifierSet(requires).contains(f"{oldest}.99"):
            refused.append(f"{name} ({requires})")
    assert not refused, f"pinned packages that refuse Python {oldest}: {refused}"
    readme = (ROOT / "README.md").read_text()
    assert f"Python {oldest} or newer" in readme


def test_make_refuses_an_older_python_with_what_to_do(tmp_path):
    import subprocess

    major, minor = _minimum_python()
    old = tmp_path / "python3"
    old.write_text(
        f'#!/bin/sh\nif [ "$1" = --version ]; then echo "Python {major}.{minor - 1}.9"; exit 0; fi\n'
        "exit 1\n"  # `python -c 'sys.exit(sys.version_info < ...)'` on the old Python
    )
    old.chmod(0o755)
    run = subprocess.run(
        ["make", "-s", "python-check", f"PYTHON={old}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert f"needs Python {major}.{minor} or newer" in run.stdout, run.stdout
    assert f"Python {major}.{minor - 1}.9" in run.stdout and "PYTHON=python3." in run.stdout
    import sys

    ok = subprocess.run(
        ["make", "-s", "python-check", f"PYTHON={sys.executable}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    makefile = (ROOT / "Makefile").read_text()
    assert f"sys.version_info < ({major}, {minor})" in makefile


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


# The CI tiers (make test-cu12, make test-colab): requirements/tiers.py, run before any venv exists.
def _tiers():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tiers", ROOT / "requirements/tiers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_colab_tier_takes_colab_versions_and_the_install_cells_numba_cuda():
    tiers = _tiers()
    freeze = tiers.colab_list()
    lines = tiers.colab_requirements(freeze)
    text = freeze.read_text()
    for name in ("numpy", "numba", "torch", "triton"):
        colab = re.search(rf"^{name}==([^\s+]+)", text, re.M).group(1)
        assert f"{name}=={colab}" in lines
    assert "torch==2.11.0" in lines  # Colab's 2.11.0+cu128, local version dropped (not on PyPI)
    assert not any(line.startswith("numba-cuda") for line in lines)  # not Colab's 0.22.2, but:
    cell = tiers.install_cell_requirements()
    assert cell == [f"numba-cuda[cu12]=={_pins('requirements/course-cu12.txt')['numba-cuda']}"]


def test_colab_tier_refuses_a_list_without_a_package_it_needs(tmp_path):
    tiers = _tiers()
    freeze = tmp_path / "backend-info-2030-01-01.txt"
    freeze.write_text("numpy==2.1.3\nnumba==0.61.2\n")
    try:
        tiers.colab_requirements(freeze)
    except LookupError as error:
        assert "lists no torch" in str(error) and "triton" in str(error)
    else:
        raise AssertionError("a Colab list without torch was accepted")


def test_tier_python_is_found_or_named_with_how_to_get_it():
    import subprocess
    import sys

    tiers = _tiers()
    wanted = f"{sys.version_info[0]}.{sys.version_info[1]}"
    found = tiers.find_python(wanted)
    out = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    assert out.startswith(f"Python {wanted}.")
    try:
        tiers.find_python("3.99")
    except LookupError as error:
        assert "No Python 3.99 found" in str(error) and "pyenv install 3.99" in str(error)
    else:
        raise AssertionError("Python 3.99 was found")


def test_tiers_run_notebooks_laxly_and_the_chosen_checker_tests(tmp_path):
    import subprocess

    out = subprocess.run(
        ["make", "-n", "-B", "test-colab", "test-cu12", "PYTHON313=python3", "PYTHON311=python3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    named = set(re.findall(r"tests/test_\w+\.py", out.stdout))
    assert {"tests/test_api_compat.py", "tests/test_exercises_ch12.py"} <= named
    assert all((ROOT / path).exists() for path in named), named
    assert out.stdout.count("--nbval-lax") == 2
    assert "--nbval-sanitize" not in out.stdout  # outputs differ across versions: not compared
    drive = ROOT / "tests/test_colab_drive.py"
    assert (str(drive.relative_to(ROOT)) in out.stdout) == drive.exists()
