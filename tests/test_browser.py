"""End to end in a real browser: JupyterLab started as `make lab` starts it (127.0.0.1, a token,
--allow-root as root), driven by Debian's Chromium through Playwright (never a browser download).

It runs chapter 00 and a lab top to bottom and finds no error output, types a wrong and then a
right kernel into the lab and reads both checker messages, moves the occupancy calculator's
registers slider (chapter 02) and sees the result change, and checks that a request without the
token is refused. It runs chapters 09-11 top to bottom at a laptop's window size (1366 x 860)
and finds no error and no stderr box, and no word of their outputs broken across two lines; it
opens chapters 08b-12 and their labs' solutions with their stored outputs (what `make execute`
wrote and nbval keeps current) at that size and finds no word broken across two lines; it
changes the planner widget's model and MFU and reads the new result.
Screenshots go to build/browser-test/ (gitignored): look at them.
Needs `apt-get install --no-install-recommends chromium` (.ci/run does it when missing).
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT
from gpu_utils.authoring.install_cell import BLOCK_HEADER

CHROMIUM = os.environ.get("GPU_COURSE_CHROMIUM", "/usr/bin/chromium")
SHOTS = ROOT / "build" / "browser-test"
LAB = "labs/03_first_kernels_lab.ipynb"
LATE = tuple(
    f"notebooks/{n}.ipynb"
    for n in ("09_data_parallel", "10_model_parallel", "11_training_in_practice")
)
#: Chapters whose stored outputs, and their labs' solutions', must break no word at a laptop's width.
WIDE_STEMS = (
    "08b_pytorch_primer",
    "09_data_parallel",
    "10_model_parallel",
    "11_training_in_practice",
    "12_triton",
)
WIDE = tuple(f"notebooks/{n}.ipynb" for n in WIDE_STEMS) + tuple(
    f"solutions/{n}_lab.ipynb" for n in WIDE_STEMS
)
LAPTOP = {"width": 1366, "height": 860}  # the window a learner's laptop gives JupyterLab
# Cells of chapters 09-11 that the test photographs, each found by its first line (CodeMirror
# renders only the lines near the screen).
SHOWN = {
    "09_data_parallel": ("def traffic(stage, m):", "MEM_CONFIG = dict(", "per_sequence = {"),
    "10_model_parallel": (
        "P = gu.parallelism",
        'layouts = plans["Llama 3 405B, 2048 nodes"]',
        "def megatron_tflops(",
    ),
    "11_training_in_practice": (
        "losses = train(model,",
        "seq_len, batch = S[",
        "fast_share, fast_top, _ = trace_summary",
        "print(T.speedup_table(pipeline,",
        "fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11",
    ),
}
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in front (others stay open)

if not Path(CHROMIUM).exists():
    reason = f"no Chromium at {CHROMIUM}: `apt-get install --no-install-recommends chromium`"
    if os.environ.get("GPU_COURSE_REQUIRE_BROWSER"):  # CI: a missing browser is a failure
        raise RuntimeError(reason)
    pytest.skip(reason, allow_module_level=True)
os.environ["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]  # one JupyterLab, one worker

WRONG = """@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size - 1:
        out[i] = a[i] + b[i]
