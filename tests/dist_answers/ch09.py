"""Lab 09's corpus: averaging gradients, bucketed all-reduce, ZeRO-1 (see ``__init__``)."""

import textwrap

from . import right, wrong

SUMMED = "you summed"
COPY = "`torch.cat` and `flatten` make a copy"
FROZEN = "frozen parameter (requires_grad=False) has no gradient"
TIED = "the tied weight"
RANKS_DIFFER = "not only on rank 0"
DEADLOCK = "every rank must make the same collective calls"
LOOP = "never ends on rank"
OTHERS = (SUMMED, COPY, RANKS_DIFFER, "divide once", "run your code yourself")

FLUSH = """
def flush(bucket, world_size):
    flat = torch.cat([g.reshape(-1) for g in bucket])
    dist.all_reduce(flat)
    flat /= world_size
    offset = 0
    for g in bucket:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()
"""

BUCKETS = (
    FLUSH
    + """
def buckets(model, bucket_bytes):
    out, bucket, size = [], [], 0
    for p in model.parameters():
        if p.grad is None:
            continue
        nbytes = p.grad.numel() * p.grad.element_size()
        if bucket and size + nbytes > bucket_bytes:
            out.append(bucket)
            bucket, size = [], 0
        bucket.append(p.grad)
        size += nbytes
    return out + [bucket]
"""
)

ZERO = """
class Base:
    def __init__(self, params, rank, world_size, lr):
        self.params = [p for p in params if p.requires_grad]
        self.rank, self.world_size = rank, world_size
        self.size = -(-sum(p.numel() for p in self.params) // world_size)
        flat = self.flatten([p.detach() for p in self.params])
        self.shard = flat[rank * self.size : (rank + 1) * self.size].clone().requires_grad_(True)
        self.optimizer = torch.optim.Adam([self.shard], lr=lr)

    def flatten(self, tensors):
        flat = torch.cat([t.reshape(-1) for t in tensors])
        return F.pad(flat, (0, self.size * self.world_size - flat.numel()))

    def write_back(self, flat):
        offset = 0
        with torch.no_grad():
            for p in self.params:
                p.copy_(flat[offset : offset + p.numel()].view_as(p))
                offset += p.numel()

    def mine(self, flat):
        return flat[self.rank * self.size : (self.rank + 1) * self.size].clone()
"""

# The helpers above are indented as the answers' text is, so that one dedent fits both.
FLUSH, BUCKETS, ZERO = (textwrap.indent(text, " " * 12) for text in (FLUSH, BUCKETS, ZERO))

