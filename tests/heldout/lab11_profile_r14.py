"""Blind held-out answers, round lab11_profile_r14, to lab 11's "Profile first" part
(exercises capstone_profile_diagnose and capstone_profile_fix).

Written 2026-11-29 (15:28-15:37 UTC) by a helper session that never opened the checker
(gpu_utils/exercises/), no tests/test_*.py, no report.py, no FAQ, no list of earlier rounds'
mistakes, and read of tests/heldout/ only __init__.py and the docstring and first two entries of
lab11_profile_r9.py (for the format); it never ran the check cells and never imported
gpu_utils.exercises. Read: labs/ and solutions/11_training_in_practice_lab.ipynb (cells 1-3,
32-44: the exercise texts and the reference answers), gpu_utils/many_gpus/capstone_profile.py and
training.py (encode, get_batch, WindowDataset, forward_checkpointed).

Verification (GPU_COURSE_MODE=simulator, CPU only, the course's .venv torch; scratch scripts
/tmp/lab11_profile_r14/explore.py, explore2.py and verify.py; the reference is the solution's
diagnose and fixed_train cells exec'd as they stand; every answer loaded with heldout.submitted,
run from tests/):
- explore: in every CPU profile AdamW makes 28 (foreach=False) or 56 (foreach=True) aten::item
  per step inside Optimizer.step#AdamW.step (its CPU step counters); a shuffling DataLoader
  (single-process or 2 workers) adds one aten::item with no parent before the loop; host_sync
  adds one per step after zero_grad; aten::addcmul_ is 84 in 3 steps with foreach=True too (the
  CPU foreach fallback, whose 84 calls have aten::_foreach_addcmul_ as parent) and with
  foreach=False; aten::linear shows ('float', 'float', 'float') inputs under autocast while
  aten::mm/addmm/bmm show c10::BFloat16; no event name contains "checkpoint" under
  forward_checkpointed; the 2-worker loader shows as
  enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__; in export_chrome_trace the
  DataLoader and Optimizer.* events have cat "user_annotation", operators "cpu_op"; the corpus
  (62,224 characters) is all ASCII.
- diagnose: 21 profiles: capstone_profile.script of sound (0 and 2 workers), all six, host_sync
  alone (2 and 3 steps, and with 2 workers), loader alone, small_batch alone (4 steps),
  fp32+recompute, optimizer_loop+small_batch (2 workers), planted(seed) and its complement with 2
  workers for seeds 0, 1, 2, 7 (3 steps unless said), and profiles (3 steps, corpus[:20000]) of
  the reference fixed_train and both right fixed_train answers (expected: empty). The reference
  returned exactly the planted kinds on all 21; the 3 right answers agree with it on all 21 (the
  trace one also gives the same set when called twice on one profile). Wrong ones: "DataLoader"
  in the name flags loader on all 6 two-worker scripts without loader; counting every aten::item
  flags host_sync on all 13 profiles without it; any non-optimizer item flags host_sync on the 7
  loader or worker scripts without host_sync (and on the profile of
  fix_right_default_decay_zero_grad_first, which reads its losses after the loop) and agrees
  elsewhere; aten::linear dtypes flag fp32 on all 15 profiles without it; input_shapes[0] misses
  small_batch on all 7 small_batch scripts; aten::addcmul_ flags optimizer_loop on all 15
  profiles without it; the "checkpoint" name misses recompute on all 6 recompute scripts. None
  raises.
- fixed_train: texts T.corpus(), corpus[20000:40000], corpus[:3000] + " café — naïve × 東京 " +
  corpus[3000:6000], steps 1, 3, 4, against the reference fixed_train; then
  capstone_profile.tokens_per_step, the reference diagnose of capstone_profile.profile(answer, 3
  steps, corpus[:20000]) and 30 steps on the corpus (mean of first 5 -> last 5 losses; reference
  5.240 -> 3.337). fix_right_default_decay_zero_grad_first: list of Python floats equal to the
  reference (max difference 0.0) on all 9, 512 tokens/step, diagnosis empty.
  fix_right_batch32_preallocated_losses (32 windows, seed 1234, allowed by the text: other draws
  and a larger batch at the same LR): list of floats, differs by 0.002-0.045 (other windows),
  1024 tokens/step, diagnosis empty, 5.226 -> 3.390. Wrong ones: foreach left default: losses
  identical (0.0) but the profile's diagnosis is ['optimizer_loop'] (no aten::_foreach_* on CPU);
  float(loss): losses identical, diagnosis ['host_sync']; autocast "cuda": UserWarning "CUDA is
  not available ... Disabling autocast", losses differ by 1e-5-1e-4 (fp32 numbers), diagnosis
  ['fp32']; LR x8: same at step 1, off by 0.97-1.46 at steps 3-4 on every text; generator
  re-seeded every step: same at step 1, off by 0.04-0.06 from step 2 on every text, diagnosis empty,
  30 steps end lower (3.069, one batch memorised); ord() tokens: identical on both ASCII texts,
  IndexError "index out of range in self" on the non-ASCII text at every step count. Nothing had
  to be dropped; the first drafts of the two right diagnose answers other than the first were
  fixed before this record (the trace one filtered out the "user_annotation" events and so never
  saw DataLoader or Optimizer.step; the key_averages one counted reads after the last step, so it
  flagged its own right fixed_train's post-loop reads).
"""

