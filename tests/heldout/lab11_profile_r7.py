"""Blind held-out answers, round lab11_profile_r7, to lab 11's "Profile first" part
(exercises capstone_profile_diagnose and capstone_profile_fix).

Written 2026-11-29 (06:35-06:45 UTC) by a helper session that never opened the checker (gpu_utils/exercises/, tests/
other than tests/heldout/__init__.py and the docstring and first entries of lab11_profile_r6.py
for the format), never ran the check cells and never imported gpu_utils.exercises. Read:
solutions/11_training_in_practice_lab.ipynb (cells 32-44), gpu_utils/many_gpus/
capstone_profile.py, gpu_utils/many_gpus/training.py (encode, get_batch, the datasets,
forward_checkpointed), and the earlier rounds' causes (all mistakes here are of other kinds).

Verification (GPU_COURSE_MODE=simulator, CPU, scratch scripts
/tmp/lab11_profile_r7/verify_diag.py and verify_fix.py; the reference is the solution's cells 37
and 41 exec'd as they stand; every answer loaded with heldout.submitted):
- diagnose: capstone_profile.profile of 12 scripts: all-sound and all-planted (steps=3),
  host_sync alone and all-sound at steps=2, and planted(seed) plus its complement for seeds 0-3
  (steps=3); sound loaders through a DataLoader with 2 workers as the lab says, else get_batch
  never used. The reference returned exactly the planted kinds on all 12. Both right answers
  agree with it on all 12. Each wrong one differs on the problem its cause names, and only
  there: steps counted with zero_grad misses host_sync on all 6 host_sync scripts; the
  NativeLayerNormBackward0 substring misses recompute on all 5 recompute scripts (27 forwards
  against 30 counted backwards in 3 steps); torch.float32 misses fp32 on all 5 fp32 scripts;
  key_averages() rows have input_shapes '' so small_batch is missed on all 5; aten::lift_fresh
  (30 of them inside Optimizer.step in every script) flags loader on all 7 sound-loader
  scripts; optimizer .item() counts (28 per step in the loop path, 56 on foreach) flag
  optimizer_loop on all 7 foreach scripts.
- fixed_train: steps 1, 3 and 4 on T.corpus() and on a second text (20,000 characters from the
  corpus's middle), compared with the solution's fixed_train: both right answers return lists
  of Python floats equal to the reference's (max difference 0.0), tokens_per_step 512, and the
  reference diagnose of their profile (steps=3) is empty. Wrong ones: the exhausted parameter
  generator raises ValueError ("optimizer got an empty parameter list"); torch.cat raises
  RuntimeError on 0-d tensors; the post-update loss returns 5.306 for the first step against
  the reference's 5.519 (and its extra no_grad forward shows as recompute to the reference
  diagnose); swapped get_batch arguments keep 512 tokens per step but give 5.4915, 5.3097, ...
  against 5.5185, 5.3314, ... (windows of 16 tokens); the GradScaler returns the reference's
  losses exactly but the reference diagnose of its profile is ["host_sync"] (scaler.step's
  .item() each step); T.corpus() in place of text equals the reference on the corpus but on
  the second text returns the corpus's losses (5.5185 against 5.5414); the smoothed losses
  equal the reference at one step only (5.4998 against 5.3314 at step 2).
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

# a sound diagnose; the wrong ones below change one rule of it
_DIAG = (
    _HEAD
    + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = STEPS

    def in_optimizer(e):
        while e is not None:
            if e.name.startswith("Optimizer.step"):
                return True
            e = e.cpu_parent
        return False

    problems = set()
    if LOADER:
        problems.add("loader")
    starts = [e.time_range.start for e in events if e.name == "Optimizer.step#AdamW.step"]
    if starts:
        # .item() outside the optimizer once the loop is running (a DataLoader's seed comes before)
        reads = [
            e for e in events
            if e.name == "aten::item" and not in_optimizer(e) and e.time_range.start >= min(starts)
        ]
        if steps and len(reads) >= steps:
            problems.add("host_sync")
    if FP32:
        problems.add("fp32")
    BATCH_RULE
    if OPTLOOP:
        problems.add("optimizer_loop")
    if RECOMPUTE:
        problems.add("recompute")
    return problems
"""
)

