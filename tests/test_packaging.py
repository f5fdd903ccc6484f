"""The package as pip builds it: a release archive installs without a clone (reference data
included) under a distribution name of its own (the import name stays gpu_utils)."""

import shutil
import subprocess
import sys
import zipfile

from conftest import ROOT


def test_a_built_wheel_carries_the_reference_data_and_the_courses_own_name(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(
        ROOT / "gpu_utils", source / "gpu_utils", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    # A measurement file as the benchmarks write them (the tree may have none committed yet).
    (source / "gpu_utils" / "reference_data" / "packaging_probe.json").write_text("{}")
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
    out = subprocess.run(
        [*pip, "--quiet", "--wheel-dir", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name.startswith("gpus_for_ml_course-")
    names = zipfile.ZipFile(wheel).namelist()
    assert "gpu_utils/reference_data/packaging_probe.json" in names
    assert "gpu_utils/__init__.py" in names and "gpu_utils/exercises/__init__.py" in names
    assert not any(name.endswith(".log") for name in names)
