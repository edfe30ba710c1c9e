"""The one contract every checker of `course_utils.exercises` follows (see the package docstring).

- `attempted(exercise, result)`: False (after printing "not attempted yet") when the student's function returned
  None, the starter's return value;
- `expect(condition, message)`: raise AssertionError(message) unless `condition`;
- `passed(exercise, detail)`: print the success message ("<exercise>: correct! <detail>");
- `call_student(exercise, student_fn, args, hint, forbidden=())`: the ONLY way a checker calls the student's
  function: on clones of the tensors, with the usual errors turned into an AssertionError with a hint, and with
  the `forbidden` functions refusing to run.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from unittest import mock

import torch

STUDENT_ERRORS = (RuntimeError, IndexError, TypeError, ValueError)  # wrong shapes, dtypes, arguments


def attempted(exercise: str, result: object) -> bool:
    """False (after printing "not attempted yet") when `result` is None, the starter's return value.
    """
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
    """A stand-in for the forbidden function `name`: calling it raises an AssertionError that says why."""
    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError(f"{exercise}: this exercise asks you to write it without calling {name}. "
                             f"Hint: {hint}.")
    return refuse


def call_student(exercise: str, student_fn: Callable, args: Sequence[object], hint: str,
                 forbidden: Sequence[str] = ()) -> object:
    """student_fn(*args) on clones of the tensor arguments (the student cannot change the checker's cases).

    A RuntimeError, IndexError, TypeError or ValueError raised by the student's code (wrong shapes, dtypes,
    arguments) becomes an AssertionError naming the exercise, with `hint`, so a shape mistake reads like any
    other wrong answer. Other errors (KeyError, ...) pass through: a checker may catch them for its own hint.

    `forbidden` holds dotted names ("torch.softmax", "torch.Tensor.softmax", "course_utils.data.normalize_string")
    of the functions the exercise asks the student NOT to call: while student_fn runs, each is replaced (with
    unittest.mock.patch, on the module or class attribute) by a stand-in that raises AssertionError "<exercise>:
    this exercise asks you to write it without calling <name>"; the originals are back afterwards, also when the
    student's code raises. The patch covers the calls that look the name up at call time (`data.normalize_string(s)`,
    `F.softmax(x)`, `x.softmax()`); a notebook that did `from course_utils.data import normalize_string` holds
    its own reference, which the patch cannot reach. The checker's own reference computations run outside the
    patch.
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