from heldout import Blind

_D = "capstone_profile_diagnose"
_F = "capstone_profile_fix"

_HEAD = """
import collections

import torch
from gpu_utils import capstone_profile
from gpu_utils import training as T
"""

# A right diagnose written from events and their parents; each wrong one changes one rule.
_DIAG = (
    _HEAD
    + """
def diagnose(prof):
    events = prof.events()
    calls = collections.Counter(e.name for e in events)
    n_steps = calls["Optimizer.zero_grad#AdamW.zero_grad"]

    def under_optimizer(event):
        event = event.cpu_parent
        while event is not None:
            if event.name.startswith("Optimizer.step"):
                return True
            event = event.cpu_parent
        return False

    problems = set()
    LOADER
    HOST
    FP32
    SMALL
    OPTLOOP
    RECOMPUTE
    return problems
"""
)
_LOADER = """if any(e.name.endswith("_SingleProcessDataLoaderIter.__next__") for e in events):
        problems.add("loader")  # batches made (and tokenised) in this very process"""
_HOST = """# values read back to the host outside the optimizer, while the loop runs (between the
    # first zero_grad and the last one: a DataLoader draws its seed before the loop)
    clears = sorted(e.time_range.start for e in events if e.name.startswith("Optimizer.zero_grad"))
    if len(clears) > 1:
        reads = [
            e
            for e in events
            if e.name == "aten::item"
            and not under_optimizer(e)
            and clears[0] < e.time_range.start < clears[-1]
        ]
        if len(reads) >= len(clears) - 1:
            problems.add("host_sync")"""
_FP32 = """matmuls = [e for e in events if e.name in ("aten::mm", "aten::addmm", "aten::bmm")]
    if any(e.input_dtypes and e.input_dtypes[0] == "float" for e in matmuls):
        problems.add("fp32")"""
_SMALL = """token_shapes = [
        e.input_shapes[1]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if token_shapes and token_shapes[0][0] < capstone_profile.BATCH:
        problems.add("small_batch")"""
_OPTLOOP = """if not any("_foreach_" in name or "_fused_" in name for name in calls):
        problems.add("optimizer_loop")"""
_RECOMPUTE = """if calls["aten::_softmax"] > calls["aten::_softmax_backward_data"]:
        problems.add("recompute")  # attention's softmax run again in the backward pass"""


def _diag(**rules):
    parts = {
        "LOADER": _LOADER,
        "HOST": _HOST,
        "FP32": _FP32,
        "SMALL": _SMALL,
        "OPTLOOP": _OPTLOOP,
        "RECOMPUTE": _RECOMPUTE,
    }
    parts.update(rules)
    source = _DIAG
    for key, text in parts.items():
        source = source.replace("    " + key + "\n", "    " + text + "\n")
    return source


