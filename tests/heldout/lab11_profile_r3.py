"""Held-out answers to lab 11's "Profile first" exercises (capstone_profile_diagnose,
capstone_profile_fix), third round, all in the "held2" half.

Written blind on 2026-11-28 by a helper session, from the lab as a learner sees it
(``labs/11_training_in_practice_lab.ipynb``), the reference solutions' code cells, the public
helpers (``gpu_utils/many_gpus/capstone_profile.py``, ``training.py``, ``gpt.py``), ``heldout.Blind`` and the
earlier rounds' cause sentences (to write different mistakes); never the checker, its tests, a
check cell or ``report.py``. 15 diagnose answers (4 correct, 11 wrong), 14 fixed_train answers
(4 correct, 10 wrong).

Verified without the checker (torch 2.13 on a 2-core CPU), with scratch scripts outside the
repository that run every cell through ``heldout.submitted``:

- diagnose: each answer and the reference solution's ``diagnose`` were called on 46 profiles
  (``capstone_profile.profile(script.train, steps, corpus)``): all 20 planted triples, the 10
  triples without "loader" again with a 2-worker DataLoader, none planted (0 and 2 workers), all
  six, each kind alone, {host_sync} over 1, 2 and 5 steps, {host_sync, small_batch, recompute}
  with workers over 1 and 2 steps, {fp32, loader} over 1 and 2 steps. The reference and all four
  correct answers returned the planted kinds on 45 of 46 and the same set as each other on all
  46 (on {fp32, loader} over 1 step every one of them adds host_sync: the DataLoader's one seed
  read equals the one step). Every wrong answer returned another set than the planted one on 10
  to 28 of the profiles, as its cause says (more_reads_than_steps: only where no DataLoader adds
  its seed read); result_set_made_once_outside was called on {fp32, host_sync, loader} and then
  on the sound 2-worker script, and returned the first script's three names for the second.
- fixed_train: each answer ran for 1, 2, 3 and 8 steps on the corpus beside the reference
  solution, plus a repeated call, ``capstone_profile.tokens_per_step``, a count of ``T.encode``
  calls, of printed lines, of ``aten::item`` outside ``Optimizer.step`` and the reference
  ``diagnose`` of a 3-step profile. The correct answers return a list of ``steps`` floats whose
  loss goes down over 8 steps, at least 512 tokens per step, an empty reference diagnosis; two
  return the reference's losses (exactly, or within 8e-5 for the float cross-entropy), the
  worker-DataLoader and batch-32 ones their own (batches differ). The wrong ones: 1 aten::item
  inside the 3-step loop and 10 printed lines (print), 8 ``T.encode`` calls in 8 steps (encode,
  18-23 ms each on this machine), a later call starting from trained weights (3.547 vs 5.519),
  1 loss for 2, 3 and 8 steps (return in the loop), losses off the reference by 0.87 and 0.48
  after 8 steps (learning rates), by 0.029 (targets shifted back), a float instead of a list
  (mean), a reference diagnosis of ['fp32'] (CUDA-only autocast), by 1.5e-4 after 8 steps (no
  decay on biases and norms).
"""

from heldout import Blind

D = "capstone_profile_diagnose"
F = "capstone_profile_fix"
H = "held2"

