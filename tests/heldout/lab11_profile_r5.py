"""Blind held-out round lab11_profile_r5 (lab 11, "Profile first": capstone_profile_diagnose,
capstone_profile_fix).

Written by a blind helper session (round lab11_profile_r5) on 2026-11-29, about 02:36-02:50 UTC.

Read: /tmp/prompts/common.md, the earlier rounds' causes (/tmp/blind/causes_lab11_profile.txt,
to avoid repeating them), labs/11_training_in_practice_lab.ipynb and
solutions/11_training_in_practice_lab.ipynb (the "Profile first" part: cells 32-44),
gpu_utils/many_gpus/capstone_profile.py, gpu_utils/many_gpus/training.py (get_batch, WindowDataset, encode,
forward_checkpointed), gpu_utils/many_gpus/gpt.py (GPT.forward, to see the loss it computes) and
tests/heldout/__init__.py. Nothing under gpu_utils/exercises/ or tests/ (other than
heldout/__init__.py) was opened, no other heldout file was read, and no checker was run or
imported.

How each answer was verified (torch 2.13 CPU, GPU_COURSE_MODE=simulator, every answer loaded
through heldout.submitted):

capstone_profile_diagnose: 25 profiles made with capstone_profile.profile: all 20 scripts with
three of the six kinds planted (steps=3; a sound DataLoader with 2 worker processes wherever
"loader" is not planted, as the lab says the checker's scripts do), plus the all-sound script
with workers=2 and with T.get_batch (workers=0), host_sync alone with get_batch, host_sync +
small_batch with workers at steps=2, recompute + fp32 + optimizer_loop with workers at steps=4.
The solution's diagnose returned exactly the planted set on all 25. Both correct answers
returned the same set as the solution on all 25. Every wrong answer differs on at least 11 of
them: batch_from_last_embedding and recompute_addmm_vs_mm never flag small_batch / recompute;
fp32_no_autocast_event and fp32_from_layer_norm flag fp32 on every script;
loader_no_randint and loader_by_next_time flag loader on every script whose sound DataLoader
has workers; host_sync_exactly_steps misses host_sync whenever a DataLoader (planted or sound)
reads its seed (all host_sync scripts with workers or loader); foreach_add_once_per_step and
foreach_or_fused flag optimizer_loop on every script; elif_first_match returns one name only.
(Observed profile facts used: the position embedding's index is 1-D [32]; per step a sound
script makes 8 addmm and 19 mm; no event names autocast; native_layer_norm inputs are float
under autocast; no aten::randint with a worker DataLoader; AdamW's foreach path makes 2
_foreach_add_ per step; a worker DataLoader's first __next__ takes far over 5 ms.)

capstone_profile_fix: each answer and the solution's fixed_train were run for 4 steps on the
chapter's corpus under capstone_profile.profile and again plainly, with capstone_profile.
build_model patched to keep the model so its final weights could be compared; measured: the
returned losses, final weights, aten::item calls outside Optimizer.step, the dtype of aten::addmm,
presence of _foreach_/fused ops, capstone_profile.tokens_per_step, native_layer_norm forward vs
backward counts, single-process DataLoader events; then the solution's diagnose on a 3-step
profile of each, and a 12-step run (loss must fall). Tolerance 1e-6 on losses and weights.
fix_default_decay_manual_ce matches the solution exactly (losses and weights identical).
fix_worker_loader_fused_batch32 (batch 32 windows through a 2-worker DataLoader over
T.WindowDataset, fused AdamW) differs in losses only because it draws other windows: diagnose
finds nothing, 1024 tokens per step, bf16 addmm, fused optimizer, no .item() in the loop (its
one .item() is the DataLoader's seed, read when iter(loader) is made before the loop, as in
capstone_profile's own sound script), loss 5.52 -> 4.17 in 12 steps.
Wrong: fused_and_foreach raises RuntimeError (the only answer that raises); clip_grad_norm
(weights differ by 5e-3 after 4 steps), warmup_schedule (losses differ by 0.18), nanogpt_betas
(weights differ by 4e-3), roll_targets (weights differ by 2e-2), one_batch_before_loop (weights
differ by 1.5e-2) learn different weights from the script's; matmul_precision_not_autocast and
autocast_around_build compute addmm in float (diagnose says fp32); windows_one_short feeds 496
tokens per step instead of 512; log_every_tenth returns 1 loss for 4 steps (2 for 12).
"""

