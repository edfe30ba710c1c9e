"""The contract every checker of `course_utils.exercises` follows (see the package docstring), and the small
helpers the checkers share.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from unittest import mock

import torch

STUDENT_ERRORS = (RuntimeError, IndexError, TypeError, ValueError)  # wrong shapes, dtypes, arguments


def attempted(exercise: str, result: object) -> bool:
    """False (after printing "not attempted yet") when `result` is None, the starter's return value."""
    if result is None:
        print(f"{exercise}: not attempted yet (your function returns None). Write it, then rerun this cell.")
        return False
    return True


def expect(condition: bool, message: str) -> None:
    """Raise AssertionError(message) unless `condition` (a real raise: survives `python -O`)."""
    if not condition:
        raise AssertionError(message)


def passed(exercise: str, detail: str) -> None:
    """Print the success message "<exercise>: correct! <detail>"."""
    print(f"{exercise}: correct! {detail}")


def shape_or_type(got: object) -> object:
    """`got`'s shape as a tuple if it is a tensor, else its type's name (for "expected shape ..." messages)."""
    return tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__


def first_match(got: object, mistakes: dict[str, object], same: Callable[[object, object], bool]) -> str | None:
    """The first hint of `mistakes` ({hint: what that mistake returns}) whose value is `same` as `got`, else None."""
    return next((why for why, wrong in mistakes.items() if same(got, wrong)), None)


def _clone(arg: object) -> object:
    """A clone of a tensor, and of the tensors inside a tuple, NamedTuple (a Batch) or list; anything else as is."""
    if isinstance(arg, torch.Tensor):
        return arg.clone()
    if isinstance(arg, tuple) and hasattr(arg, "_fields"):  # a NamedTuple such as data.Batch
        return type(arg)(*(_clone(item) for item in arg))
    if isinstance(arg, (tuple, list)):
        return type(arg)(_clone(item) for item in arg)
    return arg


def _refusal(exercise: str, name: str, hint: str) -> Callable[..., object]:
    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError(f"{exercise}: this exercise asks you to write it without calling {name}. "
                             f"Hint: {hint}.")
    return refuse


def call_student(exercise: str, student_fn: Callable, args: Sequence[object], hint: str,
                 forbidden: Sequence[str] = ()) -> object:
    """student_fn(*args) on clones of the tensor arguments: the ONLY way a checker calls the student's function.

    RuntimeError, IndexError, TypeError and ValueError become an AssertionError naming the exercise, with `hint`;
    other errors pass through. While student_fn runs, each dotted name in `forbidden` ("torch.softmax",
    "torch.Tensor.softmax", ...) is patched by a stand-in raising AssertionError "<exercise>: this exercise asks
    you to write it without calling <name>"; the originals are back afterwards, also after an error.
    """
    args = [_clone(arg) for arg in args]
    with contextlib.ExitStack() as patches:
        for name in forbidden:
            patches.enter_context(mock.patch(name, _refusal(exercise, name, hint)))
        try:
            return student_fn(*args)
        except STUDENT_ERRORS as error:
            raise AssertionError(f"{exercise}: your function raised {type(error).__name__}: {error}. "
                                 f"Hint: {hint}.") from error


def run_cases(exercise: str, student_fn: Callable, cases: Sequence, hint: str, check: Callable[[object, object], None],
              success: str, forbidden: Sequence[str] = (), args: Callable[[object], Sequence[object]] = tuple,
              first: int = 0) -> None:
    """The checker loop: "not attempted yet" when the student's function returns None on cases[first]; else
    `check(case, got)` with got = student_fn(*args(case)) for every case, then the success message."""
    def call(case: object) -> object:
        return call_student(exercise, student_fn, args(case), hint, forbidden)

    if not attempted(exercise, call(cases[first])):
        return
    for case in cases:
        check(case, call(case))
    passed(exercise, success)