ANSWERS = [
    # ---------------------------------------------------------------- diagnose, correct
    Blind(
        name="key_averages_counts_gelu_pairs",
        exercise_id=D,
        half=H,
        correct=True,
        source='''
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    """Counts from key_averages(); events only where the caller or the dtype matters."""
    events = prof.events()
    calls = {row.key: row.count for row in prof.key_averages()}
    steps = calls.get("Optimizer.step#AdamW.step", 0)

    def in_optimizer(event):
        parent = event.cpu_parent
        while parent is not None:
            if parent.name.startswith("Optimizer.step"):
                return True
            parent = parent.cpu_parent
        return False

    problems = set()
    if any(key.endswith("_SingleProcessDataLoaderIter.__next__") for key in calls):
        problems.add("loader")
    syncs = sum(1 for e in events if e.name == "aten::item" and not in_optimizer(e))
    if steps and syncs / steps >= 1:
        problems.add("host_sync")
    # the output layer has no bias: its matmul is an aten::mm called by aten::matmul
    head = [
        e
        for e in events
        if e.name == "aten::mm" and e.cpu_parent is not None and e.cpu_parent.name == "aten::matmul"
    ]
    if any(e.input_dtypes and e.input_dtypes[0] == "float" for e in head):
        problems.add("fp32")
    # the token embedding is the one with 256 rows; its index input is (batch, seq)
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes and e.input_shapes[0][0] == 256
    ]
    if batches and min(batches) <= capstone_profile.BATCH // 4:
        problems.add("small_batch")
    if not any(k.startswith(("aten::_foreach_", "aten::_fused_adam")) for k in calls):
        problems.add("optimizer_loop")
    if calls.get("aten::gelu", 0) > calls.get("aten::gelu_backward", 0):
        problems.add("recompute")
    return problems
''',
    ),
    Blind(
        name="chrome_trace_json_by_time_spans",
        exercise_id=D,
        half=H,
        correct=True,
        source='''
import collections
import json
import os
import tempfile


def diagnose(prof):
    """Read the exported Chrome trace instead of the event objects: nesting by time spans."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as file:
            trace = json.load(file)
    ops = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    names = collections.Counter(e["name"] for e in ops)
    opt_spans = [e for e in ops if e["name"].startswith("Optimizer.step")]

    def inside(event, spans):
        start, end = event["ts"], event["ts"] + event.get("dur", 0)
        return any(
            s["tid"] == event["tid"] and s["ts"] <= start and end <= s["ts"] + s["dur"]
            for s in spans
        )

    found = set()
    if any("SingleProcessDataLoaderIter" in name for name in names):
        found.add("loader")
    syncs = [e for e in ops if e["name"] == "aten::item" and not inside(e, opt_spans)]
    if opt_spans and len(syncs) >= len(opt_spans):
        found.add("host_sync")
    addmm_types = [e["args"].get("Input type", []) for e in ops if e["name"] == "aten::addmm"]
    if any(len(t) > 1 and t[1] == "float" for t in addmm_types):
        found.add("fp32")
    windows = [
        e["args"]["Input Dims"][1][0]
        for e in ops
        if e["name"] == "aten::embedding" and len(e["args"].get("Input Dims", [[]])[0]) == 2
        and e["args"]["Input Dims"][0][0] == 256
    ]
    if windows and min(windows) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") or "fused_adam" in name for name in names):
        found.add("optimizer_loop")
    if names["aten::addmm"] > names["AddmmBackward0"]:
        found.add("recompute")
    return found
''',
    ),
    Blind(
        name="backward_ancestry_and_token_rows",
        exercise_id=D,
        half=H,
        correct=True,
        source="""
from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()

    def ancestors(event):
        event = event.cpu_parent
        while event is not None:
            yield event.name
            event = event.cpu_parent

    steps = sum(e.name.startswith("Optimizer.zero_grad") for e in events)  # one per step
    problems = []
    if any("DataLoader" in e.name and "SingleProcess" in e.name for e in events):
        problems.append("loader")
    syncs = [
        e
        for e in events
        if e.name == "aten::item" and not any(a.startswith("Optimizer.") for a in ancestors(e))
    ]
    if steps > 0 and len(syncs) >= steps:
        problems.append("host_sync")
    matmul_dtypes = {
        d for e in events if e.name in ("aten::addmm", "aten::mm") for d in e.input_dtypes
    }
    if not any("BFloat16" in d for d in matmul_dtypes):
        problems.append("fp32")
    # tokens per matmul row: the first block's addmm sees (batch * seq_len) rows
    rows = [e.input_shapes[1][0] for e in events if e.name == "aten::addmm"]
    if rows and min(rows) // capstone_profile.SEQ_LEN < capstone_profile.BATCH // 2:
        problems.append("small_batch")
    # the per-parameter loop calls addcdiv_ straight from Optimizer.step, not from a _foreach op
    looped = [
        e
        for e in events
        if e.name == "aten::addcdiv_"
        and e.cpu_parent is not None
        and e.cpu_parent.name.startswith("Optimizer.step")
    ]
    if looped:
        problems.append("optimizer_loop")
    # a linear layer run again while the backward pass is going on is recomputation
    if any(
        e.name == "aten::linear" and any("Backward" in a for a in ancestors(e)) for e in events
    ):
        problems.append("recompute")
    return set(problems)
""",
    ),
    Blind(
        name="grouped_by_shape_with_guards",
        exercise_id=D,
        half=H,
        correct=True,
        source='''
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    """Defensive: every rule also checks that the operators it reads were recorded at all."""
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]
    assert steps > 0, "no optimizer step in this profile"
    found = set()

    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        found.add("loader")

    def from_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    # aten::_local_scalar_dense is what aten::item runs; look at where that item came from
    reads = [
        e
        for e in events
        if e.name == "aten::_local_scalar_dense"
        and e.cpu_parent is not None
        and not from_optimizer(e.cpu_parent)
    ]
    if len(reads) >= steps:
        found.add("host_sync")

    addmm = [e for e in events if e.name == "aten::addmm"]
    assert addmm, "no linear layer recorded"
    if sum(e.input_dtypes[1] == "float" for e in addmm) > sum(
        "BFloat16" in e.input_dtypes[1] for e in addmm
    ):
        found.add("fp32")

    by_shape = prof.key_averages(group_by_input_shape=True)
    index_shapes = [
        row.input_shapes[1]
        for row in by_shape
        if row.key == "aten::embedding" and len(row.input_shapes) > 1 and len(row.input_shapes[1]) == 2
    ]
    if index_shapes and min(shape[0] for shape in index_shapes) < capstone_profile.BATCH / 4:
        found.add("small_batch")

    multi = [n for n in count if n.startswith("aten::_foreach_") or n.startswith("aten::_fused_adam")]
    if not multi:
        found.add("optimizer_loop")

    forward = count["aten::native_layer_norm"]
    backward = count["aten::native_layer_norm_backward"]
    if backward and forward > backward:
        found.add("recompute")
    return found
''',
    ),
    # ---------------------------------------------------------------- diagnose, wrong
    Blind(
        name="scalar_read_looked_for_at_top_level",
        exercise_id=D,
        half=H,
        correct=False,
        cause=(
            "It looks for aten::_local_scalar_dense events with no parent, but that operator always runs inside aten::item, so it never finds one and host_sync is never flagged: it is aten::item (outside Optimizer.step) that marks a read of the loss."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    found = set()
    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        found.add("loader")
    # the value is read by aten::_local_scalar_dense; the loss's read is not inside anything
    syncs = [
        e for e in events if e.name == "aten::_local_scalar_dense" and e.cpu_parent is None
    ]
    if steps and len(syncs) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and e.input_dtypes[1] == "float" for e in events):
        found.add("fp32")
    batch = min(
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes[0][0] == 256
    )
    if batch < capstone_profile.BATCH // 2:
        found.add("small_batch")
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in count):
        found.add("optimizer_loop")
    if count["aten::addmm"] > count["AddmmBackward0"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="more_reads_than_steps",
        exercise_id=D,
        half=H,
        correct=False,
        hints=('It missed "host_sync"',),
        cause=(
            "It wants more .item() calls outside the optimizer than there are steps, but a script that reads its loss once per step makes exactly one per step, so host_sync is missed unless something else (a DataLoader's seed) adds one: at least one per step is the sign."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    found = set()
    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        found.add("loader")
    syncs = [e for e in events if e.name == "aten::item" and not in_optimizer(e)]
    if steps and len(syncs) > steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and e.input_dtypes[1] == "float" for e in events):
        found.add("fp32")
    batch = min(
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes[0][0] == 256
    )
    if batch < capstone_profile.BATCH // 2:
        found.add("small_batch")
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in count):
        found.add("optimizer_loop")
    if count["aten::addmm"] > count["AddmmBackward0"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="lowercased_dtype_matches_bfloat16",
        exercise_id=D,
        half=H,
        correct=False,
        cause=(
            "It lower-cases the recorded dtypes before looking for 'float', and 'c10::BFloat16' lower-cased contains 'float', so bf16 matmuls count as fp32 and every script is flagged fp32: compare the dtype with 'float' exactly."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    found = set()
    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        found.add("loader")
    syncs = [e for e in events if e.name == "aten::item" and not in_optimizer(e)]
    if steps and len(syncs) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in str(e.input_dtypes).lower() for e in events):
        found.add("fp32")
    batch = min(
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes[0][0] == 256
    )
    if batch < capstone_profile.BATCH // 2:
        found.add("small_batch")
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in count):
        found.add("optimizer_loop")
    if count["aten::addmm"] > count["AddmmBackward0"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="matmul_rows_taken_for_windows",
        exercise_id=D,
        half=H,
        correct=False,
        cause=(
            "It takes the rows of a linear layer's matmul for the batch, but those rows are windows times sequence length (2 x 32 = 64), so even the planted batch of 2 looks large and small_batch is never flagged: divide by the sequence length, or read the embedding's index shape."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    found = set()
    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        found.add("loader")
    syncs = [e for e in events if e.name == "aten::item" and not in_optimizer(e)]
    if steps and len(syncs) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and e.input_dtypes[1] == "float" for e in events):
        found.add("fp32")
    # the linear layers' input rows are the batch
    batch = min(e.input_shapes[1][0] for e in events if e.name == "aten::addmm")
    if batch < capstone_profile.BATCH // 2:
        found.add("small_batch")
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in count):
        found.add("optimizer_loop")
    if count["aten::addmm"] > count["AddmmBackward0"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="foreach_name_without_trailing_underscore",
        exercise_id=D,
        half=H,
        correct=False,
        cause=(
            "It looks for 'aten::_foreach_addcdiv', a name the profiler never records (the in-place operator AdamW calls is aten::_foreach_addcdiv_), so every script is flagged optimizer_loop."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    found = set()
    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        found.add("loader")
    syncs = [e for e in events if e.name == "aten::item" and not in_optimizer(e)]
    if steps and len(syncs) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and e.input_dtypes[1] == "float" for e in events):
        found.add("fp32")
    batch = min(
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes[0][0] == 256
    )
    if batch < capstone_profile.BATCH // 2:
        found.add("small_batch")
    if count["aten::_foreach_addcdiv"] == 0:
        found.add("optimizer_loop")
    if count["aten::addmm"] > count["AddmmBackward0"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="recompute_from_embedding_counts",
        exercise_id=D,
        half=H,
        correct=False,
        cause=(
            "It compares the embeddings' forward and backward counts, but the embeddings run outside the checkpointed blocks and are never recomputed, so recompute is never flagged: compare an operator inside the blocks (addmm, gelu, layer norm) with its backward."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    found = set()
    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        found.add("loader")
    syncs = [e for e in events if e.name == "aten::item" and not in_optimizer(e)]
    if steps and len(syncs) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and e.input_dtypes[1] == "float" for e in events):
        found.add("fp32")
    batch = min(
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes[0][0] == 256
    )
    if batch < capstone_profile.BATCH // 2:
        found.add("small_batch")
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in count):
        found.add("optimizer_loop")
    if count["aten::embedding"] > count["aten::embedding_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="recompute_needs_twice_the_layer_norms",
        exercise_id=D,
        half=H,
        correct=False,
        cause=(
            "It wants twice as many layer-norm forwards as backwards, but the final layer norm lies outside the checkpointed blocks and runs once, so a recomputing script shows 9 forwards for 5 backwards per step and recompute is never flagged: any surplus of forwards is the sign."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    found = set()
    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        found.add("loader")
    syncs = [e for e in events if e.name == "aten::item" and not in_optimizer(e)]
    if steps and len(syncs) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and e.input_dtypes[1] == "float" for e in events):
        found.add("fp32")
    batch = min(
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes[0][0] == 256
    )
    if batch < capstone_profile.BATCH // 2:
        found.add("small_batch")
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] >= 2 * count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="any_stack_taken_for_collation",
        exercise_id=D,
        half=H,
        correct=False,
        hints=('not "loader"',),
        cause=(
            "It takes any aten::stack as the DataLoader collating in the training process, but the script's own torch.stack(losses) after the loop records one too, so every script that keeps its losses on the device is flagged loader: look for the single-process DataLoader iterator."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    found = set()
    if count["aten::stack"] > 0:  # the DataLoader collates its items with torch.stack
        found.add("loader")
    syncs = [e for e in events if e.name == "aten::item" and not in_optimizer(e)]
    if steps and len(syncs) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and e.input_dtypes[1] == "float" for e in events):
        found.add("fp32")
    batch = min(
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes[0][0] == 256
    )
    if batch < capstone_profile.BATCH // 2:
        found.add("small_batch")
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in count):
        found.add("optimizer_loop")
    if count["aten::addmm"] > count["AddmmBackward0"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="steps_counted_from_profiler_steps",
        exercise_id=D,
        half=H,
        correct=False,
        cause=(
            "It counts steps by ProfilerStep# events, which only a profiler driven with a schedule and prof.step() records, so it counts 0 steps and every script is flagged host_sync: count the optimizer's steps (Optimizer.step#AdamW.step)."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = sum(n for name, n in count.items() if name.startswith("ProfilerStep"))

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    found = set()
    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        found.add("loader")
    syncs = [e for e in events if e.name == "aten::item" and not in_optimizer(e)]
    if len(syncs) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and e.input_dtypes[1] == "float" for e in events):
        found.add("fp32")
    batch = min(
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes[0][0] == 256
    )
    if batch < capstone_profile.BATCH // 2:
        found.add("small_batch")
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in count):
        found.add("optimizer_loop")
    if count["aten::addmm"] > count["AddmmBackward0"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="result_set_made_once_outside",
        exercise_id=D,
        half=H,
        correct=False,
        cause=(
            "The result set is created once, outside the function, so each call adds its names to those found in the profiles diagnosed before: create the set inside diagnose."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


found = set()


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        found.add("loader")
    syncs = [e for e in events if e.name == "aten::item" and not in_optimizer(e)]
    if steps and len(syncs) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and e.input_dtypes[1] == "float" for e in events):
        found.add("fp32")
    batch = min(
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes[0][0] == 256
    )
    if batch < capstone_profile.BATCH // 2:
        found.add("small_batch")
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in count):
        found.add("optimizer_loop")
    if count["aten::addmm"] > count["AddmmBackward0"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="strictly_below_the_planted_batch",
        exercise_id=D,
        half=H,
        correct=False,
        cause=(
            "It flags small_batch only for a batch strictly below SMALL_BATCH (2), but the planted batch is SMALL_BATCH itself, 2 windows, so small_batch is never flagged: compare with a bound well above 2 and below BATCH (16)."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def in_optimizer(event):
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    found = set()
    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        found.add("loader")
    syncs = [e for e in events if e.name == "aten::item" and not in_optimizer(e)]
    if steps and len(syncs) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and e.input_dtypes[1] == "float" for e in events):
        found.add("fp32")
    batch = min(
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes[0][0] == 256
    )
    if batch < capstone_profile.SMALL_BATCH:
        found.add("small_batch")
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in count):
        found.add("optimizer_loop")
    if count["aten::addmm"] > count["AddmmBackward0"]:
        found.add("recompute")
    return found
""",
    ),
    # ---------------------------------------------------------------- fixed_train, correct
    Blind(
        name="fused_adamw_losses_in_preallocated_tensor",
        exercise_id=F,
        half=H,
        correct=True,
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=capstone_profile.LR,
        weight_decay=capstone_profile.WEIGHT_DECAY,
        fused=True,  # one kernel for the whole step
    )
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    losses = torch.zeros(steps, device=device)
    for i in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        losses[i] = loss.detach()  # a copy on the device, no read-back
    return losses.cpu().tolist()
""",
    ),
    Blind(
        name="worker_dataloader_over_window_dataset",
        exercise_id=F,
        half=H,
        correct=True,
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    loader = torch.utils.data.DataLoader(
        T.WindowDataset(T.encode(text), capstone_profile.SEQ_LEN),  # tokenised once
        batch_size=capstone_profile.BATCH,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
        num_workers=2,  # batches cut in worker processes, as chapter 11 does
    )
    batches = iter(loader)
    losses = []
    for _ in range(steps):
        x, y = next(batches)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).cpu().numpy().tolist()  # one read-back, after the loop
