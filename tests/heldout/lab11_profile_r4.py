"""Held-out answers (round 4) to lab 11's "Profile first" part: capstone_profile_diagnose and
capstone_profile_fix.

Written blind on 2026-11-28 (23:30-00:20 UTC) by a helper session that never read the lab's
checker (nothing under gpu_utils/exercises/ nor tests/ but tests/heldout/__init__.py), from the
learner's copy labs/11_training_in_practice_lab.ipynb, the reference solution cells in
solutions/11_training_in_practice_lab.ipynb, gpu_utils/capstone_profile.py, gpu_utils/training.py
and the list of earlier rounds' causes (these answers make different mistakes).

Verified without the checker, by scratch scripts under /tmp/lab11_profile_r4/, each answer taken
through ``heldout.submitted``:

- diagnose: every answer and the reference ``diagnose`` were run on the same profiles
  (``capstone_profile.profile(script.train, steps=3)``) of eight scripts made with
  ``capstone_profile.script``: the sound script with a 2-worker DataLoader, the sound script
  with ``T.get_batch``, and six with three kinds planted covering each kind at least twice.
  Correct answers returned the reference's set on all eight; each wrong answer returned a
  different set on 3 to 5 of them (its comment says which), and the looping answer was
  stopped after 20 s without returning.
- fix: every answer and the reference ``fixed_train`` were run for 3 steps (and profiled): the
  reference ``diagnose`` of its profile, ``capstone_profile.tokens_per_step``, the returned
  losses (type, length, first and last), and the weights after 3 steps (seeded runs) compared.
  Correct answers: an empty diagnosis, >= 16 windows per step, a list of 3 floats whose loss
  goes down over 20 steps. Each wrong answer differs from the reference in what its cause names
  (measured figures in each answer's comment).
"""

from heldout import Blind

_PRELUDE = """
import collections

import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training
"""

