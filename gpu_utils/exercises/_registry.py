"""The exercise registry: ids, what each expects, and ``check`` (the contract in COURSE_DESIGN.md)."""

from __future__ import annotations

import html
import importlib
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

KINDS = ("kernel", "function", "value")


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one attempt. ``message`` says what is wrong and what to try next; its two
    parts are kept as data too, so that no caller parses the message: ``what`` (what the checker
    observed, or for a pass what it verified) and ``hint`` (what to try; "" for a pass)."""

    passed: bool
    message: str
    exercise_id: str = ""
    attempted: bool = True
    output: str = field(default="", repr=False)
    what: str = field(default="", repr=False)
    hint: str = field(default="", repr=False)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:  # a check cell's last line shows the message, not a dataclass
        return self.message

    def __bool__(self) -> bool:
        return self.passed

    def _repr_html_(self) -> str:
        """JupyterLab's rendering: wrapped at word boundaries, `code` in code style (the plain
        text of ``__repr__`` stays for terminals and for nbval's text/plain comparison)."""
        return to_html(self.message, self.passed)


_CODE = re.compile(r"`([^`\n]+)`")


def to_html(message: str, passed: bool) -> str:
    """A message as HTML: escaped, `code` spans as <code>, "Hint:" in bold, lines kept."""
    lines = []
    for line in message.splitlines():
        text = _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", html.escape(line, quote=False))
        if text.startswith("Hint:"):
            text = "<strong>Hint:</strong>" + text[len("Hint:") :]
        lines.append(text)
    colour = "#2e7d32" if passed else "#c77700"
    return (
        f'<div style="border-left: 4px solid {colour}; padding: 0.2em 0.8em; '
        'white-space: normal; overflow-wrap: normal; word-break: normal; max-width: 60em">'
        + "<br>".join(lines)
        + "</div>"
    )


@dataclass(frozen=True)
class Exercise:
    """One lab exercise.

    ``run`` receives the learner's kernel (re-jitted in the checker's process), function or value
    and returns a CheckResult. For kernels, ``signature`` and ``launch`` document exactly how the
    checker calls it.
    """

    id: str
    chapter: str
    title: str
    signature: str
    launch: str
    run: Callable[[object], CheckResult]
    kind: str = "kernel"
    #: Seconds a check may run (None: scaled from ``calibrate`` for kernels, else the default).
    time_limit: float | None = None
    #: Seconds this machine takes for a run of the exercise's launches by a reference (or
    #: do-nothing) kernel; the checker's process calls it once and scales the time limit from it.
    calibrate: Callable[[], float] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"exercise {self.id}: kind must be one of {KINDS}")


_EXERCISES: dict[str, Exercise] = {}
#: The module (of this package) that registered each exercise.
_ORIGIN: dict[str, str] = {}

