"""Held-out answers to lab 11's "Profile first" exercises (capstone_profile_diagnose,
capstone_profile_fix), second round, all in the "held2" half.

Written blind on 2026-11-28 by a helper: from the lab text as a learner sees it, chapter 11, the
reference solutions' code cells, the public helpers (``gpu_utils/many_gpus/capstone_profile.py``,
``gpu_utils/many_gpus/training.py``, ``gpu_utils/many_gpus/gpt.py``) and earlier writers' cause sentences only (to
avoid repeating their mistakes); never the checker, its tests or another corpus of answers.

Verified without the checker (2026-11-28), by a scratch script outside the repository that runs
every cell with ``heldout.submitted``. Each ``diagnose`` was called on six profiles
(``capstone_profile.profile(train, steps=3)`` on the corpus's first 50,000 characters) of
``capstone_profile.script`` scripts: {loader, host_sync, fp32}, {small_batch, optimizer_loop,
recompute}, none planted with a 2-worker DataLoader, {optimizer_loop}, {recompute, fp32,
host_sync} and all six; the reference solution's ``diagnose`` returned the planted kinds on all
six, every correct answer did too, and every wrong answer returned something else on at least
one (set_update_with_a_string: characters; subtracts_one_item_per_parameter: host_sync on the
sound foreach script; the others as their causes say). Each ``fixed_train`` ran 8 steps beside
the reference solution with probes: ``.item()``/``bool``/``float`` calls outside
``Optimizer.step``, the dtype every nn.Linear outputs, the parameters' dtype, the optimizer's
class, ``foreach``/``fused`` and weight decay, the model's parameter count,
``capstone_profile.tokens_per_step``, the number and type of losses returned and whether the
loss goes down. The correct answers met every probe (two return the reference's losses exactly,
the batch-32 one its own); each wrong one fails the probe its cause names, or, where no probe
sees it (zero_grad_once_before_the_loop, generator_reseeded_every_step), returns losses that
differ from the reference's on the same batches and seed.
"""

from heldout import Blind

D = "capstone_profile_diagnose"
F = "capstone_profile_fix"

