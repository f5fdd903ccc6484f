"""Blind held-out answers, round lab11_profile_r13, to lab 11's "Profile first" part
(exercises capstone_profile_diagnose and capstone_profile_fix).

Written 2026-11-29 (15:21-15:30 UTC) by a helper session that never opened the checker
(gpu_utils/exercises/), no tests/test_*.py, no report.py, no FAQ, never ran a check cell nor
imported gpu_utils.exercises, and read of tests/heldout/ only __init__.py and the docstring and
first two entries (plus the module-level helper constants) of lab11_profile_r9.py, for the format.
No list of earlier rounds' causes was read. Read: labs/ and solutions/11_training_in_practice_lab.ipynb
(cells 1 and 32-44: the exercise texts and the solution's diagnose and fixed_train),
gpu_utils/many_gpus/capstone_profile.py, training.py (encode, get_batch, WindowDataset,
SlowTokenizingDataset, forward_checkpointed) and gpt.py (MLP with gelu, lm_head without bias).

Exploration (/tmp/lab11_profile_r13/explore.py, GPU_COURSE_MODE=simulator, CPU, 3 steps): the
corpus is pure ASCII (62,224 characters); AdamW makes 28 (foreach=False) or 56 (foreach=True)
aten::item per step, all directly inside Optimizer.step#AdamW.step; a DataLoader adds one
top-level aten::item (its seed) before the loop, so all six planted gives 4 top-level items for
3 steps; with foreach=True on the CPU there are still 84 aten::addcdiv_ and aten::lerp_ (the
foreach kernels' per-tensor fallback); under autocast aten::linear records fp32 input dtypes
while aten::addmm/mm/bmm record BFloat16; aten::embedding is called for the tokens (256x32,
(batch, 32)) and the positions (32x32, (32,)); no event name contains "checkpoint".

Verification (/tmp/lab11_profile_r13/verify.py, run from tests/ with GPU_COURSE_MODE=simulator;
answers loaded with heldout.submitted; the reference is the solution's cells 37 and 41 exec'd):
- diagnose: capstone_profile.profile of 18 scripts: sound with 2 workers and with get_batch,
  all six, host_sync alone (2 workers, 3 and 2 steps; get_batch, 3 steps), each other kind alone
  with 2 workers, planted(seed) for seeds 0-2 and each complement with 2 workers, and
  small_batch+loader for 4 steps. The reference returned exactly the planted kinds on all 18;
  both right answers agree with it on all 18. Wrong ones: "DataLoader" in any name adds
  'loader' on the 10 sound-loader (2-worker) scripts; counting every aten::item adds
  'host_sync' on all 11 scripts without it; "== steps" top-level reads misses host_sync on the
  6 scripts with host_sync and a DataLoader (4 reads for 3 steps; 3 for 2) and is right on the
  get_batch ones; aten::linear dtypes add 'fp32' on all 13 autocast scripts; the embedding
  table's shape misses small_batch on all 6 small_batch scripts; aten::addcdiv_ >= steps x 28
  parameters adds 'optimizer_loop' on all 13 foreach scripts; the "checkpoint" name rule misses
  recompute on all 5 recompute scripts. Each agrees with the reference elsewhere.
- fixed_train: texts T.corpus(), corpus[20000:40000] and corpus[:3000] + " café — naïve × " +
  corpus[3000:6000], steps 1 and 3, plus 20 steps on the corpus, tokens_per_step, and the
  reference diagnose of a 3-step profile on corpus[:20000]. Right answers: fused AdamW with a
  float list and the own gather equal the reference exactly (max difference 0.0) on every input;
  the batch-32, seed-1234 one (its own draw, allowed by the text) starts at 5.512 (ref 5.519),
  goes down to 3.615 at step 20 (ref 3.547), 1024 tokens per step; all three return lists of
  floats and their profiles diagnose empty. Wrong ones: loss.item() in the loop gives the
  reference's numbers but its profile diagnoses ['host_sync']; LR x sqrt(8) is equal at step 1
  and differs by 0.32-0.35 within 3 steps; Adam instead of AdamW differs by 0.002-0.005 within 3
  steps (3.581 vs 3.547 at step 20); no zero_grad differs by 0.005-0.010 within 3 steps (3.563
  at step 20); ord() tokens equal the reference on the ASCII texts, differ by 0.010-0.018 on
  the non-ASCII one, and raise IndexError (index out of range in self) on a 21,500-character
  text with an em dash every 40 characters; range(1, steps) returns 2 losses for 3 steps and
  raises RuntimeError (stack expects a non-empty TensorList) for steps=1.
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

# A sound diagnose written for this round; each wrong diagnose below changes one rule of it.
_DIAG = (
    _HEAD
    + """
