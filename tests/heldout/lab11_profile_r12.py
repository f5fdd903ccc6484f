"""Blind held-out answers, round lab11_profile_r12, to lab 11's "Profile first" part
(exercises capstone_profile_diagnose and capstone_profile_fix).

Written 2026-11-29 (15:05-15:20 UTC) by a helper session that never opened the checker
(gpu_utils/exercises/), no tests/test_*.py, no report.py, no FAQ, no list of earlier rounds'
mistakes, and read of tests/heldout/ only __init__.py and the docstring and first two entries
(the shared templates) of lab11_profile_r9.py, for the format; it never ran the check cells and
never imported gpu_utils.exercises. Read: labs/ and solutions/11_training_in_practice_lab.ipynb
(the "Profile first" cells 32-44: exercise texts 36 and 40, solution cells 37 and 41),
gpu_utils/many_gpus/capstone_profile.py, training.py (encode, get_batch, WindowDataset,
SlowTokenizingDataset, forward_checkpointed) and gpt.py (Block, GPT.forward).

18 answers, all half="held2": diagnose 3 right + 7 wrong, fixed_train 2 right + 6 wrong.

Verification (GPU_COURSE_MODE=simulator, CPU, torch 2.13.0+cpu; scratch scripts under
/tmp/lab11_profile_r12/: explore.py, explore2.py, verify_diag.py, verify_fix.py; the reference is
the solution's cells 37 and 41 exec'd as they stand; every answer loaded with
heldout.submitted, run from tests/):
- explore: on the CPU the foreach AdamW still records 84 aten::addcdiv_ (one per parameter and
  step, under aten::_foreach_addcdiv_), as the per-parameter one does; aten::linear's recorded
  dtypes include 'float' even under autocast (its inputs before the cast), while every aten::mm /
  addmm is BFloat16 there; AdamW's own aten::item calls have Optimizer.step#AdamW.step as parent;
  any DataLoader (workers or not) makes one top-level aten::item before the first forward; the
  corpus (62,224 characters) is pure ASCII.
- diagnose: 20 profiles via capstone_profile.profile: sound with a 2-worker DataLoader (1, 3, 4
  steps) and with get_batch (3, 5 steps), all six (3), host_sync alone (2, 3; and 3 with 2
  workers), small_batch alone (4), recompute alone (1; and 4 with 2 workers), fp32+recompute (3),
  optimizer_loop with 2 workers (3), planted(seed) (get_batch) and its complement (2 workers) for
  seeds 0-2 (3 steps). The reference returned exactly the planted kinds on all 20; the 3 right
  answers agree with it on all 20. Wrong ones (disagreements out of 20): all_item_calls adds
  host_sync to all 13 profiles without it; any_toplevel_item adds host_sync to the 8 without it
  that use a DataLoader (workers or not), agrees on get_batch ones; any_dataloader adds loader to
  all 9 with a worker DataLoader; linear_dtypes adds fp32 to all 15 without it;
  embedding_seq_axis misses small_batch on all 5 small_batch profiles; addcdiv_means_loop adds
  optimizer_loop to all 15 without it; recompute_fixed_count agrees on every 3-step profile, adds
  recompute to the sound 4- and 5-step ones and small_batch's 4-step one, misses it on the 1-step
  recompute one (4 of 20).
- fixed_train: texts T.corpus(), corpus[20000:40000], corpus[:3000] + " café — naïve × " +
  corpus[3000:6000] (steps 1, 3, 12) and corpus[:41] (12 steps), against the solution's
  fixed_train; then capstone_profile.tokens_per_step on the corpus and the reference diagnose of
  capstone_profile.profile(answer, 3, corpus[:20000]). unfold_windows: equal to the reference
  (max difference 0.0) everywhere, 512 tokens/step, diagnosis []. fused_bigger_batch_device_losses
  (batch 32, seed 1234, fused AdamW, default weight decay): list of floats, loss falls on every
  text (5.51 -> 4.21 in 12 steps on the corpus; reference 5.52 -> 4.16), 1024 tokens/step,
  diagnosis []; it differs from the reference only by its other draw and batch, which the text
  allows. Wrong ones: autocast_cuda warns that CUDA is not available and runs in fp32 (losses
  within 4e-4 of the reference; diagnosis ['fp32'] on the CPU; it would be right on a GPU);
  sqrt_lr equal at step 1, then 0.32 apart at step 3 and 0.9-1.2 by step 12; ord_tokens equal
  on the ASCII texts, 0.010 apart at step 1 on the non-ASCII one and IndexError ('index out of
  range in self', the embedding) at 12 steps there; gather_off_by_one raises IndexError (index
  41 out of bounds for size 41) on the 41-character text and runs on the long ones (a start of
  len - 32 is drawn with probability 16/62,193 a step on the corpus; its other losses differ only
  by the draw); kept_checkpointing equal to the reference (0.0) but diagnosis ['recompute'];
  no_zero_grad equal at step 1, then 0.005-0.010 apart at step 3 and 0.04-0.13 by step 12.
  Dropped: returns_tensor (torch.stack(losses) returned as a tensor), to stay within 18 answers.
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

# ---------------------------------------------------------------- diagnose
# A sound diagnose of my own (events, parent chains, counts per step); each wrong answer below
# changes exactly one of its rules.
_DIAG = (
    _HEAD
    + """