ANSWERS = [
    # ------------------------------------------------------------------ diagnose: correct
    Blind(
        name="diag_key_averages_and_after_first_step",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=True,
        source=_PRELUDE
        + """
def diagnose(prof):
    rows = {row.key: row.count for row in prof.key_averages()}
    events = prof.events()
    steps = rows.get("Optimizer.step#AdamW.step", 0)
    found = set()
    if any(key.endswith("_SingleProcessDataLoaderIter.__next__") for key in rows):
        found.add("loader")

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    # reads of a value made after the first optimizer step began: the loop's own reads
    starts = [e.time_range.start for e in events if e.name.startswith("Optimizer.step")]
    if starts:
        first = min(starts)
        reads = [
            e
            for e in events
            if e.name == "aten::item" and not in_optimizer(e) and e.time_range.start >= first
        ]
        if len(reads) >= steps:
            found.add("host_sync")
    matmuls = [e for e in events if e.name in ("aten::mm", "aten::addmm", "aten::bmm")]
    if any("float" in e.input_dtypes for e in matmuls):
        found.add("fp32")
    for e in events:
        shapes = e.input_shapes
        if e.name == "aten::embedding" and shapes and shapes[0] and shapes[0][0] == 256:
            if shapes[1][0] < capstone_profile.BATCH // 2:
                found.add("small_batch")
    if not any("_foreach_" in key or "_fused_adamw" in key for key in rows):
        found.add("optimizer_loop")
    forward = rows.get("aten::addmm", 0)
    backward = rows.get("autograd::engine::evaluate_function: AddmmBackward0", 0)
    if forward > backward:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="diag_top_level_and_shape_groups",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=True,
        source=_PRELUDE
        + """
def diagnose(prof):
    problems = set()
    names = collections.Counter(e.name for e in prof.events())
    n_steps = names["Optimizer.step#AdamW.step"]
    # DataLoader iterations that ran in this process (worker loaders say _MultiProcessing...)
    if any("SingleProcess" in name for name in names):
        problems.add("loader")
    # the training loop's own .item(): called by the script itself, so at the top level
    top_reads = [e for e in prof.events() if e.name == "aten::item" and e.cpu_parent is None]
    if n_steps >= 2 and len(top_reads) >= n_steps:
        problems.add("host_sync")
    kinds = {
        tuple(e.input_dtypes[:2]) for e in prof.events() if e.name == "aten::addmm"
    }
    if ("float", "float") in kinds:
        problems.add("fp32")
    for row in prof.key_averages(group_by_input_shape=True):
        if row.key == "aten::embedding":
            table, index = row.input_shapes[0], row.input_shapes[1]
            if len(index) == 2 and index[0] <= 4:
                problems.add("small_batch")
    if not any(name.startswith("aten::_foreach") or "fused" in name for name in names):
        problems.add("optimizer_loop")
    if names["aten::native_layer_norm"] > names["aten::native_layer_norm_backward"]:
        problems.add("recompute")
    return problems
""",
    ),
    # ------------------------------------------------------------------ diagnose: wrong
    Blind(
        name="diag_stack_means_collate",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause=(
            "It takes any aten::stack as the DataLoader collating batches in the training "
            "process, but the script's own torch.stack(losses) after the loop makes one too, so "
            "a sound loader is flagged whenever the losses are stacked: look for "
            "_SingleProcessDataLoaderIter.__next__ instead."
        ),
        source=_PRELUDE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside_optimizer(e):
        while e is not None:
            if e.name.startswith("Optimizer.step"):
                return True
            e = e.cpu_parent
        return False

    found = set()
    if count["aten::stack"] > 0:  # default_collate stacks the items into a batch
        found.add("loader")
    reads = [e for e in events if e.name == "aten::item" and not inside_optimizer(e)]
    if len(reads) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    for e in events:
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2:
            if e.input_shapes[1][0] < 8:
                found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="diag_lowercase_float_matches_bfloat",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause=(
            "It looks for 'float' in the lower-cased text of the matmul's dtypes, but "
            "'c10::BFloat16' lower-cased is 'c10::bfloat16', which contains 'float', so every "
            "script, autocast or not, is flagged fp32: compare each dtype with 'float' exactly."
        ),
        source=_PRELUDE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside_optimizer(e):
        while e is not None:
            if e.name.startswith("Optimizer.step"):
                return True
            e = e.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter" in name for name in count):
        found.add("loader")
    reads = [e for e in events if e.name == "aten::item" and not inside_optimizer(e)]
    if steps > 1 and len(reads) >= steps:
        found.add("host_sync")
    for e in events:
        if e.name == "aten::addmm" and "float" in str(e.input_dtypes).lower():
            found.add("fp32")
            break
    for e in events:
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2:
            if e.input_shapes[1][0] < 8:
                found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="diag_matmul_rows_as_batch",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause=(
            "It reads the batch from the rows of aten::addmm's input, but the linear layers see "
            "the batch and sequence flattened (2 windows x 32 tokens = 64 rows), so a batch of 2 "
            "windows is never below its threshold and small_batch is never found: read the first "
            "axis of the embedding's index input."
        ),
        source=_PRELUDE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside_optimizer(e):
        while e is not None:
            if e.name.startswith("Optimizer.step"):
                return True
            e = e.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter" in name for name in count):
        found.add("loader")
    reads = [e for e in events if e.name == "aten::item" and not inside_optimizer(e)]
    if steps > 1 and len(reads) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    rows = [e.input_shapes[1][0] for e in events if e.name == "aten::addmm"]
    if rows and min(rows) < capstone_profile.BATCH:  # the batch is the matmul's row count
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="diag_foreach_only_top_level",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause=(
            "It looks for the _foreach_ operators only among top-level events, but they run "
            "inside Optimizer.step, so none is ever at the top level and every script is flagged "
            "optimizer_loop: search all events (or the key_averages rows)."
        ),
        source=_PRELUDE
        + """
def diagnose(prof):
    events = prof.events()
    top = [e for e in events if e.cpu_parent is None]  # one entry per call the script made
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]
    found = set()
    if any("_SingleProcessDataLoaderIter" in e.name for e in top):
        found.add("loader")
    reads = [e for e in top if e.name == "aten::item"]
    if steps > 1 and len(reads) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    for e in events:
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2:
            if e.input_shapes[1][0] < 8:
                found.add("small_batch")
    if not any(e.name.startswith("aten::_foreach") for e in top):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="diag_steps_from_profiler_step",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause=(
            "It counts the steps by ProfilerStep#N events, which this profiler (no schedule, no "
            "prof.step()) never records, so the step count is 0 and every script, even one with "
            "no .item() in its loop, is flagged host_sync: count the steps by Optimizer.step."
        ),
        source=_PRELUDE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = sum(1 for e in events if e.name.startswith("ProfilerStep"))

    def inside_optimizer(e):
        while e is not None:
            if e.name.startswith("Optimizer.step"):
                return True
            e = e.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter" in name for name in count):
        found.add("loader")
    reads = [e for e in events if e.name == "aten::item" and not inside_optimizer(e)]
    if len(reads) >= steps:  # one read back per step
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    for e in events:
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2:
            if e.input_shapes[1][0] < 8:
                found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="diag_recompute_by_embedding",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause=(
            "It compares the embedding's forward and backward counts, but checkpointing "
            "recomputes only the transformer blocks, never the embeddings, so the counts are "
            "always equal and recompute is never found: compare an operator inside the blocks "
            "(layer norm, addmm) with its backward."
        ),
        source=_PRELUDE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside_optimizer(e):
        while e is not None:
            if e.name.startswith("Optimizer.step"):
                return True
            e = e.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter" in name for name in count):
        found.add("loader")
    reads = [e for e in events if e.name == "aten::item" and not inside_optimizer(e)]
    if steps > 1 and len(reads) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    for e in events:
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2:
            if e.input_shapes[1][0] < 8:
                found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    # recomputation: the forward runs more often than its backward
    if count["aten::embedding"] > count["aten::embedding_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="diag_parent_walk_never_advances",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause=(
            "Its walk up the cpu_parent chain assigns the parent to a new name instead of to "
            "event, so event never changes and the while loop never ends on the first aten::item: "
            "write event = event.cpu_parent."
        ),
        source=_PRELUDE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def from_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            parent = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter" in name for name in count):
        found.add("loader")
    reads = [e for e in events if e.name == "aten::item" and not from_optimizer(e)]
    if steps > 1 and len(reads) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    for e in events:
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2:
            if e.input_shapes[1][0] < 8:
                found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
]
