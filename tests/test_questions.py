"""The notebooks' "predict the shape" and concept questions (course_utils.exercises.questions): every notebook has
both kinds, every shape answer is what the package's code produces, the notebooks' listing holds no answer, and
the solutions page holds every answer, escaped, after the notebook's reference solutions."""
from __future__ import annotations

import html
import pkgutil
import re

import pytest

from course_utils import exercises
from course_utils.exercises.questions import (
    KINDS,
    QUESTIONS,
    SITE_COMMAND,
    Question,
    notebook_id,
    questions_markdown,
    show_questions,
)
from tools.site import NOTEBOOKS
from tools.site.pages import inline_markdown, questions_section, solutions_page

SHAPE_QUESTIONS = [q for questions in QUESTIONS.values() for q in questions if q.kind == "shape"]
CONCEPT_QUESTIONS = [q for questions in QUESTIONS.values() for q in questions if q.kind == "concept"]


def question_id(question: Question) -> str:
    return f"{question.notebook}-{QUESTIONS[question.notebook].index(question) + 1}"


def prose_fragment(text: str) -> str:
    """The longest run of an answer outside its code spans: plain prose that a page shows as it is (escaped)."""
    return html.escape(max((part.strip() for part in re.split(r"`[^`]*`", text)), key=len))


def sentences(text: str) -> list[str]:
    """The sentences of an answer, code spans left out (a `.` token or `exp(-inf)` ends none)."""
    prose = re.sub(r"`[^`]*`", "CODE", text)
    return [part for part in re.split(r"(?<=[.!?])\s+(?=[A-Z(])", prose.strip()) if part]


def format_shape(shape: tuple[int, ...]) -> str:
    """A shape as the course writes it: (4, 7, 512), (3,), () for a scalar."""
    return f"({shape[0]},)" if len(shape) == 1 else f"({', '.join(map(str, shape))})"


def test_every_notebook_has_three_or_four_questions_of_both_kinds():
    stems = {path.name[:2] for path in NOTEBOOKS.glob("[0-9A][0-9]_*.ipynb")}
    assert stems and set(QUESTIONS) == stems  # one entry per notebook, keyed like notebooks/NN_name.ipynb or An_...
    for notebook, questions in QUESTIONS.items():
        assert 3 <= len(questions) <= 4, notebook
        appendix = notebook.startswith("A")  # read beside the core path: concept questions only
        assert {q.kind for q in questions} == ({"concept"} if appendix else set(KINDS)), notebook
        assert all(q.notebook == notebook for q in questions), notebook
        assert len({q.prompt for q in questions}) == len(questions), notebook


@pytest.mark.parametrize("question", SHAPE_QUESTIONS, ids=question_id)
def test_shape_answers_are_what_the_package_computes(question):
    assert question.compute() == question.shapes  # the real modules, on the inputs the prompt describes
    for shape in question.shapes:
        assert format_shape(shape) in question.answer, format_shape(shape)


@pytest.mark.parametrize("question", CONCEPT_QUESTIONS, ids=question_id)
def test_concept_answers_are_two_to_four_sentences(question):
    assert 2 <= len(sentences(question.answer)) <= 4, sentences(question.answer)
    assert question.prompt.endswith("?")


def test_format_shape_writes_shapes_as_the_notebooks_do():
    assert [format_shape(s) for s in ((4, 7, 512), (3,), ())] == ["(4, 7, 512)", "(3,)", "()"]


def test_a_question_is_either_a_checked_shape_question_or_a_concept_question():
    with pytest.raises(ValueError, match="kind"):
        Question("01", "trivia", "Why?", "Because.")
    with pytest.raises(ValueError, match="shape question"):
        Question("01", "shape", "Which shape?", "(2, 3)")  # no compute: nothing would check the answer
    with pytest.raises(ValueError, match="shape question"):
        Question("01", "concept", "Why?", "Because.", ((2, 3),), lambda: ((2, 3),))


@pytest.mark.parametrize("notebook", sorted(QUESTIONS))
def test_show_questions_lists_the_prompts_without_the_answers(notebook):
    shown = show_questions(notebook)
    text = shown._repr_markdown_() if hasattr(shown, "_repr_markdown_") else shown
    assert text == questions_markdown(notebook)
    for question in QUESTIONS[notebook]:
        assert question.prompt in text
        assert prose_fragment(question.answer) not in html.escape(text)
        for sentence in sentences(question.answer):
            assert sentence not in text
    assert "solutions page" in text and SITE_COMMAND in text
    assert text.count("*(predict the shape)*") == sum(q.kind == "shape" for q in QUESTIONS[notebook])


def test_notebooks_are_named_by_number_or_stem():
    assert notebook_id("03") == notebook_id(3) == notebook_id("3") == notebook_id("03_attention_decoder") == "03"
    with pytest.raises(ValueError, match="no questions for notebook"):
        show_questions("99")
    assert exercises.show_questions is show_questions and exercises.QUESTIONS is QUESTIONS


def test_prompts_render_in_markdown_without_raw_html_or_emphasis():
    for questions in QUESTIONS.values():
        for question in questions:
            outside_code = re.sub(r"`[^`]*`", "", question.prompt)
            assert not re.search(r"[<>_*$\\]", outside_code), question.prompt  # tokens such as <eos> in backticks


def test_questions_section_escapes_html_and_keeps_code_spans(monkeypatch):
    tricky = Question("01", "concept", "What does `<eos>` do & why <b>?", "It ends. A <script>x</script> stays text.")
    monkeypatch.setitem(QUESTIONS, "01", [tricky])
    section = questions_section("01")
    assert "<code>&lt;eos&gt;</code> do &amp; why &lt;b&gt;?" in section
    assert "A &lt;script&gt;x&lt;/script&gt; stays text." in section
    assert "<script>" not in section and "<b>" not in section
    assert inline_markdown("`a<b` and `c`") == "<code>a&lt;b</code> and <code>c</code>"


def test_solutions_page_answers_every_question_after_the_notebooks_reference_solutions():
    page = solutions_page()
    for notebook, questions in QUESTIONS.items():
        section = page.index(f'id="questions-{notebook}"')
        exercise_headings = [m.start() for m in re.finditer(rf'<h2 id="nb{notebook}_', page)]
        if any(info.name.startswith(f"nb{notebook}_") for info in pkgutil.iter_modules(exercises.__path__)):
            assert exercise_headings and 'class="exercise"' in page[exercise_headings[0]:section]  # after them
        following = page.find("<h2", section)
        part = page[section:None if following < 0 else following]
        for question in questions:
            assert inline_markdown(question.prompt) in part
            assert inline_markdown(question.answer) in part
    assert "&lt;eos&gt;" in page and "<eos>" not in page