def diagnose(prof):
    events = prof.events()
    calls = collections.Counter(e.name for e in events)
    n_steps = calls["Optimizer.step#AdamW.step"]

    def under(e, word):
        e = e.cpu_parent
        while e is not None:
            if word in e.name:
                return True
            e = e.cpu_parent
        return False

    found = set()
    # LOADER
    if any("_SingleProcessDataLoaderIter" in name for name in calls):
        found.add("loader")
    # HOST_SYNC
    first_zero = min(
        (e.time_range.start for e in events if e.name.startswith("Optimizer.zero_grad")),
        default=float("inf"),
    )
    reads = [
        e for e in events
        if e.name == "aten::item" and not under(e, "Optimizer.step")
        and e.time_range.start > first_zero
    ]
    if n_steps and len(reads) >= n_steps:
        found.add("host_sync")
    # FP32
    if any(e.name == "aten::bmm" and e.input_dtypes and e.input_dtypes[0] == "float"
           for e in events):
        found.add("fp32")
    # SMALL
    rows = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) >= 2 and len(e.input_shapes[1]) == 2
    ]
    if rows and min(rows) < capstone_profile.BATCH:
        found.add("small_batch")
    # OPTLOOP
    if not any(name.startswith("aten::_foreach") or "fused" in name for name in calls):
        found.add("optimizer_loop")
    # RECOMPUTE
    if calls["aten::_softmax"] > calls["aten::_softmax_backward_data"]:
        found.add("recompute")
    return found
"""
)


def _diag(*pairs):
    """The sound diagnose above with each (old, new) text replaced (each old must occur)."""
    source = _DIAG
    for old, new in pairs:
        assert old in source, old
        source = source.replace(old, new)
    return source


_FIX = (
    _HEAD
    + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)  # tokenised once, before the loop
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
"""
)


def _fix(*pairs):
    """The sound fixed_train above with each (old, new) text replaced (each old must occur)."""
    source = _FIX
    for old, new in pairs:
        assert old in source, old
        source = source.replace(old, new)
    return source