"""
RIGHT = """@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory):
    """JupyterLab on a copy of the notebooks (running them must not change the repository)."""
    home = tmp_path_factory.mktemp("jupyterlab")
    for relpath in (
        "notebooks/00_start_here.ipynb",
        "notebooks/02_gpu_architecture.ipynb",
        LAB,
        *LATE,
        *WIDE,
    ):
        (home / relpath).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / relpath, home / relpath)
    settings = home / "settings" / "@jupyterlab"
    for extension, values in {
        "notebook-extension/tracker": {"windowingMode": "none"},  # every cell in the DOM
        "apputils-extension/notification": {"fetchNews": "false"},
        "docmanager-extension/plugin": {"autosave": False},
    }.items():
        (settings / extension).parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{extension}.jupyterlab-settings").write_text(json.dumps(values))
    env = os.environ | {
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "GPU_COURSE_MODE": "simulator",
        "GPU_COURSE_PROGRESS": str(home / "progress.json"),
    }
    port = _free_port()
    command = [
        str(Path(sys.executable).parent / "jupyter"),
        "lab",
        "--ip=127.0.0.1",
        f"--port={port}",
        *(["--allow-root"] if IS_ROOT else []),  # as the Makefile's ROOT_FLAG
        f"--ServerApp.root_dir={home}",
        "--ServerApp.open_browser=False",  # headless here; a learner copies the URL instead
    ]
    server = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(server.stdout), daemon=True).start()
    pattern = re.compile(rf"http://127\.0\.0\.1:{port}/lab\?token=(\w+)")
    deadline = time.monotonic() + 90
    url = None
    while url is None and time.monotonic() < deadline and server.poll() is None:
        found = [m for line in list(lines) if (m := pattern.search(line))]
        url = found[0].group(0) if found else time.sleep(0.5)
    # jupyter_server prints the URL before its event loop binds the port (_bind_http_server is
    # a callback): wait until the port takes connections, or the first request is refused.
    while url and time.monotonic() < deadline and server.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            break
        except OSError:
            time.sleep(0.5)
    try:
        assert url, "JupyterLab printed no URL with a token:\n" + "".join(lines[-40:])
        assert server.poll() is None, "JupyterLab stopped:\n" + "".join(lines[-40:])
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture(scope="module")
def page(lab_url):
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox"] if IS_ROOT else []
        )
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        tab.set_default_timeout(60_000)
        tab.on("dialog", lambda dialog: dialog.accept())  # "leave the page?" when switching
        tab.goto(lab_url)  # the URL with the token, as copied from the terminal
        tab.wait_for_selector(".jp-LauncherCard, .jp-DirListing", timeout=90_000)
        yield tab
        browser.close()


def _open(page, lab_url, relpath):
    # a fresh workspace per notebook: only this notebook open, so "Idle" below is its kernel's
    workspace = re.sub(r"\W", "-", relpath)
    page.goto(lab_url.replace("/lab?", f"/lab/workspaces/{workspace}/tree/{relpath}?reset&"))
    page.wait_for_selector(f"{PANEL} .jp-CodeCell", timeout=90_000)
    # the kernel has started and connected (the status bar reads "Python 3 (ipykernel) | Idle")
    page.locator("#jp-main-statusbar", has_text=re.compile(r"\| Idle")).wait_for(timeout=90_000)
    time.sleep(1)
    page.wait_for_selector(
        f"{PANEL} .jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000
    )


def _wait_idle(page, cell=None, timeout=120):
    """Until the cell (default: every cell) has run: a number in its prompt, none queued ([*]),
    and the kernel is idle."""
    prompts = (cell or page.locator(f"{PANEL} .jp-CodeCell")).locator(".jp-InputPrompt")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        texts = prompts.all_text_contents()
        busy = page.locator(f"{PANEL} .jp-Notebook-ExecutionIndicator[data-status='busy']").count()
        if texts and all(re.search(r"\[\d+\]", t) for t in texts) and not busy:
            return texts
        time.sleep(0.5)
    page.screenshot(path=SHOTS / "timed_out.png")
    raise AssertionError(f"cells still running after {timeout} s: {prompts.all_text_contents()}")