#: Every exercise id -> (the module of this package that registers it, its chapter), so that a
#: chapter's module (and torch, for the chapters that use it) loads only when one of its
#: exercises is first checked: lab 01's checks import neither. tests/test_check_state.py
#: compares this table with what the modules register, so it cannot drift.
INDEX: dict[str, tuple[str, str]] = {
    "weights_70b_bf16": ("ch01_why_gpus", "01_why_gpus"),
    "h100s_for_70b_bf16": ("ch01_why_gpus", "01_why_gpus"),
    "stream_7b_bf16_h100_ms": ("ch01_why_gpus", "01_why_gpus"),
    "matmul_flops_4096": ("ch01_why_gpus", "01_why_gpus"),
    "add_bytes_1e8": ("ch01_why_gpus", "01_why_gpus"),
    "occupancy_h100_256x64": ("ch02_gpu_architecture", "02_gpu_architecture"),
    "occupancy_a100_41kb": ("ch02_gpu_architecture", "02_gpu_architecture"),
    "limiter_32_threads": ("ch02_gpu_architecture", "02_gpu_architecture"),
    "device_query_bandwidth": ("ch02_gpu_architecture", "02_gpu_architecture"),
    "device_query_resident_threads": ("ch02_gpu_architecture", "02_gpu_architecture"),
    "vector_add": ("ch03_first_kernels", "03_first_kernels"),
    "matmul_naive": ("ch03_first_kernels", "03_first_kernels"),
    "sum_atomic": ("ch03_first_kernels", "03_first_kernels"),
    "saxpy": ("ch03_first_kernels", "03_first_kernels"),
    "clamp": ("ch03_first_kernels", "03_first_kernels"),
    "stencil_1d": ("ch03_first_kernels", "03_first_kernels"),
    "square_grid_stride": ("ch03_first_kernels", "03_first_kernels"),
    "add_bias_2d": ("ch03_first_kernels", "03_first_kernels"),
    "row_sums": ("ch03_first_kernels", "03_first_kernels"),
    "stream_pipeline_time": ("ch03_streams", "03_first_kernels"),
    "stream_pipeline_function": ("ch03_streams", "03_first_kernels"),
    "littles_law_in_flight": ("ch04_latency", "04_memory"),
    "littles_law_loads_per_thread": ("ch04_latency", "04_memory"),
    "copy_grid_stride": ("ch04_memory", "04_memory"),
    "transpose_tiled": ("ch04_memory", "04_memory"),
    "stencil_shared": ("ch04_memory", "04_memory"),
    "reduce_block_sum": ("ch05_parallel_patterns", "05_parallel_patterns"),
    "reduce_first_add": ("ch05_parallel_patterns", "05_parallel_patterns"),
    "reduce_warp_shuffle": ("ch05_parallel_patterns", "05_parallel_patterns"),
    "block_scan": ("ch05_parallel_patterns", "05_parallel_patterns"),
    "histogram_shared": ("ch05_parallel_patterns", "05_parallel_patterns"),
    "softmax_rows": ("ch05_parallel_patterns", "05_parallel_patterns"),
    "online_softmax": ("ch05_attention", "05_parallel_patterns"),
    "attention_tile": ("ch05_attention", "05_parallel_patterns"),
    "matmul_tiled": ("ch06_matmul", "06_matmul"),
    "matmul_register_tiled": ("ch06_matmul", "06_matmul"),
    "matvec_warp": ("ch06_matmul", "06_matmul"),
    "matmul_tiled_traffic": ("ch06_matmul", "06_matmul"),
    "round_to_bf16": ("ch06_matmul", "06_matmul"),
    "systolic_step": ("ch07_cpu_gpu_tpu", "07_cpu_gpu_tpu"),
    "systolic_tiling": ("ch07_cpu_gpu_tpu", "07_cpu_gpu_tpu"),
    "systolic_cycles_one_tile": ("ch07_cpu_gpu_tpu", "07_cpu_gpu_tpu"),
    "systolic_utilisation_batch8": ("ch07_cpu_gpu_tpu", "07_cpu_gpu_tpu"),
    "ridge_point_tpu_v5e": ("ch07_cpu_gpu_tpu", "07_cpu_gpu_tpu"),
    "ridge_point_xeon_fp32": ("ch07_cpu_gpu_tpu", "07_cpu_gpu_tpu"),
    "ring_all_gather": ("ch08_collectives", "08_collectives"),
    "ring_all_reduce": ("ch08_collectives", "08_collectives"),
    "allgather_node_time": ("ch08_collectives", "08_collectives"),
    "allreduce_cluster_time": ("ch08_collectives", "08_collectives"),
    "busbw_from_algbw": ("ch08_collectives", "08_collectives"),
    "ring_tree_crossover": ("ch08_collectives", "08_collectives"),
    "rabenseifner_speedup": ("ch08_collectives", "08_collectives"),
    "primer_train_step": ("ch08b_primer", "08b_pytorch_primer"),
    "primer_block_forward": ("ch08b_primer", "08b_pytorch_primer"),
    "primer_accumulate_step": ("ch08b_primer", "08b_pytorch_primer"),
    "average_gradients": ("ch09_data_parallel", "09_data_parallel"),
    "bucketed_allreduce": ("ch09_data_parallel", "09_data_parallel"),
    "zero1_optimizer": ("ch09_data_parallel", "09_data_parallel"),
    "zero2_memory_gb": ("ch09_data_parallel", "09_data_parallel"),
    "zero3_traffic_gb": ("ch09_data_parallel", "09_data_parallel"),
    "column_parallel_linear": ("ch10_model_parallel", "10_model_parallel"),
    "row_parallel_linear": ("ch10_model_parallel", "10_model_parallel"),
    "tensor_parallel_mlp": ("ch10_model_parallel", "10_model_parallel"),
    "one_f_one_b": ("ch10_model_parallel", "10_model_parallel"),
    "pipeline_bubble_share": ("ch10_model_parallel", "10_model_parallel"),
    "micro_batches_for_bubble": ("ch10_model_parallel", "10_model_parallel"),
    "interleaved_bubble_share": ("ch10_model_parallel", "10_model_parallel"),
    "sequence_parallel_activations": ("ch10_model_parallel", "10_model_parallel"),
    "min_pipeline_stages": ("ch10_model_parallel", "10_model_parallel"),
    "planner_layout_fits": ("ch10_planner", "10_planner"),
    "planner_memory_prediction": ("ch10_planner", "10_planner"),
    "planner_step_time": ("ch10_planner", "10_planner"),
    "planner_defend": ("ch10_planner", "10_planner"),
    "ch11_fast_loader": ("ch11_training", "11_training_in_practice"),
    "ch11_fused_loss": ("ch11_training", "11_training_in_practice"),
    "ch11_fused_optimizer": ("ch11_training", "11_training_in_practice"),
    "ch11_no_host_sync": ("ch11_training", "11_training_in_practice"),
    "ch11_bf16_autocast": ("ch11_training", "11_training_in_practice"),
    "ch11_grad_accumulation": ("ch11_training", "11_training_in_practice"),
    "capstone_profile_diagnose": ("ch11_profile", "11_training_in_practice"),
    "capstone_profile_fix": ("ch11_profile", "11_training_in_practice"),
    "triton_vector_add": ("ch12_triton", "12_triton"),
    "triton_outer_add": ("ch12_triton_ramp", "12_triton"),
    "triton_row_sum": ("ch12_triton_ramp", "12_triton"),
    "triton_softmax": ("ch12_triton", "12_triton"),
    "triton_layernorm": ("ch12_triton", "12_triton"),
    "triton_matmul": ("ch12_triton", "12_triton"),
    "triton_flash_attention": ("ch12_triton", "12_triton"),
    "triton_cross_entropy": ("ch12_triton", "12_triton"),
    "triton_cross_entropy_backward": ("ch12_triton_backward", "12_triton"),
    "serving_decode_step": ("ch13_serving", "13_serving"),
    "serving_kv_budget": ("ch13_serving", "13_serving"),
    "serving_paged_allocator": ("ch13_serving", "13_serving"),
    "serving_schedule_step": ("ch13_serving", "13_serving"),
    "serving_speculative_tokens": ("ch13_serving", "13_serving"),
    "serving_decode_gemv": ("ch13_kernels", "13_serving"),
    "serving_int8_gemv": ("ch13_kernels", "13_serving"),
    "serving_paged_attention": ("ch13_kernels", "13_serving"),
}


