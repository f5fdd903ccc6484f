"""Blind held-out answers, round lab11_profile_r8, to lab 11's "Profile first" part
(exercises capstone_profile_diagnose and capstone_profile_fix).

Written 2026-11-29 (08:51-09:00 UTC) by a helper session that never opened the checker
(gpu_utils/exercises/), no tests/test_*.py, no report.py, no FAQ, and read of tests/heldout/ only
__init__.py and the docstring and first two entries of lab11_profile_r7.py (for the format); it
never ran the check cells and never imported gpu_utils.exercises. Read:
solutions/11_training_in_practice_lab.ipynb (cells 30-44), gpu_utils/many_gpus/
capstone_profile.py, gpu_utils/many_gpus/training.py (encode, get_batch, split, the datasets,
forward_checkpointed), gpu_utils/many_gpus/gpt.py (GPT, Block, build), and
/tmp/blind/causes_lab11_profile.txt (every mistake here is of a kind not listed there).

Verification (GPU_COURSE_MODE=simulator, CPU, torch 2.13.0+cpu, scratch scripts
/tmp/lab11_profile_r8/explore.py, verify_diag.py, verify_fix.py, verify_extra.py; the reference
is the solution's cells 37 and 41 exec'd as they stand; every answer loaded with
heldout.submitted):
- diagnose: capstone_profile.profile of 15 scripts: all-sound with a 2-worker DataLoader and
  with get_batch (steps 3), all six planted (3), host_sync alone (steps 2; and with a 2-worker
  DataLoader, steps 3), host_sync+recompute (3), fp32+host_sync+recompute (steps 4), and
  planted(seed) plus its complement (complement with 2 workers) for seeds 0-3. The reference
  returned exactly the planted kinds on all 15; the three right answers agree with it on all 15.
  Wrong ones, each differing only on the problem its cause names:
  window [first step start, last step end] wanting `steps` reads misses host_sync on all 9
  host_sync scripts (steps - 1 reads lie inside, the last read comes after the last step);
  steps = layer norms // 5 misses host_sync on the 4 scripts that also recompute (27 // 5 = 5
  "steps" for 3) and is right on the other 11; e.cpu_parent.name raises AttributeError on 14 of
  15 (every profile with a top-level aten::item: a loss read or a DataLoader's seed), and is
  right on the sound get_batch script, which has none; the CUDA-sync rule misses host_sync on
  all 9 host_sync scripts (no cuda* events on the CPU); input_dtypes[-1] is 'Scalar' (alpha) so
  fp32 is missed on all 6 fp32 scripts; 4 layer norms per step flags recompute on all 8
  scripts without it (the sound ones run 5 per step: 15 in 3 steps); the joined string differs
  on the 13 profiles with any problem (it equals set() only as '' for the 2 sound ones).
- fixed_train: texts T.corpus(), corpus[20000:40000] and a text with non-ASCII characters
  (corpus[:3000] + " café — naïve × " + corpus[3000:6000]), steps 1, 3 and 4, compared with the
  solution's fixed_train: fix_right_defaults_and_zero_grad_first returns lists of Python floats
  equal to the reference's (max difference 0), tokens_per_step 512 and the reference diagnose
  of its profile (steps 3) is empty; fix_right_bigger_batch_own_bytes (batch 32, allowed: "at
  least BATCH") equals the solution's cell with its batch set to 2 * BATCH exactly (max
  difference 0), tokens_per_step 1024, reference diagnose empty. Wrong ones: positional
  AdamW(params, LR, 0.01) raises TypeError ('float' object is not subscriptable: 0.01 taken as
  betas); y.view(-1) raises RuntimeError (view size is not compatible: targets are
  window[:, 1:]); no generator gives other losses on every text (5.5285 against 5.5185 at step
  1 on the corpus; varies from call to call); T.split's first 90% gives 5.5159 against 5.5185
  (step 1, corpus) and differs on every text; the 8x-fewer-steps loop raises RuntimeError
  (stack expects a non-empty TensorList) for 1-4 steps and returns 2 losses for 16 steps;
  ord() tokens equal the reference on the two ASCII texts but give 5.5008 against 5.5109 on
  the non-ASCII one and raise IndexError (index out of range in self) on corpus[:8000] with an
  em dash before every newline.
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
    names = collections.Counter(e.name for e in events)
    n_steps = STEPS

    def under_optimizer(e):
        p = e.cpu_parent
        while p is not None:
            if p.name.startswith("Optimizer.step"):
                return True
            p = p.cpu_parent
        return False

    found = set()
    if any(n.endswith("_SingleProcessDataLoaderIter.__next__") for n in names):
        found.add("loader")
    step_spans = [e.time_range for e in events if e.name == "Optimizer.step#AdamW.step"]
    HOST_SYNC
    if FP32:
        found.add("fp32")
    index_batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if index_batches and min(index_batches) < capstone_profile.BATCH // 2:
        found.add("small_batch")
    if not any(n.startswith(("aten::_foreach_", "aten::_fused_adam")) for n in names):
        found.add("optimizer_loop")
    if RECOMPUTE:
        found.add("recompute")  # the blocks' forward ran again during the backward pass
    return found
"""
)

