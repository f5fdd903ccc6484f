"""Blind held-out answers, round lab11_profile_r10, to lab 11's "Profile first" part
(exercises capstone_profile_diagnose and capstone_profile_fix).

Written 2026-11-29 (12:08-12:25 UTC) by a helper session that never opened the checker
(gpu_utils/exercises/), no tests/test_*.py, no report.py, no FAQ, never ran a check cell and
never imported gpu_utils.exercises. Of tests/heldout/ it read __init__.py and the start of
lab11_profile_r9.py for the format (its docstring and the shared templates above its list;
not its ANSWERS). Read: labs/ and solutions/11_training_in_practice_lab.ipynb (the "Profile
first" cells 32-44 and make_loader, cell 8), gpu_utils/many_gpus/capstone_profile.py,
gpu_utils/many_gpus/gpt.py (GPT.forward, build) and training.py (encode, get_batch,
WindowDataset, SlowTokenizingDataset, forward_checkpointed), and
/tmp/blind/causes_lab11_profile.txt: every wrong answer here is of a kind not listed there.
5 right answers (2 diagnose, 3 fixed_train), 12 wrong ones (6 and 6), all half="held2".

Verification (GPU_COURSE_MODE=simulator, CPU, torch 2.13.0+cpu, no GPU lent to this task;
scratch /tmp/lab11_profile_r10/explore.py, verify.py, verify2.py, verify3.py, run from tests/;
each answer loaded with heldout.submitted; the reference is the solution's cells 37 and 41
exec'd as they stand):
- explore.py (3-step profiles unless said): aten::item has Optimizer.step#AdamW.step as its
  direct parent 168 times (foreach) or 84 (loop) per 3 steps, and cpu_parent None for the loss
  reads and a DataLoader's one seed read; gelu/gelu_backward 6/6 sound, 12/6 recomputing;
  native_layer_norm 15 (3 steps), 20 (4 steps), 27 (3 steps, recompute); the embeddings' index
  shapes are [16, 32] or [2, 32] (tokens) and [32] (positions); addmm, mm and bmm dtypes are
  'c10::BFloat16' under autocast and 'float' without; bmm's first axis is batch x heads.
- diagnose: capstone_profile.profile of 17 scripts: sound with a 2-worker DataLoader (3 and 1
  steps) and with get_batch (3 and 4 steps), all six (3), host_sync alone (2 steps; 3 with
  2 workers), small_batch alone (4), fp32+recompute (3), recompute alone (1), host_sync+loader
  (4), planted(seed) for seeds 0, 1, 7 and their complements with 2 workers (3). The reference
  returned exactly the planted kinds on all 17. Both right answers agree with it on all 17.
  Wrong: found = {} raises AttributeError ('dict' object has no attribute 'add') on the 13
  profiles with a problem (and returns an empty dict, not a set, on the 4 sound ones);
  unpacking every embedding's index raises ValueError (not enough values to unpack) on all 17;
  {'none'} is returned on the 4 sound profiles; the hard-coded 15 flags recompute on the three
  4-step profiles without it and misses it on the 1-step recompute profile (agrees on the
  3-step ones); dividing tokens by 64 flags small_batch on all 12 profiles without it; the
  missing worker-DataLoader rule flags loader on all 7 get_batch profiles without it (right
  on the worker and loader ones).
- fixed_train: texts T.corpus(), corpus[20000:40000] and corpus[:3000] + " café — naïve × " +
  corpus[3000:6000], 1 and 3 steps, against the solution's fixed_train; then 12 steps on the
  corpus, capstone_profile.tokens_per_step, and the reference diagnose of a 3-step profile on
  corpus[:20000]. Right: the default-decay answer and the concatenated-draws answer return
  lists of Python floats equal to the reference (max difference 0.0 on all six inputs and at
  12 steps); the batch-32 answer (other seed, own loss) returns lists of floats that differ
  only by its other windows (0.0004-0.045), learns as much (12-step tail 4.31 vs 4.29),
  tokens_per_step 1024; all three: tokens_per_step >= 512 and an empty diagnosis. Wrong:
  generator=0 raises TypeError (randint() received an invalid combination of arguments) on
  every input; model.parameters unwrapped raises TypeError ('method' object is not iterable)
  on every input; the unshuffled loader gives other losses from step 1 on every text, by 0.02-0.05
  (5.5556 for 5.5185 on the corpus, and the same 5.5556 on the non-ASCII text, whose first
  3000 characters are the corpus's: both train on the text's first windows), and learns less
  (60-step tail 3.92 vs 3.26), with 512 tokens/step and an empty diagnosis; whitespace collapsing differs on every text by 0.005-0.024 (5.5286 for 5.5185)
  and equals the reference exactly on a text already collapsed (right on easy inputs);
  shuffled tokens differ on every text by 0.01-0.025 (60-step tail 3.37 vs 3.26; at 200 steps it stays at 3.38, the bytes' unigram level, while the reference reaches 2.80);
  the last-position loss differs by 0.05-0.21 and learns less (60-step tail 3.55 vs 3.26).
  Dropped before verifying, as a CPU cannot show them: .cpu() of each loss inside the loop (a
  no-op on the CPU) and autocast without dtype= (bfloat16 on the CPU, float16 on CUDA).
"""