from heldout import Blind

ANSWERS = [
    Blind(
        name="diag_key_averages_gelu_bmm",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=True,
        source="""
import collections

import torch

from gpu_utils import capstone_profile


def diagnose(prof):
    rows = {row.key: row.count for row in prof.key_averages()}
    events = prof.events()
    steps = rows.get("Optimizer.step#AdamW.step", 0)
    problems = set()

    if any(key.startswith("enumerate(DataLoader)#_SingleProcess") for key in rows):
        problems.add("loader")

    def in_optimizer(event):
        parent = event.cpu_parent
        while parent is not None:
            if parent.name.startswith("Optimizer.step"):
                return True
            parent = parent.cpu_parent
        return False

    step_starts = [e.time_range.start for e in events if e.name == "Optimizer.step#AdamW.step"]
    if steps > 1:
        first = min(step_starts)
        reads = [
            e for e in events
            if e.name == "aten::item" and not in_optimizer(e) and e.time_range.start >= first
        ]
        if len(reads) >= steps:
            problems.add("host_sync")

    if any(e.name == "aten::bmm" and e.input_dtypes[:1] == ["float"] for e in events):
        problems.add("fp32")

    token_batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes[0][0] == 256
    ]
    if token_batches and min(token_batches) <= 4:
        problems.add("small_batch")

    if not any("_foreach_" in key or "_fused_" in key for key in rows):
        problems.add("optimizer_loop")

    if rows.get("aten::gelu", 0) > rows.get("aten::gelu_backward", 0):
        problems.add("recompute")
    return problems
""",
    ),
    Blind(
        name="diag_toplevel_items_softmax_addmm_rows",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=True,
        source="""
import collections

import torch

from gpu_utils import capstone_profile


def diagnose(prof):
    events = list(prof.events())
    names = collections.Counter(e.name for e in events)
    steps = names["Optimizer.step#AdamW.step"]
    out = set()
    if names.keys() & {n for n in names if "_SingleProcessDataLoaderIter" in n}:
        out.add("loader")
    # loss.item() in the loop is called at the top level; the optimizer's are inside its step
    top_items = sum(1 for e in events if e.name == "aten::item" and e.cpu_parent is None)
    if steps >= 2 and top_items >= steps:
        out.add("host_sync")
    mm_dtypes = {e.input_dtypes[0] for e in events if e.name == "aten::mm" and e.input_dtypes}
    if "float" in mm_dtypes:
        out.add("fp32")
    rows = [e.input_shapes[1][0] for e in events if e.name == "aten::addmm"]
    if rows and min(rows) // capstone_profile.SEQ_LEN < 8:
        out.add("small_batch")
    if names["aten::_foreach_add_"] == 0 and names["aten::_fused_adamw_"] == 0:
        out.add("optimizer_loop")
    if names["aten::_softmax"] > names["aten::_softmax_backward_data"]:
        out.add("recompute")
    return out
""",
    ),
    Blind(
        name="diag_batch_from_last_embedding",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause="It reads the batch from the last aten::embedding event, which is the position embedding whose index is the 1-D range of 32 positions, so the batch always looks like 32 and small_batch is never flagged: read the first axis of the token embedding's 2-D index (batch, seq).",
        source="""
import collections

import torch

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    spans = [e.time_range for e in events if e.name == "Optimizer.step#AdamW.step"]
    if len(spans) > 1:
        first, last = min(s.start for s in spans), max(s.end for s in spans)
        in_loop = [e for e in host_items if first <= e.time_range.start <= last]
        if len(in_loop) >= steps - 1:
            found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    embeddings = [e for e in events if e.name == "aten::embedding"]
    if embeddings and embeddings[-1].input_shapes[1][0] < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
        hints=('"small_batch" is there',),
    ),
    Blind(
        name="diag_recompute_addmm_vs_mm",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause="It compares the forward aten::addmm count with the aten::mm count as if mm were addmm's backward, but each linear layer's backward makes two mm calls (input and weight gradients) and the output layer's forward is an mm too, so mm always outnumbers addmm and recompute is never flagged: compare a block operator with its own backward (layer norm, gelu).",
        source="""
import collections

import torch

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    spans = [e.time_range for e in events if e.name == "Optimizer.step#AdamW.step"]
    if len(spans) > 1:
        first, last = min(s.start for s in spans), max(s.end for s in spans)
        in_loop = [e for e in host_items if first <= e.time_range.start <= last]
        if len(in_loop) >= steps - 1:
            found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::addmm"] > count["aten::mm"]:
        found.add("recompute")
    return found
""",
        hints=('"recompute" is there',),
    ),
    Blind(
        name="diag_fp32_no_autocast_event",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause="It looks for an event named after autocast, but torch.autocast records no event of its own in the profiler, so every script is flagged fp32: read the dtype the matmuls (aten::addmm, mm, bmm) compute in.",
        source="""
import collections

import torch

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    spans = [e.time_range for e in events if e.name == "Optimizer.step#AdamW.step"]
    if len(spans) > 1:
        first, last = min(s.start for s in spans), max(s.end for s in spans)
        in_loop = [e for e in host_items if first <= e.time_range.start <= last]
        if len(in_loop) >= steps - 1:
            found.add("host_sync")
    if not any("autocast" in e.name.lower() for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
        hints=('not "fp32"',),
    ),
    Blind(
        name="diag_fp32_from_layer_norm",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause="It reads the dtype of the layer norms' input, but autocast runs layer norms in fp32 on purpose (they are on its fp32 list), so every script, autocast or not, is flagged fp32: read the dtype of the matmuls (aten::addmm/mm/bmm).",
        source="""
import collections

import torch

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    spans = [e.time_range for e in events if e.name == "Optimizer.step#AdamW.step"]
    if len(spans) > 1:
        first, last = min(s.start for s in spans), max(s.end for s in spans)
        in_loop = [e for e in host_items if first <= e.time_range.start <= last]
        if len(in_loop) >= steps - 1:
            found.add("host_sync")
    if any(e.name == "aten::native_layer_norm" and e.input_dtypes[0] == "float" for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
        hints=('not "fp32"',),
    ),
    Blind(
        name="diag_loader_no_randint",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause="It takes the absence of aten::randint (T.get_batch's draw) as the loader problem, but a sound DataLoader with worker processes draws and cuts its windows in the workers, so sound scripts are flagged loader too: look for _SingleProcessDataLoaderIter.__next__ in the training process.",
        source="""
import collections

import torch

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if count["aten::randint"] == 0:
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    spans = [e.time_range for e in events if e.name == "Optimizer.step#AdamW.step"]
    if len(spans) > 1:
        first, last = min(s.start for s in spans), max(s.end for s in spans)
        in_loop = [e for e in host_items if first <= e.time_range.start <= last]
        if len(in_loop) >= steps - 1:
            found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
        hints=('not "loader"',),
    ),
    Blind(
        name="diag_host_sync_exactly_steps",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause="It wants exactly one top-level .item() per optimizer step, but a DataLoader (sound or not) reads its seed once more with .item() before the loop, so a script that reads its loss every step and loads with a DataLoader shows steps + 1 and host_sync is missed: at least one per step is the sign.",
        source="""
import collections

import torch

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    top_items = [e for e in events if e.name == "aten::item" and e.cpu_parent is None]
    if steps and len(top_items) == steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
        hints=('"host_sync" is there',),
    ),
    Blind(
        name="diag_foreach_add_once_per_step",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause="It expects one aten::_foreach_add_ per optimizer step, but AdamW's foreach path calls it twice per step, so every foreach script is flagged optimizer_loop too: the loop is the absence of _foreach_ (or fused) operators, whatever their count.",
        source="""
import collections

import torch

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    spans = [e.time_range for e in events if e.name == "Optimizer.step#AdamW.step"]
    if len(spans) > 1:
        first, last = min(s.start for s in spans), max(s.end for s in spans)
        in_loop = [e for e in host_items if first <= e.time_range.start <= last]
        if len(in_loop) >= steps - 1:
            found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if count["aten::_foreach_add_"] != steps:
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
        hints=('not "optimizer_loop"',),
    ),
    Blind(
        name="diag_foreach_or_fused",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause="It flags optimizer_loop when either the foreach or the fused AdamW operator is missing (or where and is needed), and a foreach script has no fused operator, so every script is flagged optimizer_loop: the loop is the absence of both.",
        source="""
import collections

import torch

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    spans = [e.time_range for e in events if e.name == "Optimizer.step#AdamW.step"]
    if len(spans) > 1:
        first, last = min(s.start for s in spans), max(s.end for s in spans)
        in_loop = [e for e in host_items if first <= e.time_range.start <= last]
        if len(in_loop) >= steps - 1:
            found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if "aten::_foreach_addcdiv_" not in count or "aten::_fused_adamw_" not in count:
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
        hints=('not "optimizer_loop"',),
    ),
    Blind(
        name="diag_elif_first_match",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause="Its if/elif chain returns as soon as one problem is found, so it names at most one of the three planted problems: test every kind and collect all that apply.",
        source="""
import collections

import torch

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

    outside = [e for e in events if e.name == "aten::item" and not in_optimizer(e)]
    token_batch = min(
        (e.input_shapes[1][0] for e in events
         if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2),
        default=capstone_profile.BATCH,
    )
    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"]:
        return {"loader"}
    elif steps > 1 and len(outside) >= steps:
        return {"host_sync"}
    elif any(e.name == "aten::addmm" and e.input_dtypes[0] == "float" for e in events):
        return {"fp32"}
    elif token_batch < 8:
        return {"small_batch"}
    elif not any(n.startswith("aten::_foreach_") for n in count):
        return {"optimizer_loop"}
    elif count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        return {"recompute"}
    return set()
""",
        hints=('It missed "fp32", "recompute"',),
    ),
    Blind(
        name="diag_loader_by_next_time",
        exercise_id="capstone_profile_diagnose",
        half="held2",
        correct=False,
        cause="It judges the loader by how long a DataLoader's __next__ takes, but a sound DataLoader's first __next__ waits for its worker processes to start and is slow too, so sound scripts are flagged loader: the sign is _SingleProcessDataLoaderIter (batches made in the training process), not the time.",
        source="""
import collections

import torch

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("DataLoader" in e.name and e.cpu_time_total > 5000 for e in events):  # > 5 ms
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    spans = [e.time_range for e in events if e.name == "Optimizer.step#AdamW.step"]
    if len(spans) > 1:
        first, last = min(s.start for s in spans), max(s.end for s in spans)
        in_loop = [e for e in host_items if first <= e.time_range.start <= last]
        if len(in_loop) >= steps - 1:
            found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
        hints=('not "loader"',),
    ),
    Blind(
        name="fix_default_decay_manual_ce",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=True,
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training

import torch.nn.functional as F


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    # AdamW's default weight_decay is already 0.01
    optimizer = torch.optim.AdamW(model.parameters(), lr=capstone_profile.LR, foreach=True)
    tokens = torch.tensor(list(text.encode("utf-8")), dtype=torch.long)  # tokenised once
    gen = torch.Generator()
    gen.manual_seed(0)
    kept = []
    for step in range(steps):
        optimizer.zero_grad(set_to_none=True)
        xb, yb = T.get_batch(tokens, capstone_profile.BATCH, capstone_profile.SEQ_LEN, gen)
        xb, yb = xb.to(device), yb.to(device)
        with torch.autocast(device_type=xb.device.type, dtype=torch.bfloat16):
            logits, _ = model(xb)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), yb.flatten())
        loss.backward()
        optimizer.step()
        kept.append(loss.detach())
    return torch.stack(kept).float().cpu().tolist()  # read back once, after the loop
""",
    ),
    Blind(
        name="fix_worker_loader_fused_batch32",
        exercise_id="capstone_profile_fix",
        half="held2",
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
        model.parameters(), lr=capstone_profile.LR, weight_decay=capstone_profile.WEIGHT_DECAY,
        fused=True,
    )
    loader = torch.utils.data.DataLoader(
        T.WindowDataset(T.encode(text), capstone_profile.SEQ_LEN),
        batch_size=2 * capstone_profile.BATCH,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
        num_workers=2,
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
    return torch.stack(losses).cpu().tolist()
""",
    ),
    Blind(
        name="fix_fused_and_foreach",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause="It asks AdamW for fused=True and foreach=True together, which PyTorch refuses (they are two different implementations): pick one of them.",
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True, fused=True
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(steps):
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
        hints=("cannot be `True` together",),
    ),
    Blind(
        name="fix_clip_grad_norm",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause="It clips the gradients to norm 1.0 before each step, which the script does not do, so it takes smaller steps and learns different weights from the script's: fixing the speed must not change what is learned.",
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
    for _ in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
        hints=("clip_grad_norm_",),
    ),
    Blind(
        name="fix_warmup_schedule",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause="It adds the fast script's linear warm-up (LambdaLR over 5 steps), so its first steps use a fraction of capstone_profile.LR and it learns different weights from the script's, which trains at LR from the first step.",
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
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 5))
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        schedule.step()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
        hints=("learning-rate scheduler",),
    ),
    Blind(
        name="fix_matmul_precision_not_autocast",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause="torch.set_float32_matmul_precision only lets fp32 matmuls use TF32 on GPUs that have it; it changes no dtype, so without torch.autocast every linear layer still computes in fp32: wrap the forward in torch.autocast(device.type, dtype=torch.bfloat16).",
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    torch.set_float32_matmul_precision("medium")  # faster matmuls instead of fp32
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
        hints=("without autocast",),
    ),
    Blind(
        name="fix_roll_targets",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause="It makes the targets by rolling each window of x left by one, so every window's last target wraps round to its own first byte instead of the byte after the window: take y from the data shifted by one (data[index + 1]), as T.get_batch does.",
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
    for _ in range(steps):
        starts = torch.randint(len(data) - capstone_profile.SEQ_LEN, (capstone_profile.BATCH,), generator=generator)
        x = data[starts[:, None] + torch.arange(capstone_profile.SEQ_LEN)]  # one gather
        y = x.roll(-1, dims=1)  # next byte at every position
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
        hints=("x.roll(-1)",),
    ),
    Blind(
        name="fix_windows_one_short",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause="It asks T.get_batch for windows of SEQ_LEN - 1 tokens, thinking the target byte needs room, but get_batch already takes the extra byte for y, so each step feeds 16 x 31 tokens instead of 16 x 32 and the model never trains its last position.",
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
    for _ in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN - 1, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
        hints=("496 tokens",),
    ),
    Blind(
        name="fix_autocast_around_build",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause="The torch.autocast block wraps building the model, not its forward pass, and autocast only affects operations run inside it, so every linear layer in the loop still computes in fp32: put the model call inside torch.autocast.",
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    with torch.autocast(device.type, dtype=torch.bfloat16):
        model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
        hints=("without autocast",),
    ),
    Blind(
        name="fix_nanogpt_betas",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause="It sets AdamW's betas to (0.9, 0.95) as nanoGPT does, but the script's AdamW uses the default betas (0.9, 0.999), so it learns different weights from the script's optimizer.",
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, betas=(0.9, 0.95), foreach=True
    )
    data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(steps):
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
        hints=("betas is (0.9, 0.95)",),
    ),
    Blind(
        name="fix_one_batch_before_loop",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause="It draws one batch before the loop and trains on it every step, so the model fits those 16 windows over and over instead of seeing new text each step: draw a batch inside the loop.",
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
    x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
    x, y = x.to(device), y.to(device)  # one transfer, before the loop
    losses = []
    for _ in range(steps):
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
        hints=("same token batch",),
    ),
    Blind(
        name="fix_log_every_tenth",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause="It keeps the loss only every 10th step, as a logging loop would, so it returns one loss per 10 steps (one in all for fewer than 11 steps) instead of every step's loss as the script does.",
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
        if step % 10 == 0:
            losses.append(loss.detach())  # log every 10 steps
    return torch.stack(losses).tolist()
""",
        hints=("returned 1 numbers",),
    ),
]
