"""What notebooks 06 and 08 (and their questions) say about their sources: no claim the sources contradict.

Notebook 08 shows the lecture's attention classifier as the lecture wrote it (quoted, then run on the stand-ins it
names: tests/test_sources_lecture.py checks the copy and the bugs). Hiding the most or the least attended word
(notebook 06) is an observation whose order flips between runs: never asserted, related to the literature. Those two
checks read every notebook of notebooks/, core or appendix: the exhibits may move (the tick labels live in the
sources' gallery, A3)."""
import json
from pathlib import Path

from course_utils.exercises.questions import QUESTIONS

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _text(name: str) -> str:
    cells = json.loads((NOTEBOOKS / name).read_text())["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells)


def _all_notebooks_text() -> str:
    return "\n".join(_text(path.name) for path in sorted(NOTEBOOKS.glob("*.ipynb")))


def test_notebook_08_quotes_the_lectures_classifier_and_says_what_its_runnable_copy_changes():
    text = _text("08_attention_classification.ipynb")
    assert "as shown" not in text and "the LSTMs run unpacked, so" not in text
    assert "LectureAttentionClassifier" not in text  # the simplified exhibit is gone: the lecture's own lines instead
    for lines in ("859-883", "887-902", "910-938", "1103-1108", "1118-1121"):  # the class, its printout, its display
        assert f"<!-- quote 003 lines {lines} -->" in text
    assert "class CartonAttentionClassifier(pl.LightningModule)" in text and "pack_padded_sequence" in text
    assert "neither defined nor imported" in text and "would have printed 0.46, not 0" in text  # masked_mean's reading
    assert "input_ids == self.padding_id" in text and "one `display()` call per word" in text
    assert "<div" not in text.split("## 6. Showing the selections")[1].split("## Recap")[0].replace(
        '"<div" not in', "")  # the exhibit no longer blames block <div>s


def test_question_08_explains_the_sparsity_bug_by_the_padding_mask():
    question, answer = next((q.prompt, q.answer) for q in QUESTIONS["08"] if "sparsity term" in q.prompt)
    assert "input_ids == padding_id" in question and "masked_fill" not in question + answer
    assert "padding positions" in answer


def test_the_hiding_test_is_reported_as_an_observation_and_cites_the_literature():
    text = _all_notebooks_text()
    assert "nearly as often" not in text and "nearly equally" not in text
    assert "Serrano and Smith (2019" in text and "Jain and Wallace (2019" in text
    assert 'claims.observe("06.changed_by_hiding_most_least"' in text
    assert "assert most" not in text and "assert least" not in text  # the order is never asserted
    question = next(q for q in QUESTIONS["06"] if "least attended" in q.prompt)
    assert "nearly equally" not in question.prompt and "Serrano" in question.answer


def test_the_notebooks_say_the_padding_workaround_works_but_is_fragile():
    text = _all_notebooks_text()
    assert "right by accident" not in text and "workaround **works**" in text and "fragile" in text
