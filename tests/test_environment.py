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
