"""Held-out answers to lab 11's "profile first" capstone (exercises 7 and 8), written without
the checker in view.

Each cell is what a learner could write in labs/11_training_in_practice_lab.ipynb; the wrong
ones carry their real mistake in ``cause``. See tests/heldout/__init__.py."""

from heldout import Blind

PRE = "import collections\n\nimport torch\nimport torch.nn.functional as F\n\nimport gpu_utils as gu\nfrom gpu_utils import capstone_profile\n\nT = gu.training\n\n"

ANSWERS = [
    Blind(
        name="key_averages_counts",
        exercise_id="capstone_profile_diagnose",
        half="tune",
        correct=True,
        source=PRE
        + """
def diagnose(prof):
    counts = {row.key: row.count for row in prof.key_averages()}
    steps = counts.get("Optimizer.step#AdamW.step", 0)
    found = set()
    if any("_SingleProcessDataLoaderIter" in key for key in counts):
        found.add("loader")
    # .item() calls that are not the optimizer reading its own step counter
    syncs = 0
    for e in prof.events():
        if e.name != "aten::item":
            continue
        parent = e.cpu_parent
        while parent is not None and "Optimizer.step" not in parent.name:
            parent = parent.cpu_parent
        if parent is None:
            syncs += 1
    if steps and syncs >= steps:
        found.add("host_sync")
    if any(e.name == "aten::mm" and "float" in e.input_dtypes for e in prof.events()):
        found.add("fp32")
    if any(
        e.name == "aten::embedding" and len(e.input_shapes[1]) == 2 and e.input_shapes[1][0] <= 4
        for e in prof.events()
    ):
        found.add("small_batch")
    if not any(key.startswith("aten::_foreach_") or "fused" in key for key in counts):
        found.add("optimizer_loop")
    if counts.get("aten::addmm", 0) > counts.get("AddmmBackward0", 0):
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="helpers_per_step",
        exercise_id="capstone_profile_diagnose",
        half="held",
        correct=True,
        source=PRE
        + """
def ancestors(event):
    names = []
    event = event.cpu_parent
    while event is not None:
        names.append(event.name)
        event = event.cpu_parent
    return names


def tokens_in_forward(prof):
    sizes = []
    for e in prof.events():
        if e.name == "aten::embedding":
            shape = e.input_shapes[1]
            if len(shape) == 2:
                sizes.append(shape[0] * shape[1])
    return sizes


def diagnose(prof):
    events = prof.events()
    names = collections.Counter(e.name for e in events)
    n_steps = max(names["Optimizer.step#AdamW.step"], 1)
    problems = []
    if names["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] > 0:
        problems.append("loader")
    outside = [
        e
        for e in events
        if e.name == "aten::_local_scalar_dense"
        and not any(n.startswith("Optimizer.") for n in ancestors(e))
    ]
    if len(outside) >= n_steps:
        problems.append("host_sync")
    matmul_dtypes = {d for e in events if e.name in ("aten::addmm", "aten::mm") for d in e.input_dtypes[:2]}
    if "float" in matmul_dtypes:
        problems.append("fp32")
    sizes = tokens_in_forward(prof)
    if sizes and max(sizes) < capstone_profile.BATCH * capstone_profile.SEQ_LEN:
        problems.append("small_batch")
    if sum(v for k, v in names.items() if "_foreach_" in k) == 0:
        problems.append("optimizer_loop")
    if names["aten::gelu"] > names["aten::gelu_backward"]:
        problems.append("recompute")
    return set(problems)
""",
    ),
    Blind(
        name="group_by_shape_frozenset",
        exercise_id="capstone_profile_diagnose",
        half="tune",
        correct=True,
        source=PRE
        + """
def diagnose(prof):
    events = prof.events()
    result = []
    if any(e.name.endswith("_SingleProcessDataLoaderIter.__next__") for e in events):
        result.append("loader")

    def in_optimizer(e):
        while e is not None:
            if e.name.startswith("Optimizer.step"):
                return True
            e = e.cpu_parent
        return False

    steps = sum(1 for e in events if e.name.startswith("Optimizer.step"))
    if sum(1 for e in events if e.name == "aten::item" and not in_optimizer(e)) >= steps > 0:
        result.append("host_sync")
    for row in prof.key_averages(group_by_input_shape=True):
        if row.key == "aten::embedding" and len(row.input_shapes) > 1:
            idx = row.input_shapes[1]
            if len(idx) == 2 and idx[0] < capstone_profile.BATCH:
                result.append("small_batch")
                break
    addmm = [e for e in events if e.name == "aten::addmm"]
    if addmm and all(e.input_dtypes and e.input_dtypes[1] == "float" for e in addmm):
        result.append("fp32")
    if not [e for e in events if "foreach" in e.name]:
        result.append("optimizer_loop")
    ln = sum(e.name == "aten::native_layer_norm" for e in events)
    ln_back = sum(e.name == "aten::native_layer_norm_backward" for e in events)
    if ln > ln_back:
        result.append("recompute")
    return frozenset(result)
""",
    ),
    Blind(
        name="table_rows_and_print",
        exercise_id="capstone_profile_diagnose",
        half="held",
        correct=True,
        source=PRE
        + """
def diagnose(prof):
    rows = prof.key_averages()
    count = collections.Counter()
    for row in rows:
        count[row.key] += row.count
    events = prof.events()
    found = set()
    # a DataLoader iterated in this process, item by item (workers would show another name)
    if count["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"]:
        found.add("loader")
    top_items = 0
    for e in events:
        if e.name == "aten::item":
            root = e
            while root.cpu_parent is not None:
                root = root.cpu_parent
            if "Optimizer" not in root.name:
                top_items += 1
    if top_items >= count["Optimizer.step#AdamW.step"] > 0:
        found.add("host_sync")
    linear_math = [e for e in events if e.name == "aten::addmm"]
    if any(e.input_dtypes[0] == "float" for e in linear_math if e.input_dtypes):
        found.add("fp32")
    batch_dims = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batch_dims and max(batch_dims) <= capstone_profile.SMALL_BATCH:
        found.add("small_batch")
    if not any(k.startswith("aten::_foreach") for k in count):
        found.add("optimizer_loop")
    forward_linear = count["aten::addmm"]
    backward_linear = count["AddmmBackward0"]
    if forward_linear > backward_linear:
        found.add("recompute")
    print(f"steps: {count['Optimizer.step#AdamW.step']}, found: {sorted(found)}")
    return found
""",
    ),
    Blind(
        name="any_dataloader_is_loader",
        exercise_id="capstone_profile_diagnose",
        half="tune",
        correct=False,
        cause="It flags any DataLoader as the loader problem, but a DataLoader with worker processes over windows tokenised once is sound: the problem is a _SingleProcessDataLoaderIter tokenising in the training process.",
        source=PRE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("DataLoader" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    if len(host_items) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="optimizer_items_count_as_sync",
        exercise_id="capstone_profile_diagnose",
        half="held",
        correct=False,
        cause="It counts every aten::item, including the ones AdamW makes inside Optimizer.step to read its own step counter, so every script is flagged host_sync: only .item() calls outside the optimizer are host synchronisations.",
        source=PRE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    if count["aten::item"] >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="fp32_from_linear_inputs",
        exercise_id="capstone_profile_diagnose",
        half="tune",
        correct=False,
        cause="It reads aten::linear's input dtypes, which are float even under autocast (the cast to bf16 happens inside linear), so every script is flagged fp32: the matmul itself (aten::addmm/mm) shows the dtype it computes in.",
        source=PRE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    if len(host_items) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::linear" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="batch_from_sequence_axis",
        exercise_id="capstone_profile_diagnose",
        half="held",
        correct=False,
        cause="It reads the batch size from the last axis of the embedding's index input, which is the sequence length (32), so a batch of 2 windows is never flagged small_batch: the batch is the first axis.",
        source=PRE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    if len(host_items) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    lengths = [
        e.input_shapes[1][-1]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if lengths and min(lengths) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="expects_fused_optimizer",
        exercise_id="capstone_profile_diagnose",
        half="tune",
        correct=False,
        cause="It treats any optimizer that is not fused as the per-parameter loop, but foreach=True (the sound scripts' path, aten::_foreach_* ops) is not the problem: optimizer_loop is the absence of both foreach and fused ops.",
        source=PRE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    if len(host_items) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any("fused_adamw" in name for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="looks_for_checkpoint_event",
        exercise_id="capstone_profile_diagnose",
        half="held",
        correct=False,
        cause="It looks for an event named after checkpoint, which the profiler never records, so recompute is never found: recomputation shows as more forward operator calls (layer norms, addmm) than their backward counterparts.",
        source=PRE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    if len(host_items) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if any("checkpoint" in name.lower() for name in count):
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="copies_own_seed_answer",
        exercise_id="capstone_profile_diagnose",
        half="tune",
        correct=False,
        cause="It returns the problems of its own seed's script whatever profile it is given, instead of reading them from the profile passed in.",
        source=PRE
        + """
SEED = 7


def diagnose(prof):
    # my script's problems, found by reading its profile above
    return set(capstone_profile.planted(SEED))
""",
    ),
    Blind(
        name="any_item_outside_optimizer",
        exercise_id="capstone_profile_diagnose",
        half="held",
        correct=False,
        cause="One .item() outside the optimizer is enough for it to flag host_sync, but a sound DataLoader's set-up reads one seed once; a per-step sync shows as at least one such call per optimizer step.",
        source=PRE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    if any(e.name == "aten::item" and not inside(e, "Optimizer.step") for e in events):
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="host_sync_by_time",
        exercise_id="capstone_profile_diagnose",
        half="tune",
        correct=False,
        cause="It judges host_sync by the time .item() takes, but on a CPU there is no device to wait for so the call costs almost nothing: the sign is the number of .item() calls outside the optimizer per step, not their time.",
        source=PRE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    total = sum(e.cpu_time_total for e in events if e.cpu_parent is None)
    item_time = sum(
        e.cpu_time_total for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")
    )
    if item_time > 0.05 * total:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="wrong_kind_names",
        exercise_id="capstone_profile_diagnose",
        half="held",
        correct=False,
        cause='It names problems "bf16" and "item", which are not among the six names the lab defines ("fp32", "host_sync"), so those diagnoses are not recognised.',
        source=PRE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    if len(host_items) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("bf16")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    if count["aten::native_layer_norm"] > count["aten::native_layer_norm_backward"]:
        found.add("recompute")
    if "host_sync" in found:
        found.discard("host_sync")
        found.add("item")
    return found
""",
    ),
    Blind(
        name="recompute_by_linear_count",
        exercise_id="capstone_profile_diagnose",
        half="tune",
        correct=False,
        cause="It compares the aten::linear count with a per-step number read off its own autocast profile, but autocast itself doubles the aten::linear events, so a script in fp32 that recomputes is missed: compare forward calls with their backward counterparts instead.",
        source=PRE
        + """
def diagnose(prof):
    events = prof.events()
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"]

    def inside(event, words):
        while event is not None:
            if words in event.name:
                return True
            event = event.cpu_parent
        return False

    found = set()
    if any("_SingleProcessDataLoaderIter.__next__" in e.name for e in events):
        found.add("loader")
    host_items = [e for e in events if e.name == "aten::item" and not inside(e, "Optimizer.step")]
    if len(host_items) >= steps:
        found.add("host_sync")
    if any(e.name == "aten::addmm" and "float" in e.input_dtypes for e in events):
        found.add("fp32")
    batches = [
        e.input_shapes[1][0]
        for e in events
        if e.name == "aten::embedding" and len(e.input_shapes) > 1 and len(e.input_shapes[1]) == 2
    ]
    if batches and min(batches) < 8:
        found.add("small_batch")
    if not any(name.startswith("aten::_foreach") for name in count):
        found.add("optimizer_loop")
    # my profile: 18 aten::linear per step; more than that means forwards done twice
    if count["aten::linear"] > 18 * steps:
        found.add("recompute")
    return found
""",
    ),
    Blind(
        name="fused_adamw_bigger_batch",
        exercise_id="capstone_profile_fix",
        half="tune",
        correct=True,
        source=PRE
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, fused=True
    )
    tokens = T.encode(text)
    gen = torch.Generator().manual_seed(0)
    history = []
    for _ in range(steps):
        x, y = T.get_batch(tokens, 2 * capstone_profile.BATCH, capstone_profile.SEQ_LEN, gen)
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        history.append(loss.detach())
    return torch.stack(history).float().cpu().tolist()  # one read-back, after the loop
""",
    ),
    Blind(
        name="window_dataset_loader",
        exercise_id="capstone_profile_fix",
        half="held",
        correct=True,
        source=PRE
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
        num_workers=1,
    )
    batches = iter(loader)
    losses = []
    for step in range(steps):
        x, y = next(batches)
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
        name="manual_loss_while_loop",
        exercise_id="capstone_profile_fix",
        half="tune",
        correct=True,
        source=PRE
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    opt = torch.optim.AdamW(
        model.parameters(),
        lr=capstone_profile.LR,
        weight_decay=capstone_profile.WEIGHT_DECAY,
        foreach=True,
    )
    data = T.encode(text)
    g = torch.Generator().manual_seed(0)
    kept = torch.zeros(steps)
    step = 0
    while step < steps:
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, g)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits, _ = model(x)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        kept[step] = loss.detach()
        step += 1
    return kept.tolist()
""",
    ),
    Blind(
        name="items_after_loop",
        exercise_id="capstone_profile_fix",
        half="held",
        correct=True,
        source=PRE
        + """
def one_step(model, optimizer, x, y, device):
    with torch.autocast(device.type, dtype=torch.bfloat16):
        _, loss = model(x.to(device), y.to(device))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.detach()


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
        losses.append(one_step(model, optimizer, x, y, device))
    return torch.cat([loss.reshape(1) for loss in losses]).tolist()  # read back after the loop
""",
    ),
    Blind(
        name="item_left_in_loop",
        exercise_id="capstone_profile_fix",
        half="tune",
        correct=False,
        cause="It still calls loss.item() every step inside the loop, a host synchronisation per step: keep the detached losses and read them back once after the loop.",
        source=PRE
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
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses
""",
    ),
    Blind(
        name="no_autocast",
        exercise_id="capstone_profile_fix",
        half="held",
        correct=False,
        cause="The forward runs without torch.autocast, so every linear layer still computes in fp32: wrap the forward in torch.autocast(device.type, dtype=torch.bfloat16).",
        source=PRE
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
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="small_batch_kept",
        exercise_id="capstone_profile_fix",
        half="tune",
        correct=False,
        cause="It still trains with a batch of 2 windows (SMALL_BATCH) instead of at least capstone_profile.BATCH (16), so each step feeds too few tokens to keep the processor busy.",
        source=PRE
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
        x, y = T.get_batch(data, capstone_profile.SMALL_BATCH, capstone_profile.SEQ_LEN, generator)
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
        name="default_optimizer_path",
        exercise_id="capstone_profile_fix",
        half="held",
        correct=False,
        cause="Setting foreach=None leaves AdamW's default, which for parameters on the CPU is the per-parameter for-loop: ask for foreach=True (or fused=True) explicitly.",
        source=PRE
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=None
    )
    data = T.encode(text)  # tokenised once
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
        name="checkpointing_left",
        exercise_id="capstone_profile_fix",
        half="tune",
        correct=False,
        cause="It still runs the model through T.forward_checkpointed, so every block's forward is recomputed in the backward pass although memory is ample: call model(x, y) directly.",
        source=PRE
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
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = T.forward_checkpointed(model, x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="tokenizing_loader_kept",
        exercise_id="capstone_profile_fix",
        half="held",
        correct=False,
        cause="It keeps the DataLoader over TokenizingDataset, which tokenises every window in Python in the training process: tokenise the text once (T.encode) and cut batches from it.",
        source=PRE
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    loader = torch.utils.data.DataLoader(
        capstone_profile.TokenizingDataset(text),
        batch_size=capstone_profile.BATCH,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
    )
    batches = iter(loader)
    losses = []
    for step in range(steps):
        x, y = next(batches)
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
        name="autocast_only_around_loss",
        exercise_id="capstone_profile_fix",
        half="tune",
        correct=False,
        cause="The autocast region covers only the loss, not the model's forward, so the linear layers still compute in fp32: the model call must be inside torch.autocast.",
        source=PRE
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
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        logits, _ = model(x)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="float_of_loss_in_loop",
        exercise_id="capstone_profile_fix",
        half="held",
        correct=False,
        cause="float(loss) inside the loop is the same host synchronisation as loss.item(), once per step: keep the detached tensors and convert them after the loop.",
        source=PRE
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
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss))
    return losses
""",
    ),
    Blind(
        name="accumulates_tiny_micro_batches",
        exercise_id="capstone_profile_fix",
        half="tune",
        correct=False,
        cause="It reaches 16 windows per optimizer step by accumulating 8 micro-batches of 2, but each forward pass still runs on a batch of 2, too small to keep the processor busy: run one forward on at least BATCH windows.",
        source=PRE
        + """
def fixed_train(text, steps):
    device = capstone_profile.device()
    model = capstone_profile.build_model().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=capstone_profile.LR, weight_decay=0.01, foreach=True
    )
    data = T.encode(text)
    generator = torch.Generator().manual_seed(0)
    n_micro = capstone_profile.BATCH // capstone_profile.SMALL_BATCH
    losses = []
    for step in range(steps):
        total = 0.0
        for _ in range(n_micro):
            x, y = T.get_batch(data, capstone_profile.SMALL_BATCH, capstone_profile.SEQ_LEN, generator)
            x, y = x.to(device), y.to(device)
            with torch.autocast(device.type, dtype=torch.bfloat16):
                _, loss = model(x, y)
            (loss / n_micro).backward()
            total = total + loss.detach() / n_micro
        optimizer.step()
        optimizer.zero_grad()
        losses.append(total)
    return torch.stack(losses).tolist()
""",
    ),
    Blind(
        name="returns_tensor",
        exercise_id="capstone_profile_fix",
        half="held",
        correct=False,
        cause="It returns the losses as one tensor instead of a list of Python numbers (the script returns torch.stack(losses).tolist()).",
        source=PRE
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
        x, y = T.get_batch(data, capstone_profile.BATCH, capstone_profile.SEQ_LEN, generator)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses)
""",
    ),
    Blind(
        name="never_steps",
        exercise_id="capstone_profile_fix",
        half="tune",
        correct=False,
        cause="A second zero_grad() between backward() and step() clears the gradients, so the optimizer never updates the weights (only weight decay) and the model does not learn.",
        source=PRE
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
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.zero_grad()  # tidy up before the next step
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
    ),
]
