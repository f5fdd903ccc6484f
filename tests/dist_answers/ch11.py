"""Lab 11's corpus: the capstone's six fixes (see ``__init__``). Its checks run in the test's
process with the speed measurement skipped (``answer_tables.dist_table_tests`` does so), except
the looping answers, which go through the checker's own process and its time limit."""

from . import right, wrong

T = "T = gu.training\n"
FOREVER = "never ends"

ANSWERS = {
    "ch11_fast_loader": [
        right(
            "dataloader",
            """
            def make_loader(text, batch_size, seq_len, seed):
                return torch.utils.data.DataLoader(
                    gu.training.WindowDataset(gu.training.encode(text), seq_len),
                    batch_size=batch_size,
                    shuffle=True,
                    generator=torch.Generator().manual_seed(seed),
                )
            """,
        ),
        right(
            "windows_by_hand",
            """
            def make_loader(text, batch_size, seq_len, seed):
                data = gu.training.encode(text)
                g = torch.Generator().manual_seed(seed)
                while True:
                    starts = torch.randint(len(data) - seq_len, (batch_size,), generator=g)
                    windows = torch.stack([data[s : s + seq_len + 1] for s in starts])
                    yield windows[:, :-1], windows[:, 1:]
            """,
        ),
        wrong(
            "shuffled_labels",
            "math",
            "shuffled apart from their inputs",
            """
            def make_loader(text, batch_size, seq_len, seed):
                data = gu.training.encode(text)
                g = torch.Generator().manual_seed(seed)
                while True:
                    x, y = gu.training.get_batch(data, batch_size, seq_len, g)
                    yield x, y[torch.randperm(batch_size, generator=g)]
            """,
        ),
        wrong(
            "shifted_by_two",
            "math",
            "shifted by 2 tokens",
            """
            def make_loader(text, batch_size, seq_len, seed):
                data = gu.training.encode(text)
                g = torch.Generator().manual_seed(seed)
                while True:
                    starts = torch.randint(len(data) - seq_len - 2, (batch_size,), generator=g)
                    x = torch.stack([data[s : s + seq_len] for s in starts])
                    y = torch.stack([data[s + 2 : s + seq_len + 2] for s in starts])
                    yield x, y
            """,
            absent=("shuffled apart",),
        ),
        wrong(
            "no_shift",
            "math",
            "learn to copy its input",
            """
            def make_loader(text, batch_size, seq_len, seed):
                data = gu.training.encode(text)
                g = torch.Generator().manual_seed(seed)
                while True:
                    x, _ = gu.training.get_batch(data, batch_size, seq_len, g)
                    yield x, x.clone()
            """,
        ),
        wrong(
            "ignores_seed",
            "state",
            "ignores `seed`",
            """
            def make_loader(text, batch_size, seq_len, seed):
                data = gu.training.encode(text)
                g = torch.Generator().manual_seed(1234)
                while True:
                    yield gu.training.get_batch(data, batch_size, seq_len, g)
            """,
            absent=("same seed gave different",),
        ),
        wrong(
            "unseeded",
            "state",
            "same seed gave different batches",
            """
            def make_loader(text, batch_size, seq_len, seed):
                data = gu.training.encode(text)
                while True:
                    yield gu.training.get_batch(data, batch_size, seq_len)
            """,
        ),
        wrong(
            "same_batch",
            "state",
            "Every batch is the same batch",
            """
            def make_loader(text, batch_size, seq_len, seed):
                data = gu.training.encode(text)
                while True:
                    g = torch.Generator().manual_seed(seed)
                    yield gu.training.get_batch(data, batch_size, seq_len, g)
            """,
        ),
        wrong(
            "float_tokens",
            "wrong-tensor",
            "need int64",
            """
            def make_loader(text, batch_size, seq_len, seed):
                data = gu.training.encode(text).float()
                g = torch.Generator().manual_seed(seed)
                while True:
                    yield gu.training.get_batch(data, batch_size, seq_len, g)
            """,
        ),
        wrong(
            "loops_before_yielding",
            "loop",
            (FOREVER, "`while"),
            """
            def make_loader(text, batch_size, seq_len, seed):
                data = gu.training.encode(text)
                g = torch.Generator().manual_seed(seed)
                batches = []
                while len(batches) < 10:
                    x, y = gu.training.get_batch(data, batch_size, seq_len, g)
                for batch in batches:
                    yield batch
            """,
            worker=True,
        ),
    ],
    "ch11_fused_loss": [
        right(
            "log_softmax_nll",
            """
            def loss_fn(logits, targets):
                logp = torch.log_softmax(logits, dim=-1)
                return F.nll_loss(logp.reshape(-1, logp.shape[-1]), targets.reshape(-1))
            """,
        ),
        right(
            "logsumexp_by_hand",
            """
            def loss_fn(logits, targets):
                picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
                return (torch.logsumexp(logits, dim=-1) - picked).mean()
            """,
        ),
        wrong(
            "log_of_softmax",
            "math",
            "log(0) is -inf",
            """
            def loss_fn(logits, targets):
                p = torch.softmax(logits, dim=-1)
                return F.nll_loss(torch.log(p).flatten(0, 1), targets.flatten())
            """,
        ),
        wrong(
            "sum",
            "math",
            "sum over positions",
            """
            def loss_fn(logits, targets):
                return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
            """,
        ),
        wrong(
            "no_flatten",
            "exception",
            "flatten the batch and sequence dimensions",
            """
            def loss_fn(logits, targets):
                return F.cross_entropy(logits, targets)
            """,
        ),
        wrong(
            "per_position",
            "reduction",
            "not one number",
            """
            def loss_fn(logits, targets):
                return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
            """,
        ),
        wrong(
            "detached",
            "graph",
            "carries no gradient",
            """
            def loss_fn(logits, targets):
                return F.cross_entropy(logits.detach().flatten(0, 1), targets.flatten())
            """,
        ),
        wrong(
            "item",
            "graph",
            ("a Python float", "backward"),
            """
            def loss_fn(logits, targets):
                return F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()
            """,
            absent=("average over every position", "not one number"),
        ),
    ],
    "ch11_fused_optimizer": [
        right(
            "foreach",
            """
            def make_optimizer(params, lr):
                return torch.optim.AdamW(params, lr=lr, weight_decay=0.01, foreach=True)
            """,
        ),
        right(
            "fused_positional",
            """
            def make_optimizer(params, lr):
                params = list(params)
                return torch.optim.AdamW(params, lr, betas=(0.9, 0.999), weight_decay=0.01, fused=True)
            """,
        ),
        wrong(
            "adam_l2",
            "math",
            "decays the weights directly",
            """
            def make_optimizer(params, lr):
                return torch.optim.Adam(params, lr=lr, weight_decay=0.01, foreach=True)
            """,
        ),
        wrong(
            "per_parameter_loop",
            "efficiency",
            "foreach=True",
            """
            def make_optimizer(params, lr):
                return torch.optim.AdamW(params, lr=lr, weight_decay=0.01, foreach=False)
            """,
        ),
        wrong(
            "fixed_lr",
            "state",
            "the learning rate is fixed in your code",
            """
            def make_optimizer(params, lr):
                return torch.optim.AdamW(params, lr=3e-3, weight_decay=0.01, foreach=True)
            """,
            absent=("keep every hyper-parameter",),
        ),
        wrong(
            "scaled_lr",
            "math",
            "keep every hyper-parameter",
            """
            def make_optimizer(params, lr):
                return torch.optim.AdamW(params, lr=10 * lr, weight_decay=0.01, foreach=True)
            """,
            absent=("fixed in your code",),
        ),
        wrong(
            "generator_used_up",
            "state",
            "`list(params)` or a loop uses up",
            """
            def make_optimizer(params, lr):
                count = len(list(params))
                return torch.optim.AdamW(params, lr=lr, weight_decay=0.01, foreach=count > 0)
            """,
            absent=("run it yourself",),
        ),
        wrong(
            "returns_name",
            "signature",
            "not a torch.optim optimizer",
            """
            def make_optimizer(params, lr):
                return "AdamW"
            """,
        ),
    ],
    "ch11_no_host_sync": [
        right(
            "stack_detached",
            """
            def run_steps(model, optimizer, batches):
                losses = []
                for x, y in batches:
                    _, loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    losses.append(loss.detach())
                return torch.stack(losses)
            """,
        ),
        right(
            "preallocated_on_the_models_device",
            """
            def run_steps(model, optimizer, batches):
                losses = torch.empty(len(batches), device=next(model.parameters()).device)
                for i, (x, y) in enumerate(batches):
                    logits, _ = model(x)
                    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
                    losses[i] = loss.detach()
                return losses
            """,
        ),
        wrong(
            "item_every_step",
            "efficiency",
            "wait for the device 4 times",
            """
            def run_steps(model, optimizer, batches):
                losses = []
                for x, y in batches:
                    _, loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    losses.append(loss.item())
                return losses
            """,
        ),
        wrong(
            "preallocated_on_the_cpu",
            "efficiency",
            ("wait for the device 4 times", "made on the CPU", "device=loss.device"),
            """
            def run_steps(model, optimizer, batches):
                losses = torch.zeros(len(batches))
                for i, (x, y) in enumerate(batches):
                    _, loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    losses[i] = loss.detach()
                return losses
            """,
            absent=("`.item()`, float(), print()",),
        ),
        wrong(
            "to_cpu_every_step",
            "efficiency",
            "wait for the device 4 times",
            """
            def run_steps(model, optimizer, batches):
                losses = []
                for x, y in batches:
                    _, loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    losses.append(loss.detach().to("cpu"))
                return torch.stack(losses)
            """,
        ),
        wrong(
            "copy_to_cpu_every_step",
            "efficiency",
            "wait for the device 4 times",
            """
            def run_steps(model, optimizer, batches):
                losses = torch.empty(len(batches), device="cpu")
                for i, (x, y) in enumerate(batches):
                    _, loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    losses[i : i + 1].copy_(loss.detach().reshape(1))
                return losses
            """,
        ),
        wrong(
            "early_stop_check",
            "efficiency",
            "__bool__",
            """
            def run_steps(model, optimizer, batches):
                losses = []
                for x, y in batches:
                    _, loss = model(x, y)
                    if loss < 0.01:
                        break
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    losses.append(loss.detach())
                return torch.stack(losses)
            """,
        ),
        wrong(
            "print_every_step",
            "efficiency",
            "print() of a tensor",
            """
            def run_steps(model, optimizer, batches):
                losses = []
                for step, (x, y) in enumerate(batches):
                    _, loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    print(f"step {step}: {loss:.3f}")
                    losses.append(loss.detach())
                return torch.stack(losses)
            """,
        ),
        wrong(
            "keeps_graph",
            "graph",
            "autograd graphs",
            """
            def run_steps(model, optimizer, batches):
                losses = []
                for x, y in batches:
                    _, loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    losses.append(loss)
                return losses
            """,
        ),
        wrong(
            "no_zero_grad",
            "state",
            "the training itself changed",
            """
            def run_steps(model, optimizer, batches):
                losses = []
                for x, y in batches:
                    _, loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    losses.append(loss.detach())
                return torch.stack(losses)
            """,
        ),
        wrong(
            "returns_none",
            "signature",
            "returned NoneType",
            """
            def run_steps(model, optimizer, batches):
                for x, y in batches:
                    model(x, y)
            """,
        ),
    ],
    "ch11_bf16_autocast": [
        right(
            "autocast_cpu",
            """
            def train_step(model, optimizer, x, y):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    _, loss = model(x, y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                return loss
            """,
        ),
        right(
            "loss_in_fp32_outside",
            """
            def train_step(model, optimizer, x, y):
                with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
                    logits, _ = model(x)
                loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                return loss.detach()
            """,
        ),
        wrong(
            "model_cast",
            "math",
            "the model itself was cast",
            """
            def train_step(model, optimizer, x, y):
                model.to(torch.bfloat16)
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    _, loss = model(x, y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                return loss
            """,
        ),
        wrong(
            "fp16",
            "math",
            "float16",
            """
            def train_step(model, optimizer, x, y):
                with torch.autocast("cpu", dtype=torch.float16):
                    _, loss = model(x, y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                return loss
            """,
        ),
        wrong(
            "no_autocast",
            "efficiency",
            "autocast was not active",
            """
            def train_step(model, optimizer, x, y):
                _, loss = model(x, y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                return loss
            """,
        ),
        wrong(
            "no_update",
            "state",
            "more apart than bf16",
            """
            def train_step(model, optimizer, x, y):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    _, loss = model(x, y)
                loss.backward()
                optimizer.zero_grad()
                return loss
            """,
        ),
        wrong(
            "token_ids_cast",
            "exception",
            "token ids are integers",
            """
            def train_step(model, optimizer, x, y):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    _, loss = model(x.to(torch.bfloat16), y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                return loss
            """,
            absent=("run it yourself",),
        ),
        wrong(
            "returns_nothing",
            "signature",
            "Your step should return the loss",
            """
            def train_step(model, optimizer, x, y):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    _, loss = model(x, y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
        ),
    ],
    "ch11_grad_accumulation": [
        right(
            "weighted_means",
            """
            def accumulate(model, x, y, k):
                model.zero_grad()
                for xs, ys in zip(x.tensor_split(k), y.tensor_split(k)):
                    _, loss = model(xs, ys)
                    (loss * len(xs) / len(x)).backward()
            """,
        ),
        right(
            "token_sums",
            """
            def accumulate(model, x, y, k):
                for p in model.parameters():
                    p.grad = None
                for xs, ys in zip(x.tensor_split(k), y.tensor_split(k)):
                    logits, _ = model(xs)
                    loss = F.cross_entropy(logits.flatten(0, 1), ys.flatten(), reduction="sum")
                    (loss / y.numel()).backward()
            """,
        ),
        wrong(
            "no_division",
            "reduction",
            "times too large",
            """
            def accumulate(model, x, y, k):
                model.zero_grad()
                for xs, ys in zip(x.tensor_split(k), y.tensor_split(k)):
                    model(xs, ys)[1].backward()
            """,
        ),
        wrong(
            "drops_last",
            "math",
            "leave out the last micro-batch",
            """
            def accumulate(model, x, y, k):
                model.zero_grad()
                pieces = list(zip(x.tensor_split(k), y.tensor_split(k)))
                for xs, ys in pieces[:-1]:
                    (model(xs, ys)[1] / k).backward()
            """,
        ),
        wrong(
            "zero_inside",
            "state",
            "only the last micro-batch",
            """
            def accumulate(model, x, y, k):
                for xs, ys in zip(x.tensor_split(k), y.tensor_split(k)):
                    model.zero_grad()
                    (model(xs, ys)[1] / k).backward()
            """,
        ),
        wrong(
            "equal_weights",
            "math",
            "unequal size",
            """
            def accumulate(model, x, y, k):
                model.zero_grad()
                for xs, ys in zip(x.tensor_split(k), y.tensor_split(k)):
                    (model(xs, ys)[1] / k).backward()
            """,
        ),
        wrong(
            "never_zeroes",
            "state",
            ("never cleared it", "start from zero"),
            """
            def accumulate(model, x, y, k):
                for xs, ys in zip(x.tensor_split(k), y.tensor_split(k)):
                    _, loss = model(xs, ys)
                    (loss * len(xs) / len(x)).backward()
            """,
            absent=("only the last micro-batch",),
        ),
        wrong(
            "view_that_does_not_divide",
            "exception",
            "does not divide the batch",
            """
            def accumulate(model, x, y, k):
                model.zero_grad()
                xs_all, ys_all = x.view(k, -1, x.shape[1]), y.view(k, -1, y.shape[1])
                for xs, ys in zip(xs_all, ys_all):
                    (model(xs, ys)[1] / k).backward()
            """,
            absent=("run it yourself",),
        ),
    ],
}