def diagnose(prof):
    events = prof.events()
    counts = collections.Counter(e.name for e in events)
    n_steps = counts["Optimizer.step#AdamW.step"]

    def under_optimizer(e):
        e = e.cpu_parent
        while e is not None:
            if e.name.startswith("Optimizer."):
                return True
            e = e.cpu_parent
        return False

    problems = set()
    # LOADER
    if any("_SingleProcessDataLoaderIter" in e.name for e in events):
        problems.add("loader")
    # HOST_SYNC
    first_forward = min((e.time_range.start for e in events if e.name == "aten::embedding"), default=0)
    reads = [
        e
        for e in events
        if e.name == "aten::item" and not under_optimizer(e) and e.time_range.start > first_forward
    ]
    if n_steps and len(reads) >= n_steps:
        problems.add("host_sync")
    # FP32
    if any(e.name in ("aten::mm", "aten::addmm") and e.input_dtypes[0] == "float" for e in events):
        problems.add("fp32")
    # SMALL
    token_batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2
    ]
    if token_batches and min(token_batches) < 8:
        problems.add("small_batch")
    # OPTLOOP
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in counts):
        problems.add("optimizer_loop")
    # RECOMPUTE
    if counts["aten::gelu"] > counts["aten::gelu_backward"]:
        problems.add("recompute")
    return problems
