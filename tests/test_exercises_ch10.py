"""Checkers of lab 10: tensor-parallel layers and MLP written differently from the solutions
pass; common mistakes (a missing all-reduce, a bias added on every rank, the wrong dimension
split, a missing f, gradients all-reduced like data parallelism, full weights kept) fail with
their own hint; 1F1B schedules are checked against the rules of a pipeline; the questions
accept the answer and explain the usual wrong ones."""

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

import gpu_utils as gu
from gpu_utils import pipeline
from gpu_utils.exercises import ch10_model_parallel

check = gu.exercises.check
tp = gu.tensor_parallel


def run(exercise_id, answer):
    """The checker's verdict, computed in this process (faster than a check's worker)."""
    return gu.exercises.get(exercise_id).run(answer)


def bounds(n, rank, world_size):
    """tensor_split's bounds, computed differently from gu.tensor_parallel.shard."""
    sizes = [len(part) for part in torch.arange(n).tensor_split(world_size)]
    start = sum(sizes[:rank])
    return start, start + sizes[rank]


class AllReduceGrad(torch.autograd.Function):
    """f written by hand: identity forward, all-reduce backward."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


# --- column_parallel_linear -------------------------------------------------------------------


def column_reference(x, weight, bias, rank, world_size):
    return tp.column_parallel_linear(x, weight, bias, rank, world_size)


def column_hook(x, weight, bias, rank, world_size):
    """Correct differently: tensor_split of the weight, f as a gradient hook on a copy."""
    w = weight.tensor_split(world_size)[rank]
    b = bias.tensor_split(world_size)[rank]
    x = x * 1.0
    x.register_hook(lambda g: (dist.all_reduce(g := g.clone()), g)[1])
    return x @ w.T + b


def column_autograd_function(x, weight, bias, rank, world_size):
    lo, hi = bounds(weight.shape[0], rank, world_size)
    return F.linear(AllReduceGrad.apply(x), weight[lo:hi], bias[lo:hi])


def column_no_f(x, weight, bias, rank, world_size):
    lo, hi = bounds(weight.shape[0], rank, world_size)
    return F.linear(x, weight[lo:hi], bias[lo:hi])


def column_chunk(x, weight, bias, rank, world_size):
    w, b = weight.chunk(world_size)[rank], bias.chunk(world_size)[rank]
    return F.linear(tp.copy_to_parallel(x), w, b)


def column_wrong_dimension(x, weight, bias, rank, world_size):
    lo, hi = bounds(weight.shape[1], rank, world_size)
    return F.linear(tp.copy_to_parallel(x), weight[:, lo:hi], bias)


def column_whole_bias(x, weight, bias, rank, world_size):
    lo, hi = bounds(weight.shape[0], rank, world_size)
    return F.linear(tp.copy_to_parallel(x), weight[lo:hi]) + bias


def column_no_bias(x, weight, bias, rank, world_size):
    lo, hi = bounds(weight.shape[0], rank, world_size)
    return F.linear(tp.copy_to_parallel(x), weight[lo:hi])


def column_full_output(x, weight, bias, rank, world_size):
    return F.linear(x, weight, bias)


def column_detached(x, weight, bias, rank, world_size):
    lo, hi = bounds(weight.shape[0], rank, world_size)
    return F.linear(tp.copy_to_parallel(x), weight[lo:hi].detach(), bias[lo:hi].detach())


def column_none(x, weight, bias, rank, world_size):
    F.linear(x, weight, bias)


def column_deadlock(x, weight, bias, rank, world_size):
    if rank == 0:
        dist.recv(torch.empty(1), src=1)  # rank 1 never sends
    return tp.column_parallel_linear(x, weight, bias, rank, world_size)


@pytest.mark.parametrize(
    "answer", [column_reference, column_hook, column_autograd_function], ids=lambda f: f.__name__
)
def test_column_parallel_accepts_correct_answers(answer):
    result = run("column_parallel_linear", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint",
    [
        (column_no_f, "copy_to_parallel"),
        (column_chunk, "not with chunk"),
        (column_wrong_dimension, "cuts weight by rows"),
        (column_whole_bias, "cuts weight by rows (dim 0, the output features) and bias"),
        (column_no_bias, "the bias is missing"),
        (column_full_output, "you returned all output features"),
        (column_detached, "without .detach()"),
        (column_none, "returned None"),
    ],
    ids=lambda v: getattr(v, "__name__", "hint"),
)
def test_column_parallel_rejects_mistakes_with_their_hint(answer, hint):
    result = run("column_parallel_linear", answer)
    assert not result.passed
    assert hint in result.message, result.message


def test_a_deadlock_ends_with_a_message(monkeypatch):
    monkeypatch.setattr(ch10_model_parallel, "RUN_TIMEOUT", 6.0)
    monkeypatch.setattr(ch10_model_parallel, "SLOW_TIMEOUT", 20.0)
    result = run("column_parallel_linear", column_deadlock)
    assert not result.passed
    assert "had not finished" in result.message, result.message
    assert "rank 0: waiting in dist.recv, called from column_deadlock" in result.message


def test_the_checker_process_runs_ranks_and_passes_a_correct_answer():
    result = check("column_parallel_linear", column_hook)
    assert result.passed, result.message


# --- row_parallel_linear ----------------------------------------------------------------------


def row_reference(x_part, weight, bias, rank, world_size):
    return tp.row_parallel_linear(x_part, weight, bias, rank, world_size)


def row_raw_all_reduce(x_part, weight, bias, rank, world_size):
    """Correct differently: dist.all_reduce in place (g's backward is the identity anyway)."""
    lo, hi = bounds(weight.shape[1], rank, world_size)
    partial = x_part @ weight[:, lo:hi].T
    dist.all_reduce(partial)
    return partial + bias


class SumForward(torch.autograd.Function):
    """g written by hand: all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx, x):
        out = x.clone()
        dist.all_reduce(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad


def row_hand_written_g(x_part, weight, bias, rank, world_size):
    """Correct differently: tensor_split of the weight, g written by hand, bias via F.linear's
    broadcasting on the summed result."""
    w = weight.tensor_split(world_size, dim=1)[rank]
    return SumForward.apply(x_part @ w.T) + bias.unsqueeze(0)


def row_bias_on_rank_zero(x_part, weight, bias, rank, world_size):
    """Right output, but only rank 0's copy of the bias is trained."""
    w = weight.tensor_split(world_size, dim=1)[rank]
    partial = F.linear(x_part, w, bias if rank == 0 else None)
    return tp.reduce_from_parallel(partial)


def row_torch_nn_all_reduce(x_part, weight, bias, rank, world_size):
    """torch.distributed.nn's all_reduce also all-reduces the gradient in backward."""
    import torch.distributed.nn.functional as dist_fn

    lo, hi = bounds(weight.shape[1], rank, world_size)
    return dist_fn.all_reduce(F.linear(x_part, weight[:, lo:hi])) + bias


def row_no_all_reduce(x_part, weight, bias, rank, world_size):
    lo, hi = bounds(weight.shape[1], rank, world_size)
    return F.linear(x_part, weight[:, lo:hi], bias)


def row_bias_every_rank(x_part, weight, bias, rank, world_size):
    lo, hi = bounds(weight.shape[1], rank, world_size)
    return tp.reduce_from_parallel(F.linear(x_part, weight[:, lo:hi], bias))


def row_wrong_dimension(x_part, weight, bias, rank, world_size):
    lo, hi = bounds(weight.shape[0], rank, world_size)
    return tp.reduce_from_parallel(F.linear(x_part, weight[lo:hi])) + bias


def row_chunk(x_part, weight, bias, rank, world_size):
    w = weight.chunk(world_size, dim=1)[rank]
    return tp.reduce_from_parallel(F.linear(x_part, w)) + bias


def row_mean(x_part, weight, bias, rank, world_size):
    lo, hi = bounds(weight.shape[1], rank, world_size)
    return tp.reduce_from_parallel(F.linear(x_part, weight[:, lo:hi])) / world_size + bias


class AllReduceBothWays(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


def row_all_reduce_backward_too(x_part, weight, bias, rank, world_size):
    lo, hi = bounds(weight.shape[1], rank, world_size)
    return AllReduceBothWays.apply(F.linear(x_part, weight[:, lo:hi])) + bias


def row_stub(x_part, weight, bias, rank, world_size):
    raise NotImplementedError()


@pytest.mark.parametrize(
    "answer", [row_reference, row_raw_all_reduce, row_hand_written_g], ids=lambda f: f.__name__
)
def test_row_parallel_accepts_correct_answers(answer):
    result = run("row_parallel_linear", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint",
    [
        (row_no_all_reduce, "their sum over the ranks is the answer"),
        (row_bias_every_rank, "the bias was added on every rank"),
        (row_wrong_dimension, "cuts weight by columns (dim 1"),
        (row_chunk, "chunk and a fixed width give other sizes"),
        (row_mean, "you averaged"),
        (row_all_reduce_backward_too, "the identity backward"),
        (row_torch_nn_all_reduce, "the identity backward"),
        (row_bias_on_rank_zero, "bias got no gradient on rank 1"),
    ],
    ids=lambda v: getattr(v, "__name__", "hint"),
)
def test_row_parallel_rejects_mistakes_with_their_hint(answer, hint):
    result = run("row_parallel_linear", answer)
    assert not result.passed
    assert hint in result.message, result.message


def test_a_stub_is_not_attempted():
    result = run("row_parallel_linear", row_stub)
    assert not result.attempted and "not attempted yet" in result.message


def test_a_function_with_the_wrong_arguments_is_told_so():
    result = run("row_parallel_linear", lambda x, w: x)
    assert "(x_part, weight, bias, rank, world_size)" in result.message


def test_the_deadlock_timeout_fits_in_a_check():
    c = ch10_model_parallel
    needed = c.START_TIMEOUT + c.RUN_TIMEOUT * len(c.WORLD_SIZES)
    for exercise_id in ("column_parallel_linear", "row_parallel_linear", "tensor_parallel_mlp"):
        assert needed < gu.exercises.get(exercise_id).time_limit


# --- tensor_parallel_mlp ----------------------------------------------------------------------


class MLPReference(torch.nn.Module):
    def __init__(self, fc1, fc2, rank, world_size):
        super().__init__()
        self.inner = tp.ParallelMLP(fc1, fc2, rank, world_size)

    def forward(self, x):
        return self.inner(x)


class MLPLinears(torch.nn.Module):
    """Correct differently: nn.Linear shards, f as an autograd Function, raw all-reduce as g."""

    def __init__(self, fc1, fc2, rank, world_size):
        super().__init__()
        lo, hi = bounds(fc1.out_features, rank, world_size)
        self.up = torch.nn.Linear(fc1.in_features, hi - lo)
        self.down = torch.nn.Linear(hi - lo, fc2.out_features, bias=False)
        self.bias = torch.nn.Parameter(fc2.bias.detach().clone())
        with torch.no_grad():
            self.up.weight.copy_(fc1.weight[lo:hi])
            self.up.bias.copy_(fc1.bias[lo:hi])
            self.down.weight.copy_(fc2.weight[:, lo:hi])

    def forward(self, x):
        partial = self.down(F.gelu(self.up(AllReduceGrad.apply(x))))
        dist.all_reduce(partial)
        return partial + self.bias


class MLPNoAllReduce(torch.nn.Module):
    def __init__(self, fc1, fc2, rank, world_size):
        super().__init__()
        self.inner = tp.ParallelMLP(fc1, fc2, rank, world_size)

    def forward(self, x):
        m = self.inner
        h = F.gelu(F.linear(tp.copy_to_parallel(x), m.w1, m.b1))
        return F.linear(h, m.w2) + m.b2


class MLPBiasEveryRank(MLPNoAllReduce):
    def forward(self, x):
        m = self.inner
        h = F.gelu(F.linear(tp.copy_to_parallel(x), m.w1, m.b1))
        return tp.reduce_from_parallel(F.linear(h, m.w2, m.b2))


class MLPNoF(MLPNoAllReduce):
    def forward(self, x):
        m = self.inner
        h = F.gelu(F.linear(x, m.w1, m.b1))
        return tp.reduce_from_parallel(F.linear(h, m.w2)) + m.b2


class MLPDataParallelGrads(MLPReference):
    """All-reduces the shards' gradients, as data parallelism would."""

    def __init__(self, fc1, fc2, rank, world_size):
        super().__init__(fc1, fc2, rank, world_size)
        for p in self.parameters():
            p.register_hook(lambda g: (dist.all_reduce(g := g.clone()), g)[1])


class MLPDataParallelGradsUneven(MLPReference):
    """The same mistake, met first where the shards' sizes differ (3 ranks, hidden 10)."""

    def __init__(self, fc1, fc2, rank, world_size):
        super().__init__(fc1, fc2, rank, world_size)
        if fc1.out_features % world_size:
            for p in self.parameters():
                p.register_hook(lambda g: (dist.all_reduce(g := g.clone()), g)[1])


class MLPFullWeights(torch.nn.Module):
    """Right numbers, but every rank keeps the whole layers."""

    def __init__(self, fc1, fc2, rank, world_size):
        super().__init__()
        self.fc1, self.fc2, self.rank, self.n = fc1, fc2, rank, world_size

    def forward(self, x):
        lo, hi = bounds(self.fc1.out_features, self.rank, self.n)
        h = F.gelu(F.linear(tp.copy_to_parallel(x), self.fc1.weight[lo:hi], self.fc1.bias[lo:hi]))
        return tp.reduce_from_parallel(F.linear(h, self.fc2.weight[:, lo:hi])) + self.fc2.bias


class MLPFrozenShards(MLPReference):
    """Shards kept as plain tensors: right before training, never updated."""

    def __init__(self, fc1, fc2, rank, world_size):
        super().__init__(fc1, fc2, rank, world_size)
        self.scale = torch.nn.Parameter(torch.ones(()))
        for p in self.inner.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        return self.inner(x) * self.scale


class MLPNotModule:
    def __init__(self, fc1, fc2, rank, world_size):
        pass


@pytest.mark.parametrize("answer", [MLPReference, MLPLinears], ids=lambda f: f.__name__)
def test_tensor_parallel_mlp_accepts_correct_answers(answer):
    result = run("tensor_parallel_mlp", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint",
    [
        (MLPNoAllReduce, "their sum over the ranks is the answer"),
        (MLPBiasEveryRank, "the bias was added on every rank"),
        (MLPNoF, "copy_to_parallel"),
        (MLPDataParallelGrads, "that is data parallelism"),
        (MLPDataParallelGradsUneven, "all-reduce only tensors whose shape is the same"),
        (MLPFullWeights, "keeps only its shard"),
        (MLPFrozenShards, "though right before them"),
        (MLPNotModule, "torch.nn.Module"),
    ],
    ids=lambda v: getattr(v, "__name__", "hint"),
)
def test_tensor_parallel_mlp_rejects_mistakes_with_their_hint(answer, hint):
    result = run("tensor_parallel_mlp", answer)
    assert not result.passed
    assert hint in result.message, result.message


# --- one_f_one_b ------------------------------------------------------------------------------


def schedule_reference(p, m):
    return pipeline.one_f_one_b(p, m)


def schedule_by_merging(p, m):
    """Correct differently: merge forwards and backwards by a key, B_j after F_(j + p - s - 1)."""
    stages = []
    for s in range(p):
        ops = [(i, ("F", i)) for i in range(m)] + [(j + p - s - 0.5, ("B", j)) for j in range(m)]
        stages.append([op for _, op in sorted(ops)])
    return stages


def schedule_gpipe(p, m):
    return pipeline.gpipe(p, m)


def schedule_backward_first(p, m):
    return [[op for i in range(m) for op in (("B", i), ("F", i))] for _ in range(p)]


def schedule_deadlocks(p, m):
    stages = pipeline.one_f_one_b(p, m)
    stages[0] = [op for i in range(m) for op in (("F", i), ("B", i))]
    return stages


def schedule_no_warmup(p, m):
    """Valid but slow: stage s runs only one warm-up forward less than it needs... on the last
    stage only the order differs, so use one warm-up forward everywhere."""
    stages = []
    for s in range(p):
        warm = min(1 if s < p - 1 else 0, m)
        ops = [("F", i) for i in range(warm)]
        for i in range(m - warm):
            ops += [("F", warm + i), ("B", i)]
        ops += [("B", i) for i in range(m - warm, m)]
        stages.append(ops)
    return stages


def schedule_missing_backward(p, m):
    stages = pipeline.one_f_one_b(p, m)
    stages[-1] = stages[-1][:-1]
    return stages


def schedule_strings(p, m):
    return [[f"{kind}{i}" for kind, i in ops] for ops in pipeline.one_f_one_b(p, m)]


def schedule_stub(p, m):
    raise NotImplementedError()


@pytest.mark.parametrize("answer", [schedule_reference, schedule_by_merging])
def test_one_f_one_b_accepts_correct_answers(answer):
    result = run("one_f_one_b", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint",
    [
        (schedule_gpipe, "that is GPipe's order"),
        (schedule_backward_first, "before its forward"),
        (schedule_deadlocks, "cannot run: device 0 waits to run B0 until B0 on device 1"),
        (schedule_no_warmup, "devices wait longer than they need to"),
        (schedule_missing_backward, "never runs the backward of micro-batch"),
        (schedule_strings, "each operation is ('F', i) or ('B', i)"),
        (lambda p, m: None, "returned None"),
    ],
    ids=lambda v: getattr(v, "__name__", "hint"),
)
def test_one_f_one_b_rejects_mistakes_with_their_hint(answer, hint):
    result = run("one_f_one_b", answer)
    assert not result.passed
    assert hint in result.message, result.message


def test_one_f_one_b_stub_is_not_attempted():
    assert not run("one_f_one_b", schedule_stub).attempted


# --- the pipeline module --------------------------------------------------------------------


@pytest.mark.parametrize("p, m", [(2, 3), (4, 8), (8, 8), (4, 1), (5, 13)])
def test_simulated_bubble_matches_the_formula(p, m):
    for schedule in (pipeline.gpipe(p, m), pipeline.one_f_one_b(p, m)):
        timeline = pipeline.simulate(schedule, 1.0, 2.0)
        assert timeline.bubble() == pytest.approx(pipeline.bubble_fraction(p, m))
        assert timeline.makespan == pytest.approx(3 * (m + p - 1))
    assert max(pipeline.in_flight(pipeline.one_f_one_b(p, m))) == min(p, m)
    assert max(pipeline.in_flight(pipeline.gpipe(p, m))) == m


@pytest.mark.parametrize("p, m, v", [(2, 4, 2), (4, 8, 2), (4, 8, 4), (3, 6, 3)])
def test_interleaving_divides_the_bubble_by_v(p, m, v):
    timeline = pipeline.simulate(pipeline.interleaved(p, m, v))
    assert timeline.bubble() == pytest.approx(pipeline.bubble_fraction(p, m, v))
    assert timeline.makespan == pytest.approx(3 * m + 3 * (p - 1) / v)


# --- questions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exercise_id, right, wrong, hint",
    [
        ("pipeline_bubble_share", 7 / 31, 7 / 24, "relative to the ideal time"),
        ("pipeline_bubble_share", 7 / 31, 0.875, "single micro-batch"),
        ("pipeline_bubble_share", 7 / 31, 24 / 31, "busy fraction"),
        ("micro_batches_for_bubble", 285, 300, "(p - 1)/m at 5%"),
        ("micro_batches_for_bubble", 285, 284, "m >= 15/0.05 - 15"),
        ("micro_batches_for_bubble", 285, 304, "the pipeline fills in p - 1 steps"),
        ("interleaved_bubble_share", 7 / 71, 7 / 23, "without interleaving"),
        ("interleaved_bubble_share", 7 / 71, 7 / 64, "relative to the ideal time"),
        ("interleaved_bubble_share", 7 / 71, 7 / 92, "compute time is not"),
        # Korthikanti et al. 2022, Table 2, GPT-3 175B: sbh(34/t + 5as/(ht)), t = 8
        ("sequence_parallel_activations", 358.6, 578.8, "without sequence parallelism"),
        ("sequence_parallel_activations", 358.6, 2868.9, "without any parallelism"),
        ("sequence_parallel_activations", 358.6, 106.95, "selective recomputation"),
        ("min_pipeline_stages", 10, 9.43, "round up"),
        ("min_pipeline_stages", 10, 11, "80 GiB"),
        ("min_pipeline_stages", 10, 76, "already divides the model by 8"),
        ("min_pipeline_stages", 10, 2, "16 bytes per parameter"),
    ],
)
def test_questions(exercise_id, right, wrong, hint):
    assert run(exercise_id, lambda: right).passed
    result = run(exercise_id, lambda: wrong)
    assert not result.passed and hint in result.message, result.message


def test_activation_answer_agrees_with_gu_memory():
    value = gu.memory.activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, sequence_parallel=True)
    assert run("sequence_parallel_activations", lambda: value / 1e6).passed


def test_stage_answer_agrees_with_gu_memory():
    hbm = gu.specs.get("H100-SXM").hbm_bytes
    states = int(gu.memory.model_state_bytes(405e9))
    stages = next(pp for pp in range(1, 100) if states / 8 / pp <= hbm)
    assert run("min_pipeline_stages", lambda: stages).passed
