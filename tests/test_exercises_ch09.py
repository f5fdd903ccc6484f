"""Checkers of lab 09: data-parallel code written differently from the solutions passes; common
mistakes fail with their own hint (which rank, which parameter, which bucket); a deadlock ends
with a message; odd returns give a message, not a traceback; the memory questions accept the
answer and explain the usual wrong ones."""

import pytest
import torch
import torch.distributed as dist

import gpu_utils as gu
from gpu_utils.exercises import ch09_data_parallel

check = gu.exercises.check


def run(exercise_id, answer):
    """The checker's verdict, computed in this process (faster than a check's worker)."""
    return gu.exercises.get(exercise_id).run(answer)


# --- average_gradients ------------------------------------------------------------------------


def average_reference(model, world_size):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world_size


def average_divide_first_flat(model, world_size):
    """Correct differently: divide first, then one all-reduce of all gradients, copied back."""
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    flat = torch.cat([g.reshape(-1) for g in grads]) / world_size
    dist.all_reduce(flat)
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()


def average_sum(model, world_size):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)


def average_forgets_frozen(model, world_size):
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world_size


def average_tied_divided_twice(model, world_size):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
    for module in model.modules():
        for p in module.parameters(recurse=False):
            if p.grad is not None:
                p.grad /= world_size


def average_only_rank_zero(model, world_size):
    if dist.get_rank() == 0:
        for p in model.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= world_size


def average_nothing(model, world_size):
    return None


def average_zero_grad_for_frozen(model, world_size):
    for p in model.parameters():
        if p.grad is None:
            p.grad = torch.ones_like(p)
        dist.all_reduce(p.grad)
        p.grad /= world_size


def average_wrong_shape(model, world_size):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad = (p.grad / world_size).reshape(-1)


def average_grad_none(model, world_size):
    for p in model.parameters():
        p.grad = None


@pytest.mark.parametrize("answer", [average_reference, average_divide_first_flat])
def test_average_gradients_accepts_correct_answers(answer):
    result = run("average_gradients", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint",
    [
        (average_sum, "you summed"),
        (average_forgets_frozen, "frozen parameter (requires_grad=False) has no gradient"),
        (average_tied_divided_twice, "the tied weight was divided twice"),
        (average_nothing, "nothing was all-reduced"),
        (average_zero_grad_for_frozen, "the frozen parameter `frozen.weight` has a gradient"),
        (average_wrong_shape, "must keep the shape of its parameter"),
        (average_grad_none, "gradient is None on rank 0"),
    ],
)
def test_average_gradients_rejects_mistakes_with_their_hint(answer, hint):
    result = run("average_gradients", answer)
    assert not result.passed
    assert hint in result.message, result.message


def test_a_collective_on_only_some_ranks_ends_with_a_message(monkeypatch):
    monkeypatch.setattr(ch09_data_parallel, "RUN_TIMEOUT", 4.0)
    result = run("average_gradients", average_only_rank_zero)
    assert not result.passed
    assert "every rank must make the same collective calls" in result.message, result.message


# --- bucketed_allreduce -----------------------------------------------------------------------


def _flush(bucket, world_size):
    flat = torch.cat([g.reshape(-1) for g in bucket])
    dist.all_reduce(flat)
    flat /= world_size
    offset = 0
    for g in bucket:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()


def buckets_reference(model, world_size, bucket_bytes):
    bucket, size = [], 0
    for p in model.parameters():
        if p.grad is None:
            continue
        nbytes = p.grad.numel() * p.grad.element_size()
        if bucket and size + nbytes > bucket_bytes:
            _flush(bucket, world_size)
            bucket, size = [], 0
        bucket.append(p.grad)
        size += nbytes
    if bucket:
        _flush(bucket, world_size)


