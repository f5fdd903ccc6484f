"""Recognising a lab's untouched stub without running it (every chapter's labs).

A check of a stub says "not attempted yet". Most checkers find that out by running the answer,
which for a distributed or kernel exercise means starting processes first: seconds, for a lab
whose check cells are all still stubs. :func:`is_stub` reads the source instead.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from ..pickling import python_function


def _preamble(statement: ast.stmt) -> bool:
    """A docstring, or ``super().__init__(...)``: what a stub may hold before its raise."""
    if not isinstance(statement, ast.Expr):
        return False
    value = statement.value
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "__init__"
        and isinstance(value.func.value, ast.Call)
        and isinstance(value.func.value.func, ast.Name)
        and value.func.value.func.id == "super"
    )


def _raises_only(function: object) -> bool:
    """True for a function whose body is only ``raise NotImplementedError`` (with or without
    arguments), after a docstring or ``super().__init__(...)``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):  # no source (a built-in, a lost cell)
        return False
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    *preamble, last = definition.body
    if not all(_preamble(s) for s in preamble) or not isinstance(last, ast.Raise):
        return False
    raised = last.exc.func if isinstance(last.exc, ast.Call) else last.exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def is_stub(answer: object) -> bool:
    """True for a lab's stub: a function or kernel that only raises NotImplementedError, or a
    class whose own methods all do. Anything else (or code whose source cannot be read) is
    checked by running it."""
    if inspect.isclass(answer):
        methods = [m for m in vars(answer).values() if inspect.isfunction(m)]
        return bool(methods) and all(_raises_only(m) for m in methods)
    function = python_function(answer, plain=True)
    return function is not None and _raises_only(function)
