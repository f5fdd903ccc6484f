"""Checker of lab 12's backward exercise (``triton_cross_entropy_backward``,
``gpu_utils/exercises/ch12_triton_backward.py``): its expected values are torch.autograd's, the
corpus in tests/triton_answers/ch12_backward.py (the reference and alternative correct kernels
pass; known mistakes fail with their own hint and without the words of the others'), the lab's
own solution passes, a stub is not attempted yet, and the case list holds sizes 1, 2 and 3, a
size that is not a power of two, vocabularies longer than one block and not a multiple of it."""

import numpy as np
import pytest

pytest.importorskip("triton")  # the course's requirements pin it; without it, nothing to check

import torch
from answer_corpus import assert_corpus_shape, assert_fails_with_its_own_hint
from triton_answers import CORRECT, FORBIDDEN, Answer, ch12_backward, load

import gpu_utils as gu

ID = "triton_cross_entropy_backward"


def _params(correct: bool) -> list:
    return [
        pytest.param(answer, id=answer.name)
        for answer in ch12_backward.ANSWERS[ID]
        if (answer.kind == CORRECT) == correct
    ]


def _cases(seed=0):
    from gpu_utils.exercises import ch12_triton_backward as backward

    return backward._cases(np.random.default_rng(seed))


def test_it_follows_the_forward_cross_entropy():
    ids = gu.exercises.ids("12_triton")
    assert ids[ids.index("triton_cross_entropy") + 1] == ID


def test_the_corpus_has_its_shape():
    assert set(ch12_backward.ANSWERS) == {ID}
    assert_corpus_shape(ch12_backward.ANSWERS)
    table = ch12_backward.ANSWERS[ID]
    assert "reference" in [a.name for a in table]
    assert sum(a.kind == CORRECT for a in table) >= 3  # the reference and 2 alternatives


def test_the_expected_gradients_are_torch_autograds():
    """The oracle: d/dlogits of sum_i dloss[i] * (logsumexp(logits[i]) - logits[i, target[i]]),
    with the log-sum-exp computed by torch from the logits (the case's lse is float32)."""
    for case in _cases():
        logits = torch.from_numpy(case.extra["logits"]).requires_grad_()
        target = torch.from_numpy(case.extra["target"])
        dloss = torch.from_numpy(case.extra["dloss"])
        picked = logits.gather(1, target[:, None])[:, 0]
        ((torch.logsumexp(logits, dim=1) - picked) * dloss).sum().backward()
        expected = case.expected["dlogits_ptr"].numpy()
        np.testing.assert_allclose(expected, logits.grad.numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(
            case.extra["lse"], torch.logsumexp(logits, dim=1).detach().numpy(), rtol=1e-6
        )


def test_the_mean_case_is_torchs_mean_cross_entropy():
    case = next(c for c in _cases() if c.extra["kind"] == "mean")
    logits = torch.from_numpy(case.extra["logits"]).requires_grad_()
    torch.nn.functional.cross_entropy(logits, torch.from_numpy(case.extra["target"])).backward()
    np.testing.assert_allclose(
        case.expected["dlogits_ptr"].numpy(), logits.grad.numpy(), rtol=1e-4, atol=1e-7
    )


def test_the_cases_have_small_odd_and_long_sizes():
    cases = _cases()
    rows = {c.grid[0] for c in cases}
    vocabs = {c.args["vocab"] for c in cases}
    assert {1, 2, 3} <= rows and {1, 3} <= vocabs
    assert any(v & (v - 1) for v in vocabs)  # not a power of two
    assert any(c.args["vocab"] > c.constexprs["BLOCK_V"] for c in cases)
    assert any(c.args["vocab"] % c.constexprs["BLOCK_V"] for c in cases)
    assert any(c.args["stride_logits"] != c.args["vocab"] for c in cases)
    assert any(
        c.args["stride_dlogits"] not in (c.args["vocab"], c.args["stride_logits"]) for c in cases
    )
    assert any(c.extra["logits"].min() > 88.8 for c in cases)  # exp(logits) overflows float32
    for case in cases:  # the target in the last column of the last block, outputs poisoned
        assert case.extra["target"][0] == case.args["vocab"] - 1
        assert np.isnan(case.args["dlogits_ptr"].numpy()).all()
    assert not np.array_equal(cases[0].extra["logits"], _cases(1)[0].extra["logits"])


@pytest.mark.parametrize("answer", _params(correct=True))
def test_correct_answers_pass(answer):
    result = gu.exercises.check(ID, load(ID, answer))
    assert result.passed, result.message
    assert "passed" in result.message


@pytest.mark.parametrize("answer", _params(correct=False))
def test_wrong_answers_fail_with_their_own_hint(answer):
    result = gu.exercises.check(ID, load(ID, answer))
    assert_fails_with_its_own_hint(result, answer, FORBIDDEN)


def test_a_stub_is_not_attempted_yet():
    stub = load(
        ID,
        Answer(
            "stub",
            "@triton.jit\ndef kernel(x_ptr, BLOCK: tl.constexpr):\n    raise NotImplementedError()\n",
        ),
    )
    result = gu.exercises.check(ID, stub)
    assert not result.passed and not result.attempted
    assert "not attempted yet" in result.message


def test_the_labs_solution_passes():
    from pathlib import Path

    from answer_tables import _cached_solution_cells

    notebook = Path(__file__).resolve().parent.parent / "solutions" / "12_triton_lab.ipynb"
    checked, namespace = _cached_solution_cells(notebook)
    result = gu.exercises.check(ID, namespace[checked[ID]])
    assert result.passed, result.message
