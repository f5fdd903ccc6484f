"""Blind held-out answers, round lab11_profile_r11, to lab 11's "Profile first" part
(exercises capstone_profile_diagnose and capstone_profile_fix).

Written 2026-11-29 (14:59-15:05 UTC) by a helper session that never opened the checker
(gpu_utils/exercises/), no tests/test_*.py, no report.py, no FAQ, and read of tests/heldout/ only
__init__.py and the docstring and first two entries of lab11_profile_r9.py (for the format); it
never ran the check cells, never imported gpu_utils.exercises and read no list of earlier rounds'
mistakes. Read: labs/ and solutions/11_training_in_practice_lab.ipynb (the exercise texts, cells
32-44; the solution's cells 37 and 41), gpu_utils/many_gpus/capstone_profile.py, gpt.py (Block,
MLP) and training.py (encode, get_batch, WindowDataset, SlowTokenizingDataset,
forward_checkpointed).

Verification (GPU_COURSE_MODE=simulator, CPU, torch 2.13.0+cpu; scratch scripts under
/tmp/lab11_profile_r11/: explore.py, verify_diag.py, verify_fix.py; the reference is the
solution's cells 37 and 41 exec'd as they stand; every answer loaded with heldout.submitted, run
from tests/):
- explore.py (sound script with 0 and 2 workers, all six, host_sync alone; 3 steps): on the CPU
  the foreach AdamW also records 84 aten::addcdiv_/addcmul_/lerp_ (its per-tensor fallback under
  aten::_foreach_*), as many as foreach=False; every optimizer aten::item has Optimizer.step as
  its parent; a DataLoader (2 workers or the TokenizingDataset) draws its shuffling seed with one
  top-level aten::item of dtype 'long int' before the loop, the loss reads are 'float';
  aten::linear under autocast is recorded with fp32 inputs (its addmm/mm run in bf16);
  aten::embedding's inputs are [[256, 32], [B, 32]] and [[32, 32], [32]].
- diagnose (verify_diag.py): capstone_profile.profile of 16 scripts: sound with 2 workers and
  with get_batch, all six, host_sync alone (2 and 3 steps, and with 2 workers), small_batch alone
  (4 steps), recompute alone, loader alone, fp32+optimizer_loop (2 workers), planted(seed) and
  its complement (2 workers) for seeds 0-2 (3 steps unless said). The reference returned exactly
  the planted kinds on all 16; the 3 right answers return the reference's set on all 16. Wrong
  ones (differences from the reference): any-DataLoader adds 'loader' on the 6 scripts with a
  2-worker DataLoader; every-item adds 'host_sync' on all 9 scripts without it; linear dtypes add
  'fp32' on all 11 autocast scripts; the embedding-weight shape misses 'small_batch' on all 5
  scripts with it (agrees elsewhere); the addcdiv_ count adds 'optimizer_loop' on all 11 foreach
  scripts; the embedding forward/backward count misses 'recompute' on all 5 scripts with it.
- fixed_train (verify_fix.py): texts T.corpus(), corpus[20000:40000] and corpus[:3000] +
  " café — naïve × " + corpus[3000:6000], steps 1, 3, 4, against the solution's fixed_train;
  also two calls compared (seeded), 30 steps (loss goes down), capstone_profile.tokens_per_step,
  the matmul input dtypes and the reference diagnose of a profile (2-3 steps, corpus[:20000]).
  Both right answers return lists of `steps` Python floats, deterministic, loss 5.35-5.37 ->
  3.37-3.42 over 30 steps, tokens_per_step 512 (workers) and 1024 (batch 32), bf16 matmuls,
  reference diagnose empty; their losses differ from the reference's by 0.0004-0.045 because they
  draw other windows (shuffled WindowDataset; own gather, seed 1234, batch 32), which the text
  allows. The fused one records aten::_fused_adamw_. Wrong ones: autocast('cuda') warns "CUDA is
  not available ... Disabling autocast", its matmuls are ('float', 'float') and the reference
  diagnose says ['fp32'] (losses within 1.2e-4 of the reference: only the dtype shows it); the
  sqrt-rule LR equals the reference at step 1 and differs by 0.32-0.53 at steps 3-4; the default
  foreach gives the reference's losses exactly but records no _foreach_/_fused_ kernel (reference
  diagnose ['optimizer_loop']); .item() in the loop gives the reference's losses exactly and the
  reference diagnose says ['host_sync']; the generator made inside the loop draws the same (16,
  32) windows at every step (a spy on T.get_batch: equal at steps 2-3; the sqrt-rule one's are
  not) and its losses differ from step 2 by 0.03-0.06; batch 8 feeds 256 tokens a step (the
  reference diagnose, whose threshold is < 8, says nothing); foreach=True with fused=True raises
  RuntimeError ("`fused` and `foreach` cannot be `True` together.") on every input.
- Device: no GPU run was made (optional for this round); 'cuda' autocast and foreach=None are
  right on a GPU, wrong where the checkers run (the CPU).
"""

