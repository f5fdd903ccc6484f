"""The package as a table of contents (issue 31): every public module names its chapter, every
``gu.<name>`` the notebooks use resolves, CONTRIBUTING's index is current, and what ``import
gpu_utils`` changes in a process is exactly what the package's docstring lists."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from gpu_utils.authoring import contents

ROOT = contents.ROOT


def test_every_public_module_names_its_chapter_or_its_part_of_the_machinery():
    missing = [
        name
        for name in contents.public_modules()
        if not contents.chapters(contents.docstring(name))
        and not contents.role(contents.docstring(name))
    ]
    assert not missing, (
        f"{missing}: say in the first two paragraphs of the docstring which chapter the module "
        f"belongs to ('chapter 04', 'chapters 09-11') or that it is {contents.MACHINERY}"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Roofline (chapter 04; chapter 07 plots CPUs).", ["04", "07"]),
        ("A GPT for chapters 09-11 (parallelism).", ["09", "10", "11"]),
        ("Figures (chapters 01, 02 and 04).", ["01", "02", "04"]),
        ("The primer (chapter 08b) and chapters 02-03 and 13.", ["02", "03", "08b", "13"]),
        ("Section 5.4 of a paper, chapter 5 of a book.", []),
        ("First paragraph.\n\nSecond, chapter 12.\n\nThird, chapter 13.", ["12"]),
    ],
)
def test_chapters_are_read_from_the_first_two_paragraphs(text, expected):
    assert contents.chapters(text) == expected


def test_every_name_the_notebooks_use_resolves():
    import gpu_utils as gu

    used = contents.used_names()
    assert len(used) >= 39, used  # issue 31 counted 39 before chapter 13
    unresolved = []
    for name in used:
        try:
            getattr(gu, name)
        except AttributeError:
            unresolved.append(name)
    assert not unresolved, f"gu.{unresolved} used by a notebook but not in gpu_utils"
    assert "**nowhere**" not in contents.index()


def test_the_index_in_contributing_is_current():
    result = subprocess.run(
        [sys.executable, "-m", "gpu_utils.authoring.contents", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_stale_index_is_found_and_rewritten(tmp_path):
    copy = tmp_path / "CONTRIBUTING.md"
    copy.write_text(
        f"# x\n\n{contents.BEGIN}\n| old |\n{contents.END}\n\nafter\n", encoding="utf-8"
    )
    assert contents.write(copy) is True
    text = copy.read_text(encoding="utf-8")
    assert "| `one_gpu.trace` | 04 |" in text and "| old |" not in text and text.endswith("after\n")
    assert contents.write(copy) is False
    copy.write_text("# no markers\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="add the two markers"):
        contents.write(copy)


# --- what `import gpu_utils` changes ---------------------------------------------------------

_PROBE = textwrap.dedent(
    """
    import json, os, sys
    before_env = dict(os.environ)
    before_hooks = list(sys.meta_path)
    import gpu_utils
    env = {
        k: os.environ.get(k)
        for k in set(before_env) | set(os.environ)
        if before_env.get(k) != os.environ.get(k)
    }
    hooks = [
        [type(f).__name__, getattr(f, "name", None)]
        for f in sys.meta_path if f not in before_hooks
    ]
    loaded = sorted(m for m in ("numpy", "numba", "torch", "triton") if m in sys.modules)
    after = patched = None
    if gpu_utils.mode == "simulator":
        import numba  # the row_stack hook fires and leaves
        from numba.cuda.simulator import kernel, kernelapi
        after = [type(f).__name__ for f in sys.meta_path if f not in before_hooks]
        patched = {
            "launch": getattr(kernel.FakeCUDAKernel.__call__, "__module__", None),
            "shfl_sync": getattr(getattr(kernelapi.FakeCUDAModule, "shfl_sync", None),
                                 "__module__", None),
            "thread_run": kernel.BlockThread.run.__module__,
        }
    print(json.dumps({"env": env, "hooks": hooks, "loaded": loaded, "after": after,
                      "patched": patched}))
    """
)


def _probe(mode: str, **extra: str) -> dict:
    env = {
        k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "GPU_COURSE_SIM")
    }
    env.pop("TRITON_INTERPRET", None)
    env.update(GPU_COURSE_MODE=mode, **extra)
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_in_simulator_mode_changes_exactly_what_the_docstring_lists():
    import gpu_utils

    found = _probe("simulator")
    assert found["env"] == {"NUMBA_ENABLE_CUDASIM": "1", "TRITON_INTERPRET": "1"}
    assert found["loaded"] == []  # nothing heavy at import: numpy, numba, torch, triton
    assert found["hooks"] == [
        ["AfterImport", "numba.cuda.simulator.kernel"],
        ["AfterImport", "triton.runtime.interpreter"],
        ["_BeforeNumba", None],
        ["_OldNames", None],
    ]
    # once numba's simulator has loaded, only Triton's hook is left, and numba's classes changed
    assert found["after"] == ["AfterImport", "_OldNames"]
    assert found["patched"] == {
        "launch": "gpu_utils.sim._numba_sim",
        "shfl_sync": "gpu_utils.sim.warp",
        "thread_run": "gpu_utils.sim.warp",
    }
    doc = gpu_utils.__doc__
    for words in [*found["env"], "_BeforeNumba", "numba.cuda.simulator.kernel",
                  "triton.runtime.interpreter", "_OldNames", "FakeCUDAKernel.__call__", "FakeCUDAModule",
                  "BlockThread", "numpy.row_stack"]:  # fmt: skip
        assert words in doc, f"{words} changes at import but gpu_utils' docstring omits it"


def test_import_in_gpu_mode_removes_the_simulator_variables_and_hooks_nothing_of_numba():
    found = _probe("gpu", NUMBA_ENABLE_CUDASIM="1", TRITON_INTERPRET="1")
    assert found["env"] == {"NUMBA_ENABLE_CUDASIM": None, "TRITON_INTERPRET": None}
    assert [h[0] for h in found["hooks"]] == ["AfterImport", "_BeforeNumba", "_OldNames"]
    assert found["hooks"][0][1] == "triton.runtime.interpreter"


def test_numba_sims_engine_keeps_numbas_launch():
    found = _probe("simulator", GPU_COURSE_SIM="numba")
    assert found["patched"]["launch"] != "gpu_utils.sim._numba_sim"
    assert (
        found["patched"]["shfl_sync"] == "gpu_utils.sim.warp"
    )  # the intrinsics join either engine


def test_every_alias_is_the_module_in_its_subpackage_by_attribute_and_by_import():
    """``gu.<name>`` and ``import gpu_utils.<name>`` (notebooks, saved labs) keep working for every
    module that moved into a subpackage, and both give the module itself, not a copy."""
    import importlib

    import gpu_utils as gu

    assert len(gu.ALIASES) >= 39
    for name, home in gu.ALIASES.items():
        module = importlib.import_module(f"gpu_utils.{home}")
        assert getattr(gu, name) is module, name
        assert importlib.import_module(f"gpu_utils.{name}") is module, name
        assert module.__spec__.name == f"gpu_utils.{home}", name  # its own spec, not the alias's
    assert not hasattr(gu, "no_such_module")


def test_the_commands_kept_at_their_first_names_run_the_moved_modules():
    """``python -m gpu_utils.workshop`` (README, Makefile) and ``python -m gpu_utils.train_script``
    (chapter 11, under torchrun) are shims: run, they run the module; imported, they are it."""
    import gpu_utils.train_script as script
    import gpu_utils.workshop as kit
    from gpu_utils.authoring import workshop
    from gpu_utils.many_gpus import train_script

    assert kit is workshop and script is train_script
    done = subprocess.run(
        [sys.executable, "-m", "gpu_utils.workshop", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "syllabi" in done.stdout, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "gpu_utils.train_script", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "--steps" in done.stdout, done.stderr
