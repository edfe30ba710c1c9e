"""The course as a static site that reads with no Python and no network: `python -m course_utils site --output DIR`.

    python -m course_utils site --output site/               # every notebook of notebooks/, slides, solutions
    python -m course_utils site --output site/ --no-solutions    # the students' copy: no answer key
    python -m course_utils site --output /tmp/s --notebooks notebooks/01_data.ipynb   # only some notebooks

What DIR holds (open DIR/index.html in a browser, from disk or any web server):

    index.html            the notebooks, each with its title, what it teaches (its first paragraph and the
                          "Builds on"/"Prerequisites"/"Time" lines of its first cell) and links to its page and slides
    NN_name.html          the executed notebook (nbconvert's HTMLExporter, JupyterLab look), as the learner reads it
                          (course_utils.site.learner): no NBVAL markers, the Colab cell folded, test paths as
                          footnotes, each question's answer folded under it
    NN_name.slides.html   the same notebook as reveal.js slides (nbconvert's SlidesExporter; slide types from
                          course_utils.site.slides, so the deck exists even before the notebooks carry the metadata;
                          key `s` opens the speaker view with the notes)
    session-N.slides.html the condensed deck of lecture session N (1: notebooks 00-04, 2: 05-08) from the cells
                          tagged `lecture` (course_utils.site.lecture_plan, course_utils.site.decks): at most 30
                          1280x720 slides, the rest of each cell in the speaker notes; absent while no cell is tagged
    solutions.html        for lecturers: every exercise's checker, its docstring and the reference solution's
                          source (course_utils.exercises.solutions.SOLUTIONS), then each notebook's questions with
                          their answers (course_utils.exercises.questions); left out with --no-solutions
    _static/mathjax/      MathJax 2.7.9 copied from the PyPI package jupyter-server-mathjax (requirements.txt)
    _static/reveal.js/    reveal.js 4.6.1, the subset vendored in course_utils/site/static/ (MIT)

Nothing is executed: the pages show the outputs stored in the notebooks, figures embedded as PNG. Widgets need a
kernel, so a widget output (06's explorer) is replaced by a note; the notebook's own static fallback
(`show_static`) is a stored PNG and shows. Every page written is scanned for resources loaded from elsewhere
(script/link/img/iframe sources, CSS url()/@import, JavaScript imports) and the build fails if one is found
(`remote_resources`); tests/browser/run_site_check.py opens the result in headless Chromium with no network.

The parts, one idea a module, all in this subpackage (the course's tooling, kept apart from the library modules of
course_utils): course_utils.site.export (one notebook exported as page and slides), course_utils.site.pages (the
index and solutions pages), course_utils.site.offline (the remote-resource check), course_utils.site.slides (the
notebooks' slide metadata, `python -m course_utils.site.slides`), course_utils.site.learner (what a learner's page
changes: markers, the Colab cell, test footnotes, folded answers), course_utils.site.lecture_plan (the two sessions'
cells as tags, `python -m course_utils.site.lecture_plan --apply|--check`), course_utils.site.decks (the condensed
session decks) and static/ (the vendored reveal.js); this module
builds the whole site from them and is the `site` command (also `python -m course_utils.site`, its __main__). The
public names of export, pages and offline are importable from here.

Introduced in: the lecture kit (issue 14); not used by the notebooks themselves.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from course_utils.site.export import WIDGET_MIME, WIDGET_NOTE, export_notebook, prepare
from course_utils.site.offline import STATIC, SiteError, check_offline, remote_resources
from course_utils.site.pages import MATHJAX_CONFIG, NotebookEntry, describe, index_page, solutions_page

__all__ = ["MATHJAX_CONFIG", "MATHJAX_PARTS", "NOTEBOOKS", "REPO", "STATIC", "VENDORED", "WIDGET_MIME", "WIDGET_NOTE",
           "NotebookEntry", "SiteError", "SiteReport", "add_site_parser", "build_session_decks", "build_site",
           "check_offline", "cmd_site", "copy_static", "default_jobs", "describe", "export_notebook", "index_page",
           "main", "mathjax_source", "prepare", "remote_resources", "solutions_page"]

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
VENDORED = Path(__file__).resolve().parent / "static"
# What MathJax 2 loads with the configuration MATHJAX_CONFIG and the STIX-Web fonts; the SVG output and the
# translations of its menu (7 MB together) are not needed.
MATHJAX_PARTS = ("MathJax.js", "LICENSE", "config", "extensions", "jax/element", "jax/input", "jax/output/HTML-CSS",
                 "fonts/HTML-CSS/STIX-Web/woff")


# ------------------------------------------------------------------------------------------- build
def mathjax_source() -> Path:
    """The MathJax 2 folder of the installed jupyter-server-mathjax package.

    Used by the package, not a notebook."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        raise SiteError("the site needs MathJax from the package jupyter-server-mathjax (requirements.txt): "
                        ".venv/bin/pip install -r requirements.txt") from None
    folder = Path(jupyter_server_mathjax.__file__).parent / "static"
    if not (folder / "MathJax.js").is_file():
        raise SiteError(f"{folder}/MathJax.js not found: reinstall jupyter-server-mathjax")
    return folder


def copy_static(output: Path) -> None:
    """MathJax (its needed parts) and the vendored reveal.js into output/_static/.

    Used by the package, not a notebook."""
    static = output / STATIC
    mathjax = mathjax_source()
    for part in MATHJAX_PARTS:
        source, target = mathjax / part, static / "mathjax" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)
    shutil.copytree(VENDORED / "reveal.js", static / "reveal.js", dirs_exist_ok=True)


