"""Record chapter 13's decode measurements on a real GPU, for learners on the simulator.

Usage, on a machine with an NVIDIA GPU and a CUDA build of PyTorch, from the repository root:

    python benchmarks/ch13_serving.py                  # both shapes, about half a minute on an H100
    python benchmarks/ch13_serving.py --shapes 1.1B

For each Llama-shaped decoder with random weights in bfloat16 (``gu.gpt.Llama``, no download):
TinyLlama-1.1B's shape (``gu.inference.CPU_SHAPES["1.1B"]``) and Llama 2 7B's
(``gu.inference.DECODERS["Llama 2 7B"]``), it times one decode step (``gu.inference.forward_cached``:
one new token per sequence, every sequence attending to ``--context`` cached tokens) at batch 1 up
to 256, and sets it beside ``gu.inference.decode_step``'s lower bound for this GPU (``gu.specs``)
and beside the same bound at the bandwidth this GPU's ``Tensor.copy_`` reaches here:

- **eager**: the step as PyTorch runs it, one kernel launch after the other from Python;
- **graph**: the same step captured once in a CUDA graph and replayed (what gpt-fast gets from
  ``torch.compile(mode="reduce-overhead")``: the launches no longer cost host time), so the
  step's own memory traffic and math are what is timed.

The cache holds random keys and values (a decode step's time does not depend on them), so no
prefill is needed. The knee where tokens/s stop growing with the batch is printed beside
``gu.inference.critical_batch``. Results go to ``gpu_utils/reference_data/ch13_serving.json``
(device, date, command); commit that file, and notebooks/13_serving.ipynb can show it on the
simulator. On the simulator this script refuses: its timings would say nothing about a GPU
(``--device cpu`` runs the same code on this CPU, prints, and records nothing).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import asdict, dataclass

import gpu_utils as gu

NAME = "ch13_serving"
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
SHAPES = ("1.1B", "Llama 2 7B")


@dataclass(frozen=True)
class DecodeRow:
    """One batch size of one shape: measured step times and the bounds beside them."""

    shape: str
    batch: int
    context: int
    eager_s: float  #: one decode step, launched from Python
    graph_s: float | None  #: the same step replayed from a CUDA graph (None on a CPU)
    bound_s: float  #: gu.inference.decode_step(...).seconds at the datasheet's figures
    bound: str  #: "memory" or "compute"
    copy_bound_s: float  #: bytes_moved at the bandwidth copy_ reached here
    bytes_moved: float

    @property
    def best_s(self) -> float:
        return self.graph_s if self.graph_s is not None else self.eager_s

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.best_s


def llama_config(shape: str, context: int):
    """``gu.gpt.LlamaConfig`` for a chapter 13 shape name, long enough for ``context`` + 1."""
    fields = gu.inference.CPU_SHAPES.get(shape)
    if fields is None:
        d = gu.inference.DECODERS[shape]
        fields = dict(
            vocab_size=d.vocab,
            d_model=d.hidden,
            n_layers=d.layers,
            n_heads=d.heads,
            n_kv_heads=d.kv_heads,
            ffn_hidden=d.ffn,
        )
    return gu.gpt.LlamaConfig(seq_len=context + 1, **fields)


def decoder_of(config) -> gu.inference.Decoder:
    """The ``gu.inference.Decoder`` (parameters counted by ``gu.gpt.llama_n_params``) of a config."""
    return gu.inference.Decoder(
        gu.gpt.llama_n_params(config),
        config.n_layers,
        config.d_model,
        config.n_heads,
        config.n_kv_heads,
        config.vocab_size,
        config.ffn_hidden,
    )


def copy_bandwidth(device: str, nbytes: int = 2**30, repeats: int = 10) -> float:
    """Bytes per second ``Tensor.copy_`` moves on ``device`` (read + write of ``nbytes``)."""
    import torch

    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(repeats + 1):
        _sync(device)
        t0 = time.perf_counter()
        dst.copy_(src)
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.numel() * src.element_size() / best


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _median_seconds(run, device: str, repeats: int) -> float:
    run()  # warm-up
    _sync(device)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def decode_sweep(
    shape: str,
    spec,
    batches=BATCHES,
    context: int = 512,
    device: str = "cuda",
    dtype: str = "bfloat16",
    repeats: int = 10,
    copy_bw: float | None = None,
    graphs: bool = True,
) -> list[DecodeRow]:
    """Time one decode step of ``shape`` at each batch (see the module docstring); the bound
    from ``spec`` (a ``gu.specs`` GPU), or without one (a CPU) from ``copy_bw`` alone."""
    import torch

    config = llama_config(shape, context)
    decoder = decoder_of(config)
    torch_dtype = getattr(torch, dtype)
    size = torch.finfo(torch_dtype).bits // 8
    default = torch.get_default_dtype()
    torch.manual_seed(0)
    try:
        torch.set_default_dtype(torch_dtype)
        with torch.device(device):
            model = gu.gpt.Llama(config).eval()
    finally:
        torch.set_default_dtype(default)
    rows = []
    for batch in batches:
        need = batch * (context + 1) * decoder.kv_bytes_per_token(size)
        if device.startswith("cuda") and need > 0.8 * torch.cuda.mem_get_info()[0]:
            print(f"{shape}: batch {batch}'s cache ({need / 1e9:.1f} GB) does not fit; skipped")
            break
        cache = gu.inference.KVCache(config, batch, context + 1, torch_dtype, device=device)
        for t in cache.keys + cache.values:
            t.normal_()
        token = torch.randint(0, config.vocab_size, (batch, 1), device=device)

        def step(token=token, cache=cache, model=model):
            return gu.inference.forward_cached(model, token, cache, context)

        with torch.inference_mode():
            eager = _median_seconds(step, device, repeats)
            graph_s = None
            if graphs and device.startswith("cuda"):
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    step()  # warm-up outside the capture, as torch.cuda.graphs asks
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    step()
                graph_s = _median_seconds(graph.replay, device, repeats)
                del graph
        if spec is not None:
            bound = gu.inference.decode_step(decoder, spec, batch, context, size, size)
            bound_s, kind, moved = bound.seconds, bound.bound, bound.bytes_moved
        else:  # a CPU: no datasheet here, only the bandwidth copy_ reached
            moved = decoder.streamed_params * size + batch * context * decoder.kv_bytes_per_token(
                size
            )
            bound_s, kind = moved / copy_bw, "memory"
        rows.append(
            DecodeRow(
                shape=shape,
                batch=batch,
                context=context,
                eager_s=eager,
                graph_s=graph_s,
                bound_s=bound_s,
                bound=kind,
                copy_bound_s=moved / copy_bw if copy_bw else float("nan"),
                bytes_moved=moved,
            )
        )
        del cache
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return rows


def knee(rows: list[DecodeRow], gain: float = 1.2) -> int | None:
    """The first batch after which doubling the batch no longer adds ``gain`` x tokens/s."""
    for a, b in itertools.pairwise(rows):
        if b.batch == 2 * a.batch and b.tokens_per_s < gain * a.tokens_per_s:
            return a.batch
    return None


def table(rows: list[DecodeRow]) -> str:
    lines = [
        f"{'shape':>11} {'batch':>5} {'eager ms':>9} {'graph ms':>9} {'bound ms':>9} "
        f"{'copy-bound ms':>13} {'tokens/s':>9} {'% of bound':>10}"
    ]
    for r in rows:
        graph = f"{r.graph_s * 1e3:9.3f}" if r.graph_s is not None else f"{'-':>9}"
        lines.append(
            f"{r.shape:>11} {r.batch:5d} {r.eager_s * 1e3:9.3f} {graph} {r.bound_s * 1e3:9.3f} "
            f"{r.copy_bound_s * 1e3:13.3f} {r.tokens_per_s:9.0f} {r.bound_s / r.best_s:10.0%}"
        )
    return "\n".join(lines)


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated shape names")
    parser.add_argument("--batches", default=",".join(map(str, BATCHES)))
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--device", default="cuda", help="cuda (recorded) or cpu (printed only)")
    parser.add_argument("--dtype", default="bfloat16", help="bfloat16; float32 on most CPUs")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    batches = tuple(int(b) for b in args.batches.split(","))
    unknown = [
        s for s in shapes if s not in gu.inference.CPU_SHAPES and s not in gu.inference.DECODERS
    ]
    if unknown:
        known = [*gu.inference.CPU_SHAPES, *gu.inference.DECODERS]
        print(f"unknown shape(s) {unknown}; choose from {known}", file=sys.stderr)
        return 2
    on_gpu = args.device.startswith("cuda")
    if on_gpu and (gu.mode != "gpu" or gu.backends.torch_device() != "cuda"):
        print(
            "This script records GPU measurements, so it needs an NVIDIA GPU (gpu_utils runs in "
            f"{gu.mode} mode here) and a CUDA build of PyTorch (torch sees: "
            f"{gu.backends.torch_device()}). Run it on a GPU machine, or with --device cpu to "
            "print this CPU's figures; nothing was written.",
            file=sys.stderr,
        )
        return 2
    import torch

    spec = gu.device_info().spec if on_gpu else None
    if on_gpu and spec is None:
        print("gu.specs does not know this GPU: no bound to compare with.", file=sys.stderr)
        return 2
    copy_bw = copy_bandwidth(args.device, nbytes=2**30 if on_gpu else 2**27)
    print(f"{args.device}: copy_ {copy_bw / 1e9:.1f} GB/s")
    if spec is not None:
        print(
            f"{spec.name}: datasheet {spec.hbm_bandwidth / 1e9:.0f} GB/s, critical batch (bf16) "
            f"{gu.inference.critical_batch(spec):.0f}"
        )
    rows = []
    for shape in shapes:
        found = decode_sweep(
            shape, spec, batches, args.context, args.device, args.dtype, copy_bw=copy_bw
        )
        print(table(found))
        print(f"{shape}: tokens/s stop growing 1.2x per doubling after batch {knee(found)}")
        rows += found
    if not on_gpu:
        print("(a CPU run: nothing recorded)")
        return 0
    path = gu.reference.save(
        NAME,
        {
            "torch": torch.__version__,
            "copy_bandwidth": copy_bw,
            "critical_batch": gu.inference.critical_batch(spec),
            "rows": [asdict(r) for r in rows],
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
