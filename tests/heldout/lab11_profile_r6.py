"""Blind held-out answers, round lab11_profile_r6, to lab 11's "Profile first" part
(exercises capstone_profile_diagnose and capstone_profile_fix).

Written 2026-11-29 (03:08-03:27 UTC) by a helper session that never opened the checker
(gpu_utils/exercises/, tests/ other than tests/heldout/__init__.py), never ran the check
cells and never imported gpu_utils.exercises. Read: labs/ and solutions/
11_training_in_practice_lab.ipynb (cells 33-44), gpu_utils/many_gpus/capstone_profile.py, and
gpu_utils/many_gpus/training.py (encode, get_batch), plus the earlier rounds' causes to avoid.

Verification (GPU_COURSE_MODE=simulator, CPU, scratch scripts
/tmp/lab11_profile_r6/verify_diag.py and verify_fix.py):
- diagnose: every answer and the solution's diagnose ran on capstone_profile.profile(..., steps=3)
  of scripts for planted(seed) seeds 0-11 plus the all-sound and all-planted scripts, each
  sound-loader script fed through a DataLoader with 2 workers as the lab says; the right answers
  agree with the reference (and with script.kinds) on every one; each wrong one differs on at
  least one (loader exact name: loader never found; embedding weight: small_batch never found;
  layer-norm substring: recompute on every script; layer_norm vs native_layer_norm: recompute
  never found; embedding dtype: fp32 on every script).
- fixed_train: run with steps=3 on T.corpus(); compared with the solution's fixed_train: right
  answers return lists of Python floats equal to the reference's (max difference 0; weights after
  3 steps within 4e-9 for fused AdamW), tokens_per_step 512, and the reference diagnose of their
  profile is empty. Wrong ones: half windows give tokens_per_step 256; loss/BATCH returns
  losses 16x smaller (0.34 against 5.52); the list of tensors holds torch.Tensor items;
  step-before-backward never changes the weights (losses 5.52, 5.50, 5.53 against the
  reference's 5.52, 5.33, 5.24; no AdamW _foreach_ op ever runs); no_grad raises RuntimeError
  at backward; weight_decay=0.1 leaves the weights 4.5e-3 from the reference's after 3 steps
  (last loss off by 2e-4).
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

# a sound diagnose, reused by the wrong ones with one rule changed
_DIAG = (
    _HEAD
    + """
def diagnose(prof):
    events = prof.events()
    names = collections.Counter(e.name for e in events)
    steps = names["Optimizer.step#AdamW.step"]

    def under_optimizer(e):
        while e is not None:
            if e.name.startswith("Optimizer.step"):
                return True
            e = e.cpu_parent
        return False

    problems = set()
    if LOADER:
        problems.add("loader")
    spans = [e.time_range for e in events if e.name == "Optimizer.step#AdamW.step"]
    if spans:
        lo, hi = min(s.start for s in spans), max(s.end for s in spans)
        reads = [
            e for e in events
            if e.name == "aten::item" and not under_optimizer(e) and lo <= e.time_range.start <= hi
        ]
        if len(reads) >= max(steps - 1, 1):
            problems.add("host_sync")
    if FP32:
        problems.add("fp32")
    sizes = [SIZE for e in events if e.name == "aten::embedding" and len(e.input_shapes) > 1]
    if sizes and min(sizes) < 8:
        problems.add("small_batch")
    if not any("_foreach_" in n or "_fused_" in n for n in names):
        problems.add("optimizer_loop")
    if RECOMPUTE:
        problems.add("recompute")
    return problems
"""
)

_LOADER = 'any(e.name.endswith("_SingleProcessDataLoaderIter.__next__") for e in events)'
_FP32 = 'any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events)'
_SIZE = "e.input_shapes[1][0]"
_RECOMPUTE = 'names["aten::gelu"] > names["aten::gelu_backward"]'


def _diag(loader=_LOADER, fp32=_FP32, size=_SIZE, recompute=_RECOMPUTE):
    return (
        _DIAG.replace("LOADER", loader)
        .replace("FP32", fp32)
        .replace("SIZE", size)
        .replace("RECOMPUTE", recompute)
    )


_FIX = (
    _HEAD
    + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, SEQ, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
LOSSLINE        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return RETURN
"""
)