def _clear_outputs(page):
    """Clear the stored outputs, so what the test reads afterwards comes from this run."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Edit$")).click()
    page.locator(".lm-Menu-itemLabel", has_text="Clear Outputs of All Cells").click()
    prompts = page.locator(f"{PANEL} .jp-CodeCell .jp-InputPrompt").all_text_contents()
    assert not any(re.search(r"\d", t) for t in prompts), prompts


def _run_all(page, timeout=120):
    _clear_outputs(page)
    prompts = page.locator(f"{PANEL} .jp-CodeCell .jp-InputPrompt")
    for _attempt in range(3):  # a kernel still connecting can drop the request: ask again
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Run All Cells$")).click()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if any(re.search(r"\[(\*|\d+)\]", t) for t in prompts.all_text_contents()):
                return _wait_idle(page, timeout=timeout)
            time.sleep(0.5)
    raise AssertionError("Run All Cells started nothing")


def _errors(page):
    texts = page.locator(f"{PANEL} .jp-OutputArea-output").all_text_contents()
    # IPython's error outputs carry one of these (a SyntaxError has no "Traceback" line)
    error = re.compile(r"Traceback \(most recent call last\)|Cell In\[\d+\], line \d+")
    return [t for t in texts if error.search(t)]


# The first code cell (the Colab install block, then `import gpu_utils as gu`) is found by its first
# line: CodeMirror renders only the lines in view, and the import sits 70 lines further down.
FIRST_CELL = BLOCK_HEADER


def _code_cell(page, needle):
    cells = page.locator(f"{PANEL} .jp-CodeCell")
    for index in range(cells.count()):
        if needle in cells.nth(index).locator(".cm-content").text_content():
            return cells.nth(index), cells.nth(index + 1)
    raise AssertionError(f"no code cell contains {needle!r}")


def _rerun(page, cell, keys):
    """Press ``keys`` and wait until ``cell`` has run again (its prompt number changes)."""
    before = cell.locator(".jp-InputPrompt").text_content()
    for key in keys:
        page.keyboard.press(key)
    deadline = time.monotonic() + 120
    while cell.locator(".jp-InputPrompt").text_content() in (before, "[*]:"):
        assert time.monotonic() < deadline, "the cell did not run"
        time.sleep(0.3)
    _wait_idle(page, cell)


def _replace_and_run(page, cell, check, source):
    editor = cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(source)  # one insertion: no auto-indent or bracket closing
    # run it (the check cell below is selected), then run the check cell
    _rerun(page, check, ["Shift+Enter", "Shift+Enter"])


def test_a_request_without_the_token_is_refused(lab_url):
    base = lab_url.split("/lab?")[0]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{base}/api/contents", timeout=20)
    assert refused.value.code == 403
    token = lab_url.split("token=")[1]
    with urllib.request.urlopen(f"{base}/api/contents?token={token}", timeout=20) as ok:
        assert ok.status == 200


def test_chapter_00_runs_top_to_bottom_without_errors(page, lab_url):
    _open(page, lab_url, "notebooks/00_start_here.ipynb")
    prompts = _run_all(page)
    page.screenshot(path=SHOTS / "00_start_here.png", full_page=True)
    assert sum(bool(re.search(r"\[\d+\]", p)) for p in prompts) >= 5, prompts
    assert _errors(page) == []
    text = " ".join(page.locator(f"{PANEL} .jp-OutputArea-output").all_text_contents())
    assert "Mode: simulator" in text and "vector_add: passed" in text


def test_a_lab_runs_then_a_wrong_and_a_right_kernel_get_their_messages(page, lab_url):
    _open(page, lab_url, LAB)
    _run_all(page)
    page.screenshot(path=SHOTS / "lab_run_all.png")
    assert _errors(page) == []
    stub, check = _code_cell(page, "def vector_add(a, b, out):")
    assert "not attempted yet" in check.locator(".jp-OutputArea").text_content()

    _replace_and_run(page, stub, check, WRONG)
    wrong = check.locator(".jp-OutputArea").text_content()
    stub.scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / "lab_wrong_kernel.png")
    assert "vector_add: not yet" in wrong, wrong
    assert "out.size - 1" in wrong or "guard" in wrong.lower() or "index" in wrong, wrong

    _replace_and_run(page, stub, check, RIGHT)
    right = check.locator(".jp-OutputArea").text_content()
    page.screenshot(path=SHOTS / "lab_right_kernel.png")
    assert "vector_add: passed" in right, right


def test_the_occupancy_calculator_reacts_to_its_registers_slider(page, lab_url):
    _open(page, lab_url, "notebooks/02_gpu_architecture.ipynb")
    _clear_outputs(page)
    first, _ = _code_cell(page, FIRST_CELL)
    first.locator(".cm-content").click()
    _rerun(page, first, ["Control+Enter"])
    cell, _ = _code_cell(page, "gu.widgets.occupancy_calculator()")
    cell.locator(".cm-content").click()
    _rerun(page, cell, ["Control+Enter"])
    summary = cell.locator(".widget-html-content", has_text="occupancy")
    summary.wait_for()
    before = summary.text_content()
    slider = cell.locator(".widget-slider", has=page.locator(".widget-label", has_text="registers"))
    readout = slider.locator(".widget-readout")
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("255")
    page.keyboard.press("Enter")
    deadline = time.monotonic() + 30
    while summary.text_content() == before and time.monotonic() < deadline:
        time.sleep(0.3)
    cell.scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / "occupancy_calculator.png")
    after = summary.text_content()
    assert readout.text_content().strip() == "255"
    assert after != before, before
    assert re.search(r"occupancy \d+(\.\d+)?%", after), after


# --- chapters 09-11 at a laptop's width ----------------------------------------------------------

# Words (split also at "-" and "/", where browsers may break a line) whose characters do not all
# sit on one line: a word broken across two lines, e.g. "boun" / "d by compute".
BROKEN_WORDS = """(root) => {
  const broken = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const re = /[^\\s\\-\\/]+/g;
    for (let m = re.exec(node.textContent); m; m = re.exec(node.textContent)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set(
        [...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))
      );
      if (tops.size > 1) broken.push(m[0]);
    }
  }
  return broken;
}"""


def _broken_words(locator):
    return [w for i in range(locator.count()) for w in locator.nth(i).evaluate(BROKEN_WORDS)]


def test_the_broken_word_check_can_fail(page):
    """The check below must see a word broken by the same CSS that JupyterLab gives outputs."""
    page.set_content(
        '<pre id="t" style="width: 60px; white-space: pre-wrap; word-break: break-all">'
        "bound by compute</pre><p id='ok' style='width: 400px'>bound by compute</p>"
    )
    assert _broken_words(page.locator("#t")) != []
    assert _broken_words(page.locator("#ok")) == []


@pytest.mark.parametrize("relpath", LATE, ids=lambda r: Path(r).stem)
def test_chapters_09_to_11_run_without_errors_or_stderr(page, lab_url, relpath):
    page.set_viewport_size(LAPTOP)
    _open(page, lab_url, relpath)
    _run_all(page, timeout=900)
    stem = Path(relpath).stem
    page.screenshot(path=SHOTS / f"{stem}.png")
    for needle in SHOWN[stem]:  # the outputs the issue named, one screenshot each: look at them
        cell, _ = _code_cell(page, needle)
        cell.scroll_into_view_if_needed()
        name = re.sub(r"\W+", "_", needle).strip("_")
        cell.screenshot(path=SHOTS / f"{stem}_{name}.png")
    assert _errors(page) == []
    stderr = page.locator(f"{PANEL} [data-mime-type='application/vnd.jupyter.stderr']")
    assert stderr.count() == 0, stderr.all_text_contents()[:3]
    if stem == "10_model_parallel":  # the planner's results: cells 34 and 36 of the issue
        for needle in SHOWN[stem][:2]:
            cell, _ = _code_cell(page, needle)
            outputs = cell.locator(".jp-OutputArea-output")
            assert outputs.count() > 0
            assert _broken_words(outputs) == [], needle
    # no result line of these chapters breaks inside a word at a laptop's width
    assert _broken_outputs(page) == {}


def _broken_outputs(page) -> dict[str, list[str]]:
    """The notebook in front's outputs with a word broken across two lines: {start: words}
    (the first cell's mode banner comes from gu.banner() and the Colab sync, outside the
    chapters)."""
    outputs = page.locator(f"{PANEL} .jp-OutputArea-output")
    broken = {}
    for index in range(outputs.count()):
        text = outputs.nth(index).text_content()
        if not text.startswith("Mode: "):
            words = outputs.nth(index).evaluate(BROKEN_WORDS)
            if words:
                broken[text[:70]] = words
    return broken


@pytest.mark.parametrize("relpath", WIDE, ids=lambda r: Path(r).stem)
def test_chapters_08b_to_12_and_their_labs_break_no_word_at_a_laptops_width(page, lab_url, relpath):
    """The stored outputs, as a learner first sees them (running every lab's checkers here
    would take the better part of an hour; the test above runs chapters 09-11)."""
    page.set_viewport_size(LAPTOP)
    _open(page, lab_url, relpath)
    outputs = page.locator(f"{PANEL} .jp-OutputArea-output")
    assert outputs.count() > 0, f"{relpath} has no stored outputs: run `make execute`"
    time.sleep(2)  # let the outputs' fonts and layout settle
    page.screenshot(path=SHOTS / f"stored_{Path(relpath).stem}.png")
    assert _broken_outputs(page) == {}


def test_the_planner_widget_follows_its_model_and_mfu(page, lab_url):
    page.set_viewport_size(LAPTOP)
    _open(page, lab_url, "notebooks/10_model_parallel.ipynb")
    _clear_outputs(page)
    first, _ = _code_cell(page, FIRST_CELL)
    first.locator(".cm-content").click()
    _rerun(page, first, ["Control+Enter"])
    cell, _ = _code_cell(page, "gu.widgets.planner(")
    cell.locator(".cm-content").click()
    _rerun(page, cell, ["Control+Enter"])
    output = cell.locator(".jp-OutputArea-output")
    summary = output.locator(".widget-html-content").last
    summary.wait_for()
    _wait_text_settles(summary)
    before = summary.text_content()
    cell.scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / "planner_before.png")
    assert re.search(r"\d", before), before
    assert _broken_words(output) == []

    model = output.locator(".widget-dropdown", has=page.locator(".widget-label", has_text="model"))
    select = model.locator("select")
    options = select.locator("option").all_text_contents()
    chosen = next(o for o in options if o != select.input_value() and "405B" not in o)
    select.select_option(label=chosen)
    after_model = _wait_changed(summary, before)
    assert after_model != before

    slider = output.locator(".widget-slider", has=page.locator(".widget-label", has_text="MFU"))
    readout = slider.locator(".widget-readout")
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("0.3")
    page.keyboard.press("Enter")
    after_mfu = _wait_changed(summary, after_model)
    cell.scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / "planner_after.png")
    assert readout.text_content().strip() in ("0.3", "0.30")
    assert after_mfu != after_model
    assert "30%" in after_mfu, after_mfu  # the assumed MFU the estimates now use
    assert _broken_words(output) == []
    errors = output.locator("[data-mime-type='application/vnd.jupyter.stderr']")
    assert errors.count() == 0, errors.all_text_contents()


def _wait_changed(locator, before, timeout=60):
    deadline = time.monotonic() + timeout
    while locator.text_content() == before and time.monotonic() < deadline:
        time.sleep(0.3)
    return _wait_text_settles(locator)


def _wait_text_settles(locator, quiet=1.5, timeout=60):
    """The text once it has not changed for ``quiet`` seconds (a re-plan takes a moment)."""
    deadline = time.monotonic() + timeout
    text, since = locator.text_content(), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < quiet:
        time.sleep(0.3)
        now = locator.text_content()
        if now != text:
            text, since = now, time.monotonic()
    return text