_STEPS = 'names["Optimizer.step#AdamW.step"]'
_HOST_SYNC = """if step_spans:
        first = min(span.start for span in step_spans)
        reads = [
            e for e in events
            if e.name == "aten::item" and READ_FILTER and e.time_range.start > first
        ]
        if n_steps and len(reads) >= n_steps:
            found.add("host_sync")"""
_READ_FILTER = "not under_optimizer(e)"
_FP32 = 'any(e.name == "aten::addmm" and "float" in e.input_dtypes[:3] for e in events)'
_RECOMPUTE = 'names["aten::gelu"] > names["aten::gelu_backward"]'


def _diag(
    steps=_STEPS,
    host_sync=_HOST_SYNC,
    read_filter=_READ_FILTER,
    fp32=_FP32,
    recompute=_RECOMPUTE,
    tail="",
):
    source = (
        _DIAG.replace("STEPS", steps)
        .replace("HOST_SYNC", host_sync)
        .replace("READ_FILTER", read_filter)
        .replace("FP32", fp32)
        .replace("RECOMPUTE", recompute)
    )
    return source + tail


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
        name="diag_right_gelu_vs_backward",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_diag(),
    ),
    Blind(
        name="diag_right_key_averages_per_step",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def diagnose(prof):
    rows = {row.key: row.count for row in prof.key_averages()}
    # one loss per forward pass, one forward pass per training step
    steps = rows.get("aten::cross_entropy_loss", 0)
    result = set()
    if steps == 0:
        return result

    loader_rows = [k for k in rows if "DataLoader" in k and "SingleProcess" in k]
    if loader_rows:
        result.add("loader")

    events = prof.events()
    optimizer_items = 0
    for e in events:
        if e.name != "aten::item":
            continue
        parent = e.cpu_parent
        while parent is not None and not parent.name.startswith("Optimizer.step"):
            parent = parent.cpu_parent
        if parent is not None:
            optimizer_items += 1
    loss_reads = [
        e for e in events
        if e.name == "aten::item" and e.cpu_parent is None
        and e.time_range.start > min(
            x.time_range.start for x in events if x.name.startswith("Optimizer.step")
        )
    ]
    if len(loss_reads) / steps >= 1:
        result.add("host_sync")

    matmul_types = set()
    for e in events:
        if e.name in ("aten::addmm", "aten::mm"):
            matmul_types.update(d for d in e.input_dtypes if d != "Scalar")
    if "float" in matmul_types:
        result.add("fp32")

    shaped = prof.key_averages(group_by_input_shape=True)
    windows = [
        row.input_shapes[1][0]
        for row in shaped
        if row.key == "aten::embedding" and len(row.input_shapes[1]) == 2
    ]
    if windows and max(windows) <= 4:
        result.add("small_batch")

    if not any("_foreach_" in k or "_fused_" in k for k in rows):
        result.add("optimizer_loop")

    # softmax (attention) lives inside the blocks: a recomputed block runs it twice
    if rows.get("aten::_softmax", 0) > rows.get("aten::_softmax_backward_data", 0):
        result.add("recompute")
    return result
""",
    ),
    Blind(
        name="diag_right_per_step_counts",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def diagnose(prof):
    evs = list(prof.events())
    tally = collections.Counter(ev.name for ev in evs)
    n = tally["Optimizer.step#AdamW.step"]
    issues = []

    def in_step(ev):
        while ev.cpu_parent is not None:
            ev = ev.cpu_parent
            if "Optimizer.step" in ev.name:
                return True
        return False

    if tally["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        issues.append("loader")
    step_ends = sorted(ev.time_range.end for ev in evs if ev.name == "Optimizer.step#AdamW.step")
    if step_ends:
        # a loss read back after each step's update, before the next step
        after_update = [
            ev for ev in evs
            if ev.name == "aten::item" and not in_step(ev) and ev.time_range.start >= step_ends[0]
        ]
        if len(after_update) >= n:
            issues.append("host_sync")
    addmm_dtypes = [ev.input_dtypes[1] for ev in evs if ev.name == "aten::addmm"]
    if addmm_dtypes.count("float") > 0:
        issues.append("fp32")
    for ev in evs:
        if ev.name == "aten::embedding" and len(ev.input_shapes[1]) == 2:
            if ev.input_shapes[1][0] * 4 < capstone_profile.BATCH:
                issues.append("small_batch")
            break
    foreach_ops = [name for name in tally if name.startswith("aten::_foreach")]
    fused_ops = [name for name in tally if "fused_adam" in name]
    if not foreach_ops and not fused_ops:
        issues.append("optimizer_loop")
    # per step: 2 layer norms in each of the 2 blocks, plus the final one
    if n and tally["aten::native_layer_norm"] / n > 5:
        issues.append("recompute")
    return set(issues)
""",
    ),
    Blind(
        name="diag_host_sync_window_wants_every_step",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It counts the .item() calls between the start of the first Optimizer.step and the "
            "end of the last one and wants one per step, but each step reads its loss after its "
            "optimizer step, so the last step's read falls after the window and only steps - 1 "
            "lie inside it: host_sync is never flagged (the window holds steps - 1 reads, or "
            "count from the first step to the end of the profile)."
        ),
        source=_diag(
            host_sync="""if step_spans:
        first = min(span.start for span in step_spans)
        last = max(span.end for span in step_spans)
        reads = [
            e for e in events
            if e.name == "aten::item" and not under_optimizer(e)
            and first <= e.time_range.start <= last
        ]
        if n_steps and len(reads) >= n_steps:
            found.add("host_sync")"""
        ),
        hints=('"host_sync" is there',),
    ),
    Blind(
        name="diag_steps_from_layer_norm_count",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It counts the steps as the layer-norm forwards divided by 5 (five per forward "
            "pass), but a script that recomputes its blocks runs 9 per step, so it counts more "
            "steps than there were and misses host_sync whenever recompute is planted too: count "
            "the steps by Optimizer.step events."
        ),
        source=_diag(steps='names["aten::native_layer_norm"] // 5'),
        hints=('"host_sync" is there',),
    ),
    Blind(
        name="diag_item_parent_name_of_none",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It tests e.cpu_parent.name for every aten::item, but a call made at the top level "
            "(the loss read in the loop, a DataLoader drawing its seed) has cpu_parent None, so "
            "it raises AttributeError on every profile with such a call: check that cpu_parent "
            "is not None (or walk the parents) before reading its name."
        ),
        source=_diag(read_filter='e.cpu_parent.name != "Optimizer.step#AdamW.step"'),
        hints=("is None",),
    ),
    Blind(
        name="diag_host_sync_cuda_sync_event",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It looks for CUDA runtime synchronisation events (cudaStreamSynchronize, "
            "cudaDeviceSynchronize), which a profile taken on the CPU never records, so "
            "host_sync is never flagged where the check runs: count the .item() calls outside "
            "Optimizer.step, at least one per step."
        ),
        source=_diag(
            host_sync="""sync_calls = [
        e for e in events
        if e.name in ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaMemcpy")
    ]
    if sync_calls:
        found.add("host_sync")"""
        ),
        hints=('"host_sync" is there',),
    ),
    Blind(
        name="diag_fp32_reads_last_dtype",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It reads the last entry of aten::addmm's input_dtypes as the weight's dtype, but "
            "addmm's inputs are (bias, input, weight, beta, alpha) and the last is the Scalar "
            "alpha, so it is never 'float' and fp32 is never flagged: read the dtypes of the "
            "first three inputs (the tensors)."
        ),
        source=_diag(
            fp32='any(e.name == "aten::addmm" and e.input_dtypes[-1] == "float" for e in events)'
        ),
        hints=('"fp32" is there',),
    ),
    Blind(
        name="diag_recompute_forgets_final_layer_norm",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It expects 4 layer-norm forwards per step (2 in each of the 2 blocks) and flags "
            "recompute above that, but the model's final layer norm (ln_f) makes 5 per step in "
            "a sound script, so every script is flagged recompute: compare the forwards with "
            "their backward calls (or expect 5 per step)."
        ),
        source=_diag(recompute='names["aten::native_layer_norm"] > 4 * n_steps'),
        hints=('not "recompute"',),
    ),
    Blind(
        name="diag_returns_joined_string",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It returns the names joined into one string (', '.join(sorted(found))), as it "
            "would print them, instead of the set of names, so what it returns is text whose "
            "items are characters, not problem names: return the set itself."
        ),
        source=_diag().replace("    return found\n", '    return ", ".join(sorted(found))\n'),
        hints=("return a set",),
    ),
    # ---------------- capstone_profile_fix ----------------
    Blind(
        name="fix_right_defaults_and_zero_grad_first",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def fixed_train(text, steps):
    dev = capstone_profile.device()
    net = capstone_profile.build_model().to(dev)
    # AdamW's default weight decay is the script's 0.01; foreach asked for explicitly
    opt = torch.optim.AdamW(net.parameters(), lr=capstone_profile.LR, foreach=True)
    tokens = T.encode(text)
    rng = torch.Generator()
    rng.manual_seed(0)
    step_losses = []
    for _ in range(steps):
        net.zero_grad(set_to_none=True)
        inputs, targets = T.get_batch(
            tokens, batch_size=capstone_profile.BATCH, seq_len=capstone_profile.SEQ_LEN,
            generator=rng,
        )
        inputs, targets = inputs.to(dev), targets.to(dev)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
            logits, loss = net(inputs, targets)
        loss.backward()
        opt.step()
        step_losses.append(loss.detach())
    return [value.item() for value in step_losses]
""",
    ),
    Blind(
        name="fix_right_bigger_batch_own_bytes",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
BIG = 2 * capstone_profile.BATCH  # at least BATCH windows: more tokens per step


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR,
        weight_decay=capstone_profile.WEIGHT_DECAY, foreach=True,
    )
    data = torch.tensor(list(text.encode("utf-8")), dtype=torch.long)  # once, up front
    gen = torch.Generator().manual_seed(0)
    kept = []
    step = 0
    while step < steps:
        x, y = T.get_batch(data, BIG, capstone_profile.SEQ_LEN, gen)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = model(x.to(device), y.to(device))[1]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        kept.append(loss.detach())
        step += 1
    return torch.stack(kept).cpu().tolist()
""",
    ),
    Blind(
        name="fix_adamw_positional_weight_decay",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It passes the weight decay positionally, AdamW(params, LR, 0.01), but AdamW's third "
            "positional parameter is betas, not weight_decay, so 0.01 becomes betas and the "
            "optimizer fails (a float cannot be indexed as a pair): pass weight_decay=0.01 by "
            "name."
        ),
        source=_fix(
            (
                """torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )""",
                "torch.optim.AdamW(model.parameters(), capstone_profile.LR, 0.01, foreach=True)",
            )
        ),
        hints=("becomes `betas`",),
    ),
    Blind(
        name="fix_own_loss_views_sliced_targets",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It computes the loss itself with y.view(-1), but get_batch's targets are a slice "
            "of the windows (window[:, 1:]), not contiguous, so view raises a RuntimeError: "
            "use reshape or flatten, or let the model compute the loss with model(x, y)."
        ),
        source=_fix(
            (
                "            _, loss = model(x, y)",
                """            logits, _ = model(x)
            loss = torch.nn.functional.cross_entropy(
                logits.view(-1, logits.size(-1)).float(), y.view(-1)
            )""",
            )
        ),
        hints=(".reshape(-1)",),
    ),
    Blind(
        name="fix_get_batch_without_generator",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It calls T.get_batch without the generator seeded with 0, so the windows come from "
            "torch's global random state: they differ from the script's (and from call to "
            "call), so the losses are not the script's: pass the seeded generator."
        ),
        source=_fix(
            (
                "T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)",
                "T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN)",
            ),
            ("    generator = torch.Generator().manual_seed(0)\n", ""),
        ),
        hints=("manual_seed(0)",),
    ),
    Blind(
        name="fix_trains_on_train_split",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It keeps back a validation tenth with T.split and draws its windows from the first "
            "90% of the tokens only, but the script draws them from the whole text, so the "
            "windows (and the losses) are not the script's: draw batches from T.encode(text) "
            "itself."
        ),
        source=_fix(
            ("    data = T.encode(text)\n", "    data, held_out = T.split(T.encode(text))\n"),
        ),
        hints=("first 90%",),
    ),
    Blind(
        name="fix_fewer_steps_same_tokens",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It runs steps * SMALL_BATCH // BATCH steps (8 times fewer) to see as many tokens "
            "as the small-batch script, but fixed_train must run the steps it is asked for and "
            "return one loss each: for fewer than 8 steps it trains none and torch.stack of the "
            "empty list raises, and for more it returns 8 times too few losses."
        ),
        source=_fix(
            (
                "    for step in range(steps):",
                "    # 8x the batch: 8x fewer steps for the same tokens\n"
                "    for step in range(steps * capstone_profile.SMALL_BATCH // capstone_profile.BATCH):",
            )
        ),
        hints=("exactly `steps` optimizer steps",),
    ),
    Blind(
        name="fix_tokenises_with_ord",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It tokenises with ord() of each character, one code point per character, which is "
            "the UTF-8 bytes only for ASCII text: any non-ASCII character gives a different "
            "token sequence (other windows, other losses), and one above 255 (an em dash, 8212) "
            "is outside the 256-entry embedding, which raises IndexError when a window holds "
            "it: use T.encode(text)."
        ),
        source=_fix(
            (
                "    data = T.encode(text)\n",
                "    data = torch.tensor([ord(ch) for ch in text])  # once, before the loop\n",
            )
        ),
        hints=("UTF-8 bytes",),
    ),
]
