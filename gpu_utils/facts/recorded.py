"""Reference measurements recorded on a named GPU, shown by notebooks running on the simulator
(chapters 01, 03-07, 10 and 12: wherever a chapter times something on a GPU).

A benchmark script (``benchmarks/*.py``) measures on a real GPU and calls :func:`save`; the file
it writes, ``gpu_utils/reference_data/<name>.json``, records the device, the date, the command and
the results. A notebook calls :func:`load` in simulator mode, and when nothing is recorded yet it
says so (:func:`missing`) rather than showing made-up numbers.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import runtime
from ..device import device_info

DATA_DIR = Path(__file__).resolve().parent.parent / "reference_data"


@dataclass(frozen=True)
class Recording:
    """Results of one benchmark run on one GPU."""

    name: str
    device: str
    date: str
    command: str
    results: list | dict

    def caption(self) -> str:
        """A line to print under a chart of these results."""
        return f"Reference measurements: {self.device}, {self.date}, `{self.command}`."


def _path(name: str) -> Path:
    if not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"reference name {name!r}: use letters, digits, '_' and '-' only")
    return DATA_DIR / f"{name}.json"


def load(name: str) -> Recording | None:
    """The recording called ``name``, or None when none has been made yet."""
    path = _path(name)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return Recording(name=name, **data)


def missing(name: str, script: str) -> str:
    """What a notebook prints when no reference is recorded yet."""
    return (
        f"No reference measurements are recorded yet for '{name}'. On a machine with an NVIDIA "
        f"GPU, run `python {script}` to record them; this notebook then shows them here."
    )


def refuse_without_gpu(*, torch_cuda: bool = False) -> bool:
    """For a benchmark script: True (after saying why on stderr) when this machine cannot record
    GPU measurements: no GPU mode, or, with ``torch_cuda``, a PyTorch that does not see CUDA."""
    from ..one_gpu.backends import torch_device

    needs_torch = torch_cuda and torch_device() != "cuda"
    if runtime.mode == "gpu" and not needs_torch:
        return False
    torch_note = (
        f" and a CUDA build of PyTorch (torch sees: {torch_device()})" if torch_cuda else ""
    )
    print(
        "This script records GPU measurements, so it needs an NVIDIA GPU (gpu_utils runs in "
        f"{runtime.mode} mode here){torch_note}. Run it on a GPU machine; nothing was written.",
        file=sys.stderr,
    )
    return True


def save(name: str, results: list | dict, command: str | None = None) -> Path:
    """Record ``results`` measured on this machine's GPU (refuses on the simulator), in
    ``gpu_utils/reference_data/``, or in the folder ``GPU_COURSE_REFERENCE_OUT`` names (what
    ``make gpu-check`` does, so that a check run leaves the repository as it was)."""
    if runtime.mode != "gpu":
        raise RuntimeError(
            "reference measurements come from a real GPU; this session runs on the simulator"
        )
    record = {
        "device": device_info().name,
        "date": datetime.date.today().isoformat(),
        "command": command or shlex.join([Path(sys.executable).name, *sys.argv]),
        "results": results,
    }
    path = _path(name)
    if os.environ.get("GPU_COURSE_REFERENCE_OUT"):
        path = Path(os.environ["GPU_COURSE_REFERENCE_OUT"]) / path.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path
