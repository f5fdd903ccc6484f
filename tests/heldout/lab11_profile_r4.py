"""Held-out answers (round 4) to lab 11's "Profile first" part: capstone_profile_diagnose and
capstone_profile_fix.

Written blind on 2026-11-28 (23:30-00:20 UTC) by a helper session that never read the lab's
checker (nothing under gpu_utils/exercises/ nor tests/ but tests/heldout/__init__.py), from the
learner's copy labs/11_training_in_practice_lab.ipynb, the reference solution cells in
solutions/11_training_in_practice_lab.ipynb, gpu_utils/many_gpus/capstone_profile.py, gpu_utils/many_gpus/training.py
and the list of earlier rounds' causes (these answers make different mistakes).

Verified without the checker, by scratch scripts under /tmp/lab11_profile_r4/, each answer taken
through ``heldout.submitted``:

- diagnose (/tmp/lab11_profile_r4/verify_diag.py): every answer and the reference ``diagnose``
  were run on the same profiles (``capstone_profile.profile(script.train, steps=3)``) of eight
  scripts made with ``capstone_profile.script``: the sound script with a 2-worker DataLoader,
  the sound script with ``T.get_batch``, and six with three kinds planted, each kind in at least
  two. Both correct answers returned the reference's set on all eight. Wrong ones differ:
  stack_means_collate adds "loader" on the 3 scripts that stack their losses with a sound
  loader (not on host_sync scripts, which return their list directly), lowercase_float adds
  "fp32" on all 5 autocast scripts, matmul_rows misses "small_batch" on all 3 (rows 64),
  foreach_only_top_level adds "optimizer_loop" on all 5 foreach scripts, ProfilerStep adds
  "host_sync" on all 5 without it, recompute_by_embedding misses "recompute" on all 3 (the
  embedding counts stay 6 and 6), parent_walk had not returned after 20 s.
- fix (/tmp/lab11_profile_r4/verify_fix.py): every answer and the reference ``fixed_train``
  were run for 3 steps (a spy on ``capstone_profile.build_model`` kept the model) and profiled;
  measured: the reference ``diagnose`` of that profile, ``.item()`` calls outside
  Optimizer.step between the first and last step, ``_foreach`` ops per step,
  ``capstone_profile.tokens_per_step``, the returned losses, the weights after 3 steps against
  the reference's and the initial ones, and the mean loss of the first and last 3 of 20 steps.
  Reference: diagnosis empty, 0 reads, 9 foreach ops per step, 512 tokens per step, losses a
  list of floats, 20-step loss 5.36 -> 3.69. Correct answers: diagnosis empty, 0 reads, 512 or
  1024 tokens, a list of 3 floats, 5.36 -> 3.69 to 3.72 (the buffer answer's weights equal the
  reference's exactly; the other two draw other batches). Wrong ones: optimizer_every_step
  weights 1.0e-2 from the reference's after 3 steps (same batches); sqrt_rule lr 5.7x, weights
  5.9e-2 away; progress_print 1 read in the loop; while_without_increment had not returned
  after 60 s; token_ids_in_bf16 raises RuntimeError in the embedding; one_param_group_each
  252 foreach ops per step instead of 9 (same weights); inputs_targets_swapped weights 1.8e-2
  away (same batches), its loss still falls (5.36 -> 3.71); model_rebuilt_in_loop weights
  never move from the initial ones, 20-step loss 5.51 -> 5.51, and no _foreach op runs.
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
    # ------------------------------------------------------------------ fix: correct
    Blind(
        name="fix_worker_loader_fused_batch32",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=True,
        source=_PRELUDE
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, fused=True
    )
    # tokenised once; worker processes cut the windows, as in chapter 11
    loader = torch.utils.data.DataLoader(
        T.WindowDataset(T.encode(text), capstone_profile.SEQ_LEN),
        batch_size=2 * capstone_profile.BATCH,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
        num_workers=2,
    )
    losses = []
    for _, (x, y) in zip(range(steps), loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(x.device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
    # read back once, after the loop
    return [float(value) for value in torch.stack(losses).cpu()]
""",
    ),
    Blind(
        name="fix_preallocated_loss_buffer",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=True,
        source=_PRELUDE
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text).to(device)  # tokenised once, kept where the model is
    generator = torch.Generator().manual_seed(0)
    bf16 = torch.autocast(device.type, dtype=torch.bfloat16)
    losses = torch.zeros(steps, device=device)
    for step in range(steps):
        starts = torch.randint(len(data) - capstone_profile.SEQ_LEN, (capstone_profile.BATCH,),
                               generator=generator).to(device)
        index = starts[:, None] + torch.arange(capstone_profile.SEQ_LEN + 1, device=device)
        window = data[index]
        x, y = window[:, :-1], window[:, 1:]
        optimizer.zero_grad(set_to_none=True)
        with bf16:
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        losses[step] = loss.detach()
    return losses.tolist()
