"""The site's hand-made pages: the index and the lecturers' solutions page.

`describe` reads a notebook's title and summary for the index (`NotebookEntry`); `index_page` and `solutions_page`
write the two pages' HTML; `questions_section` and `questions_with_answers` write a notebook's questions with their
answers (listed on the solutions page, folded on the learner's page); `mathjax_head` is the local-MathJax <head>
part that these pages and the exported notebooks share. Not about the notebooks' own pages (export).
"""
from __future__ import annotations

import html
import inspect
import re
from dataclasses import dataclass
from typing import Any

from tools.site.offline import STATIC

__all__ = ["NotebookEntry", "describe", "index_page", "inline_markdown", "mathjax_head", "questions_section",
           "questions_with_answers", "solutions_page"]

_MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"  # the combined configuration jupyter-server-mathjax ships
_SUMMARY_LINES = ("**Builds on", "**Prerequisites", "**Prerequisite", "**Time", "**Reading time", "**Run time")


# ------------------------------------------------------------------------------------------- notebook summaries
@dataclass(frozen=True)
class NotebookEntry:
    """One notebook of the site: its file stem, title and the summary shown on the index."""

    stem: str
    title: str
    summary_markdown: str

    @property
    def page(self) -> str:
        return f"{self.stem}.html"

    @property
    def slides(self) -> str:
        return f"{self.stem}.slides.html"


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def describe(notebook: dict[str, Any], stem: str) -> NotebookEntry:
    """Title (the first `# ` heading) and summary (the first paragraph after it, then the first cell's
    "Builds on"/"Prerequisites"/"Time" paragraphs) of a notebook."""
    first = next((_source(cell) for cell in notebook.get("cells", []) if cell.get("cell_type") == "markdown"), "")
    paragraphs = [part.strip() for part in re.split(r"\n\s*\n", first) if part.strip()]
    title = stem
    if paragraphs and paragraphs[0].startswith("# "):
        title = paragraphs.pop(0)[2:].strip()
    body = [part for part in paragraphs if not part.startswith("#")]
    summary = body[:1] + [part for part in body[1:] if part.startswith(_SUMMARY_LINES)]
    return NotebookEntry(stem, title, "\n\n".join(summary))


# ------------------------------------------------------------------------------------------- pages
def mathjax_head(prefix: str) -> str:
    """Local MathJax 2 with the configuration of nbconvert's template, STIX-Web fonts (those shipped)."""
    return f"""
<script type="text/x-mathjax-config">
MathJax.Hub.Config({{
  TeX: {{equationNumbers: {{autoNumber: "AMS", useLabelIds: true}}}},
  tex2jax: {{inlineMath: [['$', '$'], ["\\\\(", "\\\\)"]], displayMath: [['$$', '$$'], ["\\\\[", "\\\\]"]],
            processEscapes: true, processEnvironments: true}},
  displayAlign: "center", messageStyle: "none",
  "HTML-CSS": {{availableFonts: [], imageFont: null, preferredFont: null, webFont: "STIX-Web",
               linebreaks: {{automatic: true}}}},
  MathMenu: {{showLocale: false}}
}});
</script>
<script src="{prefix}{STATIC}/mathjax/MathJax.js?config={_MATHJAX_CONFIG}"></script>
"""


_PAGE_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; max-width: 56em; margin: 2em auto;
  padding: 0 1em; line-height: 1.5; color: #222; }