ANSWERS = [
    # ---------------------------------------------------------------- diagnose: right
    Blind(
        name="diag_right_reads_after_first_zero_grad_softmax_counts",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_DIAG,
    ),
    Blind(
        name="diag_right_one_read_after_every_step",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def diagnose(prof):
    evs = sorted(prof.events(), key=lambda e: e.time_range.start)
    names = {e.name for e in evs}
    problems = set()

    if any(n.startswith("enumerate(DataLoader)#_SingleProcess") for n in names):
        problems.add("loader")

    # after every optimizer step (up to the next one), is the loss read back at top level?
    step_starts = [e.time_range.start for e in evs if e.name == "Optimizer.step#AdamW.step"]
    top_reads = [e.time_range.start for e in evs if e.name == "aten::item" and e.cpu_parent is None]
    bounds = step_starts + [float("inf")]
    if step_starts and all(
        any(bounds[i] < t < bounds[i + 1] for t in top_reads) for i in range(len(step_starts))
    ):
        problems.add("host_sync")

    matmul_dtypes = {
        e.input_dtypes[0]
        for e in evs
        if e.name in ("aten::addmm", "aten::mm") and e.input_dtypes
    }
    if "float" in matmul_dtypes:
        problems.add("fp32")

    for row in prof.key_averages(group_by_input_shape=True):
        if row.key == "aten::embedding":
            idx_shape = row.input_shapes[1]
            if len(idx_shape) == 2 and idx_shape[0] <= 4:
                problems.add("small_batch")

    if not any("_foreach_" in n for n in names):
        problems.add("optimizer_loop")

    n_steps = sum(e.name == "Optimizer.step#AdamW.step" for e in evs)
    gelus = sum(e.name == "aten::gelu" for e in evs)
    if n_steps and gelus / n_steps > capstone_profile.MODEL["n_layers"]:
        problems.add("recompute")
    return problems
""",
    ),
    # ---------------------------------------------------------------- diagnose: wrong
    Blind(
        name="diag_wrong_any_dataloader_is_loader",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "flags 'loader' whenever a DataLoader appears in the profile, so the sound scripts "
            "that feed batches through a DataLoader with 2 worker processes "
            "(_MultiProcessingDataLoaderIter) are wrongly called 'loader'; only batches made in "
            "the training process (_SingleProcessDataLoaderIter) are the problem."
        ),
        source=_diag(('"_SingleProcessDataLoaderIter" in name', '"DataLoader" in name')),
        hints=("_MultiProcessingDataLoaderIter",),
    ),
    Blind(
        name="diag_wrong_counts_optimizer_items",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "counts every aten::item in the profile as a host synchronisation, including the "
            "ones AdamW makes inside Optimizer.step to read its own (CPU) step counters, so "
            "'host_sync' is reported for every script."
        ),
        source=_diag(
            (
                """e for e in events
        if e.name == "aten::item" and not under(e, "Optimizer.step")
        and e.time_range.start > first_zero""",
                """e for e in events
        if e.name == "aten::item\"""",
            )
        ),
        hints=("inside `Optimizer.step`",),
    ),
    Blind(
        name="diag_wrong_exactly_one_read_per_step",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "requires exactly one top-level aten::item per step (== steps), so when a DataLoader "
            "also draws its shuffling seed with .item() before the loop (loader scripts, sound "
            "2-worker ones included) the count is steps + 1 and 'host_sync' is missed."
        ),
        source=_diag(
            (
                """e for e in events
        if e.name == "aten::item" and not under(e, "Optimizer.step")
        and e.time_range.start > first_zero""",
                """e for e in events
        if e.name == "aten::item" and e.cpu_parent is None""",
            ),
            ("len(reads) >= n_steps", "len(reads) == n_steps"),
        ),
        hints=("3 times in 2 steps",),
    ),
    Blind(
        name="diag_wrong_fp32_from_linear_inputs",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "decides 'fp32' from the input dtypes of aten::linear, which under autocast still "
            "records the fp32 weights and activations it receives before casting them, so every "
            "autocast script is called 'fp32'; the dtype to read is that of the matmul itself "
            "(aten::addmm / aten::mm / aten::bmm)."
        ),
        source=_diag(
            (
                """e.name == "aten::bmm" and e.input_dtypes and e.input_dtypes[0] == "float\"""",
                """e.name == "aten::linear" and "float" in e.input_dtypes""",
            )
        ),
        hints=("c10::BFloat16",),
    ),
    Blind(
        name="diag_wrong_embedding_weight_shape_as_batch",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "reads the batch from aten::embedding's first input, which is the embedding table "
            "(256 x 32 or 32 x 32), not from its second input, the token indices (batch x seq), "
            "so 'small_batch' is never reported."
        ),
        source=_diag(
            (
                """e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) >= 2 and len(e.input_shapes[1]) == 2""",
                """e.input_shapes[0][0]
        for e in events
        if e.name == "aten::embedding\"""",
            )
        ),
        hints=("second input of `aten::embedding`",),
    ),
    Blind(
        name="diag_wrong_per_parameter_addcdiv",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "takes per-parameter aten::addcdiv_ calls as the sign of a one-parameter-at-a-time "
            "optimizer, but on the CPU the foreach kernels (aten::_foreach_addcdiv_) also run "
            "aten::addcdiv_ once per tensor inside them, so 'optimizer_loop' is reported for "
            "every script; the sign is the absence of aten::_foreach_* operators."
        ),
        source=_diag(
            (
                """not any(name.startswith("aten::_foreach") or "fused" in name for name in calls)""",
                """calls["aten::addcdiv_"] >= n_steps * len(list(capstone_profile.build_model().parameters()))""",
            )
        ),
        hints=("_foreach_",),
    ),
    Blind(
        name="diag_wrong_looks_for_checkpoint_event",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "looks for an event named after checkpointing (CheckpointFunction / 'checkpoint'), "
            "which the non-reentrant torch.utils.checkpoint used by the script never records, "
            "so 'recompute' is never reported; recomputation shows as more forward operator "
            "calls (softmax, gelu, layer_norm, addmm) than their backward ones."
        ),
        source=_diag(
            (
                """calls["aten::_softmax"] > calls["aten::_softmax_backward_data"]""",
                """any("checkpoint" in name.lower() for name in calls)""",
            )
        ),
        hints=("backward only",),
    ),
    # ---------------------------------------------------------------- fixed_train: right
    Blind(
        name="fix_right_fused_adamw_float_list",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def fixed_train(text, steps):
    dev = capstone_profile.device()
    net = capstone_profile.build_model().to(dev)
    opt = torch.optim.AdamW(
        net.parameters(),
        lr=capstone_profile.LR,
        weight_decay=capstone_profile.WEIGHT_DECAY,
        fused=True,
    )
    tokens = T.encode(text)
    rng = torch.Generator()
    rng.manual_seed(0)
    history = []
    for _ in range(steps):
        xb, yb = T.get_batch(tokens, capstone_profile.BATCH, capstone_profile.SEQ_LEN, rng)
        xb = xb.to(dev, non_blocking=True)
        yb = yb.to(dev, non_blocking=True)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
            logits, loss = net(xb, yb)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        history.append(loss.detach())
    # one read after the loop, not one per step
    return [float(v) for v in torch.stack(history).float().cpu()]
""",
    ),
    Blind(
        name="fix_right_bytes_list_bigger_batch_other_seed",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
BATCH = 2 * capstone_profile.BATCH  # more than the minimum, same learning rate

def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    model.train()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)
    assert torch.equal(data, torch.tensor(list(text.encode("utf-8")), dtype=torch.long))
    gen = torch.Generator().manual_seed(1234)
    losses = torch.zeros(steps, device=device)
    for i in range(steps):
        x, y = T.get_batch(data, BATCH, capstone_profile.SEQ_LEN, gen)
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        losses[i] = loss.detach()
    return losses.tolist()
""",
    ),
    Blind(
        name="fix_right_own_gather",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text).to(device)
    g = torch.Generator().manual_seed(0)
    offsets = torch.arange(capstone_profile.SEQ_LEN + 1)
    losses = []
    for _ in range(steps):
        starts = torch.randint(
            len(data) - capstone_profile.SEQ_LEN, (capstone_profile.BATCH,), generator=g
        )
        windows = data[(starts[:, None] + offsets).to(device)]
        x, y = windows[:, :-1], windows[:, 1:]
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    # ---------------------------------------------------------------- fixed_train: wrong
    Blind(
        name="fix_wrong_item_in_loop",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "still reads every step's loss back to the host with loss.item() inside the loop "
            "(a host synchronisation per step); keep the losses on the device (loss.detach()) "
            "and convert them once after the loop."
        ),
        source=_fix(
            ("losses.append(loss.detach())", "losses.append(loss.item())"),
            ("return torch.stack(losses).tolist()", "return losses"),
        ),
        hints=(".item()",),
    ),
    Blind(
        name="fix_wrong_lr_scaled_with_batch",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "scales the learning rate with the larger batch (LR * sqrt(BATCH / SMALL_BATCH)), "
            "while the exercise asks to keep capstone_profile.LR unchanged even when the batch "
            "grows, so the losses differ from what the script learns."
        ),
        source=_fix(
            (
                "lr=capstone_profile.LR,",
                "lr=capstone_profile.LR * (capstone_profile.BATCH / capstone_profile.SMALL_BATCH) ** 0.5,",
            )
        ),
        hints=("lr=capstone_profile.LR",),
    ),
    Blind(
        name="fix_wrong_adam_not_adamw",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "switches the optimizer to torch.optim.Adam, whose weight_decay is an L2 term added "
            "to the gradient instead of AdamW's decoupled decay, so the script computes "
            "different updates (keep AdamW, only with foreach=True or fused=True)."
        ),
        source=_fix(("torch.optim.AdamW(", "torch.optim.Adam(")),
        hints=("weight_decay",),
    ),
    Blind(
        name="fix_wrong_no_zero_grad",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "drops optimizer.zero_grad() from the loop, so each step's gradients are added to "
            "all the previous steps' and the updates (and losses) after the first step are wrong."
        ),
        source=_fix(("        optimizer.zero_grad()\n", "")),
        hints=("not cleared",),
    ),
    Blind(
        name="fix_wrong_ord_tokens",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "tokenises with ord() of each character (one token per code point) instead of "
            "T.encode's UTF-8 bytes: the same on ASCII text, but on text with non-ASCII "
            "characters the tokens and windows differ, and a code point above 255 is out of the "
            "256-entry embedding's range (IndexError once a drawn window contains one)."
        ),
        source=_fix(
            (
                "data = T.encode(text)  # tokenised once, before the loop",
                "data = torch.tensor([ord(c) for c in text], dtype=torch.long)  # tokenised once",
            )
        ),
        hints=("code point",),
    ),
    Blind(
        name="fix_wrong_range_from_one",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "loops over range(1, steps), so it trains one step fewer than asked and returns "
            "steps - 1 losses (none for steps=1)."
        ),
        source=_fix(("for step in range(steps):", "for step in range(1, steps):")),
        hints=("3 optimizer steps",),
    ),
]