# A right fixed_train (other names, AdamW's default weight decay, zero_grad first); each wrong one
# changes one thing.
_FIX = (
    _HEAD
    + """
def fixed_train(text, steps):
    dev = capstone_profile.device()
    net = capstone_profile.build_model().to(dev)
    # AdamW's default weight_decay is 0.01, the script's
    opt = torch.optim.AdamW(net.parameters(), lr=capstone_profile.LR, foreach=True)
    tokens = T.encode(text)
    rng = torch.Generator().manual_seed(0)
    history = []
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        xb, yb = T.get_batch(tokens, capstone_profile.BATCH, capstone_profile.SEQ_LEN, rng)
        xb, yb = xb.to(dev), yb.to(dev)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
            _, loss = net(xb, yb)
        loss.backward()
        opt.step()
        history.append(loss.detach())
    # read back once the loop is over
    return [float(v) for v in torch.stack(history).cpu()]
"""
)


def _fix(*pairs):
    """The sound fixed_train with each (old, new) text replaced (each old must occur)."""
    source = _FIX
    for old, new in pairs:
        assert old in source, old
        source = source.replace(old, new)
    return source


ANSWERS = [
    # ---------------------------------------------------------------- diagnose: right
    Blind(
        name="diag_right_parents_and_zero_grad_window",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_diag(),
    ),
    Blind(
        name="diag_right_from_chrome_trace_json",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_HEAD
        + """
import json
import os
import tempfile


def diagnose(prof):
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "trace.json")
    prof.export_chrome_trace(path)
    with open(path) as file:
        trace = json.load(file)
    ops = [
        e
        for e in (trace["traceEvents"] if isinstance(trace, dict) else trace)
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")
    ]
    names = collections.Counter(e["name"] for e in ops)
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in ops if e["name"].startswith("Optimizer.step")]

    found = set()
    if any("_SingleProcessDataLoaderIter" in name for name in names):
        found.add("loader")

    # an .item() that is not inside an optimizer step and falls after the first step began
    if len(steps) > 1:
        first = min(start for start, _ in steps)
        last = max(end for _, end in steps)
        reads = 0
        for e in ops:
            if e["name"] != "aten::item":
                continue
            t = e["ts"]
            if any(start <= t <= end for start, end in steps):
                continue
            if first <= t <= last:
                reads += 1
        if reads >= len(steps) - 1:
            found.add("host_sync")

    for e in ops:
        if e["name"] == "aten::addmm" and "float" in e["args"].get("Input type", []):
            found.add("fp32")
            break

    for e in ops:
        if e["name"] == "aten::embedding":
            dims = e["args"].get("Input Dims", [])
            if len(dims) > 1 and len(dims[1]) == 2 and dims[1][0] < 8:
                found.add("small_batch")

    if not any(name.startswith("aten::_foreach") or "fused" in name for name in names):
        found.add("optimizer_loop")
    if names["aten::gelu"] > names["aten::gelu_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="diag_right_key_averages_counts",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def diagnose(prof):
    table = {row.key: row.count for row in prof.key_averages()}
    events = prof.events()
    result = set()

    if any(key.startswith("enumerate(DataLoader)#_SingleProcess") for key in table):
        result.add("loader")

    def in_step(e):
        p = e.cpu_parent
        while p is not None:
            if p.name == "Optimizer.step#AdamW.step":
                return True
            p = p.cpu_parent
        return False

    step_starts = [e.time_range.start for e in events if e.name == "Optimizer.step#AdamW.step"]
    if len(step_starts) >= 2:
        syncs = [
            e
            for e in events
            if e.name == "aten::item"
            and not in_step(e)
            and min(step_starts) < e.time_range.start < max(step_starts)
        ]
        if len(syncs) >= len(step_starts) - 1:
            result.add("host_sync")

    if any(e.name == "aten::bmm" and "float" in e.input_dtypes for e in events):
        result.add("fp32")

    for row in prof.key_averages(group_by_input_shape=True):
        if row.key == "aten::embedding" and len(row.input_shapes) > 1:
            ids = row.input_shapes[1]
            if len(ids) == 2 and ids[0] <= 4:
                result.add("small_batch")

    if not any("_foreach" in key for key in table):
        result.add("optimizer_loop")
    if table.get("aten::layer_norm", 0) > table.get("aten::native_layer_norm_backward", 0):
        result.add("recompute")
    return result
""",
    ),
    # ---------------------------------------------------------------- diagnose: wrong
    Blind(
        name="diag_wrong_any_dataloader_is_loader",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It names 'loader' for any DataLoader in the profile, so the sound script whose "
            "DataLoader cuts pre-tokenised windows in 2 worker processes "
            "(_MultiProcessingDataLoaderIter) is flagged too; only the single-process iterator "
            "(_SingleProcessDataLoaderIter), tokenising in the training process, is the problem."
        ),
        source=_diag(
            LOADER="""if any("DataLoader" in e.name for e in events):
        problems.add("loader")"""
        ),
        hints=("_MultiProcessingDataLoaderIter",),
    ),
    Blind(
        name="diag_wrong_counts_optimizer_items",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It counts every aten::item as a host synchronisation, including the ones AdamW "
            "makes inside Optimizer.step reading its own CPU step counters, so 'host_sync' is "
            "named for every script; only reads outside the optimizer step (cpu_parent) count."
        ),
        source=_diag(
            HOST="""if calls["aten::item"] >= n_steps:
        problems.add("host_sync")  # one read back per step or more"""
        ),
        hints=("inside `Optimizer.step`",),
    ),
    Blind(
        name="diag_wrong_any_item_outside_optimizer",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It names 'host_sync' for even one aten::item outside the optimizer, but a "
            "shuffling DataLoader reads its seed once with .item() before the loop, so sound "
            "scripts with a DataLoader (2 workers) or with only 'loader' planted are flagged; "
            "it must be about one read per step inside the loop."
        ),
        source=_diag(
            HOST="""reads = [e for e in events if e.name == "aten::item" and not under_optimizer(e)]
    if reads:
        problems.add("host_sync")"""
        ),
        hints=("fewer than once per step",),
    ),
    Blind(
        name="diag_wrong_fp32_from_linear_inputs",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It reads the dtypes of aten::linear, whose inputs are the fp32 weights and "
            "activations autocast casts only inside it, so 'fp32' is named for every script; "
            "the dtype the matmul computes in is on aten::addmm/aten::mm/aten::bmm."
        ),
        source=_diag(
            FP32="""if any(e.name == "aten::linear" and "float" in e.input_dtypes for e in events):
        problems.add("fp32")  # a linear layer fed fp32"""
        ),
        hints=("c10::BFloat16",),
    ),
    Blind(
        name="diag_wrong_embedding_weight_shape",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It takes the batch from input_shapes[0] of aten::embedding, which is the embedding "
            "table's shape (256 or 32 rows), not the token ids' [batch, seq] at input_shapes[1], "
            "so 'small_batch' is never named."
        ),
        source=_diag(
            SMALL="""batches = [e.input_shapes[0][0] for e in events if e.name == "aten::embedding"]
    if batches and min(batches) < 8:
        problems.add("small_batch")"""
        ),
        hints=("second input of `aten::embedding`",),
    ),
    Blind(
        name="diag_wrong_per_parameter_addcmul",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It takes per-parameter aten::addcmul_ calls as the sign of a one-parameter-at-a-time "
            "optimizer, but on the CPU the foreach path also runs them (one per tensor under "
            "aten::_foreach_addcmul_), so 'optimizer_loop' is named for every script; the sign "
            "is the absence of aten::_foreach_* operators."
        ),
        source=_diag(
            OPTLOOP="""if calls["aten::addcmul_"] > 0:
        problems.add("optimizer_loop")  # Adam's update done tensor by tensor"""
        ),
        hints=("_foreach_",),
    ),
    Blind(
        name="diag_wrong_looks_for_checkpoint_name",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It looks for an event named like 'checkpoint', but non-reentrant activation "
            "checkpointing leaves no such event, so 'recompute' is never named; it shows as more "
            "forward operators (softmax, layer_norm, gelu, addmm) than their backward ones."
        ),
        source=_diag(
            RECOMPUTE="""if any("checkpoint" in e.name.lower() for e in events):
        problems.add("recompute")"""
        ),
        hints=("backward only",),
    ),
    # ---------------------------------------------------------------- fixed_train: right
    Blind(
        name="fix_right_default_decay_zero_grad_first",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_FIX,
    ),
    Blind(
        name="fix_right_batch32_preallocated_losses",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=capstone_profile.LR,
        weight_decay=capstone_profile.WEIGHT_DECAY,
        foreach=True,
    )
    data = T.encode(text)
    gen = torch.Generator()
    gen.manual_seed(1234)
    batch = 2 * capstone_profile.BATCH  # a larger batch, same learning rate
    losses = torch.zeros(steps, device=device)
    step = 0
    while step < steps:
        x, y = T.get_batch(data, batch, capstone_profile.SEQ_LEN, gen)
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            logits, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses[step] = loss.detach()
        step += 1
    return losses.tolist()
