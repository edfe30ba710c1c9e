"""The course as a static site that reads with no Python and no network, built from the stored notebooks.

    python -m tools.site --output site/                      # every notebook of notebooks/, slides, solutions
    python -m tools.site --output site/ --no-solutions       # the students' copy: no answer key
    python -m tools.site --output /tmp/s --notebooks notebooks/01_data.ipynb   # only some notebooks

What DIR holds (open DIR/index.html in a browser, from disk or any web server):

    index.html            the notebooks, each with its title, what it teaches (its first paragraph and the
                          "Builds on"/"Prerequisites"/"Time" lines of its first cell) and links to its page and slides
    NN_name.html          the executed notebook (nbconvert's HTMLExporter, JupyterLab look) in the learner's view
                          (tools.site.learner)
    NN_name.slides.html   the same notebook as reveal.js slides (slide types from tools.site.slides; key `s` opens
                          the speaker view with the notes)
    session-N.slides.html the condensed deck of lecture session N from the cells tagged `lecture`
                          (tools.site.lecture_plan, tools.site.decks); absent while no cell is tagged
    solutions.html        for lecturers: every exercise's checker and reference solution, then each notebook's
                          questions with their answers; left out with --no-solutions
    _static/mathjax/      MathJax 2.7.9 copied from the PyPI package jupyter-server-mathjax (requirements.txt)
    _static/reveal.js/    reveal.js 4.6.1, the subset vendored in tools/site/static/ (MIT)
    lab/index.html        the attention lab (tools.site.lab): the lecture-bahdanau model (--lab-model NAME for another
                          cached recipe; the fast-mode one when COURSE_FAST=1) run in the page with onnxruntime-web,
                          attention editable; left out, with a note, while that model is not cached (run `pretrain`),
                          or with --no-lab

Nothing is executed (but the lab, which runs the exported model in the browser): the pages show the outputs stored
in the notebooks, figures embedded as PNG; a widget output (06's explorer) is replaced by a note. The build fails if
any page would load a resource from another host (tools.site.offline); tests/browser/run_site_check.py opens the
result in headless Chromium with no network, and tests/browser/run_lab_check.py the lab.

This module builds the whole site from the parts (export: one notebook's page and slides; pages: the index and
solutions pages; offline: the remote-resource check) and is the command line. Not about the library or the
notebooks' contents.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tools.site.export import export_notebook, export_session_deck
from tools.site.lab import DEFAULT_MODEL as LAB_MODEL
from tools.site.offline import STATIC, SiteError, check_offline
from tools.site.pages import index_page, solutions_page

__all__ = ["NOTEBOOKS", "SiteReport", "build_parser", "build_site", "main"]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
_VENDORED = Path(__file__).resolve().parent / "static"
# What MathJax 2 loads with the configuration pages.MATHJAX_CONFIG and the STIX-Web fonts; the SVG output and the
# translations of its menu (7 MB together) are not needed.
_MATHJAX_PARTS = ("MathJax.js", "LICENSE", "config", "extensions", "jax/element", "jax/input", "jax/output/HTML-CSS",
                  "fonts/HTML-CSS/STIX-Web/woff")


def _mathjax_source() -> Path:
    """The MathJax 2 folder of the installed jupyter-server-mathjax package."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        raise SiteError("the site needs MathJax from the package jupyter-server-mathjax (requirements.txt): "
                        ".venv/bin/pip install -r requirements.txt") from None
    folder = Path(jupyter_server_mathjax.__file__).parent / "static"
    if not (folder / "MathJax.js").is_file():
        raise SiteError(f"{folder}/MathJax.js not found: reinstall jupyter-server-mathjax")
    return folder


def _copy_static(output: Path) -> None:
    """MathJax (its needed parts) and the vendored reveal.js into output/_static/."""
    static = output / STATIC
    mathjax = _mathjax_source()
    for part in _MATHJAX_PARTS:
        source, target = mathjax / part, static / "mathjax" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)
    shutil.copytree(_VENDORED / "reveal.js", static / "reveal.js", dirs_exist_ok=True)


@dataclass
class SiteReport:
    """What build_site wrote: the folder, every page, and the build's wall-clock seconds."""

    output: Path
    pages: list[Path]
    seconds: float

    def __str__(self) -> str:
        return (f"site written to {self.output}: {len(self.pages)} pages in {self.seconds:.1f} s; "
                f"open {self.output / 'index.html'}")