def _fix(seq="capstone_profile.SEQ_LEN", lossline="", ret="torch.stack(losses).tolist()"):
    return _FIX.replace("SEQ", seq).replace("LOSSLINE", lossline).replace("RETURN", ret)


ANSWERS = [
    # ---------------- capstone_profile_diagnose ----------------
    Blind(
        name="diag_right_gelu_and_time_span",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_diag(),
    ),
    Blind(
        name="diag_right_key_averages",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def diagnose(prof):
    rows = {r.key: r.count for r in prof.key_averages()}
    events = prof.events()
    steps = rows.get("Optimizer.step#AdamW.step", 0)
    found = set()
    if any("SingleProcessDataLoaderIter" in k for k in rows):
        found.add("loader")
    opt = [e.time_range for e in events if e.name == "Optimizer.step#AdamW.step"]
    def in_opt(e):
        return any(r.start <= e.time_range.start and e.time_range.end <= r.end for r in opt)
    first = min((r.start for r in opt), default=0)
    last = max((r.end for r in opt), default=0)
    syncs = sum(
        1 for e in events
        if e.name == "aten::item" and not in_opt(e) and first <= e.time_range.start <= last
    )
    if steps > 1 and syncs >= steps - 1:
        found.add("host_sync")
    for e in events:
        if e.name == "aten::addmm" and e.input_dtypes and e.input_dtypes[1] == "float":
            found.add("fp32")
            break
    for e in events:
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2:
            if e.input_shapes[1][0] <= 4:
                found.add("small_batch")
            break
    if not any(k.startswith("aten::_foreach") or k.startswith("aten::_fused") for k in rows):
        found.add("optimizer_loop")
    fwd = rows.get("aten::native_layer_norm", 0)
    if fwd > rows.get("aten::native_layer_norm_backward", 0):
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="diag_loader_exact_name",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It tests the event name for equality with '_SingleProcessDataLoaderIter.__next__', but "
            "the profiler records it as 'enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__', "
            "so loader is never found: look for that text inside the name."
        ),
        source=_diag(
            loader='any(e.name == "_SingleProcessDataLoaderIter.__next__" for e in events)'
        ),
        hints=("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",),
    ),
    Blind(
        name="diag_batch_from_embedding_weight",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It reads the batch from aten::embedding's first input, which is the embedding table "
            "(256 x 32, or 32 x 32 for positions), not the token indices, so the batch looks large "
            "and small_batch is never flagged: the indices are the second input, batch on its first axis."
        ),
        source=_diag(size="e.input_shapes[0][0]"),
        hints=('"small_batch" is there',),
    ),
    Blind(
        name="diag_layer_norm_substring_count",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It counts layer-norm forwards with 'native_layer_norm' in the name, which also matches "
            "aten::native_layer_norm_backward, so the forward count always exceeds the backward count "
            "and every script is flagged recompute: match the forward operator's name exactly."
        ),
        source=_diag(
            recompute=(
                'sum(c for n, c in names.items() if "native_layer_norm" in n)'
                ' > names["aten::native_layer_norm_backward"]'
            )
        ),
        hints=("as many times as its backward",),
    ),
    Blind(
        name="diag_recompute_layer_norm_vs_native",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It compares aten::layer_norm with aten::native_layer_norm, but these are the same forward "
            "call at two levels (one runs inside the other), so the counts are always equal and "
            "recompute is never flagged: compare the forward with its backward "
            "(aten::native_layer_norm_backward)."
        ),
        source=_diag(recompute='names["aten::layer_norm"] > names["aten::native_layer_norm"]'),
        hints=('"recompute" is there',),
    ),
    Blind(
        name="diag_fp32_from_embedding_dtype",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It reads the dtype of aten::embedding's inputs, but autocast leaves the embedding "
            "table in float (embedding is not a matmul it casts), so every script is flagged fp32: "
            "read the dtype the linear layers' matmuls (aten::addmm) compute in."
        ),
        source=_diag(
            fp32='any(e.name == "aten::embedding" and "float" in e.input_dtypes for e in events)'
        ),
        hints=('not "fp32"',),
    ),
    # ---------------- capstone_profile_fix ----------------
    Blind(
        name="fix_right_zero_grad_first_items_after",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    # AdamW's default weight decay is 0.01, the script's value
    optimizer = torch.optim.AdamW(model.parameters(), lr=capstone_profile.LR, foreach=True)
    tokens = T.encode(text)
    gen = torch.Generator()
    gen.manual_seed(0)
    kept = []
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        xb, yb = T.get_batch(tokens, capstone_profile.BATCH, capstone_profile.SEQ_LEN, gen)
        xb = xb.to(device)
        yb = yb.to(device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            loss = model(xb, yb)[1]
        loss.backward()
        optimizer.step()
        kept.append(loss.detach())
    return [t.item() for t in kept]
""",
    ),
    Blind(
        name="fix_right_fused_adamw",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_FIX.replace("foreach=True", "fused=True")
        .replace("SEQ", "capstone_profile.SEQ_LEN")
        .replace("LOSSLINE", "")
        .replace("RETURN", "[float(v) for v in torch.stack(losses)]"),
    ),
    Blind(
        name="fix_half_length_windows",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It cuts windows of SEQ_LEN // 2 = 16 tokens to make each step cheaper, so a step of 16 "
            "windows feeds 256 tokens instead of the 512 the sound batch does: keep "
            "capstone_profile.SEQ_LEN, the model's context."
        ),
        source=_fix(seq="capstone_profile.SEQ_LEN // 2"),
        hints=("256 tokens",),
    ),
    Blind(
        name="fix_loss_divided_by_batch",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It divides the loss by the batch size, but the model's loss is already the mean over "
            "every token, so the losses it returns (and the gradients) are 16 times too small: use "
            "the loss as the model returns it."
        ),
        source=_fix(lossline="        loss = loss / capstone_profile.BATCH\n"),
        hints=("1/16 (BATCH)",),
    ),
    Blind(
        name="fix_returns_list_of_tensors",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It returns the list of detached 0-d loss tensors itself, not Python numbers: convert "
            "them after the loop (torch.stack(losses).tolist())."
        ),
        source=_fix(ret="losses"),
    ),
    Blind(
        name="fix_step_before_backward",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It calls optimizer.step() before loss.backward(), with zero_grad() right after backward, "
            "so the gradients are always cleared (set to None) when step() runs, AdamW skips every "
            "parameter without a gradient, and the weights never change: the order is backward, "
            "step, zero_grad."
        ),
        source=_FIX.replace("SEQ", "capstone_profile.SEQ_LEN")
        .replace("RETURN", "torch.stack(losses).tolist()")
        .replace(
            "LOSSLINE        loss.backward()\n        optimizer.step()\n        optimizer.zero_grad()\n",
            "        optimizer.step()\n        loss.backward()\n        optimizer.zero_grad()\n",
        ),
        hints=("every gradient was empty",),
    ),
    Blind(
        name="fix_forward_under_no_grad",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It runs the forward under torch.no_grad() as well as autocast, so the loss has no "
            "graph and loss.backward() fails: only autocast belongs around the forward."
        ),
        source=_fix().replace(
            "with torch.autocast(device.type, dtype=torch.bfloat16):",
            "with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):",
        ),
        hints=("torch.no_grad()",),
    ),
    Blind(
        name="fix_weight_decay_point_one",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It sets AdamW's weight_decay to 0.1 (nanoGPT's value) instead of the script's 0.01, so "
            "it decays the weights ten times harder and learns different weights from the script's "
            "optimizer."
        ),
        source=_fix().replace("weight_decay=0.01", "weight_decay=0.1"),
        hints=("weight_decay is 0.1",),
    ),
]
