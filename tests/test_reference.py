"""Reference measurements: loaded when recorded, refused from the simulator, named safely."""

import json
import subprocess
import sys

import pytest

import gpu_utils as gu
from gpu_utils.facts import recorded as reference


def test_missing_recording_says_how_to_make_one():
    assert reference.load("no_such_benchmark") is None
    assert "python benchmarks/x.py" in reference.missing("no_such_benchmark", "benchmarks/x.py")


def test_recordings_load_with_their_provenance(tmp_path, monkeypatch):
    monkeypatch.setattr(reference, "DATA_DIR", tmp_path)
    record = {
        "device": "NVIDIA H100 80GB HBM3",
        "date": "2026-11-21",
        "command": "c",
        "results": [1],
    }
    (tmp_path / "demo.json").write_text(json.dumps(record))
    loaded = reference.load("demo")
    assert loaded.device == "NVIDIA H100 80GB HBM3" and loaded.results == [1]
    assert "NVIDIA H100 80GB HBM3, 2026-11-21" in loaded.caption()


def test_names_cannot_escape_the_data_folder():
    with pytest.raises(ValueError, match="letters, digits"):
        reference.load("../secrets")


@pytest.mark.skipif(gu.mode == "gpu", reason="simulator refusal")
def test_saving_from_the_simulator_is_refused():
    with pytest.raises(RuntimeError, match="real GPU"):
        reference.save("demo", [1])


def test_benchmarks_refuse_on_the_simulator_and_say_why(capsys):
    if gu.mode == "gpu":
        pytest.skip("on a GPU the scripts record")
    assert gu.reference.refuse_without_gpu() is True
    assert "nothing was written" in capsys.readouterr().err
    assert gu.reference.refuse_without_gpu(torch_cuda=True) is True
    assert "CUDA build of PyTorch" in capsys.readouterr().err


@pytest.mark.parametrize("script", ["ch03_streams", "ch04_latency"])
def test_benchmark_scripts_refuse_on_the_simulator(script, root):
    if gu.mode == "gpu":
        pytest.skip("on a GPU the scripts record")
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / f"{script}.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "needs an NVIDIA GPU" in done.stderr and "nothing was written" in done.stderr


# --- the committed recordings: schema, and shown with their provenance ------------------------

ROWS = {  # recording -> (where its rows are, the fields every row has)
    "ch01_cpu_vs_gpu": (("rows",), {"op", "backend", "size", "seconds", "q1", "q3"}),
    "ch03_transfers": (("rows",), {"n", "step", "bytes", "median_s", "q1_s", "q3_s", "gb_per_s"}),
    "ch03_streams": (("overlap", "rows"), {"chunks", "streams", "median_s", "model_s"}),
    "ch04_latency": (("occupancy",), {"ilp", "warps_per_sm", "gb_per_s"}),
    "ch06_tensor_cores": (("rows",), {"format", "size", "seconds", "flops_per_s"}),
    "ch07_cpu_vs_gpu": (("rows",), {"device", "op", "dtype", "size", "seconds", "flops_per_s"}),
    "ch08_collectives_shared_gpu": ((), {"op", "nbytes", "world_size", "backend", "seconds"}),
    "trace_vs_ncu": ((), {"kernel", "metric", "trace", "ncu"}),
}
RECORDED = sorted(p.stem for p in reference.DATA_DIR.glob("*.json"))


def _rows(recording):
    where, _ = ROWS[recording.name]
    rows = recording.results
    for key in where:
        rows = rows[key]
    return rows


@pytest.mark.parametrize("name", RECORDED)
def test_every_recording_names_its_device_date_and_command(name):
    import datetime

    recording = reference.load(name)
    assert recording.device.startswith("NVIDIA "), "the device as the driver names it"
    datetime.date.fromisoformat(recording.date)
    script = name.removesuffix("_shared_gpu").removesuffix("_nccl")
    assert f"benchmarks/{script}.py" in recording.command
    if name in ROWS:
        rows = _rows(recording)
        assert rows, f"{name}: no rows"
        fields = ROWS[name][1]
        for row in rows:
            assert fields <= set(row), f"{name}: a row lacks {sorted(fields - set(row))}"
            times = [v for k, v in row.items() if k in ("seconds", "median_s")]
            assert all(t > 0 for t in times), f"{name}: a time that is not positive: {row}"


def test_the_chase_is_never_stored_as_dram_latency():
    """The first H100 chase measured the L2 for every size from 1 MiB to 1 GiB; it may only be
    kept as the old method's figures. A chase stored as `pointer_chase` must have touched at
    least four L2s per timed run at its DRAM sizes (gu.latency.chase_footprint)."""
    recording = reference.load("ch04_latency")
    if recording is None:
        pytest.skip("no ch04_latency recording")
    results = recording.results
    for row in results.get("pointer_chase", []):
        assert row["footprint_bytes"] == gu.latency.chase_footprint(row["bytes"], row["steps"])
        if row["bytes"] >= 256 * 2**20:
            assert row["footprint_bytes"] >= 4 * results["l2_bytes"]
    old = results.get("pointer_chase_old_method")
    if old is not None:
        assert "NOT DRAM" in old["note"] and old["steps"] == 1 << 16


def _outputs(path) -> str:
    notebook = json.loads(path.read_text())
    texts = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain") or ""
            texts.append(text if isinstance(text, str) else "".join(text))
    return "\n".join(texts)


@pytest.mark.parametrize("name", RECORDED)
def test_a_notebook_shows_each_recording_with_device_date_and_command(name, root):
    """On the simulator the notebooks are executed and committed: the stored outputs of at
    least one notebook or solution must print this recording's caption."""
    recording = reference.load(name)
    shown = [
        path.name
        for folder in ("notebooks", "solutions")
        for path in sorted((root / folder).glob("*.ipynb"))
        if all(s in _outputs(path) for s in (recording.device, recording.date, recording.command))
    ]
    assert shown, f"no stored notebook output shows {name} with its device, date and command"


def test_the_recorded_trace_matches_nsight_compute_as_chapter_04_says():
    """Chapter 04's prose says every count of gu.trace equalled Nsight Compute's on the H100,
    with 3,968 bank conflicts for the unpadded tile and none padded: a refreshed recording that
    disagrees must change the prose (and gu.trace's claims) with it."""
    recording = reference.load("trace_vs_ncu")
    if recording is None:
        pytest.skip("no trace_vs_ncu recording")
    rows = recording.results
    assert all(row["trace"] == row["ncu"] for row in rows)
    conflicts = {
        row["kernel"]: row["ncu"] for row in rows if row["metric"] == "shared load bank conflicts"
    }
    assert conflicts["transpose, tiled"] == 3968 and conflicts["transpose, tiled + padding"] == 0