@dataclass
class SiteReport:
    """What build_site wrote.

    Used by the package, not a notebook."""

    output: Path
    pages: list[Path]
    seconds: float

    def __str__(self) -> str:
        return (f"site written to {self.output}: {len(self.pages)} pages in {self.seconds:.1f} s; "
                f"open {self.output / 'index.html'}")


def default_jobs() -> int:
    """Processes for the export: two where there are two cores (the course machines have two).

    Used by the package, not a notebook."""
    return max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def build_site(output: Path | str, notebooks: list[Path] | None = None, solutions: bool = True,
               slides: bool = True, jobs: int | None = None) -> SiteReport:
    """Build the static site into `output` (created; files of an earlier build are overwritten) from
    `notebooks` (default: every notebooks/*.ipynb, in name order), exporting `jobs` notebooks at a time (default:
    default_jobs()). Raises SiteError if a notebook is missing or a page would load anything from the network.

    Used by the package, not a notebook."""
    start = time.perf_counter()
    output = Path(output)
    paths = sorted(NOTEBOOKS.glob("*.ipynb")) if notebooks is None else [Path(path) for path in notebooks]
    if not paths:
        raise SiteError(f"no notebooks to build a site from (looked in {NOTEBOOKS})")
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise SiteError(f"notebook(s) not found: {', '.join(missing)}")
    output.mkdir(parents=True, exist_ok=True)
    copy_static(output)
    jobs = min(jobs or default_jobs(), len(paths))
    arguments = [(path, output, slides, solutions) for path in paths]
    if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
        import nbconvert  # noqa: F401  (imported once, before the fork, not in every worker)

        context = multiprocessing.get_context("fork")
        largest_first = sorted(arguments, key=lambda args: -args[0].stat().st_size)
        with ProcessPoolExecutor(jobs, mp_context=context) as pool:
            done = dict(zip(largest_first, pool.map(export_notebook, *zip(*largest_first))))
        results = [done[args] for args in arguments]
    else:
        results = [export_notebook(*args) for args in arguments]
    entries = [entry for entry, _ in results]
    written = [path for _, files in results for path in files]
    decks = build_session_decks(paths, output) if slides else []
    written += [output / name for name, _, _ in decks]
    (output / "index.html").write_text(index_page(entries, solutions, decks), encoding="utf-8")
    written.append(output / "index.html")
    if solutions:
        (output / "solutions.html").write_text(solutions_page(), encoding="utf-8")
        written.append(output / "solutions.html")
    elif (output / "solutions.html").exists():
        (output / "solutions.html").unlink()  # a students' build over a lecturer's one
    check_offline(output)
    return SiteReport(output, written, time.perf_counter() - start)


def build_session_decks(paths: list[Path], output: Path) -> list[tuple[str, str, int]]:
    """Write one condensed deck per session (course_utils.site.decks) from the `lecture`-tagged cells of
    `paths`; returns (file name, title, slide count) of each deck written (none where no cell is tagged).

    Used by the package, not a notebook."""
    import json

    from course_utils.site.decks import deck_name, session_notebook, slide_count
    from course_utils.site.export import export_session_deck
    from course_utils.site.lecture_plan import SESSION_TITLES, SESSIONS

    notebooks = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in paths}
    decks = []
    for session in SESSIONS:
        deck = session_notebook(session, notebooks)
        if deck is not None:
            export_session_deck(deck, output, deck_name(session), SESSION_TITLES[session])
            decks.append((deck_name(session), SESSION_TITLES[session], slide_count(deck)))
    return decks


# ------------------------------------------------------------------------------------------- command line
def cmd_site(args: argparse.Namespace) -> int:
    """`python -m course_utils site --output DIR`: build the site, print where it is.

    Used by the package, not a notebook."""
    try:
        report = build_site(args.output, notebooks=args.notebooks or None, solutions=not args.no_solutions,
                            slides=not args.no_slides, jobs=args.jobs)
    except SiteError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(report)
    return 0


def add_site_parser(commands: argparse._SubParsersAction) -> None:
    """`site --output DIR [--notebooks NB ...] [--no-solutions] [--no-slides] [--jobs N]`.

    Used by the package, not a notebook."""
    site = commands.add_parser("site", help="a static offline site of the executed notebooks, slides and solutions",
                               description="Build the course's static site: index, one page and one reveal.js "
                                           "deck per notebook, and the lecturers' solutions page; it reads with "
                                           "no network (MathJax and reveal.js are copied in).")
    site.add_argument("--output", "-o", required=True, type=Path, help="folder to write the site into")
    site.add_argument("--notebooks", nargs="+", type=Path, default=None,
                      help="notebooks to include (default: every notebooks/*.ipynb)")
    site.add_argument("--no-solutions", action="store_true", help="leave out the solutions page (students' copy)")
    site.add_argument("--no-slides", action="store_true", help="leave out the slides (faster)")
    site.add_argument("--jobs", "-j", type=int, default=None, help="notebooks exported at a time (default: 2, or 1 "
                                                                    "on a one-core machine)")
    site.set_defaults(func=cmd_site)


def main(argv: list[str] | None = None) -> int:
    """`python -m course_utils.site --output DIR`, the same as the `site` command.

    Used by the package, not a notebook."""
    parser = argparse.ArgumentParser(prog="python -m course_utils")
    add_site_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["site", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)