from heldout import Blind

_D = "capstone_profile_diagnose"
_F = "capstone_profile_fix"

_IMPORTS = """
import collections

import torch
from gpu_utils import capstone_profile
from gpu_utils import training as T
"""

# ---------------------------------------------------------------- diagnose
# A sound diagnose (parent walk, time order, dtypes, shapes, forward/backward counts); each
# wrong one below swaps one of its rules (marked @@NAME@@) for a learner's mistaken rule.
_DIAG = (
    _IMPORTS
    + """
def diagnose(prof):
    events = prof.events()
    n = collections.Counter(e.name for e in events)
    steps = n["Optimizer.step#AdamW.step"]

    def under_optimizer(e):
        p = e.cpu_parent
        while p is not None:
            if p.name.startswith("Optimizer.step"):
                return True
            p = p.cpu_parent
        return False

    found = set()
    @@LOADER@@
    @@SYNC@@
    @@FP32@@
    @@SMALL@@
    @@OPT@@
    @@RECOMPUTE@@
    return found
"""
)

_RULES = {
    "LOADER": """# batches cut in this very process (a DataLoader without workers)
    if any(name.startswith("enumerate(DataLoader)#_SingleProcessDataLoaderIter") for name in n):
        found.add("loader")""",
    "SYNC": """# .item() outside the optimizer (AdamW reads its own step counters), once per step
    first_step = min((e.time_range.start for e in events if e.name.startswith("Optimizer.step")), default=None)
    if first_step is not None:
        reads = [
            e for e in events
            if e.name == "aten::item" and not under_optimizer(e) and e.time_range.start > first_step
        ]
        if len(reads) >= steps:
            found.add("host_sync")""",
    "FP32": """# matmuls whose inputs are fp32
    if any(
        e.name in ("aten::mm", "aten::addmm") and e.input_dtypes and e.input_dtypes[0] == "float"
        for e in events
    ):
        found.add("fp32")""",
    "SMALL": """# batch = first dim of the token ids the embedding looks up
    sizes = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if sizes and min(sizes) < capstone_profile.BATCH // 2:
        found.add("small_batch")""",
    "OPT": """# AdamW's multi-tensor paths leave _foreach_ (or _fused_) kernels
    if not any("_foreach_" in name or "_fused_adam" in name for name in n):
        found.add("optimizer_loop")""",
    "RECOMPUTE": """# every forward addmm has one AddmmBackward0, unless blocks run forward twice
    if n["aten::addmm"] > n["AddmmBackward0"]:
        found.add("recompute")""",
}


def _diag(**changed):
    source = _DIAG
    for key, rule in {**_RULES, **changed}.items():
        source = source.replace(f"@@{key}@@", rule)
    assert "@@" not in source
    return source


# ---------------------------------------------------------------- fixed_train
# The seed-7 script (fp32, host_sync, small_batch) as a learner fixes it; each wrong one below
# changes one line of it (or starts from another seed's script).
_FIX = (
    _IMPORTS
    + """
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
        x, y = T.get_batch(data, 16, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())  # no .item() in the loop
    return torch.stack(losses).tolist()
"""
)


def _fix(*pairs):
    source = _FIX
    for old, new in pairs:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


