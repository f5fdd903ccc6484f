"""The workshop kit: syllabi derived from the notebooks and FAQ from the doctor and checkers (both
committed and fresh), the class summary, and slides that reference no CDN (gpu_utils/authoring/workshop.py,
instructors/build_slides.py)."""

import json
import subprocess
import sys
from pathlib import Path

import build_slides  # instructors/build_slides.py, on the path through pyproject.toml
import nbformat
import pytest

from conftest import ROOT
from gpu_utils import diagnostics
from gpu_utils.authoring import workshop


def test_syllabi_are_up_to_date_with_the_notebooks():
    committed = (ROOT / "instructors" / "syllabi.md").read_text()
    assert committed == workshop.syllabi_text(), "run `python -m gpu_utils.workshop syllabi`"


def test_each_workshop_fits_its_time_and_the_self_paced_path_has_everything():
    items = workshop.course_items()
    paths = {i.path for i in items}
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert {p.relative_to(ROOT).as_posix() for p in notebooks} <= paths
    assert {f"labs/{p.name}" for p in (ROOT / "labs").glob("*.ipynb")} <= paths
    for _, budget, _ in workshop.FORMATS:
        chosen = workshop.plan(budget, items)
        assert chosen, "not even chapter 00 fits"
        assert workshop.PREFLIGHT_MINUTES + sum(i.minutes for i in chosen) <= budget
        assert chosen == items[: len(chosen)]  # in course order


def test_a_lettered_chapter_sits_between_its_neighbours_with_its_lab(tmp_path, monkeypatch):
    """08b_... (the PyTorch primer) comes after 08 and its lab, before 09, in the syllabi and
    the slides; a notebook that is not a chapter is left out."""
    monkeypatch.setattr(workshop, "ROOT", tmp_path)
    names = {
        "notebooks": ["09_c.ipynb", "08b_b.ipynb", "08_a.ipynb", "scratch.ipynb"],
        "labs": ["09_c_lab.ipynb", "08b_b_lab.ipynb", "08_a_lab.ipynb"],
    }
    for folder, files in names.items():
        (tmp_path / folder).mkdir()
        for name in files:
            nbformat.write(nbformat.v4.new_notebook(), tmp_path / folder / name)
    order = [i.path for i in workshop.course_items()]
    assert order == [
        "notebooks/08_a.ipynb",
        "labs/08_a_lab.ipynb",
        "notebooks/08b_b.ipynb",
        "labs/08b_b_lab.ipynb",
        "notebooks/09_c.ipynb",
        "labs/09_c_lab.ipynb",
    ]
    slides = [p.name for p in build_slides.chapters(tmp_path)]
    assert slides == ["08_a.ipynb", "08b_b.ipynb", "09_c.ipynb"]


def test_estimates_grow_with_prose_code_and_exercises(tmp_path, monkeypatch):
    monkeypatch.setattr(workshop, "ROOT", tmp_path)
    (tmp_path / "labs").mkdir()

    def minutes(words, code, checks):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_markdown_cell("word " * words)]
        nb.cells += [nbformat.v4.new_code_cell("x = 1") for _ in range(code)]
        nb.cells += [nbformat.v4.new_code_cell('gu.exercises.check("a", a)') for _ in range(checks)]
        path = tmp_path / "labs" / "99_demo_lab.ipynb"
        nbformat.write(nb, path)
        return workshop.estimate(path).minutes

    assert minutes(1200, 0, 0) == 10  # 1200 words at 120 a minute
    assert minutes(1200, 10, 0) == 20
    assert minutes(1200, 10, 2) == 50  # 10 + 12 code cells (2 are checks) + 2 x 12 = 46, up to 50


