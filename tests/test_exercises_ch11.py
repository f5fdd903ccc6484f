"""Checkers of lab 11, the capstone: references and answers written differently pass; known-wrong
answers (faster but wrong: labels shuffled apart from inputs, a sum for a mean, Adam's L2 decay,
syncs every step, a model cast to bf16, a loss scale never undone, the last micro-batch
dropped...) fail with their own hint; a fix with no speed-up on this machine still passes and
says why; nothing raises."""

import pytest
import torch
import torch.nn.functional as F

import gpu_utils as gu
from gpu_utils.exercises import ch11_training as capstone

T = gu.training


def run(exercise_id, answer):
    """The checker's verdict, computed in this process (faster than a check's worker)."""
    return gu.exercises.get(exercise_id).run(answer)


@pytest.fixture
def no_timing(monkeypatch):
    """Skip the speed measurement (correctness is what these tests are about)."""
    monkeypatch.setattr(capstone, "_interleaved", lambda fns, repeat=5: dict.fromkeys(fns, 1.0))


def assert_fails(result, *phrases):
    assert not result.passed, result.message
    for phrase in phrases:
        assert phrase in result.message, result.message


# --- 1. loader --------------------------------------------------------------------------------


def loader_reference(text, batch_size, seq_len, seed):
    data = T.encode(text)
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield T.get_batch(data, batch_size, seq_len, generator)


def loader_dataloader(text, batch_size, seq_len, seed):
    """Correct differently: a DataLoader over WindowDataset, shuffled with a seeded generator."""
    return torch.utils.data.DataLoader(
        T.WindowDataset(T.encode(text), seq_len),
        batch_size=batch_size,
        shuffle=True,
        generator=torch.Generator().manual_seed(seed),
    )


def loader_shuffled_labels(text, batch_size, seq_len, seed):
    for x, y in loader_reference(text, batch_size, seq_len, seed):
        yield x, y[torch.randperm(batch_size, generator=torch.Generator().manual_seed(seed))]


def loader_no_shift(text, batch_size, seq_len, seed):
    for x, _ in loader_reference(text, batch_size, seq_len, seed):
        yield x, x.clone()


def loader_unseeded(text, batch_size, seq_len, seed):
    data = T.encode(text)
    while True:
        yield T.get_batch(data, batch_size, seq_len)


def loader_same_batch(text, batch_size, seq_len, seed):
    while True:
        yield T.get_batch(T.encode(text), batch_size, seq_len, torch.Generator().manual_seed(seed))


def loader_float(text, batch_size, seq_len, seed):
    for x, y in loader_reference(text, batch_size, seq_len, seed):
        yield x.float(), y.float()


def loader_short(text, batch_size, seq_len, seed):
    return [next(loader_reference(text, batch_size, seq_len, seed))]


def test_loader_reference_passes_with_a_measured_ratio():
    result = run("ch11_fast_loader", loader_reference)
    assert result.passed, result.message
    assert "measured now on this machine" in result.message and "x (median" in result.message


def test_loader_dataloader_passes(no_timing):
    assert run("ch11_fast_loader", loader_dataloader).passed


@pytest.mark.parametrize(
    "answer, phrase",
    [
        (loader_shuffled_labels, "shuffled apart from their inputs"),
        (loader_no_shift, "learn to copy its input"),
        (loader_unseeded, "same seed gave different batches"),
        (loader_same_batch, "Every batch is the same batch"),
        (loader_float, "need int64"),
        (loader_short, "only 1 batches"),
    ],
)
def test_loader_mistakes(answer, phrase, no_timing):
    assert_fails(run("ch11_fast_loader", answer), phrase)


# --- 2. loss -----------------------------------------------------------------------------------


def loss_log_softmax(logits, targets):
    """Correct differently: log_softmax, then the negative log-likelihood."""
    logp = torch.log_softmax(logits, dim=-1)
    return F.nll_loss(logp.reshape(-1, logp.shape[-1]), targets.reshape(-1))