def buckets_reverse_order(model, world_size, bucket_bytes):
    """Correct differently: buckets in reverse order (as DDP fills them during backward)."""
    grads = [p.grad for p in model.parameters() if p.grad is not None][::-1]
    buckets = [[]]
    for g in grads:
        used = sum(x.numel() * 4 for x in buckets[-1])
        if buckets[-1] and used + g.numel() * 4 > bucket_bytes:
            buckets.append([])
        buckets[-1].append(g)
    for bucket in buckets:
        flat = torch.cat([g.flatten() / world_size for g in bucket])
        dist.all_reduce(flat)
        for g, piece in zip(bucket, flat.split([g.numel() for g in bucket]), strict=True):
            g.copy_(piece.view_as(g))


def buckets_drop_last(model, world_size, bucket_bytes):
    bucket, size = [], 0
    for p in model.parameters():
        if p.grad is None:
            continue
        nbytes = p.grad.numel() * 4
        if bucket and size + nbytes > bucket_bytes:
            _flush(bucket, world_size)
            bucket, size = [], 0
        bucket.append(p.grad)
        size += nbytes


def buckets_one_per_param(model, world_size, bucket_bytes):
    for p in model.parameters():
        if p.grad is not None:
            _flush([p.grad], world_size)


def buckets_one_for_all(model, world_size, bucket_bytes):
    _flush([p.grad for p in model.parameters() if p.grad is not None], world_size)


def buckets_no_copy_back(model, world_size, bucket_bytes):
    bucket, size = [], 0
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    for g in [*grads, None]:
        if g is None or (bucket and size + g.numel() * 4 > bucket_bytes):
            flat = torch.cat([x.reshape(-1) for x in bucket])
            dist.all_reduce(flat)
            flat /= world_size
            bucket, size = [], 0
        if g is not None:
            bucket.append(g)
            size += g.numel() * 4


def buckets_tied_twice(model, world_size, bucket_bytes):
    bucket, size = [], 0
    for module in model.modules():
        for p in module.parameters(recurse=False):
            if p.grad is None:
                continue
            if bucket and size + p.grad.numel() * 4 > bucket_bytes:
                _flush(bucket, world_size)
                bucket, size = [], 0
            bucket.append(p.grad)
            size += p.grad.numel() * 4
    if bucket:
        _flush(bucket, world_size)


def buckets_sum(model, world_size, bucket_bytes):
    buckets_reference(model, 1, bucket_bytes)


@pytest.mark.parametrize("answer", [buckets_reference, buckets_reverse_order])
def test_bucketed_allreduce_accepts_correct_answers(answer):
    result = run("bucketed_allreduce", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint",
    [
        (buckets_drop_last, "the last bucket is usually not full"),
        (buckets_one_per_param, "one all-reduce per gradient"),
        (buckets_one_for_all, "a bucket holds at most bucket_bytes"),
        (buckets_no_copy_back, "copy its pieces back"),
        (buckets_tied_twice, "the tied weight (embedding = output layer) travelled twice"),
        (buckets_sum, "you summed"),
    ],
)
def test_bucketed_allreduce_rejects_mistakes_with_their_hint(answer, hint):
    result = run("bucketed_allreduce", answer)
    assert not result.passed
    assert hint in result.message, result.message


# --- zero1_optimizer --------------------------------------------------------------------------