""",
    ),
    Blind(
        name="own_cross_entropy_over_class_axis",
        exercise_id=F,
        half=H,
        correct=True,
        source="""
import torch
import torch.nn.functional as F

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text).to(device)
    generator = torch.Generator().manual_seed(0)
    offsets = torch.arange(capstone_profile.SEQ_LEN + 1, device=device)
    losses = []
    for _ in range(steps):
        starts = torch.randint(
            len(data) - capstone_profile.SEQ_LEN, (capstone_profile.BATCH,), generator=generator
        ).to(device)
        window = data[starts[:, None] + offsets]
        x, y = window[:, :-1], window[:, 1:]
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits, _ = model(x)
            # cross_entropy takes the classes on axis 1: (batch, vocab, seq) against (batch, seq)
            loss = F.cross_entropy(logits.float().transpose(1, 2), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="batch_of_32_read_back_after_loop",
        exercise_id=F,
        half=H,
        correct=True,
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training

BATCH = 2 * capstone_profile.BATCH  # more than the minimum, same learning rate


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    kept = []
    for _ in range(steps):
        x, y = T.get_batch(data, BATCH, capstone_profile.SEQ_LEN, generator)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x.to(device), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        kept.append(loss.detach())
    return torch.cat([value.reshape(1) for value in kept]).tolist()  # read back once, at the end
""",
    ),
    # ---------------------------------------------------------------- fixed_train, wrong
    Blind(
        name="prints_loss_every_few_steps",
        exercise_id=F,
        half=H,
        correct=False,
        hints=("inside the loop", "a tensor formatted"),
        cause=(
            "Printing the loss inside the loop (every 5 steps) formats the tensor, which reads its value back to the host: a host synchronisation inside the loop; print the losses after the loop."
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
        if step % 5 == 0:
            print(f"step {step}: loss {loss:.3f}")
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="encodes_text_inside_loop",
        exercise_id=F,
        half=H,
        correct=False,
        hints=("the whole text was tokenised again",),
        cause=(
            "T.encode(text) is inside the loop, so the whole corpus is tokenised again on every step in the training process: encode the text once, before the loop."
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        data = T.encode(text)
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="model_built_once_at_cell_level",
        exercise_id=F,
        half=H,
        correct=False,
        hints=("started from exactly the weights the first call left",),
        cause=(
            "The model and optimizer are built once in the cell, outside fixed_train, so every call continues training the weights (and AdamW state) the previous call left instead of starting from capstone_profile.build_model()."
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


device = capstone_profile.device()
model = capstone_profile.build_model().to(device)
optimizer = torch.optim.AdamW(
    model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
)


def fixed_train(text, steps):
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="return_inside_the_loop",
        exercise_id=F,
        half=H,
        correct=False,
        cause=(
            "The return statement is indented inside the loop, so the function trains one step and returns after it, whatever steps asks for."
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
        return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="square_root_rule_on_the_learning_rate",
        exercise_id=F,
        half=H,
        correct=False,
        cause=(
            "It scales the learning rate by the square-root rule, sqrt(BATCH / SMALL_BATCH), as part 6 does, but this exercise keeps capstone_profile.LR unchanged whatever the batch."
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=capstone_profile.LR * (capstone_profile.BATCH / capstone_profile.SMALL_BATCH) ** 0.5,
        weight_decay=0.01,
        foreach=True,
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="targets_shifted_the_wrong_way",
        exercise_id=F,
        half=H,
        correct=False,
        hints=("are the previous tokens",),
        cause=(
            "Its own gather takes y = data[index - 1], the window shifted back by one, so the model learns the previous byte instead of the next one: the targets are data[index + 1]."
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        starts = torch.randint(
            1, len(data) - capstone_profile.SEQ_LEN, (capstone_profile.BATCH,), generator=generator
        )
        index = starts[:, None] + torch.arange(capstone_profile.SEQ_LEN)
        x, y = data[index], data[index - 1]
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="learning_rate_left_to_default",
        exercise_id=F,
        half=H,
        correct=False,
        cause=(
            "It leaves lr out of AdamW, so the optimizer uses PyTorch's default 1e-3 instead of capstone_profile.LR (3e-3)."
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), weight_decay=0.01, foreach=True
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="returns_the_mean_loss",
        exercise_id=F,
        half=H,
        correct=False,
        cause=(
            "It returns the mean of the losses, one number, instead of the list of every step's loss that the script returns."
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).mean().item()
""",
    ),
    Blind(
        name="autocast_only_on_cuda",
        exercise_id=F,
        half=H,
        correct=False,
        cause=(
            "Autocast is enabled only when the device is CUDA, so on the CPU (where the check runs) every linear layer still computes in fp32: the fp32 problem is left unfixed."
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        # bf16 only pays off on a GPU, so only autocast there
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="no_weight_decay_on_biases_and_norms",
        exercise_id=F,
        half=H,
        correct=False,
        cause=(
            "It takes biases and layer norms out of weight decay (nanoGPT's parameter groups), but the script's AdamW decays every parameter by 0.01, so it learns different weights from the script's optimizer."
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]  # biases, layer norms
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
        lr=capstone_profile.LR,
        foreach=True,
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
]