def loss_sum(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")


def loss_no_flatten(logits, targets):
    return F.cross_entropy(logits, targets)


def loss_per_position(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")


def loss_detached(logits, targets):
    return F.cross_entropy(logits.detach().flatten(0, 1), targets.flatten())


def test_loss_reference_and_alternative_pass():
    result = run("ch11_fused_loss", lambda lg, t: F.cross_entropy(lg.flatten(0, 1), t.flatten()))
    assert result.passed, result.message
    assert "Saved for backward" in result.message
    assert run("ch11_fused_loss", loss_log_softmax).passed


@pytest.mark.parametrize(
    "answer, phrase",
    [
        (capstone.baseline_loss, "log(0) is -inf"),
        (loss_sum, "sum over positions"),
        (loss_no_flatten, "flatten"),
        (loss_per_position, "not one number"),
        (loss_detached, "carries no gradient"),
    ],
)
def test_loss_mistakes(answer, phrase, no_timing):
    assert_fails(run("ch11_fused_loss", answer), phrase)


# --- 3. optimizer ---------------------------------------------------------------------------------


def test_optimizer_foreach_and_fused_pass():
    result = run(
        "ch11_fused_optimizer",
        lambda p, lr: torch.optim.AdamW(p, lr=lr, weight_decay=0.01, foreach=True),
    )
    assert result.passed, result.message
    fused = run(
        "ch11_fused_optimizer",
        lambda p, lr: torch.optim.AdamW(p, lr, weight_decay=0.01, fused=True),
    )
    assert fused.passed and "fused kernel" in fused.message, fused.message


@pytest.mark.parametrize(
    "answer, phrase",
    [
        (lambda p, lr: torch.optim.Adam(p, lr=lr, weight_decay=0.01, foreach=True), "AdamW"),
        (
            lambda p, lr: torch.optim.AdamW(p, lr=10 * lr, weight_decay=0.01, foreach=True),
            "keep every hyper-parameter",
        ),
        (lambda p, lr: torch.optim.AdamW(p, lr=lr, weight_decay=0.01), "foreach=True"),
        (lambda p, lr: "AdamW", "not a torch.optim optimizer"),
    ],
)
def test_optimizer_mistakes(answer, phrase, no_timing):
    assert_fails(run("ch11_fused_optimizer", answer), phrase)


# --- 4. no host sync -------------------------------------------------------------------------------


def steps_reference(model, optimizer, batches):
    losses = []
    for x, y in batches:
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses)


def steps_preallocated(model, optimizer, batches):
    """Correct differently: write into a preallocated tensor, logits and loss computed apart."""
    losses = torch.empty(len(batches))
    for i, (x, y) in enumerate(batches):
        logits, _ = model(x)
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses[i] = loss.detach()
    return losses


def steps_item(model, optimizer, batches):
    return torch.tensor(capstone._baseline_run_steps(model, optimizer, batches))


def steps_keeps_graph(model, optimizer, batches):
    losses = []
    for x, y in batches:
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss)
    return losses


def steps_early_stop_check(model, optimizer, batches):
    losses = []
    for x, y in batches:
        _, loss = model(x, y)
        if loss < 0.01:  # a comparison read on the host: a sync every step
            break
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses)


def steps_no_zero_grad(model, optimizer, batches):
    losses = []
    for x, y in batches:
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def test_no_sync_reference_and_alternative_pass():
    result = run("ch11_no_host_sync", steps_reference)
    assert result.passed, result.message
    assert "0 host synchronisation(s)" in result.message
    assert run("ch11_no_host_sync", steps_preallocated).passed


@pytest.mark.parametrize(
    "answer, phrase",
    [
        (steps_item, "wait for the device 4 times"),
        (steps_early_stop_check, "__bool__"),
        (steps_keeps_graph, "autograd graphs"),
        (steps_no_zero_grad, "the training itself changed"),
        (lambda m, o, b: None, "returned NoneType"),
    ],
)
def test_no_sync_mistakes(answer, phrase):
    assert_fails(run("ch11_no_host_sync", answer), phrase)


# --- 5. bf16 ------------------------------------------------------------------------------------------


