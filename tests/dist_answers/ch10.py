"""Lab 10's corpus: column- and row-parallel layers, the tensor-parallel MLP, 1F1B (see
``__init__``)."""

import textwrap

from . import right, wrong

F_HINT = "copy_to_parallel"
G_HINT = "their sum over the ranks is the answer"
BIAS_EVERY = "the bias was added on every rank"
TRANSPOSE = "`x @ w.T`"
DEADLOCK = "every rank must call the same collectives"
LOOP = "never ends on rank"
SPARSE = "in the part this rank uses"

HELPERS = textwrap.indent(
    """
def bounds(n, rank, world_size):
    sizes = [len(part) for part in torch.arange(n).tensor_split(world_size)]
    start = sum(sizes[:rank])
    return start, start + sizes[rank]


class AllReduceGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


class SumForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.clone()
        dist.all_reduce(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad
""",
    " " * 12,
)
TP = "gu.tensor_parallel"

ANSWERS = {
    "column_parallel_linear": [
        right(
            "hook_on_a_copy",
            """
            def column_parallel_linear(x, weight, bias, rank, world_size):
                w = weight.tensor_split(world_size)[rank]
                b = bias.tensor_split(world_size)[rank]
                x = x * 1.0
                x.register_hook(lambda g: (dist.all_reduce(g := g.clone()), g)[1])
                return x @ w.T + b
            """,
        ),
        right(
            "autograd_function",
            HELPERS
            + """
            def column_parallel_linear(x, weight, bias, rank, world_size):
                lo, hi = bounds(weight.shape[0], rank, world_size)
                return F.linear(AllReduceGrad.apply(x), weight[lo:hi], bias[lo:hi])
            """,
        ),
        wrong(
            "no_f",
            "graph",
            F_HINT,
            HELPERS
            + """
            def column_parallel_linear(x, weight, bias, rank, world_size):
                lo, hi = bounds(weight.shape[0], rank, world_size)
                return F.linear(x, weight[lo:hi], bias[lo:hi])
            """,
            absent=(TRANSPOSE, DEADLOCK),
        ),
        wrong(
            "chunk",
            "sharding",
            "not with chunk",
            """
            def column_parallel_linear(x, weight, bias, rank, world_size):
                w, b = weight.chunk(world_size)[rank], bias.chunk(world_size)[rank]
                return F.linear(gu.tensor_parallel.copy_to_parallel(x), w, b)
            """,
        ),
        wrong(
            "missing_transpose",
            "math",
            (TRANSPOSE, "cuts weight by rows"),
            """
            def column_parallel_linear(x, weight, bias, rank, world_size):
                rows = torch.arange(weight.shape[0]).tensor_split(world_size)[rank]
                x = gu.tensor_parallel.copy_to_parallel(x)
                return x @ weight[rows] + bias[rows]
            """,
            absent=(F_HINT, "run your code yourself"),
        ),
        wrong(
            "columns_untransposed",
            "math",
            (TRANSPOSE, "mat1 and mat2 shapes cannot be multiplied", "`return x @ weight"),
            """
            def column_parallel_linear(x, weight, bias, rank, world_size):
                cols = torch.arange(weight.shape[1]).tensor_split(world_size)[rank]
                x = gu.tensor_parallel.copy_to_parallel(x)
                return x @ weight[:, cols] + bias[cols]
            """,
            absent=(F_HINT, "the bias is missing"),
        ),
        wrong(
            "no_bias",
            "math",
            "the bias is missing",
            HELPERS
            + """
            def column_parallel_linear(x, weight, bias, rank, world_size):
                lo, hi = bounds(weight.shape[0], rank, world_size)
                return F.linear(gu.tensor_parallel.copy_to_parallel(x), weight[lo:hi])
            """,
        ),
        wrong(
            "full_output",
            "sharding",
            "you returned all output features",
            """
            def column_parallel_linear(x, weight, bias, rank, world_size):
                return F.linear(x, weight, bias)
            """,
        ),
        wrong(
            "detached",
            "graph",
            "without .detach()",
            HELPERS
            + """
            def column_parallel_linear(x, weight, bias, rank, world_size):
                lo, hi = bounds(weight.shape[0], rank, world_size)
                w, b = weight[lo:hi].detach(), bias[lo:hi].detach()
                return F.linear(gu.tensor_parallel.copy_to_parallel(x), w, b)
            """,
        ),
        wrong(
            "loop_on_rank_1",
            "loop",
            (LOOP, "rank 1", "`while rank > 0:`"),
            """
            def column_parallel_linear(x, weight, bias, rank, world_size):
                while rank > 0:
                    x = x + 0
                return gu.tensor_parallel.column_parallel_linear(x, weight, bias, rank, world_size)
            """,
            absent=(DEADLOCK, "_all_agree"),
        ),
        wrong(
            "recv_never_sent",
            "deadlock",
            ("waiting in dist.recv", DEADLOCK),
            """
            def column_parallel_linear(x, weight, bias, rank, world_size):
                if rank == 0:
                    dist.recv(torch.empty(1), src=1)
                return gu.tensor_parallel.column_parallel_linear(x, weight, bias, rank, world_size)
            """,
            absent=(LOOP,),
            run_timeout=4.0,
        ),
    ],
    "row_parallel_linear": [
        right(
            "raw_all_reduce",
            HELPERS
            + """
            def row_parallel_linear(x_part, weight, bias, rank, world_size):
                lo, hi = bounds(weight.shape[1], rank, world_size)
                partial = x_part @ weight[:, lo:hi].T
                dist.all_reduce(partial)
                return partial + bias
            """,
        ),
        right(
            "hand_written_g",
            HELPERS
            + """
            def row_parallel_linear(x_part, weight, bias, rank, world_size):
                w = weight.tensor_split(world_size, dim=1)[rank]
                return SumForward.apply(x_part @ w.T) + bias.unsqueeze(0)
            """,
        ),
        wrong(
            "no_all_reduce",
            "reduction",
            G_HINT,
            HELPERS
            + """
            def row_parallel_linear(x_part, weight, bias, rank, world_size):
                lo, hi = bounds(weight.shape[1], rank, world_size)
                return F.linear(x_part, weight[:, lo:hi], bias)
            """,
            absent=(BIAS_EVERY,),
        ),
        wrong(
            "bias_every_rank",
            "math",
            BIAS_EVERY,
            HELPERS
            + """
            def row_parallel_linear(x_part, weight, bias, rank, world_size):
                lo, hi = bounds(weight.shape[1], rank, world_size)
                partial = F.linear(x_part, weight[:, lo:hi], bias)
                return gu.tensor_parallel.reduce_from_parallel(partial)
            """,
            absent=(G_HINT,),
        ),
        wrong(
            "bias_divided_every_rank",
            "math",
            ("1/2 of the bias's gradient", "add the whole bias once"),
            HELPERS
            + """
            def row_parallel_linear(x_part, weight, bias, rank, world_size):
                lo, hi = bounds(weight.shape[1], rank, world_size)
                partial = F.linear(x_part, weight[:, lo:hi], bias / world_size)
                return gu.tensor_parallel.reduce_from_parallel(partial)
            """,
            absent=(SPARSE, BIAS_EVERY),
        ),
        wrong(
            "wrong_dimension",
            "sharding",
            "cuts weight by columns (dim 1",
            HELPERS
            + """
            def row_parallel_linear(x_part, weight, bias, rank, world_size):
                lo, hi = bounds(weight.shape[0], rank, world_size)
                partial = F.linear(x_part, weight[lo:hi])
                return gu.tensor_parallel.reduce_from_parallel(partial) + bias
            """,
        ),
        wrong(
            "missing_transpose",
            "math",
            TRANSPOSE,
            HELPERS
            + """
            def row_parallel_linear(x_part, weight, bias, rank, world_size):
                lo, hi = bounds(weight.shape[1], rank, world_size)
                partial = x_part @ weight[:, lo:hi]
                return gu.tensor_parallel.reduce_from_parallel(partial) + bias
            """,
        ),
        wrong(
            "mean",
            "reduction",
            "you averaged",
            HELPERS
            + """
            def row_parallel_linear(x_part, weight, bias, rank, world_size):
                lo, hi = bounds(weight.shape[1], rank, world_size)
                partial = gu.tensor_parallel.reduce_from_parallel(F.linear(x_part, weight[:, lo:hi]))
                return partial / world_size + bias
            """,
        ),
        wrong(
            "all_reduce_backward_too",
            "reduction",
            "the identity backward",
            """
            def row_parallel_linear(x_part, weight, bias, rank, world_size):
                import torch.distributed.nn.functional as dist_fn

                w = weight.tensor_split(world_size, dim=1)[rank]
                return dist_fn.all_reduce(F.linear(x_part, w)) + bias
            """,
        ),
        wrong(
            "bias_on_rank_zero",
            "rank-dependent",
            "bias got no gradient on rank 1",
            """
            def row_parallel_linear(x_part, weight, bias, rank, world_size):
                w = weight.tensor_split(world_size, dim=1)[rank]
                partial = F.linear(x_part, w, bias if rank == 0 else None)
                return gu.tensor_parallel.reduce_from_parallel(partial)
            """,
        ),
    ],
    "tensor_parallel_mlp": [
        right(
            "module_with_parallel_mlp",
            """
            class TensorParallelMLP(torch.nn.Module):
                def __init__(self, fc1, fc2, rank, world_size):
                    super().__init__()
                    self.inner = gu.tensor_parallel.ParallelMLP(fc1, fc2, rank, world_size)

                def forward(self, x):
                    return self.inner(x)
            """,
        ),
        right(
            "linears_and_raw_all_reduce",
            HELPERS
            + """
            class TensorParallelMLP(torch.nn.Module):
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
            """,
        ),
        wrong(
            "no_all_reduce",
            "reduction",
            G_HINT,
            """
            class TensorParallelMLP(torch.nn.Module):
                def __init__(self, fc1, fc2, rank, world_size):
                    super().__init__()
                    self.m = gu.tensor_parallel.ParallelMLP(fc1, fc2, rank, world_size)

                def forward(self, x):
                    m = self.m
                    h = F.gelu(F.linear(gu.tensor_parallel.copy_to_parallel(x), m.w1, m.b1))
                    return F.linear(h, m.w2) + m.b2
            """,
        ),
        wrong(
            "bias_every_rank",
            "math",
            BIAS_EVERY,
            """
            class TensorParallelMLP(torch.nn.Module):
                def __init__(self, fc1, fc2, rank, world_size):
                    super().__init__()
                    self.m = gu.tensor_parallel.ParallelMLP(fc1, fc2, rank, world_size)

                def forward(self, x):
                    m = self.m
                    h = F.gelu(F.linear(gu.tensor_parallel.copy_to_parallel(x), m.w1, m.b1))
                    return gu.tensor_parallel.reduce_from_parallel(F.linear(h, m.w2, m.b2))
            """,
        ),
        wrong(
            "no_f",
            "graph",
            F_HINT,
            """
            class TensorParallelMLP(torch.nn.Module):
                def __init__(self, fc1, fc2, rank, world_size):
                    super().__init__()
                    self.m = gu.tensor_parallel.ParallelMLP(fc1, fc2, rank, world_size)

                def forward(self, x):
                    m = self.m
                    h = F.gelu(F.linear(x, m.w1, m.b1))
                    return gu.tensor_parallel.reduce_from_parallel(F.linear(h, m.w2)) + m.b2
            """,
        ),
        wrong(
            "data_parallel_grads",
            "reduction",
            "that is data parallelism",
            """
            class TensorParallelMLP(torch.nn.Module):
                def __init__(self, fc1, fc2, rank, world_size):
                    super().__init__()
                    self.inner = gu.tensor_parallel.ParallelMLP(fc1, fc2, rank, world_size)
                    for p in self.parameters():
                        p.register_hook(lambda g: (dist.all_reduce(g := g.clone()), g)[1])

                def forward(self, x):
                    return self.inner(x)
            """,
        ),
        wrong(
            "full_weights",
            "sharding",
            "keeps only its shard",
            HELPERS
            + """
            class TensorParallelMLP(torch.nn.Module):
                def __init__(self, fc1, fc2, rank, world_size):
                    super().__init__()
                    self.fc1, self.fc2, self.rank, self.n = fc1, fc2, rank, world_size

                def forward(self, x):
                    lo, hi = bounds(self.fc1.out_features, self.rank, self.n)
                    x = gu.tensor_parallel.copy_to_parallel(x)
                    h = F.gelu(F.linear(x, self.fc1.weight[lo:hi], self.fc1.bias[lo:hi]))
                    y = gu.tensor_parallel.reduce_from_parallel(F.linear(h, self.fc2.weight[:, lo:hi]))
                    return y + self.fc2.bias
            """,
        ),
        wrong(
            "frozen_shards",
            "graph",
            "though right before them",
            """
            class TensorParallelMLP(torch.nn.Module):
                def __init__(self, fc1, fc2, rank, world_size):
                    super().__init__()
                    self.inner = gu.tensor_parallel.ParallelMLP(fc1, fc2, rank, world_size)
                    self.scale = torch.nn.Parameter(torch.ones(()))
                    for p in self.inner.parameters():
                        p.requires_grad_(False)

                def forward(self, x):
                    return self.inner(x) * self.scale
            """,
        ),
        wrong(
            "not_a_module",
            "signature",
            "torch.nn.Module",
            """
            class TensorParallelMLP:
                def __init__(self, fc1, fc2, rank, world_size):
                    self.rank = rank
            """,
        ),
    ],
    "one_f_one_b": [
        right(
            "by_merging",
            """
            def one_f_one_b(p, m):
                stages = []
                for s in range(p):
                    ops = [(i, ("F", i)) for i in range(m)]
                    ops += [(j + p - s - 0.5, ("B", j)) for j in range(m)]
                    stages.append([op for _, op in sorted(ops)])
                return stages
            """,
        ),
        right(
            "warmup_steady_cooldown",
            """
            def one_f_one_b(p, m):
                stages = []
                for s in range(p):
                    warm = min(p - s - 1, m)
                    ops = [("F", i) for i in range(warm)]
                    for i in range(m - warm):
                        ops += [("F", warm + i), ("B", i)]
                    ops += [("B", i) for i in range(m - warm, m)]
                    stages.append(ops)
                return stages
            """,
        ),
        wrong(
            "gpipe",
            "schedule",
            "that is GPipe's order",
            """
            def one_f_one_b(p, m):
                return [[("F", i) for i in range(m)] + [("B", i) for i in range(m)] for _ in range(p)]
            """,
        ),
        wrong(
            "backward_first",
            "schedule",
            "before its forward",
            """
            def one_f_one_b(p, m):
                return [[op for i in range(m) for op in (("B", i), ("F", i))] for _ in range(p)]
            """,
        ),
        wrong(
            "deadlocks",
            "deadlock",
            "cannot run",
            """
            def one_f_one_b(p, m):
                stages = gu.pipeline.one_f_one_b(p, m)
                stages[0] = [op for i in range(m) for op in (("F", i), ("B", i))]
                return stages
            """,
        ),
        wrong(
            "warmup_one_short",
            "schedule",
            ("devices wait longer", "where 1F1B runs", "warm-up forward(s)"),
            """
            def one_f_one_b(p, m):
                stages = []
                for s in range(p):
                    warm = max(0, min(p - s - 2, m))
                    ops = [("F", i) for i in range(warm)]
                    for i in range(m - warm):
                        ops += [("F", warm + i), ("B", i)]
                    ops += [("B", i) for i in range(m - warm, m)]
                    stages.append(ops)
                return stages
            """,
        ),
        wrong(
            "missing_backward",
            "schedule",
            "never runs the backward of micro-batch",
            """
            def one_f_one_b(p, m):
                stages = gu.pipeline.one_f_one_b(p, m)
                stages[-1] = stages[-1][:-1]
                return stages
            """,
        ),
        wrong(
            "strings",
            "signature",
            "each operation is ('F', i) or ('B', i)",
            """
            def one_f_one_b(p, m):
                return [[f"{kind}{i}" for kind, i in ops] for ops in gu.pipeline.one_f_one_b(p, m)]
            """,
        ),
        wrong(
            "returns_none",
            "signature",
            "returned None",
            """
            def one_f_one_b(p, m):
                gu.pipeline.one_f_one_b(p, m)
            """,
        ),
        wrong(
            "index_error",
            "exception",
            "IndexError",
            """
            def one_f_one_b(p, m):
                stages = [[] for _ in range(p - 1)]
                stages[p - 1].append(("F", 0))
                return stages
            """,
        ),
    ],
}