def test_faq_is_generated_from_the_doctor_and_the_checkers():
    committed = (ROOT / "instructors" / "FAQ.md").read_text()
    assert committed == workshop.faq_text(), "run `python -m gpu_utils.workshop faq`"
    flat = " ".join(committed.split())
    for _problem, fix in diagnostics.catalogue():
        assert " ".join(fix.split()) in flat
    hints = workshop.checker_hints()
    assert hints, "no named hints found in gpu_utils/exercises"
    for texts in hints.values():
        for hint in texts:
            assert " ".join(hint.split()) in flat
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in committed
    assert "course-cu12.txt" in committed


def _doctor_report(mode, findings, name="Tesla T4"):
    return {
        "ok": all(f["status"] != "error" for f in findings),
        "mode": mode,
        "device": {"name": name if mode == "gpu" else "Numba CUDA simulator"},
        "findings": findings,
    }


def test_class_summary_of_reports_and_progress_files(tmp_path):
    ok = {"name": "kernel", "status": "ok", "detail": "ran", "fix": ""}
    broken = diagnostics.cuda_mismatch((12, 4), {"cupy-cuda13x": 13})
    files = {
        "ada.json": _doctor_report("gpu", [ok]),
        "bob.json": _doctor_report("simulator", [ok]),
        "cy.json": _doctor_report("gpu", [ok, broken], name="NVIDIA A100"),
        "ada.progress.json": {"passed": {"vector_add": {"chapter": "03_first_kernels"}}},
    }
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data))
    (tmp_path / "dan.json").write_text("{oops")
    text = workshop.summarise(sorted(tmp_path.glob("*.json")))
    assert "GPU (2): ada (Tesla T4), cy (NVIDIA A100)" in text
    assert "simulator (1): bob" in text
    assert "Need help (1):" in text and "cy: [error] CUDA versions" in text
    assert "fix: install the CUDA 12 set" in text
    assert "ada: 1 passed (03_first_kernels: 1)" in text
    assert "dan.json (JSONDecodeError)" in text


def test_summary_is_the_preflight_tools_command(tmp_path):
    report = tmp_path / "me.json"
    doctor = subprocess.run(
        [sys.executable, "-m", "gpu_utils", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    report.write_text(doctor.stdout)
    out = subprocess.run(
        [sys.executable, "-m", "gpu_utils", "summary", str(report)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "Attendees with a doctor report: 1" in out.stdout and "me" in out.stdout


def test_slides_are_tagged_from_headings_and_reference_no_cdn(tmp_path):
    nb = nbformat.read(ROOT / "notebooks" / "00_start_here.ipynb", as_version=4)
    tagged = build_slides.tag(nb)
    types = [c.metadata["slideshow"]["slide_type"] for c in tagged.cells]
    assert types[0] == "skip"  # the Colab badge
    assert types.count("slide") >= 3
    html = build_slides.convert(ROOT / "notebooks" / "00_start_here.ipynb", tmp_path).read_text()
    assert build_slides.external_assets(html) == []
    assert 'src="reveal.js/dist/reveal.js"' in html or '"reveal.js/dist/reveal.js"' in html
    assert "cdnjs" not in html and "unpkg" not in html


ASSETS = ROOT / "build" / "slides-npm" / "node_modules"


@pytest.mark.skipif(
    not (ASSETS / "reveal.js").exists() or not Path("/usr/bin/chromium").exists(),
    reason="needs `make slides` (npm assets) and Debian's chromium",
)
def test_built_slides_open_offline_in_a_browser(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    build_slides.copy_assets(ASSETS, tmp_path)
    page_path = build_slides.convert(ROOT / "notebooks" / "00_start_here.ipynb", tmp_path)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox"]
        )
        page = browser.new_page()
        asked = []
        page.route(
            "**/*",
            lambda route: (
                (asked.append(route.request.url), route.abort())
                if route.request.url.startswith("http")
                else route.continue_()
            ),
        )
        page.goto(page_path.as_uri())
        page.wait_for_selector(".reveal.ready", timeout=30_000)
        assert page.locator(".slides > section").count() >= 3
        browser.close()
    assert asked == []
