"""benchmarks/checker_corpus.py: its verdicts say what the checker did with each kind of answer."""

import dataclasses

import checker_corpus  # benchmarks/checker_corpus.py, on the path through pyproject.toml
from kernel_answers import ch03


def test_a_correct_alternative_is_ok_and_a_wrong_one_with_its_hint_is_ok():
    correct = next(a for a in ch03.ANSWERS["vector_add"] if a.kind == "correct")
    wrong = next(a for a in ch03.ANSWERS["vector_add"] if a.kind == "guard")
    assert checker_corpus.verdict("vector_add", correct, None)[0] == "ok"
    assert checker_corpus.verdict("vector_add", wrong, None)[0] == "ok"


def test_a_wrong_answer_read_as_correct_is_a_false_rejection_and_a_hint_mismatch_is_named():
    wrong = next(a for a in ch03.ANSWERS["vector_add"] if a.kind == "guard")
    as_correct = dataclasses.replace(wrong, kind="correct", hints=())
    assert checker_corpus.verdict("vector_add", as_correct, None)[0] == "false rejection"
    other_words = dataclasses.replace(wrong, hints=("words no hint ever says",))
    assert checker_corpus.verdict("vector_add", other_words, None)[0] == "wrong hint"


def test_a_correct_kernel_read_as_wrong_is_a_false_pass():
    correct = next(a for a in ch03.ANSWERS["vector_add"] if a.kind == "correct")
    as_wrong = dataclasses.replace(correct, kind="guard", hints=("guard",))
    assert checker_corpus.verdict("vector_add", as_wrong, None)[0] == "false pass"


def test_the_labs_09_11_corpus_gets_the_same_verdicts():
    from dist_answers import ch10

    table = ch10.ANSWERS["one_f_one_b"]  # checked in the checker's process, no ranks: quick
    correct = next(a for a in table if a.kind == "correct")
    wrong = next(a for a in table if a.kind != "correct")
    assert checker_corpus.dist_verdict("one_f_one_b", correct)[0] == "ok"
    assert checker_corpus.dist_verdict("one_f_one_b", wrong)[0] == "ok"
    as_correct = dataclasses.replace(wrong, kind="correct", hints=())
    assert checker_corpus.dist_verdict("one_f_one_b", as_correct)[0] == "false rejection"
    other_words = dataclasses.replace(wrong, hints=("words no hint ever says",))
    assert checker_corpus.dist_verdict("one_f_one_b", other_words)[0] == "wrong hint"