from heldout import Blind

_D = "capstone_profile_diagnose"
_F = "capstone_profile_fix"

_HEAD = """
import collections

import torch
import torch.nn.functional as F
from gpu_utils import capstone_profile
from gpu_utils import training as T
"""

# ---------------------------------------------------------------- diagnose
# A sound diagnose with rules of its own (top-level reads after the first forward, gelu against
# its backward); each wrong answer below changes exactly one piece of it.
_DIAG = (
    _HEAD
    + """
def diagnose(prof):
    events = prof.events()
    names = collections.Counter(e.name for e in events)
    n_steps = names["Optimizer.step#AdamW.step"]
    @FOUND@
    @LOADER@
    # a read of the loss is a top-level aten::item (AdamW's own reads run inside its step);
    # a DataLoader's seed is read before the first forward pass, so it is left out
    first_forward = min(e.time_range.start for e in events if e.name == "aten::embedding")
    reads = [
        e for e in events
        if e.name == "aten::item" and e.cpu_parent is None and e.time_range.start > first_forward
    ]
    if n_steps and len(reads) >= n_steps:
        found.add("host_sync")
    if any(e.name in ("aten::addmm", "aten::mm") and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    @SMALL@
    if not any(n.startswith(("aten::_foreach_", "aten::_fused_adam")) for n in names):
        found.add("optimizer_loop")
    @RECOMPUTE@
    @RETURN@
"""
)

_FOUND = "found = set()"
_LOADER = """if any("_SingleProcessDataLoaderIter" in e.name for e in events):
        found.add("loader")  # batches made in the training process"""
_SMALL = """windows = []
    for e in events:
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2:
            windows.append(e.input_shapes[1][0])  # token ids: (batch, seq)
    if windows and min(windows) < capstone_profile.BATCH // 2:
        found.add("small_batch")"""
_RECOMPUTE = """if names["aten::gelu"] > names["aten::gelu_backward"]:
        found.add("recompute")  # block forwards run again in the backward pass"""
_RETURN = "return found"


def _diag(found=_FOUND, loader=_LOADER, small=_SMALL, recompute=_RECOMPUTE, ret=_RETURN):
    return (
        _DIAG.replace("@FOUND@", found)
        .replace("@LOADER@", loader)
        .replace("@SMALL@", small)
        .replace("@RECOMPUTE@", recompute)
        .replace("@RETURN@", ret)
    )