ANSWERS = [
    # ======================= capstone_profile_diagnose =======================
    Blind(
        name="diag_right_parent_walk_after_first_step",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_diag(),
    ),
    Blind(
        name="diag_right_chrome_trace_json",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_IMPORTS
        + """
import json
import os
import tempfile


def diagnose(prof):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    ops = [e for e in trace["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    calls = collections.Counter(e["name"] for e in ops)
    steps = calls["Optimizer.step#AdamW.step"]
    step_spans = [(e["ts"], e["ts"] + e["dur"]) for e in ops if e["name"] == "Optimizer.step#AdamW.step"]

    diagnosis = set()
    if any("_SingleProcessDataLoaderIter" in name for name in calls):
        diagnosis.add("loader")

    # scalar reads after the first optimizer step that are not inside any optimizer step
    if step_spans:
        first = min(start for start, _ in step_spans)
        loose = 0
        for e in ops:
            if e["name"] != "aten::item" or e["ts"] <= first:
                continue
            if not any(start <= e["ts"] <= end for start, end in step_spans):
                loose += 1
        if loose >= steps:
            diagnosis.add("host_sync")

    for e in ops:
        if e["name"] in ("aten::mm", "aten::addmm"):
            types = e.get("args", {}).get("Input type", [])
            if types and types[0] == "float":
                diagnosis.add("fp32")
                break

    batch_sizes = []
    for e in ops:
        if e["name"] == "aten::embedding":
            dims = e.get("args", {}).get("Input Dims", [])
            if len(dims) > 1 and len(dims[1]) == 2:
                batch_sizes.append(dims[1][0])
    if batch_sizes and min(batch_sizes) <= 4:
        diagnosis.add("small_batch")

    if not any(name.startswith("aten::_foreach") or name.startswith("aten::_fused") for name in calls):
        diagnosis.add("optimizer_loop")

    if calls["aten::native_layer_norm"] > calls["aten::native_layer_norm_backward"]:
        diagnosis.add("recompute")
    return diagnosis
""",
    ),
    Blind(
        name="diag_right_key_averages_and_loss_dtype",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_IMPORTS
        + """
def diagnose(prof):
    rows = {row.key: row.count for row in prof.key_averages()}
    n_steps = rows.get("Optimizer.zero_grad#AdamW.zero_grad", 0)
    issues = set()

    if any("SingleProcessDataLoaderIter" in key for key in rows):
        issues.add("loader")

    # the loss is a float scalar read with .item(); the DataLoader's seed is an int64 one,
    # and AdamW's own step counters are read inside Optimizer.step
    def in_step(e):
        while e is not None:
            if "Optimizer.step" in e.name:
                return True
            e = e.cpu_parent
        return False

    loss_reads = [
        e for e in prof.events()
        if e.name == "aten::item" and e.input_dtypes == ["float"] and not in_step(e)
    ]
    if n_steps and len(loss_reads) >= n_steps:
        issues.add("host_sync")

    if any(e.name == "aten::mm" and "float" in e.input_dtypes for e in prof.events()):
        issues.add("fp32")

    for row in prof.key_averages(group_by_input_shape=True):
        if row.key == "aten::embedding" and len(row.input_shapes) > 1:
            ids = row.input_shapes[1]
            if len(ids) == 2 and ids[0] < capstone_profile.BATCH // 2:
                issues.add("small_batch")

    if not any(key.startswith(("aten::_foreach", "aten::_fused")) for key in rows):
        issues.add("optimizer_loop")

    if rows.get("aten::gelu", 0) > rows.get("aten::gelu_backward", 0):
        issues.add("recompute")
    return issues
""",
    ),
    Blind(
        name="diag_wrong_any_dataloader_is_loader",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It names 'loader' for any DataLoader in the profile, so the sound script whose "
            "DataLoader runs in 2 worker processes (_MultiProcessingDataLoaderIter) is flagged "
            "too; only a loader that builds batches in the training process "
            "(_SingleProcessDataLoaderIter, num_workers=0) is the problem."
        ),
        source=_diag(
            LOADER="""if any("DataLoader" in name for name in n):
        found.add("loader")"""
        ),
        hints=("_MultiProcessingDataLoaderIter",),
    ),
    Blind(
        name="diag_wrong_every_item_is_a_sync",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It counts every aten::item as a host synchronisation, including the step-counter "
            "reads AdamW makes inside Optimizer.step, so 'host_sync' is named for every script; "
            "only .item() calls outside the optimizer (the loss read each step) are the problem."
        ),
        source=_diag(
            SYNC="""# .item() is a host synchronisation
    if n["aten::item"] >= steps:
        found.add("host_sync")"""
        ),
        hints=("inside `Optimizer.step`",),
    ),
    Blind(
        name="diag_wrong_linear_dtype_for_fp32",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It reads fp32 from aten::linear's input dtypes, but under autocast aten::linear is "
            "recorded with its fp32 inputs before autocast casts them (the matmul itself, "
            "aten::addmm/aten::mm, runs in bf16), so 'fp32' is named for every script."
        ),
        source=_diag(
            FP32="""# linear layers fed fp32
    if any(e.name == "aten::linear" and "float" in e.input_dtypes for e in events):
        found.add("fp32")"""
        ),
        hints=("c10::BFloat16",),
    ),
    Blind(
        name="diag_wrong_embedding_weight_shape_as_batch",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It takes the batch from aten::embedding's first input, which is the embedding table "
            "(256 x 32 or 32 x 32), not from its second input, the token ids (batch x seq_len), so "
            "it never sees the batch of 2 and misses 'small_batch'."
        ),
        source=_diag(
            SMALL="""# batch = first dim of what the embedding looks up
    sizes = [
        e.input_shapes[0][0]
        for e in events
        if e.name == "aten::embedding" and e.input_shapes and len(e.input_shapes[0]) == 2
    ]
    if sizes and min(sizes) < capstone_profile.BATCH // 2:
        found.add("small_batch")"""
        ),
        hints=("second input of `aten::embedding`",),
    ),
    Blind(
        name="diag_wrong_per_parameter_addcdiv_count",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It takes more aten::addcdiv_ calls than steps as the sign of the per-parameter "
            "optimizer loop, but on the CPU the foreach path also runs one aten::addcdiv_ per "
            "parameter under aten::_foreach_addcdiv_, so 'optimizer_loop' is named for every "
            "script; the sign is the absence of _foreach_ (or fused) kernels."
        ),
        source=_diag(
            OPT="""# one addcdiv_ per parameter per step: AdamW stepped one parameter at a time
    if n["aten::addcdiv_"] > steps:
        found.add("optimizer_loop")"""
        ),
        hints=("_foreach_",),
    ),
    Blind(
        name="diag_wrong_recompute_from_embedding",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It compares aten::embedding with its backward to find recomputation, but the "
            "embeddings run outside the checkpointed blocks and are never recomputed, so "
            "'recompute' is always missed; an operator inside the blocks (addmm, layer_norm, "
            "gelu) runs more forwards than backwards."
        ),
        source=_diag(
            RECOMPUTE="""# forward done twice: more forwards than backwards
    if n["aten::embedding"] > n["EmbeddingBackward0"]:
        found.add("recompute")"""
        ),
        hints=("never recomputed",),
    ),
    # ======================= capstone_profile_fix =======================
    Blind(
        name="fix_right_window_dataset_two_workers",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_IMPORTS
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    windows = T.WindowDataset(T.encode(text), capstone_profile.SEQ_LEN)  # tokenised once
    loader = torch.utils.data.DataLoader(
        windows,
        batch_size=capstone_profile.BATCH,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
        num_workers=2,
        drop_last=True,
    )
    losses = []
    for _, (x, y) in zip(range(steps), loader):
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            logits, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
    return [float(v) for v in torch.stack(losses).cpu()]
""",
    ),
    Blind(
        name="fix_right_batch32_own_gather_fused",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_IMPORTS
        + """
def fixed_train(text, steps):
    dev = capstone_profile.device()
    net = capstone_profile.build_model().to(dev)
    opt = torch.optim.AdamW(
        net.parameters(), lr=capstone_profile.LR, weight_decay=capstone_profile.WEIGHT_DECAY,
        fused=True,
    )
    tokens = T.encode(text).to(dev)
    rng = torch.Generator().manual_seed(1234)
    rows = 2 * capstone_profile.BATCH  # bigger than the script's batch, same learning rate
    offsets = torch.arange(capstone_profile.SEQ_LEN + 1, device=dev)
    history = torch.zeros(steps, device=dev)
    for i in range(steps):
        starts = torch.randint(len(tokens) - capstone_profile.SEQ_LEN, (rows, 1), generator=rng)
        window = tokens[starts.to(dev) + offsets]
        inputs, targets = window[:, :-1], window[:, 1:]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            _, loss = net(inputs, targets)
        loss.backward()
        opt.step()
        opt.zero_grad()
        history[i] = loss.detach()
    return history.tolist()
""",
    ),
    Blind(
        name="fix_wrong_autocast_cuda_hardcoded",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It writes torch.autocast('cuda', ...) instead of the script's device type, so on a "
            "machine without a GPU autocast is disabled (with a warning) and every linear layer "
            "still computes in fp32."
        ),
        source=_fix(
            (
                "with torch.autocast(device.type, dtype=torch.bfloat16):",
                'with torch.autocast("cuda", dtype=torch.bfloat16):',
            )
        ),
        hints=("device.type",),
    ),
    Blind(
        name="fix_wrong_sqrt_rule_learning_rate",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It scales the learning rate by the square-root rule for the batch going from 2 to "
            "16 (LR x sqrt(8)), though the exercise says to keep capstone_profile.LR even when "
            "the batch grows, so the losses are not those of the script's learning rate."
        ),
        source=_fix(
            (
                "model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True",
                "model.parameters(), lr=capstone_profile.LR * (16 / 2) ** 0.5, weight_decay=0.01, "
                "foreach=True",
            )
        ),
        hints=("lr=capstone_profile.LR",),
    ),
    Blind(
        name="fix_wrong_foreach_default_is_loop_on_cpu",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It fixes 'optimizer_loop' by deleting foreach=False, but AdamW's default "
            "(foreach=None) picks the multi-tensor path only for CUDA parameters, so on the CPU "
            "the optimizer still steps one parameter at a time; foreach=True (or fused=True) "
            "must be asked for."
        ),
        source=_IMPORTS
        + """
# my seed's script (seed 6): loader, optimizer_loop, small_batch
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=capstone_profile.LR, weight_decay=0.01)
    data = T.encode(text)  # tokenise once instead of the TokenizingDataset
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
        hints=("foreach=True",),
    ),
    Blind(
        name="fix_wrong_item_left_in_loop",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It still reads the loss back with loss.item() every step inside the loop (the "
            "host_sync problem left unfixed); the losses should be kept on the device "
            "(loss.detach()) and read back once after the loop."
        ),
        source=_fix(
            (
                "losses.append(loss.detach())  # no .item() in the loop",
                "losses.append(loss.item())",
            ),
            ("return torch.stack(losses).tolist()", "return losses"),
        ),
        hints=(".item()",),
    ),
    Blind(
        name="fix_wrong_generator_reseeded_every_step",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It creates the seeded generator inside the loop, so every step draws the very same "
            "16 windows (the model trains on one batch over and over) instead of new windows "
            "drawn by one seeded generator across the steps."
        ),
        source=_fix(
            ("    generator = torch.Generator().manual_seed(0)\n", ""),
            (
                "x, y = T.get_batch(data, 16, capstone_profile.SEQ_LEN, generator)",
                "generator = torch.Generator().manual_seed(0)\n"
                "        x, y = T.get_batch(data, 16, capstone_profile.SEQ_LEN, generator)",
            ),
        ),
        hints=("seeded once",),
    ),
    Blind(
        name="fix_wrong_batch_8_below_batch",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It grows the batch from 2 to only 8 windows, below the capstone_profile.BATCH = 16 "
            "the exercise asks for at least, so a step still feeds 256 tokens instead of 512 "
            "(the small batch is only half fixed)."
        ),
        source=_fix(
            (
                "x, y = T.get_batch(data, 16, capstone_profile.SEQ_LEN, generator)",
                "x, y = T.get_batch(data, 8, capstone_profile.SEQ_LEN, generator)",
            )
        ),
        hints=("256 tokens",),
    ),
    Blind(
        name="fix_wrong_fused_and_foreach_together",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It passes both foreach=True and fused=True to AdamW, which refuses the combination "
            "(RuntimeError: fused and foreach cannot both be True), so the function fails before "
            "training; one of the two is enough."
        ),
        source=_fix(
            (
                "weight_decay=0.01, foreach=True",
                "weight_decay=0.01, foreach=True, fused=True",
            )
        ),
        hints=("cannot be `True` together",),
    ),
]
