"""The checker contract, for every checker of notebooks 01-08: the answer key passes, the starter (None) is "not
attempted yet", a call to a forbidden function fails with "without calling", and `call_student` clones the
arguments, turns the student's errors into hints and puts the forbidden functions back.
The typical mistakes of each notebook's exercises are in tests/test_exercises_nbNN.py."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import course_utils.exercises as exercises_package
from course_utils import attention, data, exercises, loss, metrics, search, translate
from course_utils.exercises import contract, solutions
from course_utils.vocab import PAD_ID

CHECKERS = sorted(name for name, obj in vars(exercises).items() if name.startswith("check_") and callable(obj))
NOTEBOOK_MODULES = [info.name for info in pkgutil.iter_modules(exercises_package.__path__) if info.name[:2] == "nb"]
INF = float("-inf")


def test_solutions_cover_every_public_checker():
    assert set(solutions.SOLUTIONS) == set(CHECKERS)
    for name, solution in solutions.SOLUTIONS.items():
        assert solution.__name__ == name.removeprefix("check_")  # named after its checker


def test_the_package_re_exports_every_checker_and_case_constant_of_the_notebook_modules():
    assert {name[2:4] for name in NOTEBOOK_MODULES} >= {"01", "02", "03", "04", "05", "06", "08"}
    for module_name in NOTEBOOK_MODULES:
        module = importlib.import_module(f"course_utils.exercises.{module_name}")
        number = module_name[2:4]
        for name, obj in vars(module).items():
            if name.startswith("check_"):
                assert getattr(exercises, name) is obj
                assert f"Introduced in notebook {number}" in inspect.getdoc(obj), name  # tag matches the file
            elif name.isupper() and name.endswith(("_CASES", "_SENTENCES", "_SOURCES", "_LENGTHS", "_SIZES")):
                assert getattr(exercises, name) is obj, name
    assert set(exercises.__all__) <= set(vars(exercises))


@pytest.mark.parametrize("name", CHECKERS)
def test_checker_accepts_its_reference_solution(name, capsys):
    getattr(exercises, name)(solutions.SOLUTIONS[name])
    out = capsys.readouterr().out
    assert "correct!" in out and "not attempted" not in out


@pytest.mark.parametrize("name", CHECKERS)
def test_checker_reports_the_starter_as_not_attempted(name, capsys):
    getattr(exercises, name)(lambda *args: None)
    out = capsys.readouterr().out
    assert "not attempted yet" in out and "correct!" not in out


def dot_attention_with(module):
    def attend(query, keys, mask):
        out = module()(query, keys, mask)
        return out.context, out.weights
    return attend


def greedy_with_package(model, src_ids, max_length):
    output = search.greedy_decode(model, src_ids.unsqueeze(0), torch.tensor([len(src_ids)]), max_steps=max_length)
    return output.tokens[0, :int(output.lengths[0])].tolist()


CHEATS = [  # checker, a solution that calls a forbidden function, the name in the message
    ("check_rationale_precision_recall", lambda s, g, m: metrics.rationale_scores(s, g, m)[:2],
     "course_utils.metrics.rationale_scores"),
    ("check_normalize", lambda s: data.normalize_string(s), "course_utils.data.normalize_string"),
    ("check_normalize", lambda s: data.normalize_string_anchored(s), "course_utils.data.normalize_string_anchored"),
    ("check_masked_softmax", lambda scores, mask: torch.softmax(scores.masked_fill(~mask, INF), -1), "torch.softmax"),
    ("check_masked_softmax", lambda scores, mask: F.softmax(scores.masked_fill(~mask, INF), dim=-1),
     "torch.nn.functional.softmax"),
    ("check_masked_softmax", lambda scores, mask: scores.masked_fill(~mask, INF).softmax(-1), "torch.Tensor.softmax"),
    ("check_masked_softmax", lambda scores, mask: torch.nn.Softmax(dim=-1)(scores.masked_fill(~mask, INF)),
     "torch.nn.functional.softmax"),  # the module calls F.softmax
    ("check_masked_softmax", lambda scores, mask: torch.special.softmax(scores.masked_fill(~mask, INF), -1),
     "torch.special.softmax"),
    ("check_masked_softmax", lambda scores, mask: attention.masked_softmax(scores, mask),
     "course_utils.attention.masked_softmax"),
    ("check_dot_attention", dot_attention_with(lambda: attention.DotAttention()),
     "course_utils.attention.DotAttention"),
    ("check_dot_attention", dot_attention_with(lambda: attention.make_attention("dot", 6, 6)),
     "course_utils.attention.DotAttention"),  # make_attention looks the class up in the module
    ("check_dot_attention", dot_attention_with(lambda: attention.ScaledDotAttention()),
     "course_utils.attention.ScaledDotAttention"),
    ("check_masked_nll", lambda log_probs, tgt: loss.masked_nll_loss(log_probs, tgt),
     "course_utils.loss.masked_nll_loss"),
    ("check_masked_nll", lambda log_probs, tgt: F.nll_loss(log_probs.transpose(1, 2), tgt, ignore_index=PAD_ID),
     "torch.nn.functional.nll_loss"),
    ("check_masked_nll", lambda log_probs, tgt: torch.nn.NLLLoss(ignore_index=PAD_ID)(log_probs.transpose(1, 2),
                                                                                          tgt),
     "torch.nn.functional.nll_loss"),
    ("check_masked_nll",
     lambda log_probs, tgt: F.cross_entropy(log_probs.transpose(1, 2), tgt, ignore_index=PAD_ID),
     "torch.nn.functional.cross_entropy"),
    ("check_greedy_decode", greedy_with_package, "course_utils.search.greedy_decode"),
    ("check_greedy_decode", lambda model, src_ids, max_length: search.beam_search(model, src_ids, 1, max_length)[0],
     "course_utils.search.beam_search"),
    ("check_attention_entropy", lambda weights: metrics.attention_entropy(weights),
     "course_utils.metrics.attention_entropy"),
    ("check_replace_unknown", lambda output, source, attention: translate.replace_unknown_words(
        translate.Translation(source, output, attention, 0.0, [])).output_tokens,
     "course_utils.translate.replace_unknown_words"),
]


@pytest.mark.parametrize("name, cheat, forbidden", CHEATS)
def test_a_write_it_yourself_checker_refuses_the_function_it_asks_to_write(name, cheat, forbidden, capsys):
    """The cheat fails with "without calling <name>", and the hint says so; the function is back afterwards."""
    original = pkgutil.resolve_name(forbidden)
    with pytest.raises(AssertionError, match=re.escape(f"without calling {forbidden}. Hint: ")) as error:
        getattr(exercises, name)(cheat)
    assert str(error.value).startswith(f"{name.removeprefix('check_')}: this exercise asks you to write it")
    assert "correct!" not in capsys.readouterr().out
    assert pkgutil.resolve_name(forbidden) is original
    assert "softmax" not in vars(torch.Tensor)  # the patch on the class is gone, the inherited method is back


def test_every_forbidden_name_is_patched_and_mentioned_by_its_checker():
    forbidden = {name: value for module_name in NOTEBOOK_MODULES
                 for name, value in vars(importlib.import_module(f"course_utils.exercises.{module_name}")).items()
                 if name.endswith("_FORBIDDEN")}
    assert set(forbidden) == {"NORMALIZE_FORBIDDEN", "MASKED_SOFTMAX_FORBIDDEN", "DOT_ATTENTION_FORBIDDEN",
                              "MASKED_NLL_FORBIDDEN", "GREEDY_FORBIDDEN", "ENTROPY_FORBIDDEN",
                              "RATIONALE_FORBIDDEN", "REPLACE_FORBIDDEN"}
    cheated = {cheat_name for _, _, cheat_name in CHEATS}
    for names in forbidden.values():
        for name in names:
            assert callable(pkgutil.resolve_name(name))  # the names exist: a rename in the package shows here
            assert name in cheated, f"no test calls the forbidden {name}"


def test_the_forbidden_functions_work_again_after_the_check_and_inside_the_checkers_own_references(capsys):
    """The checkers compute their references with torch.softmax / DotAttention outside the patch."""
    exercises.check_masked_softmax(solutions.masked_softmax)
    exercises.check_dot_attention(solutions.dot_attention)
    assert capsys.readouterr().out.count("correct!") == 2
    scores = torch.tensor([[1.0, 2.0]])
    assert torch.allclose(torch.softmax(scores, -1), scores.softmax(-1))


def test_call_student_clones_the_tensors_also_inside_a_batch():
    tensor = torch.zeros(3)
    batch = data.collate_batch([(torch.tensor([4, 2]), torch.tensor([5, 2]))])

    def vandal(t, b, items):
        t.fill_(7)
        b.src.fill_(7)
        items[0].fill_(7)
        return "done"

    items = [torch.ones(2)]
    assert contract.call_student("demo", vandal, (tensor, batch, items), "no hint") == "done"
    assert not tensor.any() and batch.src.tolist() == [[4, 2]] and items[0].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("error", [RuntimeError, IndexError, TypeError, ValueError])
def test_call_student_turns_the_students_errors_into_a_hint(error):
    def broken(*args):
        raise error("shapes (2, 3) and (4, 5)")

    with pytest.raises(AssertionError, match=r"^demo: your function raised .*shapes \(2, 3\).*Hint: mind B\.$"):
        contract.call_student("demo", broken, (), "mind B")


def test_call_student_lets_other_errors_through_and_restores_the_patches_after_an_error():
    def broken(scores):
        scores.softmax(-1)  # refused: an AssertionError, not converted

    with pytest.raises(AssertionError, match="demo: this exercise asks you to write it without calling "
                                             "torch.Tensor.softmax. Hint: no softmax."):
        contract.call_student("demo", broken, (torch.zeros(2),), "no softmax", forbidden=("torch.Tensor.softmax",))
    with pytest.raises(KeyError):
        contract.call_student("demo", lambda: {}["missing"], (), "hint", forbidden=("torch.softmax",))
    assert torch.softmax is torch._C._VariableFunctions.softmax and "softmax" not in vars(torch.Tensor)
    assert torch.zeros(2).softmax(-1).tolist() == [0.5, 0.5]


# Each tests/test_exercises_nbNN.py lists its notebook's typical mistakes (MISTAKES: checker, wrong solution, a
# word of the expected hint); one test runs them all.
MISTAKE_FILES = sorted(path.stem for path in Path(__file__).parent.glob("test_exercises_nb*.py"))
TYPICAL_MISTAKES = [case for name in MISTAKE_FILES for case in importlib.import_module(name).MISTAKES]


@pytest.mark.parametrize("check, wrong, hint", TYPICAL_MISTAKES)
def test_checker_raises_with_a_hint_for_a_typical_mistake(check, wrong, hint, capsys):
    with pytest.raises(AssertionError, match=hint):
        check(wrong)
    assert "correct!" not in capsys.readouterr().out