class ZeroReference:
    def __init__(self, params, rank, world_size, lr):
        self.params = [p for p in params if p.requires_grad]
        self.rank, self.world_size = rank, world_size
        self.size = -(-sum(p.numel() for p in self.params) // world_size)  # padded shard
        flat = self.flatten([p.detach() for p in self.params])
        self.shard = flat[rank * self.size : (rank + 1) * self.size].clone().requires_grad_(True)
        self.optimizer = torch.optim.Adam([self.shard], lr=lr)

    def flatten(self, tensors):
        flat = torch.cat([t.reshape(-1) for t in tensors])
        return torch.nn.functional.pad(flat, (0, self.size * self.world_size - flat.numel()))

    def average(self):
        grad = self.flatten([p.grad for p in self.params])
        dist.all_reduce(grad)
        return grad / self.world_size

    def write_back(self, flat):
        offset = 0
        with torch.no_grad():
            for p in self.params:
                p.copy_(flat[offset : offset + p.numel()].view_as(p))
                offset += p.numel()

    def step(self):
        grad = self.average()
        self.shard.grad = grad[self.rank * self.size : (self.rank + 1) * self.size].clone()
        self.optimizer.step()
        full = torch.empty(self.size * self.world_size)
        dist.all_gather_into_tensor(full, self.shard.detach())
        self.write_back(full)


class ZeroPerParameter:
    """Correct differently: whole parameters assigned to ranks, broadcast from their owner."""

    def __init__(self, params, rank, world_size, lr):
        self.params = [p for p in params if p.requires_grad]
        self.owner = [i % world_size for i in range(len(self.params))]
        mine = [p for p, o in zip(self.params, self.owner, strict=True) if o == rank]
        self.world_size = world_size
        self.optimizer = torch.optim.Adam(mine, lr=lr) if mine else None

    def step(self):
        for p in self.params:
            dist.all_reduce(p.grad)
            p.grad /= self.world_size
        if self.optimizer:
            self.optimizer.step()
        for p, owner in zip(self.params, self.owner, strict=True):
            dist.broadcast(p.data, src=owner)


class ZeroReduceScatter(ZeroReference):
    """Correct differently: reduce-scatter the gradients, as ZeRO does (half the bytes)."""

    def step(self):
        grads = self.flatten([p.grad for p in self.params])
        mine = torch.empty(self.size)
        dist.reduce_scatter_tensor(mine, grads)
        self.shard.grad = mine / self.world_size
        self.optimizer.step()
        full = torch.empty(self.size * self.world_size)
        dist.all_gather_into_tensor(full, self.shard.detach())
        self.write_back(full)


class ZeroNeverSyncs(ZeroReference):
    def step(self):
        grad = self.average()
        self.shard.grad = grad[self.rank * self.size : (self.rank + 1) * self.size].clone()
        self.optimizer.step()
        flat = self.flatten([p.detach() for p in self.params])
        flat[self.rank * self.size : (self.rank + 1) * self.size] = self.shard.detach()
        self.write_back(flat)


class ZeroNotSharded:
    def __init__(self, params, rank, world_size, lr):
        self.params = [p for p in params if p.requires_grad]
        self.world_size = world_size
        self.optimizer = torch.optim.Adam(self.params, lr=lr)

    def step(self):
        for p in self.params:
            dist.all_reduce(p.grad)
            p.grad /= self.world_size
        self.optimizer.step()


class ZeroLocalGradients(ZeroReference):
    def average(self):
        return self.flatten([p.grad for p in self.params])


class ZeroUnpaddedAllGather(ZeroReference):
    """Shards of unequal size (tensor_split) gathered with gloo, which needs equal sizes."""

    def step(self):
        grad = self.average()
        self.shard.grad = grad[self.rank * self.size : (self.rank + 1) * self.size].clone()
        self.optimizer.step()
        total = sum(p.numel() for p in self.params)
        pieces = [
            torch.empty(len(c)) for c in torch.tensor_split(torch.empty(total), self.world_size)
        ]
        dist.all_gather(pieces, pieces[self.rank].clone())
        self.write_back(torch.cat(pieces))


class ZeroDropsRemainder(ZeroReference):
    """Shards of numel // world_size elements: the remainder belongs to nobody."""

    def __init__(self, params, rank, world_size, lr):
        self.params = [p for p in params if p.requires_grad]
        self.world_size, self.rank = world_size, rank
        flat = torch.cat([p.detach().reshape(-1) for p in self.params])
        self.size = flat.numel() // world_size
        self.shard = flat[rank * self.size : (rank + 1) * self.size].clone().requires_grad_(True)
        self.optimizer = torch.optim.Adam([self.shard], lr=lr)

    def step(self):
        grad = torch.cat([p.grad.reshape(-1) for p in self.params])
        dist.all_reduce(grad)
        grad /= self.world_size
        self.shard.grad = grad[self.rank * self.size : (self.rank + 1) * self.size].clone()
        self.optimizer.step()
        gathered = torch.empty(self.size * self.world_size)
        dist.all_gather_into_tensor(gathered, self.shard.detach())
        flat = torch.cat([p.detach().reshape(-1) for p in self.params])
        flat[: gathered.numel()] = gathered
        offset = 0
        with torch.no_grad():
            for p in self.params:
                p.copy_(flat[offset : offset + p.numel()].view_as(p))
                offset += p.numel()


class ZeroOwnerBroadcastsOnly(ZeroPerParameter):
    def step(self):
        rank = dist.get_rank()
        for p in self.params:
            dist.all_reduce(p.grad)
            p.grad /= self.world_size
        if self.optimizer:
            self.optimizer.step()
        for p, owner in zip(self.params, self.owner, strict=True):
            if owner == rank:
                dist.broadcast(p.data, src=owner)


class ZeroTiedTwice(ZeroPerParameter):
    """Per-module parameters: the tied weight gets an owner (and Adam state) twice."""

    def __init__(self, params, rank, world_size, lr):
        params = [p for p in params if p.requires_grad]
        self.params = [*params, params[0]]  # the embedding (= output layer) listed again
        self.owner = [i % world_size for i in range(len(self.params))]
        self.world_size = world_size
        mine = [p for p, o in zip(self.params, self.owner, strict=True) if o == rank]
        self.optimizer = torch.optim.Adam(mine, lr=lr) if mine else None
        self.shadow = {}

    def step(self):
        seen = set()
        for p in self.params:
            if id(p) not in seen:
                dist.all_reduce(p.grad)
                p.grad /= self.world_size
                seen.add(id(p))
        if self.optimizer:
            self.optimizer.step()
        for p, owner in zip(self.params, self.owner, strict=True):
            dist.broadcast(p.data, src=owner)


class ZeroWithoutStep:
    def __init__(self, params, rank, world_size, lr):
        pass


def zero_returns_none(params, rank, world_size, lr):
    return None


@pytest.mark.parametrize("answer", [ZeroReference, ZeroPerParameter, ZeroReduceScatter])
def test_zero1_accepts_correct_answers(answer):
    result = run("zero1_optimizer", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint",
    [
        (ZeroNeverSyncs, "still holds initial values"),
        (ZeroNotSharded, "the state is not sharded"),
        (ZeroLocalGradients, "with the MEAN gradient"),
        (ZeroDropsRemainder, "were never updated"),
        (ZeroUnpaddedAllGather, "pad the flat vector"),
        (ZeroTiedTwice, "count the tied weight once"),
        (ZeroWithoutStep, "has no step() method"),
        (zero_returns_none, "gave a NoneType"),
    ],
)
def test_zero1_rejects_mistakes_with_their_hint(answer, hint):
    result = run("zero1_optimizer", answer)
    assert not result.passed
    assert hint in result.message, result.message


def test_zero1_deadlock_ends_with_a_message(monkeypatch):
    monkeypatch.setattr(ch09_data_parallel, "RUN_TIMEOUT", 4.0)
    result = run("zero1_optimizer", ZeroOwnerBroadcastsOnly)
    assert not result.passed
    assert "every rank must make the same collective calls" in result.message, result.message


# --- odd answers and stubs --------------------------------------------------------------------


def stub(model, world_size):
    raise NotImplementedError()


def test_a_stub_is_not_attempted():
    result = run("average_gradients", stub)
    assert not result.attempted and "not attempted yet" in result.message


@pytest.mark.parametrize(
    "exercise_id, answer, words",
    [
        ("average_gradients", 42, "Expected a function"),
        ("average_gradients", lambda model: None, "must take the arguments (model, world_size)"),
        ("bucketed_allreduce", average_reference, "(model, world_size, bucket_bytes)"),
        ("zero1_optimizer", None, "Expected a class"),
    ],
)
def test_odd_answers_get_a_message(exercise_id, answer, words):
    result = run(exercise_id, answer)
    assert not result.passed
    assert words in result.message, result.message


def test_an_exception_in_a_rank_names_the_rank_and_line():
    def broken(model, world_size):
        raise ValueError("oops")

    result = run("average_gradients", broken)
    assert not result.passed
    assert "rank 0 raised ValueError: oops" in result.message, result.message


def test_the_checker_process_runs_ranks_and_passes_a_correct_answer():
    result = check("average_gradients", average_reference)
    assert result.passed, result.message


def test_the_timeouts_fit_in_a_check():
    c = ch09_data_parallel
    runs = c.STARTUP_TIMEOUT + c.RUN_TIMEOUT * len(c.WORLD_SIZES) + c.SLOW_TIMEOUT
    for exercise_id in ("average_gradients", "bucketed_allreduce", "zero1_optimizer"):
        assert runs < gu.exercises.get(exercise_id).time_limit


# --- memory and traffic -------------------------------------------------------------------------

PSI, N = 7.5e9, 64


@pytest.mark.parametrize(
    "exercise_id, right, wrong, hint",
    [
        ("zero2_memory_gb", 16.64, 120.0, "plain data parallelism"),
        ("zero2_memory_gb", 16.6, 31.41, "that is ZeRO-1"),
        ("zero2_memory_gb", 16.64, 1.875, "that is ZeRO-3"),
        ("zero2_memory_gb", 16.64, 15.5, "GiB"),
        ("zero3_traffic_gb", 44.3, 29.53, "data parallelism's all-reduce"),
        ("zero3_traffic_gb", 44.3, 45.0, "(n - 1)/n"),
        ("zero3_traffic_gb", 44.3, 88.59, "2 bytes"),
        ("zero3_traffic_gb", 44.3, 14.77, "that is one all-gather"),
    ],
)
def test_memory_questions(exercise_id, right, wrong, hint):
    assert run(exercise_id, lambda: right).passed
    result = run(exercise_id, lambda: wrong)
    assert not result.passed
    assert hint in result.message, result.message


def test_memory_answers_agree_with_gu_memory():
    zero2 = gu.memory.model_state_bytes(PSI, dp=N, zero_stage=2)
    assert run("zero2_memory_gb", lambda: int(zero2) / 1e9).passed
    stage0 = gu.memory.model_state_bytes(PSI, dp=N, zero_stage=0)
    assert "plain data parallelism" in run("zero2_memory_gb", lambda: int(stage0) / 1e9).message
    ring = gu.collectives.bus_bandwidth_factor("all_gather", N)
    assert run("zero3_traffic_gb", lambda: 3 * 2 * PSI * ring / 1e9).passed


# --- gu.data_parallel, the pieces the checkers and chapter 09 share ------------------------------


@pytest.mark.parametrize("numel, world_size", [(241, 2), (241, 3), (241, 4), (8, 4), (3, 4)])
def test_shard_range_cuts_like_tensor_split(numel, world_size):
    pieces = torch.tensor_split(torch.arange(numel), world_size)
    for rank, piece in enumerate(pieces):
        start, stop = gu.data_parallel.shard_range(numel, rank, world_size)
        assert torch.equal(torch.arange(start, stop), piece)


def test_tiny_lm_has_the_awkward_cases_and_the_same_weights_everywhere():
    a, b = gu.data_parallel.TinyLM(seed=3), gu.data_parallel.TinyLM(seed=3)
    assert a.head.weight is a.embed.weight
    assert not any(p.requires_grad for p in a.frozen.parameters())
    trainable = sum(p.numel() for p in a.parameters() if p.requires_grad)
    assert trainable == 241 and all(trainable % n for n in (2, 3, 4))
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q), name
    tokens, targets = gu.data_parallel.batch(0)
    assert (
        tokens.shape == targets.shape == (gu.data_parallel.GLOBAL_BATCH, gu.data_parallel.SEQ_LEN)
    )
    assert torch.equal(tokens[:, 1:], targets[:, :-1])
    assert gu.data_parallel.loss_fn(a, tokens, targets).item() > 0


def test_state_counters_count_adam_moments_not_step_counters():
    model = gu.data_parallel.TinyLM()
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad])
    gu.data_parallel.loss_fn(model, *gu.data_parallel.batch(0)).backward()
    optimizer.step()

    class Holder:
        def __init__(self):
            self.optimizer = optimizer

    assert gu.data_parallel.state_numel(Holder()) == 2 * 241
    assert gu.data_parallel.optimizer_state_bytes(optimizer) == 2 * 241 * 4
    assert gu.data_parallel.state_numel(object()) is None