"""
)


def _swap(old: str, new: str) -> str:
    assert _DIAG.count(old) == 1, old
    return _DIAG.replace(old, new)


# ---------------------------------------------------------------- fixed_train
_FIX = (
    _HEAD
    + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)  # once
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


def _fswap(old: str, new: str) -> str:
    assert _FIX.count(old) == 1, old
    return _FIX.replace(old, new)


ANSWERS = [
    # ------------------------------------------------------------ diagnose, correct
    Blind(
        name="events_own_rules",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_DIAG,
    ),
    Blind(
        name="key_averages_rows",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def diagnose(prof):
    rows = {row.key: row for row in prof.key_averages()}

    def calls(name):
        return rows[name].count if name in rows else 0

    steps = calls("Optimizer.step#AdamW.step")
    out = set()
    if any(key.startswith("enumerate(DataLoader)#_SingleProcess") for key in rows):
        out.add("loader")
    # .item() calls made by the script itself (top level), once the first forward has begun
    events = prof.events()
    begin = min((e.time_range.start for e in events if e.name == "aten::embedding"), default=0)
    script_reads = [
        e for e in events
        if e.name == "aten::item" and e.cpu_parent is None and e.time_range.start > begin
    ]
    if steps and len(script_reads) >= steps:
        out.add("host_sync")
    shaped = prof.key_averages(group_by_input_shape=True)
    mm_dtypes = [e.input_dtypes[:2] for e in events if e.name == "aten::mm"]
    if mm_dtypes and all(d == ["float", "float"] for d in mm_dtypes):
        out.add("fp32")
    for row in shaped:
        if row.key == "aten::embedding" and len(row.input_shapes[1]) == 2:
            if row.input_shapes[1][0] <= 4:
                out.add("small_batch")
    if not any(key.startswith("aten::_foreach") or "fused_adam" in key for key in rows):
        out.add("optimizer_loop")
    if calls("aten::native_layer_norm") > calls("aten::native_layer_norm_backward"):
        out.add("recompute")
    return out
""",
    ),
    Blind(
        name="per_step_ratios",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_HEAD
        + """
KNOWN = ("loader", "host_sync", "fp32", "small_batch", "optimizer_loop", "recompute")


def _ancestors(event):
    names = []
    while event.cpu_parent is not None:
        event = event.cpu_parent
        names.append(event.name)
    return names


def diagnose(prof):
    evs = list(prof.events())
    by_name = collections.defaultdict(list)
    for e in evs:
        by_name[e.name].append(e)
    steps = len(by_name["Optimizer.step#AdamW.step"]) or 1
    flags = dict.fromkeys(KNOWN, False)
    flags["loader"] = any(
        name.startswith("enumerate(DataLoader)") and "SingleProcess" in name for name in by_name
    )
    steps_spans = sorted(e.time_range.start for e in by_name["Optimizer.step#AdamW.step"])
    scalar_reads = [
        e for e in by_name["aten::_local_scalar_dense"]
        if not any(a.startswith("Optimizer.step") for a in _ancestors(e))
        and steps_spans and e.time_range.start > steps_spans[0]
    ]
    flags["host_sync"] = len(scalar_reads) >= steps - 1 and len(steps_spans) > 1
    bf16_mm = sum("c10::BFloat16" in e.input_dtypes for e in by_name["aten::addmm"])
    flags["fp32"] = bf16_mm == 0
    ids = [e.input_shapes[1] for e in by_name["aten::embedding"] if len(e.input_shapes[1]) == 2]
    flags["small_batch"] = any(shape[0] < capstone_profile.BATCH // 2 for shape in ids)
    multi = [n for n in by_name if "_foreach_" in n or "_fused_adamw" in n]
    flags["optimizer_loop"] = not multi
    flags["recompute"] = len(by_name["aten::gelu"]) / steps > len(by_name["aten::gelu_backward"]) / steps
    print("diagnosis:", {k for k, v in flags.items() if v})
    return {k for k, v in flags.items() if v}
""",
    ),
    # ------------------------------------------------------------ diagnose, wrong
    Blind(
        name="all_item_calls",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause="Counts every aten::item call as a host synchronisation, including the ones AdamW makes "
        "inside Optimizer.step to read its own step counters, so host_sync is reported for every script.",
        source=_swap(
            'e.name == "aten::item" and not under_optimizer(e) and e.time_range.start > first_forward',
            'e.name == "aten::item" and e.time_range.start > first_forward',
        ),
        hints=("inside `Optimizer.step`",),
    ),
    Blind(
        name="any_toplevel_item",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause="Reports host_sync as soon as the script makes any .item() of its own, without comparing "
        "the count with the number of steps or looking at when it runs, so the single read any "
        "DataLoader makes before the loop (to seed its sampler) is reported as host_sync in every "
        "script that uses a DataLoader, the sound one with worker processes included.",
        source=_swap(
            '    if n_steps and len(reads) >= n_steps:\n        problems.add("host_sync")',
            '    if any(e.name == "aten::item" and e.cpu_parent is None for e in events):\n'
            '        problems.add("host_sync")',
        ),
        hints=("fewer than once per step",),
    ),
    Blind(
        name="any_dataloader",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause="Reports loader whenever any DataLoader appears in the profile, though a DataLoader whose "
        "worker processes make the batches (_MultiProcessingDataLoaderIter) is the sound way: only "
        "batches made in the training process (_SingleProcessDataLoaderIter) are the problem.",
        source=_swap(
            'if any("_SingleProcessDataLoaderIter" in e.name for e in events):',
            'if any("DataLoader" in e.name for e in events):',
        ),
        hints=("_MultiProcessingDataLoaderIter",),
    ),
    Blind(
        name="linear_dtypes",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause="Reads the dtypes of aten::linear, whose inputs are recorded before autocast casts them "
        "(the fp32 weights), instead of those of the matmul it runs (aten::mm/addmm), so fp32 is "
        "reported for every script, autocast or not.",
        source=_swap(
            'e.name in ("aten::mm", "aten::addmm") and e.input_dtypes[0] == "float"',
            'e.name == "aten::linear" and "float" in e.input_dtypes',
        ),
        hints=("c10::BFloat16",),
    ),
    Blind(
        name="embedding_seq_axis",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause="Takes the wrong axis of the token ids' shape, input_shapes[1][1] (the sequence length, "
        "always 32) instead of input_shapes[1][0] (the batch), so a batch of 2 windows is never "
        "reported as small_batch.",
        source=_swap("        e.input_shapes[1][0]\n", "        e.input_shapes[1][1]\n"),
        hints=("2 windows",),
    ),
    Blind(
        name="addcdiv_means_loop",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause="Takes the per-tensor aten::addcdiv_ as the sign of a per-parameter optimizer, but on the "
        "CPU the foreach optimizer's _foreach_addcdiv_ also runs one aten::addcdiv_ per parameter "
        "inside it, so optimizer_loop is reported for every script; the sign is the absence of any "
        "aten::_foreach_ (or fused) operator.",
        source=_swap(
            'if not any(name.startswith(("aten::_foreach_", "aten::_fused_adam")) for name in counts):',
            'if counts["aten::addcdiv_"] > 0:',
        ),
        hints=("_foreach_",),
    ),
    Blind(
        name="recompute_fixed_count",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause="Compares the number of GeLU forwards with a constant read off a sound 3-step profile "
        "(6 = 2 layers x 3 steps) instead of with the backward count or the profile's own number of "
        "steps, so a sound profile of more than 3 steps is reported as recompute (and a recompute "
        "one of 1 step is missed).",
        source=_swap(
            'if counts["aten::gelu"] > counts["aten::gelu_backward"]:',
            'if counts["aten::gelu"] > 6:',
        ),
        hints=("as many times as its backward",),
    ),
    # ------------------------------------------------------------ fixed_train, correct
    Blind(
        name="fused_bigger_batch_device_losses",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
BATCH = 2 * capstone_profile.BATCH  # bigger than required: fine, the rate stays LR


def fixed_train(text, steps):
    dev = capstone_profile.device()
    net = capstone_profile.build_model().to(dev)
    # AdamW's default weight decay is already 0.01; fused=True is the one-kernel path
    opt = torch.optim.AdamW(net.parameters(), lr=capstone_profile.LR, fused=True)
    tokens = T.encode(text)
    rng = torch.Generator()
    rng.manual_seed(1234)
    history = torch.zeros(steps, device=dev)
    for i in range(steps):
        xb, yb = T.get_batch(tokens, BATCH, capstone_profile.SEQ_LEN, rng)
        xb = xb.to(dev, non_blocking=True)
        yb = yb.to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
            _, loss = net(xb, yb)
        loss.backward()
        opt.step()
        history[i] = loss.detach()
    return history.cpu().tolist()
""",
    ),
    Blind(
        name="unfold_windows",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=capstone_profile.WEIGHT_DECAY,
        foreach=True,
    )
    n = capstone_profile.SEQ_LEN
    windows = T.encode(text).unfold(0, n + 1, 1)  # every window of n + 1 bytes, a view
    g = torch.Generator().manual_seed(0)
    kept = []
    while len(kept) < steps:
        pick = torch.randint(len(windows), (capstone_profile.BATCH,), generator=g)
        batch = windows[pick].to(device)
        x, y = batch[:, :-1], batch[:, 1:]
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = model(x, y)[1]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        kept.append(loss.detach())
    return [float(v) for v in torch.stack(kept).cpu()]
""",
    ),
    # ------------------------------------------------------------ fixed_train, wrong
    Blind(
        name="autocast_cuda",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause='Hard-codes torch.autocast("cuda", ...) instead of the script\'s device type, so '
        "wherever the script runs on the CPU autocast is disabled and every matmul stays in fp32.",
        source=_fswap(
            "with torch.autocast(device.type, dtype=torch.bfloat16):",
            'with torch.autocast("cuda", dtype=torch.bfloat16):',
        ),
        hints=("device.type",),
    ),
    Blind(
        name="sqrt_lr",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause="Scales the learning rate with the square-root rule for the larger batch "
        "(LR x sqrt(16/2)) although the exercise says to keep capstone_profile.LR, so the training "
        "computes something else.",
        source=_fswap(
            "lr=capstone_profile.LR,",
            "lr=capstone_profile.LR * (capstone_profile.BATCH / capstone_profile.SMALL_BATCH) ** 0.5,",
        ),
        hints=("lr=capstone_profile.LR",),
    ),
    Blind(
        name="ord_tokens",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause="Tokenises the text with ord() of each character instead of T.encode's UTF-8 bytes, "
        "which agrees on ASCII text but gives other tokens, and ids of 256 or more (an index error "
        "in the embedding), for any non-ASCII character.",
        source=_fswap(
            "data = T.encode(text)  # once",
            "data = torch.tensor([ord(c) for c in text], dtype=torch.long)  # once",
        ),
        hints=("code point",),
    ),
    Blind(
        name="gather_off_by_one",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause="Draws window starts with torch.randint(len(data) - SEQ_LEN + 1) for windows of "
        "SEQ_LEN + 1 tokens (x and its shifted y), one start too many, so the last start reads one "
        "token past the end of the data (an index error, likely on a short text).",
        source=_fswap(
            "        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)\n",
            "        n = capstone_profile.SEQ_LEN\n"
            "        starts = torch.randint(len(data) - n + 1, (capstone_profile.BATCH,), generator=generator)\n"
            "        rows = data[starts[:, None] + torch.arange(n + 1)]\n"
            "        x, y = rows[:, :-1], rows[:, 1:]\n",
        ),
        hints=("past the end of the tokens",),
    ),
    Blind(
        name="kept_checkpointing",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause="Keeps the forward pass under activation checkpointing (T.forward_checkpointed) though "
        "memory is ample, so every block's forward still runs twice per step (the recompute "
        "problem is left unfixed).",
        source=_fswap("_, loss = model(x, y)", "_, loss = T.forward_checkpointed(model, x, y)"),
        hints=("recomputed",),
    ),
    Blind(
        name="no_zero_grad",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause="Drops optimizer.zero_grad() while rewriting the loop, so every step's gradients add up "
        "in .grad and each step after the first uses the sum of all earlier gradients.",
        source=_fswap("        optimizer.zero_grad()\n", ""),
        hints=("not cleared",),
    ),
]