def _default_jobs() -> int:
    """Processes for the export: two where there are two cores or more, else one."""
    return max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def build_site(output: Path | str, notebooks: list[Path] | None = None, solutions: bool = True,
               slides: bool = True, jobs: int | None = None, lab: str | None = LAB_MODEL) -> SiteReport:
    """Build the static site into `output` (created; files of an earlier build are overwritten) from
    `notebooks` (default: every notebooks/*.ipynb, in name order), exporting `jobs` notebooks at a time (default:
    two, or one on a one-core machine), with the attention lab of recipe `lab` (None: none). Raises SiteError if a
    notebook is missing or a page would load anything from the network."""
    start = time.perf_counter()
    output = Path(output)
    paths = sorted(NOTEBOOKS.glob("*.ipynb")) if notebooks is None else [Path(path) for path in notebooks]
    if not paths:
        raise SiteError(f"no notebooks to build a site from (looked in {NOTEBOOKS})")
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise SiteError(f"notebook(s) not found: {', '.join(missing)}")
    output.mkdir(parents=True, exist_ok=True)
    _copy_static(output)
    jobs = min(jobs or _default_jobs(), len(paths))
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
    decks = _build_session_decks(paths, output) if slides else []
    written += [output / name for name, _, _ in decks]
    lab_files = _build_lab(output, lab) if lab else []
    written += lab_files
    index = index_page(entries, solutions, decks)
    if lab_files:
        index = index.replace('<section class="notebook"', _LAB_ENTRY + '<section class="notebook"', 1)
    (output / "index.html").write_text(index, encoding="utf-8")
    written.append(output / "index.html")
    if solutions:
        (output / "solutions.html").write_text(solutions_page(), encoding="utf-8")
        written.append(output / "solutions.html")
    elif (output / "solutions.html").exists():
        (output / "solutions.html").unlink()  # a students' build over a lecturer's one
    check_offline(output)
    return SiteReport(output, written, time.perf_counter() - start)


_LAB_ENTRY = ('<section class="lab" id="attention-lab">\n<h2>The attention lab</h2>\n<p><a href="lab/index.html">Open '
              'the lab</a>: the course\'s trained translator runs in the page; type a French sentence, read its '
              'attention, and change where the decoder looks at any step.</p>\n</section>\n')


def _build_lab(output: Path, name: str) -> list[Path]:
    """Export recipe `name`'s cached model and the lab page into output/lab/ (tools.site.lab); its files, or none,
    with a note on stderr, while the model is not cached (a site build never trains) or the corpus is missing."""
    from course_utils.corpus import CorpusError, find_corpus
    from course_utils.runtime import fast_mode
    from course_utils.zoo import model_path
    from tools.site.lab import LabError, check_exportable, export_lab

    try:
        check_exportable(name)
    except LabError as error:
        raise SiteError(str(error)) from None
    fast = fast_mode()
    if not model_path(name, fast).exists():
        print(f"note: the attention lab is left out: {name}{' (fast mode)' if fast else ''} is not cached at "
              f"{model_path(name, fast)}; run `python -m course_utils pretrain`, then build again", file=sys.stderr)
        return []
    try:
        find_corpus(download=False)
    except CorpusError as error:
        print(f"note: the attention lab is left out: it needs the corpus (vocabularies, test sentences): {error}",
              file=sys.stderr)
        return []
    try:
        report = export_lab(output / "lab", name, fast=fast, log=None)
    except (LabError, OSError) as error:
        raise SiteError(f"the attention lab could not be exported: {error}") from None
    return [path for path in report.output.rglob("*") if path.is_file()]


def _build_session_decks(paths: list[Path], output: Path) -> list[tuple[str, str, int]]:
    """Write one condensed deck per session from the `lecture`-tagged cells of `paths`; returns (file name, title,
    slide count) of each deck written (none where no cell is tagged)."""
    # imported here: `python -m tools.site.lecture_plan` (and .slides) must not find its module already imported
    from tools.site.decks import deck_name, session_notebook, slide_count
    from tools.site.lecture_plan import SESSION_TITLES, SESSIONS

    notebooks = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in paths}
    decks = []
    for session in SESSIONS:
        deck = session_notebook(session, notebooks)
        if deck is not None:
            export_session_deck(deck, output, deck_name(session), SESSION_TITLES[session])
            decks.append((deck_name(session), SESSION_TITLES[session], slide_count(deck)))
    return decks


def build_parser() -> argparse.ArgumentParser:
    """The parser of `python -m tools.site --output DIR [--notebooks NB ...] [--no-solutions] [--no-slides]
    [--lab-model NAME | --no-lab] [--jobs N]`."""
    parser = argparse.ArgumentParser(prog="python -m tools.site",
                                     description="Build the course's static site: index, one page and one reveal.js "
                                                 "deck per notebook, and the lecturers' solutions page; it reads "
                                                 "with no network (MathJax and reveal.js are copied in).")
    parser.add_argument("--output", "-o", required=True, type=Path, help="folder to write the site into")
    parser.add_argument("--notebooks", nargs="+", type=Path, default=None,
                        help="notebooks to include (default: every notebooks/*.ipynb)")
    parser.add_argument("--no-solutions", action="store_true", help="leave out the solutions page (students' copy)")
    parser.add_argument("--no-slides", action="store_true", help="leave out the slides (faster)")
    parser.add_argument("--lab-model", default=LAB_MODEL,
                        help=f"the cached recipe the attention lab runs (default {LAB_MODEL}; tools.site.lab)")
    parser.add_argument("--no-lab", action="store_true", help="leave out the attention lab")
    parser.add_argument("--jobs", "-j", type=int, default=None,
                        help="notebooks exported at a time (default: 2, or 1 on a one-core machine)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Build the site from the command line `argv` (default: sys.argv[1:]) and print where it is; 0, or 1 with a
    one-line error."""
    args = build_parser().parse_args(argv)
    try:
        report = build_site(args.output, notebooks=args.notebooks or None, solutions=not args.no_solutions,
                            slides=not args.no_slides, jobs=args.jobs, lab=None if args.no_lab else args.lab_model)
    except SiteError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(report)
    return 0