""",
    ),
    Blind(
        name="fix_two_full_micro_batches",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=True,
        source=_PRELUDE
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    k = 2  # two micro-batches of BATCH windows each: 32 windows per optimizer step
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, k * capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        total = torch.zeros((), device=device)
        for xs, ys in zip(x.chunk(k), y.chunk(k)):
            with torch.autocast(device.type, dtype=torch.bfloat16):
                _, loss = model(xs, ys)
            (loss / k).backward()
            total += loss.detach() / k
        optimizer.step()
        optimizer.zero_grad()
        losses.append(total)
    return torch.stack(losses).tolist()
""",
    ),
    # ------------------------------------------------------------------ fix: wrong
    Blind(
        name="fix_optimizer_made_every_step",
        hints=("different optimizers",),
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause=(
            "It creates the AdamW optimizer inside the loop, so its moment estimates and step "
            "count start afresh every step and each update is a bias-corrected first step "
            "(about lr times the sign of the gradient), not the script's AdamW: create it once, "
            "before the loop."
        ),
        source=_PRELUDE
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
        )
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
        name="fix_sqrt_rule_learning_rate",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause=(
            "It raises the learning rate by the square-root rule for its larger batch "
            "(sqrt(64 / 2) = 5.7 times capstone_profile.LR), but the fix must keep "
            "capstone_profile.LR, so it trains with a different rate from the script's."
        ),
        source=_PRELUDE
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    batch = 64
    lr = capstone_profile.LR * (batch / 2) ** 0.5  # square-root rule: the batch grew from 2
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, foreach=True)
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, batch, capstone_profile.SEQ_LEN, generator)
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
        name="fix_progress_print",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause=(
            "It prints the loss tensor every 10 steps for progress, and formatting a tensor "
            "reads its value back to the host: a host synchronisation inside the loop; print "
            "the losses after the loop."
        ),
        source=_PRELUDE
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
        if step % 10 == 0:
            print(f"step {step}: loss {loss.detach()}")
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="fix_while_without_increment",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause=(
            "Its while loop tests step < steps but never increments step, so the loop never "
            "ends: add step += 1 (or use for step in range(steps))."
        ),
        source=_PRELUDE
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
    step = 0
    while step < steps:
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
        name="fix_token_ids_in_bf16",
        hints=("must stay integers",),
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause=(
            "It converts the batch's token ids to bfloat16 for mixed precision, but they are "
            "indices into the embedding, which must stay int64, so the forward fails: leave x "
            "and y as they are and let torch.autocast choose the matmuls' dtype."
        ),
        source=_PRELUDE
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
        x, y = x.to(device, torch.bfloat16), y.to(device)
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
        name="fix_one_param_group_each",
        hints=("parameter groups of one tensor",),
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause=(
            "It gives every parameter its own param group, and AdamW runs its foreach "
            "operators once per group, so with one tensor per group it still steps one "
            "parameter at a time: pass model.parameters() as one group."
        ),
        source=_PRELUDE
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    groups = [{"params": [p]} for p in model.parameters()]  # room for per-layer settings later
    optimizer = torch.optim.AdamW(
        groups, lr=capstone_profile.LR, weight_decay=0.01, foreach=True
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
""",
    ),
    Blind(
        name="fix_inputs_targets_swapped",
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause=(
            "It unpacks the batch as y, x, so the model is trained to predict each byte from "
            "the one after it, a different task from the script's: T.get_batch returns "
            "(inputs, targets)."
        ),
        source=_PRELUDE
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
        y, x = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
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
        name="fix_model_rebuilt_in_loop",
        hints=("not the one your optimizer updates",),
        exercise_id="capstone_profile_fix",
        half="held2",
        correct=False,
        cause=(
            "It builds the model inside the loop, after the optimizer was given the first "
            "model's parameters, so every step runs a fresh untrained model whose gradients the "
            "optimizer never sees, and nothing is learned: build the model once, before the "
            "optimizer."
        ),
        source=_PRELUDE
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
        model = capstone_profile.build_model().to(device)
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