h1 { font-size: 1.9em; margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.lead { color: #555; margin-top: 0; }
.notebook { margin: 1.4em 0; padding: 0.6em 1em; border-left: 4px solid #4a7ab5; background: #f8f9fb; }
.notebook h2 { border: none; margin: 0.2em 0; font-size: 1.3em; }
.links a { margin-right: 1.2em; font-weight: 600; }
code, pre { font-family: Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 0.92em; }
pre.doc { white-space: pre-wrap; background: #fafafa; border: 1px solid #eee; padding: 0.6em; }
.exercise { margin: 1.2em 0 2em; }
.highlight { background: #f6f8fa; border: 1px solid #e3e6ea; padding: 0.2em 0.8em; overflow-x: auto; }
.missing { color: #a33; }
.questions li { margin: 0.8em 0; } .questions .answer { margin-left: 1em; color: #1d4d2b; }
"""


def _page(title: str, body: str, mathjax: bool = False, head: str = "") -> str:
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8" />\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1.0">\n<title>{html.escape(title)}'
            f'</title>\n<style type="text/css">{_PAGE_CSS}</style>\n{head}'
            f'{mathjax_head("") if mathjax else ""}</head>\n<body>\n{body}\n</body>\n</html>\n')


def index_page(entries: list[NotebookEntry], solutions: bool, decks: list[tuple[str, str, int]] = ()) -> str:
    """The index: every notebook with what it teaches and links to its page and its slides, then the session
    decks `decks` ((file name, title, slide count) each)."""
    from nbconvert.filters import markdown2html

    items = []
    for entry in entries:
        items.append(f'<section class="notebook" id="{html.escape(entry.stem)}">\n'
                     f'<h2><a href="{entry.page}">{html.escape(entry.title)}</a></h2>\n'
                     f'{markdown2html(entry.summary_markdown)}\n'
                     f'<p class="links"><a href="{entry.page}">read the notebook</a>'
                     f'<a href="{entry.slides}">slides</a></p>\n</section>')
    if decks:
        rows = "\n".join(f'<li><a href="{name}">{html.escape(title)}</a> ({count} slides)</li>'
                         for name, title, count in decks)
        items.append(f'<section class="decks" id="session-decks">\n<h2>Lecture decks</h2>\n<p>One condensed deck '
                     f'per 90-minute session (the plan: notebooks/LECTURE_PLAN.md); <kbd>s</kbd> opens the speaker '
                     f'notes.</p>\n<ul>\n{rows}\n</ul>\n</section>')
    lecturers = ('<h2>For lecturers</h2>\n<p><a href="solutions.html">Solutions</a>: every exercise\'s checker '
                 'and its reference solution, and the answers to each notebook\'s questions.</p>') if solutions else ""
    body = ('<h1>Dissecting Attention</h1>\n<p class="lead">A sequence-to-sequence translator (GRU encoder, '
            'attention decoder, French to English) taken apart, one notebook at a time. These pages show the '
            'notebooks as they were run; no Python and no network are needed to read them. Slides: arrow keys to '
            'move, <kbd>s</kbd> for the speaker notes, <kbd>f</kbd> for full screen.</p>\n'
            + "\n".join(items) + f"\n{lecturers}")
    return _page("Dissecting Attention", body, mathjax=True)


def inline_markdown(text: str) -> str:
    """HTML for one paragraph of the course's plain prose: everything escaped, `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def questions_section(notebook: str) -> str:
    """The "Questions" part of a notebook on the solutions page: each question's kind, prompt and answer."""
    from course_utils.exercises.questions import KIND_LABELS, QUESTIONS

    items = [f'<li class="question {question.kind}"><p><em>({KIND_LABELS[question.kind]})</em> '
             f'{inline_markdown(question.prompt)}</p>\n<p class="answer"><strong>Answer.</strong> '
             f'{inline_markdown(question.answer)}</p></li>' for question in QUESTIONS.get(notebook, [])]
    if not items:
        return ""
    return (f'<div class="questions" id="questions-{html.escape(notebook)}">\n<h3>Questions</h3>\n'
            f'<p>Asked at the end of notebook {html.escape(notebook)} (<code>exercises.show_questions('
            f'"{html.escape(notebook)}")</code>); the notebook\'s page also shows each answer, folded under its '
            f'question. The shapes are checked against the package\'s code by tests/test_questions.py.</p>\n'
            f'<ol>\n' + "\n".join(items) + "\n</ol>\n</div>")


def questions_with_answers(notebook: str) -> str:
    """For the learner's page (tools.site.learner): a notebook's questions, each with its answer folded
    under it in a closed <details> "Answer"; "" for a notebook without questions."""
    from course_utils.exercises.questions import KIND_LABELS, QUESTIONS

    items = [f'<li class="question {question.kind}"><p><em>({KIND_LABELS[question.kind]})</em> '
             f'{inline_markdown(question.prompt)}</p>\n<details class="course-answer"><summary>Answer</summary>\n'
             f'<p class="answer">{inline_markdown(question.answer)}</p>\n</details></li>'
             for question in QUESTIONS.get(notebook, [])]
    if not items:
        return ""
    return (f'<div class="questions" id="questions-{html.escape(notebook)}">\n<h3>Questions to think about '
            f'(notebook {html.escape(notebook)})</h3>\n<p>Think each one through (or run a cell to check a shape) '
            f'before you open its answer.</p>\n<ol>\n' + "\n".join(items) + "\n</ol>\n</div>")


def solutions_page() -> str:
    """For lecturers: per notebook, each checker's name and docstring and its reference solution's source, then
    the answers to the notebook's questions (course_utils.exercises.questions)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    from course_utils import exercises
    from course_utils.exercises import solutions
    from course_utils.exercises.questions import QUESTIONS

    checkers = {name: getattr(exercises, name) for name in dir(exercises) if name.startswith("check_")
                and callable(getattr(exercises, name))}
    names = list(solutions.SOLUTIONS) + sorted(set(checkers) - set(solutions.SOLUTIONS))
    by_module: dict[str, list[str]] = {}
    for name in names:
        module = getattr(checkers.get(name), "__module__", "course_utils.exercises").rsplit(".", 1)[-1]
        by_module.setdefault(module, []).append(name)
    formatter = HtmlFormatter()
    sections, answered = [], set()
    for module in sorted(by_module):
        notebook = re.match(r"nb(\d+)_(.*)", module)
        heading = f"Notebook {notebook.group(1)}: {notebook.group(2).replace('_', ' ')}" if notebook else module
        parts = [f'<h2 id="{html.escape(module)}">{html.escape(heading)}</h2>']
        for name in by_module[module]:
            checker, solution = checkers.get(name), solutions.SOLUTIONS.get(name)
            doc = inspect.getdoc(checker) if checker else None
            source = (highlight(inspect.getsource(solution), PythonLexer(), formatter) if solution
                      else '<p class="missing">No reference solution yet.</p>')
            parts.append(f'<div class="exercise" id="{html.escape(name)}">\n<h3><code>exercises.{html.escape(name)}'
                         f'</code></h3>\n<pre class="doc">{html.escape(doc or "(no docstring)")}</pre>\n'
                         f'<p>Reference solution (<code>course_utils/exercises/solutions.py</code>):</p>\n{source}'
                         f'</div>')
        if notebook:
            parts.append(questions_section(notebook.group(1)))
            answered.add(notebook.group(1))
        sections.append("\n".join(parts))
    for number in sorted(set(QUESTIONS) - answered):  # a notebook with questions but no exercises
        sections.append(f'<h2 id="notebook-{html.escape(number)}">Notebook {html.escape(number)}</h2>\n'
                        + questions_section(number))
    body = ('<p><a href="index.html">&larr; all notebooks</a></p>\n<h1>Solutions (for lecturers)</h1>\n'
            '<p class="lead">Each exercise is checked in its notebook by the checker named here; the reference '
            'solution below passes it (tests/test_exercises.py runs every pair). After them, the answers to the '
            'notebook\'s "predict the shape" and concept questions, which the notebook lists without answers (its '
            'page on this site folds each answer under its question). '
            'Students\' copies of the site are built without this page (<code>--no-solutions</code>).</p>\n'
            + "\n".join(sections))
    return _page("Solutions · Dissecting Attention", body,
                 head=f'<style type="text/css">{formatter.get_style_defs(".highlight")}</style>\n')