# ---------------------------------------------------------------- fixed_train
# The script with all six problems fixed, written close to the printout; each wrong answer
# below changes exactly one piece of it.
_FIX = (
    _HEAD
    + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        @PARAMS@, lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    @DATA@
    losses = []
    for step in range(steps):
        @BATCH@
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            @FORWARD@
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
"""
)
_PARAMS = "model.parameters()"
_DATA = """data = T.encode(text)  # tokenised once
    generator = torch.Generator().manual_seed(0)"""
_BATCH = "x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)"
_FORWARD = "_, loss = model(x, y)"


def _fix(params=_PARAMS, data=_DATA, batch=_BATCH, forward=_FORWARD):
    return (
        _FIX.replace("@PARAMS@", params)
        .replace("@DATA@", data)
        .replace("@BATCH@", batch)
        .replace("@FORWARD@", forward)
    )


ANSWERS = [
    # ============================================================ diagnose: right
    Blind(
        name="r10_diag_toplevel_reads_gelu",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_diag(),
    ),
    Blind(
        name="r10_diag_key_averages_per_step",
        exercise_id=_D,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def blocks_per_step():
    return capstone_profile.MODEL["n_layers"]


def diagnose(prof):
    # per-operator rows, split by input shape, so the embedding's batch can be read off a row
    rows = prof.key_averages(group_by_input_shape=True)
    calls = collections.defaultdict(int)
    for row in rows:
        calls[row.key] += row.count
    steps = calls["Optimizer.step#AdamW.step"]
    problems = []
    if any(k.endswith("_SingleProcessDataLoaderIter.__next__") for k in calls):
        problems.append("loader")
    # .item() outside the optimizer, counted per step; a loader's one seed read is not per step
    outside = 0
    for e in prof.events():
        if e.name != "aten::item":
            continue
        parent, in_opt = e.cpu_parent, False
        while parent is not None:
            in_opt = in_opt or parent.name.startswith("Optimizer.step")
            parent = parent.cpu_parent
        outside += not in_opt
    if steps > 1 and outside >= steps:
        problems.append("host_sync")
    matmul_dtypes = {d for e in prof.events() if e.name == "aten::bmm" for d in e.input_dtypes}
    if "float" in matmul_dtypes:
        problems.append("fp32")
    token_rows = [r for r in rows if r.key == "aten::embedding" and len(r.input_shapes[1]) == 2]
    if token_rows and min(r.input_shapes[1][0] for r in token_rows) <= 4:
        problems.append("small_batch")
    if not any("_foreach_" in k or "fused_adam" in k for k in calls):
        problems.append("optimizer_loop")
    if steps and calls["aten::gelu"] > blocks_per_step() * steps:
        problems.append("recompute")
    return frozenset(problems)
""",
    ),
    # ============================================================ diagnose: wrong
    Blind(
        name="r10_diag_found_is_dict",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It starts the result with found = {}, which is an empty dict, not a set, so the "
            "first found.add(...) raises AttributeError ('dict' object has no attribute 'add'): "
            "start with found = set()."
        ),
        source=_diag(found="found = {}"),
        hints=("set()",),
    ),
    Blind(
        name="r10_diag_unpack_every_embedding",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It unpacks every aten::embedding's index shape as (batch, seq), but the position "
            "embedding's index is 1-D ([32], the positions), so the unpacking raises ValueError "
            "on every profile: keep only the 2-D token index (batch, seq)."
        ),
        source=_diag(
            small="""windows = []
    for e in events:
        if e.name == "aten::embedding":
            batch, seq = e.input_shapes[1]
            windows.append(batch)
    if windows and min(windows) < capstone_profile.BATCH // 2:
        found.add("small_batch")"""
        ),
        hints=("1 item, unpacked into 2 names",),
    ),
    Blind(
        name="r10_diag_none_marker",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "When it finds nothing it returns {'none'}, a name that is not one of the six kinds, "
            "so a sound script is given a problem it does not have: return the empty set."
        ),
        source=_diag(ret='return found or {"none"}'),
    ),
    Blind(
        name="r10_diag_recompute_hardcoded_steps",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It flags recompute above 15 layer-norm forwards, the count of its own 3-step "
            "profile, so the threshold does not scale with the number of steps: a sound profile "
            "of 4 steps (20 forwards) is flagged and a recomputing one of 1 step (9) is missed: "
            "compare with the backward count (or 5 per Optimizer.step)."
        ),
        source=_diag(
            recompute="""if names["aten::native_layer_norm"] > 15:  # 5 per step in my profile
        found.add("recompute")"""
        ),
        hints=('not "recompute"',),
    ),
    Blind(
        name="r10_diag_tokens_over_default_context",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It turns the embedded tokens into windows by dividing by 64, gu.gpt's default "
            "context, instead of capstone_profile.SEQ_LEN (32), so the sound batch of 16 windows "
            "reads as 8, below BATCH, and every script is flagged small_batch."
        ),
        source=_diag(
            small="""windows = []
    for e in events:
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2:
            tokens = e.input_shapes[1][0] * e.input_shapes[1][1]
            windows.append(tokens // 64)  # tokens per window (the GPT's context)
    if windows and min(windows) < capstone_profile.BATCH:
        found.add("small_batch")"""
        ),
    ),
    Blind(
        name="r10_diag_loader_no_workers",
        exercise_id=_D,
        half="held2",
        correct=False,
        cause=(
            "It takes the absence of a worker DataLoader (_MultiProcessingDataLoaderIter) as the "
            "loader problem, but a script that tokenises the text once with T.encode and cuts "
            "batches with T.get_batch has no DataLoader at all and is sound, so it is flagged "
            "loader: the sign is _SingleProcessDataLoaderIter.__next__ in the training process."
        ),
        source=_diag(
            loader="""if not any("_MultiProcessingDataLoaderIter" in e.name for e in events):
        found.add("loader")  # the sound way loads with worker processes"""
        ),
    ),
    # ============================================================ fixed_train: right
    Blind(
        name="r10_fix_default_decay_model_zero_grad",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def fixed_train(text, steps):
    dev = capstone_profile.device()
    net = capstone_profile.build_model().to(dev)
    net.train()
    # AdamW's default weight decay is already 0.01, the script's value
    opt = torch.optim.AdamW(net.parameters(), lr=capstone_profile.LR, foreach=True)
    tokens = T.encode(text)
    rng = torch.Generator()
    rng.manual_seed(0)
    kept = []
    step = 0
    while step < steps:
        inputs, targets = T.get_batch(tokens, capstone_profile.BATCH, capstone_profile.SEQ_LEN, rng)
        inputs, targets = inputs.to(dev), targets.to(dev)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
            _, loss = net(inputs, targets)
        loss.backward()
        opt.step()
        net.zero_grad(set_to_none=True)
        kept.append(loss.detach())
        step += 1
    return [float(v) for v in kept]  # read back once the loop is over
""",
    ),
    Blind(
        name="r10_fix_batch32_own_loss",
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
    data = T.encode(text).to(device)  # tokenised once, kept where the model is
    generator = torch.Generator().manual_seed(1234)
    batch = 2 * capstone_profile.BATCH  # larger than needed is fine; the rate stays LR
    losses = []
    for _ in range(steps):
        x, y = T.get_batch(data, batch, capstone_profile.SEQ_LEN, generator)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits, _ = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses).cpu().tolist()
""",
    ),
    Blind(
        name="r10_fix_concat_small_draws",
        exercise_id=_F,
        half="held2",
        correct=True,
        source=_HEAD
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, fused=True
    )
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    draws = capstone_profile.BATCH // capstone_profile.SMALL_BATCH
    losses = []
    for step in range(steps):
        # the script's small draws, put together into one batch of BATCH windows
        pairs = [
            T.get_batch(data, capstone_profile.SMALL_BATCH, capstone_profile.SEQ_LEN, generator)
            for _ in range(draws)
        ]
        x = torch.cat([p[0] for p in pairs]).to(device)
        y = torch.cat([p[1] for p in pairs]).to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    # ============================================================ fixed_train: wrong
    Blind(
        name="r10_fix_seed_as_generator",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It passes the seed 0 itself as get_batch's generator, but torch.randint wants a "
            "torch.Generator, so the first draw raises TypeError: make "
            "torch.Generator().manual_seed(0) once, before the loop, and pass that."
        ),
        source=_fix(
            data="data = T.encode(text)  # tokenised once",
            batch="x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, 0)",
        ),
        hints=("torch.Generator().manual_seed(0)",),
    ),
    Blind(
        name="r10_fix_loader_no_shuffle",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "Its worker DataLoader over T.WindowDataset has no shuffle=True (nor a seeded "
            "generator), so it feeds the windows in order, starting at bytes 0, 1, 2, ... (16 "
            "overlapping windows a step, from the start of the text) instead of windows drawn "
            "at random by a seeded generator: pass shuffle=True, "
            "generator=torch.Generator().manual_seed(0)."
        ),
        source=_fix(
            data="""loader = torch.utils.data.DataLoader(
        T.WindowDataset(T.encode(text), capstone_profile.SEQ_LEN),
        batch_size=capstone_profile.BATCH,
        num_workers=2,
    )
    batches = iter(loader)""",
            batch="x, y = next(batches)",
        ),
        hints=("consecutive tokens",),
    ),
    Blind(
        name="r10_fix_collapse_whitespace",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It cleans the text with ' '.join(text.split()) before T.encode, which turns every "
            "newline and run of spaces into one space, so it trains on other bytes than the "
            "text's (on any text with newlines or double spaces): encode the text as it is."
        ),
        source=_fix(
            data="""data = T.encode(" ".join(text.split()))  # tokenised once, whitespace tidied
    generator = torch.Generator().manual_seed(0)"""
        ),
        hints=("whitespace collapsed",),
    ),
    Blind(
        name="r10_fix_shuffle_tokens",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It shuffles the tokens themselves (data[torch.randperm(len(data))]) before cutting "
            "windows, so a window is a random bag of bytes from all over the text, not text, and "
            "the next byte cannot be predicted from the ones before it: keep the tokens in order "
            "and draw random window starts (T.get_batch)."
        ),
        source=_fix(
            data="""generator = torch.Generator().manual_seed(0)
    data = T.encode(text)
    data = data[torch.randperm(len(data), generator=generator)]  # shuffled once, seeded"""
        ),
        hints=("not in `T.encode(text)`",),
    ),
    Blind(
        name="r10_fix_parameters_not_called",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It gives AdamW model.parameters without calling it (the bound method, not the "
            "parameters), so building the optimizer raises TypeError: pass model.parameters()."
        ),
        source=_fix(params="model.parameters"),
        hints=("model.parameters()",),
    ),
    Blind(
        name="r10_fix_last_position_loss",
        exercise_id=_F,
        half="held2",
        correct=False,
        cause=(
            "It computes its own loss on the last position of each window only "
            "(logits[:, -1] against y[:, -1]), as when generating, so 1 of the 32 positions of "
            "each window is trained and the losses are not the script's mean over every token: "
            "use model(x, y) (or the cross-entropy over all positions)."
        ),
        source=_fix(
            forward="""logits, _ = model(x)
            loss = F.cross_entropy(logits[:, -1].float(), y[:, -1])"""
        ),
        hints=("last position",),
    ),
]