""",
    ),
    # ---------------------------------------------------------------- fixed_train: wrong
    Blind(
        name="fix_wrong_foreach_left_default",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It drops foreach=False but leaves foreach at its default (None), with which "
            "PyTorch picks the one-tensor-at-a-time for-loop for CPU parameters, so the "
            "optimizer still steps parameter by parameter; it must ask for foreach=True (or "
            "fused=True)."
        ),
        source=_fix(
            (
                "opt = torch.optim.AdamW(net.parameters(), lr=capstone_profile.LR, foreach=True)",
                "opt = torch.optim.AdamW(net.parameters(), lr=capstone_profile.LR)",
            )
        ),
        hints=("foreach=True",),
    ),
    Blind(
        name="fix_wrong_float_loss_in_loop",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It stores float(loss) every step, which reads the loss back to the host exactly "
            "as .item() does (a host synchronisation inside the loop); the losses must stay "
            "tensors (loss.detach()) until the loop ends."
        ),
        source=_fix(
            ("history.append(loss.detach())", "history.append(float(loss))"),
            ("return [float(v) for v in torch.stack(history).cpu()]", "return history"),
        ),
        hints=("float() of a tensor",),
    ),
    Blind(
        name="fix_wrong_autocast_hardcoded_cuda",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It hard-codes torch.autocast(device_type='cuda'), which on a machine without a GPU "
            "is disabled (with a warning), so the linear layers still compute in fp32 on the "
            "CPU; the device type must be the training device's (device.type)."
        ),
        source=_fix(
            (
                "torch.autocast(device_type=dev.type, dtype=torch.bfloat16)",
                'torch.autocast(device_type="cuda", dtype=torch.bfloat16)',
            )
        ),
        hints=("device.type",),
    ),
    Blind(
        name="fix_wrong_lr_scaled_with_batch",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It scales the learning rate with the batch (LR * BATCH / SMALL_BATCH, 8x), though "
            "the exercise asks to keep capstone_profile.LR whatever the batch, so the losses and "
            "weights differ from what the script learns."
        ),
        source=_fix(
            (
                "opt = torch.optim.AdamW(net.parameters(), lr=capstone_profile.LR, foreach=True)",
                "lr = capstone_profile.LR * capstone_profile.BATCH / capstone_profile.SMALL_BATCH\n"
                "    opt = torch.optim.AdamW(net.parameters(), lr=lr, foreach=True)",
            )
        ),
        hints=("lr=capstone_profile.LR",),
    ),
    Blind(
        name="fix_wrong_generator_reseeded_each_step",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It creates the seeded generator inside the loop, so every step draws the same 16 "
            "windows and the model trains on one batch over and over instead of on all of the "
            "text."
        ),
        source=_fix(
            ("    rng = torch.Generator().manual_seed(0)\n", ""),
            (
                "        opt.zero_grad(set_to_none=True)\n",
                "        opt.zero_grad(set_to_none=True)\n"
                "        rng = torch.Generator().manual_seed(0)\n",
            ),
        ),
        hints=("seeded once",),
    ),
    Blind(
        name="fix_wrong_tokens_from_ord",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It tokenises with ord() of each character (Unicode code points) instead of "
            "T.encode's UTF-8 bytes: the same on ASCII text, but any non-ASCII character gives "
            "a token above 255 (the embedding raises IndexError) or different tokens."
        ),
        source=_fix(
            (
                "tokens = T.encode(text)",
                "tokens = torch.tensor([ord(ch) for ch in text], dtype=torch.long)  # once",
            )
        ),
        hints=("code point",),
    ),
]