ANSWERS = {
    "average_gradients": [
        right(
            "avg_op",
            """
            def average_gradients(model, world_size):
                for p in model.parameters():
                    if p.requires_grad and p.grad is not None:
                        dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
            """,
        ),
        right(
            "divide_first_one_flat",
            """
            def average_gradients(model, world_size):
                grads = [p.grad for p in model.parameters() if p.grad is not None]
                flat = torch.cat([g.flatten() for g in grads]) / world_size
                dist.all_reduce(flat)
                for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
                    g.copy_(piece.view_as(g))
            """,
        ),
        right(
            "named_parameters_mul",
            """
            def average_gradients(model, world_size):
                for name, p in model.named_parameters():
                    if p.grad is None:
                        continue
                    dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
                    p.grad.mul_(1.0 / world_size)
            """,
        ),
        wrong(
            "sum",
            "reduction",
            SUMMED,
            """
            def average_gradients(model, world_size):
                for p in model.parameters():
                    if p.grad is not None:
                        dist.all_reduce(p.grad)
            """,
            absent=(COPY, TIED, RANKS_DIFFER),
        ),
        wrong(
            "divided_twice",
            "reduction",
            ("divide once", "every parameter's is"),
            """
            def average_gradients(model, world_size):
                for p in model.parameters():
                    if p.grad is not None:
                        p.grad /= world_size
                        dist.all_reduce(p.grad)
                        p.grad /= world_size
            """,
            absent=(TIED, SUMMED, COPY),
        ),
        wrong(
            "only_rank0_divides",
            "rank-dependent",
            (RANKS_DIFFER, "rank 1: the sum over ranks"),
            """
            def average_gradients(model, world_size):
                for p in model.parameters():
                    if p.grad is not None:
                        dist.all_reduce(p.grad)
                        if dist.get_rank() == 0:
                            p.grad /= world_size
            """,
            absent=(COPY, TIED),
        ),
        wrong(
            "reduces_the_parameters",
            "wrong-tensor",
            "on the parameters themselves",
            """
            def average_gradients(model, world_size):
                for p in model.parameters():
                    if p.grad is not None:
                        dist.all_reduce(p.data)
                        p.data /= world_size
            """,
            absent=(COPY, SUMMED),
        ),
        wrong(
            "reduces_a_copy",
            "wrong-tensor",
            COPY,
            """
            def average_gradients(model, world_size):
                for p in model.parameters():
                    if p.grad is not None:
                        g = p.grad.flatten().clone()
                        dist.all_reduce(g)
                        g /= world_size
            """,
            absent=("on the parameters themselves", SUMMED),
        ),
        wrong(
            "forgets_frozen",
            "tied-frozen",
            FROZEN,
            """
            def average_gradients(model, world_size):
                for p in model.parameters():
                    dist.all_reduce(p.grad)
                    p.grad /= world_size
            """,
            absent=OTHERS,
        ),
        wrong(
            "tied_divided_twice",
            "tied-frozen",
            "the tied weight was divided twice",
            """
            def average_gradients(model, world_size):
                for p in model.parameters():
                    if p.grad is not None:
                        dist.all_reduce(p.grad)
                for module in model.modules():
                    for p in module.parameters(recurse=False):
                        if p.grad is not None:
                            p.grad /= world_size
            """,
            absent=("divide once", SUMMED),
        ),
        wrong(
            "skips_biases",
            "wrong-tensor",
            "were never averaged",
            """
            def average_gradients(model, world_size):
                for p in model.parameters():
                    if p.grad is not None and p.dim() > 1:
                        dist.all_reduce(p.grad)
                        p.grad /= world_size
            """,
            absent=(COPY, SUMMED, TIED),
        ),
        wrong(
            "loop_on_rank_1",
            "loop",
            (LOOP, "rank 1", "`while i < 3:`", "`i`"),
            """
            def average_gradients(model, world_size):
                i = 0
                if dist.get_rank() == 1:
                    while i < 3:
                        world_size + 1
                for p in model.parameters():
                    if p.grad is not None:
                        dist.all_reduce(p.grad)
                        p.grad /= world_size
            """,
            absent=(DEADLOCK, "waiting for each other"),
        ),
        wrong(
            "only_rank0_reduces",
            "deadlock",
            DEADLOCK,
            """
            def average_gradients(model, world_size):
                if dist.get_rank() == 0:
                    for p in model.parameters():
                        if p.grad is not None:
                            dist.all_reduce(p.grad)
                            p.grad /= world_size
            """,
            absent=(LOOP,),
            run_timeout=4.0,
        ),
        wrong(
            "grad_none",
            "graph",
            "gradient is None on rank 0",
            """
            def average_gradients(model, world_size):
                for p in model.parameters():
                    p.grad = None
            """,
        ),
    ],
    "bucketed_allreduce": [
        right(
            "reverse_order",
            """
            def bucketed_allreduce(model, world_size, bucket_bytes):
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
                    for g, piece in zip(bucket, flat.split([g.numel() for g in bucket])):
                        g.copy_(piece.view_as(g))
            """,
        ),
        right(
            "avg_op_with_helper",
            BUCKETS
            + """
            def bucketed_allreduce(model, world_size, bucket_bytes):
                for bucket in buckets(model, bucket_bytes):
                    flat = torch.cat([g.reshape(-1) for g in bucket])
                    dist.all_reduce(flat, op=dist.ReduceOp.AVG)
                    torch._utils._unflatten_dense_tensors  # noqa: B018 (exists; not needed)
                    offset = 0
                    for g in bucket:
                        g.copy_(flat[offset : offset + g.numel()].view_as(g))
                        offset += g.numel()
            """,
        ),
        wrong(
            "drops_last_bucket",
            "sharding",
            "the last bucket is usually not full",
            BUCKETS
            + """
            def bucketed_allreduce(model, world_size, bucket_bytes):
                for bucket in buckets(model, bucket_bytes)[:-1]:
                    flush(bucket, world_size)
            """,
            absent=(SUMMED, COPY),
        ),
        wrong(
            "one_per_gradient",
            "efficiency",
            "one all-reduce per gradient",
            FLUSH
            + """
            def bucketed_allreduce(model, world_size, bucket_bytes):
                for p in model.parameters():
                    if p.grad is not None:
                        flush([p.grad], world_size)
            """,
        ),
        wrong(
            "one_bucket_for_all",
            "efficiency",
            "a bucket holds at most bucket_bytes",
            FLUSH
            + """
            def bucketed_allreduce(model, world_size, bucket_bytes):
                flush([p.grad for p in model.parameters() if p.grad is not None], world_size)
            """,
        ),
        wrong(
            "no_copy_back",
            "wrong-tensor",
            COPY,
            BUCKETS
            + """
            def bucketed_allreduce(model, world_size, bucket_bytes):
                for bucket in buckets(model, bucket_bytes):
                    flat = torch.cat([g.reshape(-1) for g in bucket])
                    dist.all_reduce(flat)
                    flat /= world_size
            """,
            absent=(SUMMED, "the last bucket"),
        ),
        wrong(
            "reversed_copy_back",
            "wrong-tensor",
            "in the wrong places",
            BUCKETS
            + """
            def bucketed_allreduce(model, world_size, bucket_bytes):
                for bucket in buckets(model, bucket_bytes):
                    flat = torch.cat([g.reshape(-1) for g in bucket])
                    dist.all_reduce(flat)
                    flat /= world_size
                    offset = 0
                    for g in reversed(bucket):
                        g.copy_(flat[offset : offset + g.numel()].view_as(g))
                        offset += g.numel()
            """,
            absent=(SUMMED, COPY, "run your code yourself"),
        ),
        wrong(
            "tied_twice",
            "tied-frozen",
            "the tied weight (embedding = output layer) travelled twice",
            FLUSH
            + """
            def bucketed_allreduce(model, world_size, bucket_bytes):
                bucket, size = [], 0
                for module in model.modules():
                    for p in module.parameters(recurse=False):
                        if p.grad is None:
                            continue
                        if bucket and size + p.grad.numel() * 4 > bucket_bytes:
                            flush(bucket, world_size)
                            bucket, size = [], 0
                        bucket.append(p.grad)
                        size += p.grad.numel() * 4
                flush(bucket, world_size)
            """,
        ),
        wrong(
            "sum",
            "reduction",
            SUMMED,
            BUCKETS
            + """
            def bucketed_allreduce(model, world_size, bucket_bytes):
                for bucket in buckets(model, bucket_bytes):
                    flush(bucket, 1)
            """,
            absent=(COPY, TIED),
        ),
        wrong(
            "bucket_size_in_elements",
            "efficiency",
            "a bucket holds at most bucket_bytes",
            BUCKETS
            + """
            def bucketed_allreduce(model, world_size, bucket_bytes):
                for bucket in buckets(model, bucket_bytes * 4):
                    flush(bucket, world_size)
            """,
        ),
    ],
    "zero1_optimizer": [
        right(
            "reduce_scatter",
            ZERO
            + """
            class ZeRO1(Base):
                def step(self):
                    mine = torch.empty(self.size)
                    dist.reduce_scatter_tensor(mine, self.flatten([p.grad for p in self.params]))
                    self.shard.grad = mine / self.world_size
                    self.optimizer.step()
                    full = torch.empty(self.size * self.world_size)
                    dist.all_gather_into_tensor(full, self.shard.detach())
                    self.write_back(full)
            """,
        ),
        right(
            "per_parameter_owners",
            """
            class ZeRO1:
                def __init__(self, params, rank, world_size, lr):
                    self.params = [p for p in params if p.requires_grad]
                    self.owner = [i % world_size for i in range(len(self.params))]
                    mine = [p for p, o in zip(self.params, self.owner) if o == rank]
                    self.world_size = world_size
                    self.optimizer = torch.optim.Adam(mine, lr=lr) if mine else None

                def step(self):
                    for p in self.params:
                        dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
                    if self.optimizer:
                        self.optimizer.step()
                    for p, owner in zip(self.params, self.owner):
                        dist.broadcast(p.data, src=owner)
            """,
        ),
        wrong(
            "never_divides",
            "reduction",
            ("times the mean over ranks: the sum", "divide by world_size"),
            ZERO
            + """
            class ZeRO1(Base):
                def step(self):
                    mine = torch.empty(self.size)
                    dist.reduce_scatter_tensor(mine, self.flatten([p.grad for p in self.params]))
                    self.shard.grad = mine
                    self.optimizer.step()
                    full = torch.empty(self.size * self.world_size)
                    dist.all_gather_into_tensor(full, self.shard.detach())
                    self.write_back(full)
            """,
            absent=("own shard", "initial values"),
        ),
        wrong(
            "local_gradients",
            "reduction",
            ("its own, from its shard of the batch only", "the MEAN gradient"),
            ZERO
            + """
            class ZeRO1(Base):
                def step(self):
                    self.shard.grad = self.mine(self.flatten([p.grad for p in self.params]))
                    self.optimizer.step()
                    full = torch.empty(self.size * self.world_size)
                    dist.all_gather_into_tensor(full, self.shard.detach())
                    self.write_back(full)
            """,
            absent=("the sum",),
        ),
        wrong(
            "broadcasts_rank0_vector",
            "sharding",
            ("rank 0's shard", "each shard must come from its owner"),
            ZERO
            + """
            class ZeRO1(Base):
                def step(self):
                    grad = self.flatten([p.grad for p in self.params])
                    dist.all_reduce(grad)
                    self.shard.grad = self.mine(grad) / self.world_size
                    self.optimizer.step()
                    flat = self.flatten([p.detach() for p in self.params])
                    flat[self.rank * self.size : (self.rank + 1) * self.size] = self.shard.detach()
                    dist.broadcast(flat, src=0)
                    self.write_back(flat)
            """,
            absent=("MEAN gradient", "the sum"),
        ),
        wrong(
            "never_shares",
            "sharding",
            "still holds initial values",
            ZERO
            + """
            class ZeRO1(Base):
                def step(self):
                    grad = self.flatten([p.grad for p in self.params])
                    dist.all_reduce(grad)
                    self.shard.grad = self.mine(grad) / self.world_size
                    self.optimizer.step()
                    flat = self.flatten([p.detach() for p in self.params])
                    flat[self.rank * self.size : (self.rank + 1) * self.size] = self.shard.detach()
                    self.write_back(flat)
            """,
            absent=("MEAN gradient",),
        ),
        wrong(
            "not_sharded",
            "sharding",
            "the state is not sharded",
            """
            class ZeRO1:
                def __init__(self, params, rank, world_size, lr):
                    self.params = [p for p in params if p.requires_grad]
                    self.world_size = world_size
                    self.optimizer = torch.optim.Adam(self.params, lr=lr)

                def step(self):
                    for p in self.params:
                        dist.all_reduce(p.grad)
                        p.grad /= self.world_size
                    self.optimizer.step()
            """,
        ),
        wrong(
            "drops_remainder",
            "sharding",
            "were never updated",
            ZERO
            + """
            class ZeRO1(Base):
                def __init__(self, params, rank, world_size, lr):
                    super().__init__(params, rank, world_size, lr)
                    total = sum(p.numel() for p in self.params)
                    self.size = total // world_size
                    flat = torch.cat([p.detach().reshape(-1) for p in self.params])
                    self.shard = self.mine(flat).requires_grad_(True)
                    self.optimizer = torch.optim.Adam([self.shard], lr=lr)

                def step(self):
                    grad = torch.cat([p.grad.reshape(-1) for p in self.params])
                    dist.all_reduce(grad)
                    self.shard.grad = self.mine(grad) / self.world_size
                    self.optimizer.step()
                    gathered = torch.empty(self.size * self.world_size)
                    dist.all_gather_into_tensor(gathered, self.shard.detach())
                    flat = torch.cat([p.detach().reshape(-1) for p in self.params])
                    flat[: gathered.numel()] = gathered
                    self.write_back(flat)
            """,
            absent=("rank 0's shard",),
        ),
        wrong(
            "unpadded_all_gather",
            "exception",
            "pad the flat vector",
            ZERO
            + """
            class ZeRO1(Base):
                def step(self):
                    grad = self.flatten([p.grad for p in self.params])
                    dist.all_reduce(grad)
                    self.shard.grad = self.mine(grad) / self.world_size
                    self.optimizer.step()
                    total = sum(p.numel() for p in self.params)
                    split = torch.tensor_split(torch.empty(total), self.world_size)
                    pieces = [torch.empty(len(c)) for c in split]
                    dist.all_gather(pieces, pieces[self.rank].clone())
                    self.write_back(torch.cat(pieces))
            """,
        ),
        wrong(
            "no_step_method",
            "signature",
            "has no step() method",
            """
            class ZeRO1:
                def __init__(self, params, rank, world_size, lr):
                    self.lr = lr
            """,
        ),
        wrong(
            "loop_in_step",
            "loop",
            ("was still running your code after", "of `step`"),
            ZERO
            + """
            class ZeRO1(Base):
                def step(self):
                    done = False
                    while not done:
                        self.size + 1
            """,
            absent=(DEADLOCK,),
        ),
    ],
}
