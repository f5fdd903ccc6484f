"""Hints read from the failing line's values (gpu_utils.exercises._pyerrors, issue 30): each rule
names its cause from what the values show, and says nothing it cannot see; an out-of-place
method whose result is dropped is found in the cell's source; the Triton access rules read the
failing tl.load's own source (an index laid along two axes, a pointer advanced twice, a lane
index compared with a size)."""

from __future__ import annotations

import dataclasses
import linecache

import pytest
import torch

from gpu_utils.exercises import _pyerrors, _triton


def raised(function, *args):
    try:
        function(*args)
    except Exception as error:
        return error
    raise AssertionError("the function did not raise")


class _Model(torch.nn.Module):
    def forward(self, tokens, targets=None):
        return tokens.float(), None if targets is None else tokens.float().sum()


def loss_without_targets(model, tokens):
    _, loss = model(tokens)
    return loss * 2.0


def step_given_the_loss(optimizer, loss):
    optimizer.step(loss)


def dict_read_as_object(layout):
    return layout.dp * 2


@dataclasses.dataclass
class _Layout:
    step_time: float
    memory: float


def layout_read_as_dict(ranked):
    return ranked[0]["step_time"]


def mask_of_another_shape(per_token, real):
    return per_token[real].sum()


def sum_of_a_list(counts):
    return torch.sum([c for c in counts])


def list_as_tensor(losses):
    return losses.tolist()


def bmm_on_four_dims(q, k):
    return torch.bmm(q, k)


def narrow_targets(logits, y):
    return torch.nn.functional.cross_entropy(logits, y)


def nothing_to_say(a, b):
    return a + b


@pytest.mark.parametrize(
    "function, args, seen, hint",
    [
        (
            loss_without_targets,
            (_Model(), torch.ones(2, 3, dtype=torch.long)),
            "`loss` is None; it was set at line",
            "without `targets`",
        ),
        (
            step_given_the_loss,
            (torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), torch.tensor(1.0)),
            "gave `loss`",
            "its only argument is an optional closure",
        ),
        (dict_read_as_object, ({"dp": 2, "tp": 1},), "`layout` is a dict", "layout['dp']"),
        (
            layout_read_as_dict,
            ([_Layout(1.0, 2.0)],),
            "`ranked[0]` is a _Layout",
            "`ranked[0].step_time`",
        ),
        (
            mask_of_another_shape,
            (torch.ones(16), torch.ones(2, 8, dtype=torch.bool)),
            "the mask `real` is 2 x 8 (bool)",
            "own shape",
        ),
        (sum_of_a_list, ([torch.tensor(1)],), "`torch.sum(...)` was given a Python list", "stack"),
        (list_as_tensor, ([torch.tensor(1.0)],), "`losses` is a Python list", "tensor's method"),
        (bmm_on_four_dims, (torch.ones(1, 2, 3, 4), torch.ones(1, 2, 4, 3)), "1 x 2 x 3 x 4", "@"),
        (
            narrow_targets,
            (torch.randn(4, 5), torch.zeros(4, dtype=torch.int32)),
            "`y` is 4 (int32)",
            "int64",
        ),
    ],
)
def test_a_rule_names_the_cause_from_the_line_values(function, args, seen, hint):
    error = raised(function, *args)
    found = _pyerrors.explain(error, function)
    assert found is not None
    assert seen in found[0], found
    assert hint in found[1], found


def test_without_a_cause_the_values_are_shown_and_the_hint_stays_generic():
    error = raised(nothing_to_say, torch.ones(2), torch.ones(3))
    seen, hint = _pyerrors.explain(error, nothing_to_say)
    assert "`a` is 2 (float32)" in seen and "`b` is 3 (float32)" in seen
    assert hint == ""


def test_no_frame_of_the_learner_no_evidence():
    error = raised(nothing_to_say, torch.ones(2), torch.ones(3))
    assert _pyerrors.explain(error, torch.add) is None  # another file: nothing to read


def test_the_failing_line_is_quoted():
    error = raised(dict_read_as_object, {})
    assert _pyerrors.where(error, dict_read_as_object).endswith("`return layout.dp * 2`")


def _cell(name: str, source: str) -> dict:
    """Compile ``source`` as a notebook cell the checker can read back (linecache)."""
    filename = f"<cell {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope: dict = {"torch": torch}
    exec(compile(source, filename, "exec"), scope)
    return scope


def test_a_dropped_out_of_place_result_is_found_in_the_cell():
    scope = _cell(
        "dropped",
        "def forward(scores, future):\n"
        "    scores.masked_fill(future, float('-inf'))\n"
        "    scores.masked_fill_(future, 0.0)\n"
        "    return scores.softmax(-1)\n",
    )
    found = _pyerrors.dropped_results(scope["forward"])
    assert [(line, method) for line, method, _ in found] == [(2, "masked_fill")]
    seen, hint = _pyerrors.dropped_evidence(scope["forward"])
    assert "Line 2" in seen and "scores = scores.masked_fill(" in hint


def _kernel_hint(name: str, source: str, line: int) -> str:
    _cell(name, source)
    return _triton.access_source_hint(f"<cell {name}>", line)


MATMUL = """def kernel(b_ptr, K, N, stride_bk, stride_bn, BLOCK_K, BLOCK_N):
    offs_k = tl.arange(0, BLOCK_K)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    for k in range(0, K, BLOCK_K):
        b = tl.load(b_ptrs, mask=(offs_k{kmask} < K - k) & (offs_n[None, :] < N), other=0.0)
        b_ptrs += BLOCK_K * stride_bk
"""


def test_an_index_laid_along_another_axis_in_the_mask_is_named():
    hint = _kernel_hint("kmask", MATMUL.replace("{kmask}", "[None, :]"), 6)
    assert "the pointers lay `offs_k` along axis 0" in hint
    assert _kernel_hint("kmask_right", MATMUL.replace("{kmask}", "[:, None]"), 6) == ""


def test_a_pointer_advanced_and_offset_by_the_loop_variable_is_named():
    source = MATMUL.replace("{kmask}", "[:, None]").replace(
        "tl.load(b_ptrs,", "tl.load(b_ptrs + k * stride_bk,"
    )
    assert "counted twice" in _kernel_hint("twice", source, 6)


def test_a_lane_index_compared_with_the_size_is_named_but_not_a_k_remainder():
    add = """def add(x_ptr, out_ptr, n, BLOCK_SIZE):
    lanes = tl.arange(0, BLOCK_SIZE)
    offsets = tl.program_id(0) * BLOCK_SIZE + lanes
    mask = lanes < n
    x = tl.load(x_ptr + offsets, mask=mask)
"""
    assert "a lane's index inside the block" in _kernel_hint("lanes", add, 5)
    right = add.replace("mask = lanes < n", "mask = offsets < n")
    assert _kernel_hint("offsets", right, 5) == ""
    # a row kernel's columns are a lane index compared with the row's length: right
    row = """def row_sum(x_ptr, n_cols, x_row_stride, BLOCK_SIZE):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols)
"""
    assert _kernel_hint("row", row, 4) == ""
    # a matmul's K mask compares a lane index with what is left of K: not this mistake
    assert _kernel_hint("kmask_lanes", MATMUL.replace("{kmask}", "[:, None]"), 6) == ""