_STEPS = 'count["Optimizer.step#AdamW.step"]'
_LOADER = 'any("_SingleProcessDataLoaderIter" in e.name for e in events)'
_FP32 = 'any(e.name in ("aten::addmm", "aten::mm") and "float" in e.input_dtypes for e in events)'
_BATCH = """batch = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batch and min(batch) <= capstone_profile.BATCH // 4:
        problems.add("small_batch")"""
_OPTLOOP = 'not any("_foreach_" in n or "_fused_" in n for n in count)'
_RECOMPUTE = 'count["aten::addmm"] > count["AddmmBackward0"]'


def _diag(
    steps=_STEPS, loader=_LOADER, fp32=_FP32, batch=_BATCH, optloop=_OPTLOOP, recompute=_RECOMPUTE
):
    return (
        _DIAG.replace("STEPS", steps)
        .replace("LOADER", loader)
        .replace("FP32", fp32)
        .replace("BATCH_RULE", batch)
        .replace("OPTLOOP", optloop)
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
    """The sound fixed_train with each (old, new) text replaced (each old must occur)."""
    source = _FIX
    for old, new in pairs:
        assert old in source, old
        source = source.replace(old, new)
    return source


ANSWERS = [
    # ---------------- capstone_profile_diagnose ----------------
    Blind(
        name="diag_right_addmm_vs_autograd_node",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_diag(),
    ),
    Blind(
        name="diag_right_key_averages_recompute_in_backward",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def diagnose(prof):
    rows = {r.key: r.count for r in prof.key_averages()}
    events = prof.events()
    n_steps = rows.get("Optimizer.step#AdamW.step", 0)

    def ancestors(e):
        names = []
        e = e.cpu_parent
        while e is not None:
            names.append(e.name)
            e = e.cpu_parent
        return names

    out = set()
    if any(k.startswith("enumerate(DataLoader)#_SingleProcess") for k in rows):
        out.add("loader")
    first_step = min(
        (e.time_range.start for e in events if e.name.startswith("Optimizer.step#")), default=None
    )
    if first_step is not None:
        # the loss read in the loop is a top-level aten::item; AdamW's own run inside its step
        top_reads = [
            e for e in events
            if e.name == "aten::item" and e.cpu_parent is None and e.time_range.start > first_step
        ]
        if n_steps and len(top_reads) >= n_steps:
            out.add("host_sync")
    matmul_dtypes = {
        e.input_dtypes[1] for e in events if e.name == "aten::addmm" and len(e.input_dtypes) > 2
    }
    if "float" in matmul_dtypes:
        out.add("fp32")
    for e in events:
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2:
            if e.input_shapes[1][0] < capstone_profile.BATCH / 2:
                out.add("small_batch")
            break
    if not any("foreach" in k or "fused" in k for k in rows):
        out.add("optimizer_loop")
    # a checkpointed block's forward runs again inside the backward pass
    for e in events:
        if e.name == "aten::native_layer_norm" and any(
            a.startswith("autograd::engine::evaluate_function") for a in ancestors(e)
        ):
            out.add("recompute")
            break
    return out
""",
    ),
    Blind(
        name="diag_steps_counted_with_zero_grad",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It counts the steps as every event whose name contains 'Optimizer', which takes in "
            "Optimizer.zero_grad#AdamW.zero_grad as well as Optimizer.step#AdamW.step, so it "
            "counts twice the steps and a script that reads its loss once per step is never "
            "flagged host_sync: count only the Optimizer.step events."
        ),
        source=_diag(steps='sum(c for n, c in count.items() if "Optimizer" in n)'),
        hints=("outside `Optimizer.step`",),
    ),
    Blind(
        name="diag_recompute_backward_node_substring",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It counts layer-norm backwards as the events whose name contains "
            "'NativeLayerNormBackward0', which matches both the autograd node and its "
            "'autograd::engine::evaluate_function: NativeLayerNormBackward0' wrapper, so every "
            "backward is counted twice, the forwards (even recomputed) never outnumber them and "
            "recompute is never flagged: count one backward event per call "
            "(aten::native_layer_norm_backward)."
        ),
        source=_diag(
            recompute=(
                'count["aten::native_layer_norm"]'
                ' > sum(c for n, c in count.items() if "NativeLayerNormBackward0" in n)'
            )
        ),
        hints=("its backward only",),
    ),
    Blind(
        name="diag_fp32_dtype_object_vs_string",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It looks for torch.float32 (a torch.dtype object) in the matmul's input_dtypes, but "
            "the profiler records dtypes as strings ('float', 'c10::BFloat16'), so the test never "
            "matches and a script with no autocast is never flagged fp32: compare with the "
            "string 'float'."
        ),
        source=_diag(
            fp32=(
                'any(e.name in ("aten::addmm", "aten::mm") and torch.float32 in e.input_dtypes'
                " for e in events)"
            )
        ),
        hints=("`float` input dtypes",),
    ),
    Blind(
        name="diag_batch_from_key_averages_without_shapes",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It reads the embedding's input shapes from prof.key_averages() rows, which carry no "
            "input shapes unless grouped with group_by_input_shape=True, so no batch is ever "
            "found and small_batch is never flagged: use key_averages(group_by_input_shape=True) "
            "or the events' own input_shapes."
        ),
        source=_diag(
            batch="""batch = [
        r.input_shapes[1][0]
        for r in prof.key_averages()
        if r.key == "aten::embedding" and len(r.input_shapes) > 1 and len(r.input_shapes[1]) == 2
    ]
    if batch and min(batch) <= capstone_profile.BATCH // 4:
        problems.add("small_batch")"""
        ),
        hints=("input_shapes",),
    ),
    Blind(
        name="diag_loader_from_torch_tensor_calls",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It takes any aten::lift_fresh (a torch.tensor(...) call) as the dataset building "
            "its windows in Python, but AdamW creates tensors with torch.tensor inside "
            "Optimizer.step in every script, so every script is flagged loader: look for the "
            "single-process DataLoader iterator (_SingleProcessDataLoaderIter.__next__)."
        ),
        source=_diag(loader='count["aten::lift_fresh"] > 0'),
        hints=("no DataLoader",),
    ),
    Blind(
        name="diag_optimizer_loop_from_optimizer_items",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It takes many .item() calls inside Optimizer.step (one per parameter per step) as "
            "the per-parameter loop, but the foreach path reads the parameters' step counters "
            "too (twice as many calls), so every script is flagged optimizer_loop: the sign is "
            "the absence of aten::_foreach_ (or fused) operators."
        ),
        source=_diag(
            optloop=(
                'steps and sum(1 for e in events if e.name == "aten::item" and in_optimizer(e))'
                " >= 10 * steps"
            )
        ),
        hints=("_foreach_",),
    ),
    # ---------------- capstone_profile_fix ----------------
    Blind(
        name="fix_right_preallocated_losses_model_zero_grad",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(
        params, lr=capstone_profile.LR, weight_decay=capstone_profile.WEIGHT_DECAY, foreach=True
    )
    tokens = T.encode(text)  # once, before the loop
    gen = torch.Generator().manual_seed(0)
    history = torch.zeros(steps, device=device)  # filled on the device, read once at the end
    for i in range(steps):
        inputs, targets = T.get_batch(
            tokens, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator=gen
        )
        inputs, targets = inputs.to(device), targets.to(device)
        model.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            loss = model(inputs, targets)[1]
        loss.backward()
        optimizer.step()
        history[i] = loss.detach()
    return history.tolist()
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
    data = T.encode(text)
    g = torch.Generator().manual_seed(0)
    n, seq = capstone_profile.BATCH, capstone_profile.SEQ_LEN
    offsets = torch.arange(seq + 1)
    losses = []
    step = 0
    while step < steps:
        starts = torch.randint(len(data) - seq, (n,), generator=g)
        window = data[starts[:, None] + offsets].to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits, loss = model(window[:, :-1], window[:, 1:])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
        step += 1
    return [float(v) for v in torch.stack(losses).cpu()] if losses else []
""",
    ),
    Blind(
        name="fix_params_generator_exhausted",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It keeps model.parameters() (a generator) in a variable, uses it up counting the "
            "parameters, then gives the same exhausted generator to AdamW, which raises "
            "'optimizer got an empty parameter list': call model.parameters() again (or make a "
            "list of them once)."
        ),
        source=_fix(
            (
                """    optimizer = torch.optim.AdamW(
        model.parameters(),""",
                """    params = model.parameters()
    n_params = sum(p.numel() for p in params)
    optimizer = torch.optim.AdamW(
        params,""",
            )
        ),
        hints=("generator",),
    ),
    Blind(
        name="fix_cat_zero_dim_losses",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It joins the step losses with torch.cat, which cannot concatenate 0-d tensors "
            "(each loss is a scalar) and raises a RuntimeError: use torch.stack(losses)."
        ),
        source=_fix(("torch.stack(losses).tolist()", "torch.cat(losses).tolist()")),
        hints=("torch.stack",),
    ),
    Blind(
        name="fix_logs_loss_after_update",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It records the loss of a second forward pass (under no_grad) after optimizer.step(), "
            "the batch's loss after the update, instead of the loss the step was computed from, "
            "so the losses it returns are not the script's (and each step runs an extra forward): "
            "append the training forward's loss."
        ),
        source=_fix(
            (
                "        losses.append(loss.detach())",
                """        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):
            _, after = model(x, y)
        losses.append(after)""",
            )
        ),
        hints=("after the step",),
    ),
    Blind(
        name="fix_get_batch_arguments_swapped",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It passes get_batch's batch size and sequence length in the wrong order, so each "
            "step draws 32 windows of 16 tokens (the same 512 tokens) instead of 16 windows of "
            "capstone_profile.SEQ_LEN = 32: positions 16-31 of the model's context are never "
            "trained and the losses are not the script's."
        ),
        source=_fix(
            (
                "T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)",
                "T.get_batch(data, capstone_profile.SEQ_LEN, capstone_profile.BATCH, generator)",
            )
        ),
        hints=("32 windows of 16 tokens",),
    ),
    Blind(
        name="fix_grad_scaler_syncs",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It adds a GradScaler, which bf16 does not need, and scaler.step() reads its "
            "found-inf check back to the host with .item() on every step, a host synchronisation "
            "inside the loop: with bf16 autocast call loss.backward() and optimizer.step() directly."
        ),
        source=_fix(
            (
                "    data = T.encode(text)",
                "    scaler = torch.amp.GradScaler(device.type)\n    data = T.encode(text)",
            ),
            (
                """        loss.backward()
        optimizer.step()""",
                """        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()""",
            ),
        ),
        hints=("GradScaler",),
    ),
    Blind(
        name="fix_ignores_text_argument",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It tokenises T.corpus(), the chapter's corpus, instead of the text it is given, so "
            "it trains on the same text whatever text is passed in: encode the text argument."
        ),
        source=_fix(("data = T.encode(text)", "data = T.encode(T.corpus())")),
        hints=("T.corpus()",),
    ),
    Blind(
        name="fix_returns_smoothed_losses",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It returns an exponential moving average of the losses (smoothed for logging, "
            "0.9 x previous + 0.1 x new) instead of each step's own loss, so every value after "
            "the first differs from the script's: return the raw losses."
        ),
        source=_fix(
            (
                "    return torch.stack(losses).tolist()",
                """    smooth, ema = [], None
    for value in torch.stack(losses).tolist():
        ema = value if ema is None else 0.9 * ema + 0.1 * value
        smooth.append(ema)
    return smooth""",
            )
        ),
        hints=("running average",),
    ),
]