def register(exercise: Exercise) -> Exercise:
    """Add an exercise; ids are unique across the course."""
    if exercise.id in _EXERCISES:
        raise ValueError(f"exercise id {exercise.id!r} is registered twice")
    _EXERCISES[exercise.id] = exercise
    _ORIGIN[exercise.id] = sys._getframe(1).f_globals.get("__name__", "").rpartition(".")[2]
    return exercise


def load(module: str) -> None:
    """Import one chapter's module of this package (which registers its exercises)."""
    importlib.import_module(f"{__package__}.{module}")


def get(exercise_id: str) -> Exercise:
    """The exercise with this id, its chapter loaded if need be (KeyError naming the known ids
    otherwise)."""
    if exercise_id not in _EXERCISES and exercise_id in INDEX:
        load(INDEX[exercise_id][0])
    try:
        return _EXERCISES[exercise_id]
    except KeyError:
        raise KeyError(_unknown(exercise_id)) from None


def ids(chapter: str | None = None) -> list[str]:
    """All exercise ids, or those of one chapter (e.g. ``"03_first_kernels"``), without loading
    any chapter."""
    known = {i: c for i, (_, c) in INDEX.items()}
    known.update((e.id, e.chapter) for e in _EXERCISES.values())
    return [i for i, c in known.items() if chapter is None or c == chapter]


def _unknown(exercise_id: str) -> str:
    return f"There is no exercise called {exercise_id!r}. Known exercises: {', '.join(ids())}."


def passed(exercise_id: str, detail: str) -> CheckResult:
    return CheckResult(True, f"{exercise_id}: passed. {detail}", exercise_id, what=detail)


def failed(exercise_id: str, what: str, hint: str = "") -> CheckResult:
    text = f"{exercise_id}: not yet. {what}"
    if hint:
        text += f"\nHint: {hint}"
    return CheckResult(False, text, exercise_id, what=what, hint=hint)


def not_attempted(exercise_id: str) -> CheckResult:
    return CheckResult(
        False,
        f"{exercise_id}: not attempted yet. Replace `raise NotImplementedError()` with your code, "
        "run that cell, then run this check again.",
        exercise_id,
        attempted=False,
    )
