"""A lab's untouched stub is recognised from its source, without running it; anything else is
left to the checker (which runs it)."""

import pytest
import torch
from numba import cuda

import gpu_utils as gu
from gpu_utils.exercises._stub import is_stub


def stub(a, b):
    raise NotImplementedError()


def stub_with_docstring_and_bare_raise(a):
    """Write me."""
    # YOUR CODE HERE
    raise NotImplementedError


@cuda.jit
def stub_kernel(a, out):
    raise NotImplementedError("write the kernel")


class StubModule(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        raise NotImplementedError()

    def forward(self, x):
        raise NotImplementedError()


@pytest.mark.parametrize(
    "answer",
    [stub, stub_with_docstring_and_bare_raise, stub_kernel, StubModule],
    ids=["function", "docstring_and_bare_raise", "kernel", "module"],
)
def test_stubs_are_recognised(answer):
    assert is_stub(answer)


def started(a, b):
    total = a + b
    raise NotImplementedError(total)


def raises_something_else(a):
    raise ValueError("not a stub")


class HalfWritten(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank

    def forward(self, x):
        raise NotImplementedError()


@cuda.jit
def real_kernel(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i]


def no_source_available():
    namespace = {}
    exec("def f(a):\n    raise NotImplementedError()\n", namespace)  # no file, no linecache
    return namespace["f"]


@pytest.mark.parametrize(
    "answer",
    [started, raises_something_else, HalfWritten, real_kernel, no_source_available(), 3, None],
    ids=["started", "other_error", "half_written", "kernel", "no_source", "int", "None"],
)
def test_everything_else_is_left_to_the_checker(answer):
    assert not is_stub(answer)


def test_a_stub_of_a_distributed_exercise_is_not_attempted_without_starting_processes(
    monkeypatch,
):
    from gpu_utils.exercises import _isolation

    def no_process(*args, **kwargs):
        raise AssertionError("a stub must not start the checker's process")

    monkeypatch.setattr(gu.exercises, "run_isolated", no_process)
    monkeypatch.setattr(_isolation, "run_isolated", no_process)
    result = gu.exercises.check("tensor_parallel_mlp", StubModule)
    assert not result.attempted and "not attempted yet" in result.message


def test_a_class_answer_sends_the_source_of_its_methods():
    class Answer:
        def step(self):
            return 1

        @staticmethod
        def helper():
            return 2

    found = gu.exercises.sources(Answer)
    assert __file__ in found
    assert any("def step(self):" in line for line in found[__file__])