def step_bf16(model, optimizer, x, y):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, loss = model(x, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def step_bf16_manual_loss(model, optimizer, x, y):
    """Correct differently: logits under autocast, the loss in fp32 outside it."""
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        logits, _ = model(x)
    loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.detach()


def step_model_cast(model, optimizer, x, y):
    model.to(torch.bfloat16)
    return step_bf16(model, optimizer, x, y)


def step_fp16(model, optimizer, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        _, loss = model(x, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def step_fp32(model, optimizer, x, y):
    _, loss = model(x, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def step_no_update(model, optimizer, x, y):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, loss = model(x, y)
    loss.backward()
    optimizer.zero_grad()
    return loss


def step_twice(model, optimizer, x, y):
    """Faster progress per batch, wrong: two optimizer steps on the same gradient."""
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, loss = model(x, y)
    loss.backward()
    optimizer.step()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def test_bf16_reference_and_alternative_pass():
    result = run("ch11_bf16_autocast", step_bf16)
    assert result.passed, result.message
    assert run("ch11_bf16_autocast", step_bf16_manual_loss).passed


@pytest.mark.parametrize(
    "answer, phrase",
    [
        (step_model_cast, "the model itself was cast"),
        (step_fp16, "float16"),
        (step_fp32, "autocast was not active"),
        (step_no_update, "more apart than bf16"),
        (step_twice, "more apart than bf16"),
    ],
)
def test_bf16_mistakes(answer, phrase):
    assert_fails(run("ch11_bf16_autocast", answer), phrase)


# --- 6. gradient accumulation ------------------------------------------------------------------------


def accumulate_reference(model, x, y, k):
    model.zero_grad()
    for xs, ys in zip(x.tensor_split(k), y.tensor_split(k), strict=True):
        _, loss = model(xs, ys)
        (loss * len(xs) / len(x)).backward()


def accumulate_summed_tokens(model, x, y, k):
    """Correct differently: sum of per-token losses over the whole batch's token count."""
    for p in model.parameters():
        p.grad = None
    for xs, ys in zip(x.tensor_split(k), y.tensor_split(k), strict=True):
        logits, _ = model(xs)
        loss = F.cross_entropy(logits.flatten(0, 1), ys.flatten(), reduction="sum")
        (loss / y.numel()).backward()


def accumulate_no_division(model, x, y, k):
    """The loss-scale mistake: k micro-batch means summed, never divided."""
    model.zero_grad()
    for xs, ys in zip(x.chunk(k), y.chunk(k), strict=True):
        model(xs, ys)[1].backward()


def accumulate_drops_last(model, x, y, k):
    model.zero_grad()
    pieces = list(zip(x.tensor_split(k), y.tensor_split(k), strict=True))
    for xs, ys in pieces[:-1]:
        (model(xs, ys)[1] / k).backward()


def accumulate_zero_inside(model, x, y, k):
    for xs, ys in zip(x.tensor_split(k), y.tensor_split(k), strict=True):
        model.zero_grad()
        (model(xs, ys)[1] / k).backward()


def accumulate_equal_weights(model, x, y, k):
    model.zero_grad()
    for xs, ys in zip(x.tensor_split(k), y.tensor_split(k), strict=True):
        (model(xs, ys)[1] / k).backward()


def test_accumulation_reference_and_alternative_pass():
    result = run("ch11_grad_accumulation", accumulate_reference)
    assert result.passed, result.message
    assert run("ch11_grad_accumulation", accumulate_summed_tokens).passed


@pytest.mark.parametrize(
    "answer, phrase",
    [
        (accumulate_no_division, "times too large"),
        (accumulate_drops_last, "leave out the last micro-batch"),
        (accumulate_zero_inside, "only the last micro-batch"),
        (accumulate_equal_weights, "unequal size"),
        (lambda m, x, y, k: None, "no gradients"),
    ],
)
def test_accumulation_mistakes(answer, phrase, no_timing):
    assert_fails(run("ch11_grad_accumulation", answer), phrase)


# --- every exercise ---------------------------------------------------------------------------------


@pytest.mark.parametrize("exercise_id", gu.exercises.ids("11_training_in_practice"))
def test_stub_and_non_function_never_raise(exercise_id):
    def stub(*args):
        raise NotImplementedError()

    result = run(exercise_id, stub)
    assert not result.passed and not result.attempted, result.message
    assert_fails(run(exercise_id, 42), "Expected a function")

    def broken(*args):
        raise ValueError("boom")

    assert_fails(run(exercise_id, broken), "ValueError: boom")


def test_no_speed_up_is_said_honestly_and_still_passes(monkeypatch):
    monkeypatch.setattr(
        capstone, "_interleaved", lambda fns, repeat=5: {"baseline": 1.0, "yours": 1.0}
    )
    result = run("ch11_fused_loss", loss_log_softmax)
    assert result.passed
    assert "1.00x" in result.message and "not held against you" in result.message


def test_check_runs_in_the_worker_process():
    result = gu.exercises.check("ch11_fused_loss", loss_log_softmax, timeout=300)
    assert result.passed, result.message