ANSWERS = [
    # ------------------------------------------------------------------ diagnose: correct
    Blind(
        name="addmm_vs_backward_items_outside_step",
        exercise_id=D,
        half="held2",
        correct=True,
        source="""
import collections


def diagnose(prof):
    evs = prof.events()
    n = collections.Counter(ev.name for ev in evs)
    n_steps = max(n["Optimizer.step#AdamW.step"], 1)

    def ancestors(ev):
        names = []
        ev = ev.cpu_parent
        while ev is not None:
            names.append(ev.name)
            ev = ev.cpu_parent
        return names

    result = set()
    # a DataLoader iterating in this very process: items made (tokenised) here
    if any("_SingleProcessDataLoaderIter" in name for name in n):
        result.add("loader")
    # .item() outside the optimizer (AdamW reads its step counters itself)
    outside = [
        ev
        for ev in evs
        if ev.name == "aten::item"
        and not any(a.startswith("Optimizer.step") for a in ancestors(ev))
    ]
    if len(outside) / n_steps >= 1:
        result.add("host_sync")
    matmul_dtypes = {d for ev in evs if ev.name == "aten::addmm" for d in ev.input_dtypes[:3]}
    if "float" in matmul_dtypes:
        result.add("fp32")
    rows = [
        ev.input_shapes[1][0]
        for ev in evs
        if ev.name == "aten::embedding" and len(ev.input_shapes[1]) == 2
    ]
    if rows and max(rows) <= 4:
        result.add("small_batch")
    if not any(name.startswith(("aten::_foreach_", "aten::_fused_")) for name in n):
        result.add("optimizer_loop")
    # every forward addmm has one AddmmBackward0, unless the forward ran again
    if n["aten::addmm"] > n["AddmmBackward0"]:
        result.add("recompute")
    return result
""",
    ),
    Blind(
        name="gelu_pairs_bmm_dtype_per_step",
        exercise_id=D,
        half="held2",
        correct=True,
        source="""
def per_step(counts, name, steps):
    return counts.get(name, 0) / steps


def called_from(event, prefix):
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith(prefix):
            return True
        parent = parent.cpu_parent
    return False


def diagnose(prof):
    counts = {}
    for e in prof.events():
        counts[e.name] = counts.get(e.name, 0) + 1
    steps = counts.get("Optimizer.zero_grad#AdamW.zero_grad", 1)
    out = set()

    single = [k for k in counts if k.endswith("_SingleProcessDataLoaderIter.__next__")]
    if single:
        out.add("loader")

    syncs = sum(
        1
        for e in prof.events()
        if e.name == "aten::item" and not called_from(e, "Optimizer.step")
    )
    if syncs >= steps:
        out.add("host_sync")

    # the attention matmuls: bf16 under autocast, float without it
    bmm = [e for e in prof.events() if e.name == "aten::bmm" and e.input_dtypes]
    if any(e.input_dtypes[0] == "float" for e in bmm):
        out.add("fp32")

    for e in prof.events():
        if e.name == "aten::embedding" and e.input_shapes[1][:1] and len(e.input_shapes[1]) == 2:
            if e.input_shapes[1][0] < 8:
                out.add("small_batch")
            break

    if not any("_foreach_" in k or "_fused_adam" in k for k in counts):
        out.add("optimizer_loop")

    if per_step(counts, "aten::gelu", steps) > per_step(counts, "aten::gelu_backward", steps):
        out.add("recompute")
    return out
""",
    ),
    Blind(
        name="key_averages_rows_plus_events",
        exercise_id=D,
        half="held2",
        correct=True,
        source="""
import torch


def diagnose(prof):
    rows = {row.key: row for row in prof.key_averages()}

    def calls(name):
        return rows[name].count if name in rows else 0

    steps = calls("Optimizer.step#AdamW.step")
    found = []
    if any("SingleProcessDataLoaderIter" in key for key in rows):
        found.append("loader")

    def in_optimizer(event):
        while event.cpu_parent is not None:
            event = event.cpu_parent
            if "Optimizer.step" in event.name:
                return True
        return False

    items = [e for e in prof.events() if e.name == "aten::item"]
    if sum(not in_optimizer(e) for e in items) >= steps > 0:
        found.append("host_sync")
    linear_math = [e for e in prof.events() if e.name in ("aten::addmm", "aten::mm")]
    if any("float" in e.input_dtypes[:2] for e in linear_math):
        found.append("fp32")
    tokens = [e.input_shapes[1] for e in prof.events()
              if e.name == "aten::embedding" and len(e.input_shapes) > 1]
    batch_rows = [shape[0] for shape in tokens if len(shape) == 2]
    if batch_rows and min(batch_rows) * 4 <= 16:
        found.append("small_batch")
    if not [key for key in rows if key.startswith("aten::_foreach")] and not calls(
        "aten::_fused_adamw_"
    ):
        found.append("optimizer_loop")
    if calls("aten::native_layer_norm") > calls("aten::native_layer_norm_backward"):
        found.append("recompute")
    return set(found)
""",
    ),
    # ------------------------------------------------------------------ diagnose: wrong
    Blind(
        name="set_update_with_a_string",
        exercise_id=D,
        half="held2",
        correct=False,
        cause=(
            "It adds each name with set.update(name), which adds the string's characters one "
            "by one ('f', 'p', '3', '2'), not the name: use set.add(name)."
        ),
        source="""
import collections


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

    checks = {
        "loader": any("_SingleProcessDataLoaderIter" in name for name in count),
        "host_sync": sum(
            1 for e in events if e.name == "aten::item" and not inside_optimizer(e)
        ) >= steps,
        "fp32": any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events),
        "small_batch": any(
            e.name == "aten::embedding"
            and len(e.input_shapes[1]) == 2
            and e.input_shapes[1][0] < 8
            for e in events
        ),
        "optimizer_loop": not any(name.startswith("aten::_foreach") for name in count),
        "recompute": count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"],
    }
    found = set()
    for name, seen in checks.items():
        if seen:
            found.update(name)
    return found
""",
    ),
    Blind(
        name="small_batch_up_to_batch_inclusive",
        exercise_id=D,
        half="held2",
        correct=False,
        cause=(
            "It flags small_batch whenever the batch is at most capstone_profile.BATCH (16), so "
            "the sound batch of 16 windows is flagged too: the planted batch is far below it "
            "(2 windows), so the test must be strictly smaller than 16, or much smaller."
        ),
        source="""
import collections

from gpu_utils import capstone_profile


def diagnose(prof):
    events = prof.events()
    names = collections.Counter(e.name for e in events)
    steps = names["Optimizer.step#AdamW.step"]

    def in_opt(e):
        p = e.cpu_parent
        while p is not None:
            if "Optimizer.step" in p.name:
                return True
            p = p.cpu_parent
        return False

    found = set()
    if names["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"]:
        found.add("loader")
    if len([e for e in events if e.name == "aten::item" and not in_opt(e)]) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and e.input_dtypes[1] == "float" for e in events):
        found.add("fp32")
    for e in events:
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2:
            if e.input_shapes[1][0] <= capstone_profile.BATCH:
                found.add("small_batch")
    if names["aten::_foreach_add_"] == 0:
        found.add("optimizer_loop")
    if names["aten::native_layer_norm"] > names["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="bfloat16_spelled_lower_case",
        exercise_id=D,
        half="held2",
        correct=False,
        cause=(
            "The profiler writes the bf16 dtype as 'c10::BFloat16', so its test for the string "
            "'bfloat16' never matches and every script, autocast or not, is flagged fp32."
        ),
        source="""
import collections


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def under_step(e):
        e = e.cpu_parent
        while e is not None:
            if e.name.startswith("Optimizer.step"):
                return True
            e = e.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in n for n in count):
        found.add("loader")
    if sum(e.name == "aten::item" and not under_step(e) for e in events) >= steps:
        found.add("host_sync")
    addmm_dtypes = " ".join(
        " ".join(e.input_dtypes) for e in events if e.name == "aten::addmm"
    )
    if "bfloat16" not in addmm_dtypes:
        found.add("fp32")  # no bf16 matmul anywhere: no autocast
    sizes = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2
    ]
    if sizes and min(sizes) < 8:
        found.add("small_batch")
    if not any(n.startswith("aten::_foreach") for n in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="per_tensor_addcdiv_means_loop",
        exercise_id=D,
        half="held2",
        correct=False,
        cause=(
            "It takes any aten::addcdiv_ call as the per-parameter loop, but on the CPU each "
            "aten::_foreach_* op runs one per-tensor kernel per parameter inside it, so "
            "foreach scripts show them too: the loop is the absence of _foreach_ (or fused) "
            "operators."
        ),
        source="""
import collections


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def in_optimizer(e):
        while e is not None:
            if "Optimizer.step" in e.name:
                return True
            e = e.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter" in n for n in count):
        found.add("loader")
    if len([e for e in events if e.name == "aten::item" and not in_optimizer(e)]) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batch = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2
    ]
    if batch and min(batch) < 8:
        found.add("small_batch")
    # one addcdiv_ per parameter = AdamW stepping the parameters one at a time
    if count["aten::addcdiv_"] > 0:
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="recompute_when_forward_equals_backward",
        exercise_id=D,
        half="held2",
        correct=False,
        cause=(
            "It flags recompute when the layer norms' forward count is at least their "
            "backward count, but equal counts are the sound case (one backward per forward): "
            "recomputation means strictly more forward calls than backward ones."
        ),
        source="""
import collections


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def from_optimizer(e):
        parent = e.cpu_parent
        while parent is not None:
            if parent.name.startswith("Optimizer.step"):
                return True
            parent = parent.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter" in n for n in count):
        found.add("loader")
    if sum(1 for e in events if e.name == "aten::item" and not from_optimizer(e)) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    emb = [e for e in events if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2]
    if emb and min(e.input_shapes[1][0] for e in emb) < 8:
        found.add("small_batch")
    if not any(n.startswith("aten::_foreach") for n in count):
        found.add("optimizer_loop")
    forward = count["aten::native_layer_norm"]
    backward = count["aten::native_layer_norm_backward"]
    if forward >= backward:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="steps_counted_from_embeddings",
        exercise_id=D,
        half="held2",
        correct=False,
        cause=(
            "It counts steps by aten::embedding calls, but every forward embeds twice (the "
            "tokens and the positions), so it expects two .item() calls per step and misses "
            "host_sync: count the steps by Optimizer.step."
        ),
        source="""
import collections


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["aten::embedding"]  # one forward pass per step

    def inside(e, word):
        while e is not None:
            if word in e.name:
                return True
            e = e.cpu_parent
        return False

    found = set()
    if any(inside(e, "_SingleProcessDataLoaderIter") for e in events):
        found.add("loader")
    syncs = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    if len(syncs) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    b = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2
    ]
    if b and min(b) < 8:
        found.add("small_batch")
    if not any(n.startswith("aten::_foreach") for n in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="subtracts_one_item_per_parameter",
        exercise_id=D,
        half="held2",
        correct=False,
        cause=(
            "It removes the optimizer's own .item() calls by subtracting one per parameter "
            "per step, which is right only for the per-parameter loop: the foreach path reads "
            "twice as many, so every foreach script is flagged host_sync; leave out the calls "
            "made inside Optimizer.step instead."
        ),
        source="""
import collections


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]
    n_params = count["torch::autograd::AccumulateGrad"] // max(steps, 1)

    found = set()
    if any("_SingleProcessDataLoaderIter" in n for n in count):
        found.add("loader")
    # AdamW reads each parameter's step counter with .item(): one per parameter per step
    syncs = count["aten::item"] - n_params * steps
    if syncs >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    rows = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2
    ]
    if rows and min(rows) < 8:
        found.add("small_batch")
    if not any(n.startswith("aten::_foreach") for n in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="loader_needs_more_calls_than_steps",
        exercise_id=D,
        half="held2",
        correct=False,
        cause=(
            "It flags loader only when _SingleProcessDataLoaderIter.__next__ runs more times "
            "than there are steps, but the script fetches exactly one batch per step, so the "
            "loader is never found: any such call in the training process is the sign."
        ),
        source="""
import collections


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def optimizer_inside(e):
        while e is not None:
            if e.name.startswith("Optimizer.step"):
                return True
            e = e.cpu_parent
        return False

    found = set()
    fetches = sum(n for name, n in count.items() if "_SingleProcessDataLoaderIter" in name)
    if fetches > steps:
        found.add("loader")  # more batch fetches than steps: the loader is busy
    if sum(e.name == "aten::item" and not optimizer_inside(e) for e in events) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    sizes = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2
    ]
    if sizes and min(sizes) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="to_copy_taken_as_autocast",
        exercise_id=D,
        half="held2",
        correct=False,
        cause=(
            "It takes any aten::_to_copy as the sign of autocast, but copies happen without "
            "autocast too (AdamW's step makes dozens of them), so fp32 is never found: read "
            "the dtype the matmuls (aten::addmm) compute in."
        ),
        source="""
import collections


def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(e, word):
        while e is not None:
            if word in e.name:
                return True
            e = e.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter" in n for n in count):
        found.add("loader")
    if sum(e.name == "aten::item" and not inside(e, "Optimizer.step") for e in events) >= steps:
        found.add("host_sync")
    # autocast casts the weights to bf16 before every matmul: those casts are _to_copy calls
    if count["aten::_to_copy"] == 0:
        found.add("fp32")
    sizes = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes[1]) == 2
    ]
    if sizes and min(sizes) < 8:
        found.add("small_batch")
    if not any(n.startswith("aten::_foreach") for n in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    # ------------------------------------------------------------------ fix: correct
    Blind(
        name="generator_helper_read_back_after_loop",
        exercise_id=F,
        half="held2",
        correct=True,
        source='''
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def window_batches(tokens, batch_size, generator):
    """An endless stream of random windows, cut from tokens encoded once."""
    while True:
        yield T.get_batch(tokens, batch_size, capstone_profile.SEQ_LEN, generator)


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=capstone_profile.LR,
        weight_decay=capstone_profile.WEIGHT_DECAY,
        foreach=True,
    )
    stream = window_batches(
        T.encode(text), capstone_profile.BATCH, torch.Generator().manual_seed(0)
    )
    kept = []
    for _, (x, y) in zip(range(steps), stream):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        kept.append(loss.detach())
    return torch.stack(kept).cpu().tolist()
''',
    ),
    Blind(
        name="fused_adamw_batch_32_own_gather",
        exercise_id=F,
        half="held2",
        correct=True,
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    dev = capstone_profile.device()
    net = capstone_profile.build_model().to(dev)
    opt = torch.optim.AdamW(
        net.parameters(), lr=capstone_profile.LR, weight_decay=0.01, fused=True
    )
    tokens = T.encode(text)  # once, not per window
    g = torch.Generator().manual_seed(0)
    batch = 2 * capstone_profile.BATCH
    offsets = torch.arange(capstone_profile.SEQ_LEN + 1)
    history = []
    for _ in range(steps):
        starts = torch.randint(len(tokens) - capstone_profile.SEQ_LEN, (batch,), generator=g)
        window = tokens[starts[:, None] + offsets].to(dev)
        x, y = window[:, :-1], window[:, 1:]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            _, loss = net(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        history.append(loss.detach())
    return torch.stack(history).tolist()
""",
    ),
    Blind(
        name="while_loop_preallocated_loss_tensor",
        exercise_id=F,
        half="held2",
        correct=True,
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model()
    model.to(device)
    optimizer = torch.optim.AdamW(
        list(model.parameters()), capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)
    generator = torch.Generator()
    generator.manual_seed(0)
    losses = torch.zeros(steps, device=device)
    step = 0
    while step < steps:
        x, y = (
            t.to(device)
            for t in T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        )
        with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
            logits, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses[step] = loss.detach()
        step += 1
    return losses.tolist()
""",
    ),
    # ------------------------------------------------------------------ fix: wrong
    Blind(
        name="model_weights_cast_to_bf16",
        exercise_id=F,
        half="held2",
        correct=False,
        cause="It casts the model itself to bf16 instead of running the forward under torch.autocast, so the weights and AdamW's moments are stored in bf16 and small updates round away: keep the model in fp32 and autocast only the forward.",
        hints=("the model itself was cast",),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device, dtype=torch.bfloat16)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        _, loss = model(x, y)  # the weights are bf16 already
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="autocast_to_float16",
        exercise_id=F,
        half="held2",
        correct=False,
        cause="It autocasts to torch.float16 rather than torch.bfloat16: fp16's narrow range needs a GradScaler against underflowing gradients, and the fix asked for is bf16.",
        hints=(
            "computed in float16",
            "use bfloat16",
        ),
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
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.float16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="autocast_device_hard_coded_cuda",
        exercise_id=F,
        half="held2",
        correct=False,
        cause='It hard-codes torch.autocast("cuda"), which does nothing for a model on the CPU (where the check runs), so the linear layers still compute in fp32: pass device.type (or x.device.type).',
        hints=("the forward pass ran without autocast",),
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
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="zero_grad_once_before_the_loop",
        exercise_id=F,
        half="held2",
        correct=False,
        cause="It calls zero_grad() once before the loop instead of every step, so each step's gradients add onto all the previous ones and the optimizer steps with their running sum.",
        hints=(
            "the gradients are not cleared between steps",
            "`optimizer.zero_grad()`",
        ),
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
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    optimizer.zero_grad()
    losses = []
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="loop_starts_at_one",
        exercise_id=F,
        half="held2",
        correct=False,
        cause="It loops over range(1, steps), one step fewer than asked, so it trains steps - 1 steps and returns one loss too few.",
        hints=("took 3 optimizer steps",),
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
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(1, steps):
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
        name="best_loss_compared_every_step",
        exercise_id=F,
        half="held2",
        correct=False,
        cause="Comparing the loss tensor with the best so far in an if, every step, turns a tensor into a Python bool, a host synchronisation per step: keep the losses on the device and look at them after the loop.",
        hints=("the host waited for the device 3 times inside the loop",),
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
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    losses = []
    best = float("inf")
    for step in range(steps):
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if loss < best:  # remember the best step
            best = loss.detach()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="adam_instead_of_adamw",
        exercise_id=F,
        half="held2",
        correct=False,
        cause="It replaces AdamW with torch.optim.Adam, whose weight_decay adds an L2 term to the gradient instead of AdamW's decoupled decay of the weights, so it learns different weights from the script's optimizer.",
        hints=(
            "Your optimizer (Adam)",
            "Adam's weight_decay is added to the gradient",
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.Adam(
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
""",
    ),
    Blind(
        name="chapter_default_gpt",
        exercise_id=F,
        half="held2",
        correct=False,
        cause="It builds gu.gpt's default GPT (width 64, 4 heads, 64-token context) instead of capstone_profile.build_model(), so it trains a different, larger model than the script's.",
        hints=(
            "a different model from the script's",
            "your wte.weight is 256 x 64, the script's 256 x 32",
        ),
        source="""
import torch

import gpu_utils as gu
from gpu_utils import capstone_profile

T = gu.training


def fixed_train(text, steps):
    device = capstone_profile.device()
    model = gu.gpt.build(seed=0).to(device)
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
""",
    ),
    Blind(
        name="generator_reseeded_every_step",
        exercise_id=F,
        half="held2",
        correct=False,
        cause="It creates and seeds the generator inside the loop, so every step draws the same windows and the model trains on one batch over and over: seed one generator before the loop.",
        hints=(
            "all 4 optimizer steps trained on the same token batch",
            "one generator seeded once, before the loop",
        ),
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
    data = T.encode(text)
    losses = []
    for step in range(steps):
        generator = torch.Generator().manual_seed(0)
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
]
