"""Prepare a class: train and cache, ahead of time, every model the notebooks load.

    python -m course_utils pretrain            # the lecture models of notebooks 04-07, then notebook 08's seven
                                               # classifiers (README, "Before class", says how long they take)
    python -m course_utils pretrain --fast     # their fast-mode (COURSE_FAST=1) smoke-test models, seconds each
    python -m course_utils pretrain --workers 2   # two models at a time, each in a process of one thread
    python -m course_utils pretrain --no-classifiers   # the translators only
    python -m course_utils pretrain --export class-models.zip   # then all of them in one archive for the class
    python -m course_utils pretrain --import class-models.zip   # a student: the lecturer's models, nothing trained
    results = pretrain()                       # the same from Python; returns one PretrainResult per model

Each translator is trained by `recipes.load_or_train`, each classifier by `classifier.load_or_train_classifier`, and
cached where the notebooks look for it (data_dir()/models/); a model already cached there is loaded (which also checks
that it matches the corpus) and skipped. While it runs it says which model is training, which of how many it is, and
about how long the rest will take. With COURSE_MODELS_ARCHIVE set, the models missing here are first imported from
that archive; --export and --import are the lecturer's and the students' sides of course_utils.cli.archive.

NOTEBOOK_MODELS is the list of translators the notebooks load, classifier.NOTEBOOK_CLASSIFIERS notebook 08's
classifiers; tests/test_pretrain.py checks both against the notebooks.
Used by the package, not a notebook (the notice a notebook prints before training is recipes.training_notice).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from course_utils.classifier import ClassifierConfig

__all__ = ["NOTEBOOK_MODELS", "SECONDS_PER_CLASSIFIER", "FAST_SECONDS_PER_CLASSIFIER", "PretrainResult",
           "classifier_estimate_seconds", "notebook_classifiers", "pretrain", "import_archive", "export_archive",
           "cmd_pretrain", "add_pretrain_parser"]

# The recipes the notebooks pass to load_or_train (04 and 06: all five; 05: bahdanau and none).
NOTEBOOK_MODELS = ("lecture-bahdanau", "lecture-scaled_dot", "lecture-scaled_general", "lecture-concat", "lecture-none",
                   "lecture-transformer")  # notebook 09

# Notebook 08's classifiers (5 epochs on the whole train split): its seven trained in 9 min 40 s on a busy 2-core CPU,
# about 85 s each; fast mode (FAST_CLASSIFIER: 2 epochs on 1,000 pairs) takes seconds.
SECONDS_PER_CLASSIFIER = 85.0
FAST_SECONDS_PER_CLASSIFIER = 5.0


class PretrainResult(NamedTuple):
    """What pretrain did with one model: status "cached" (loaded, nothing trained), "trained", or "failed"
    (a cached model that does not match the corpus or recipe; `message` says how to fix it).

    Used by the package, not a notebook.
    """

    name: str
    path: str
    status: str
    seconds: float
    message: str = ""


@contextlib.contextmanager
def _fast_env(fast: bool) -> Iterator[None]:
    """COURSE_FAST set to `fast` inside the block (load_or_train reads it), restored afterwards."""
    from course_utils.runtime import FAST_ENV

    previous = os.environ.get(FAST_ENV)
    os.environ[FAST_ENV] = "1" if fast else "0"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(FAST_ENV, None)
        else:
            os.environ[FAST_ENV] = previous


def classifier_estimate_seconds(fast: bool) -> float:
    """The constant estimate for training one of notebook 08's classifiers. Used by the package, not a notebook."""
    return FAST_SECONDS_PER_CLASSIFIER if fast else SECONDS_PER_CLASSIFIER


def notebook_classifiers() -> dict[str, ClassifierConfig]:
    """classifier.NOTEBOOK_CLASSIFIERS keyed by cache name ("classifier-bow", "classifier-gated-hard-0.05", ...):
    the names pretrain takes. Used by the package, not a notebook."""
    from course_utils.classifier import NOTEBOOK_CLASSIFIERS

    return {config.name: config for config in NOTEBOOK_CLASSIFIERS.values()}


class _Job(NamedTuple):
    """One model to prepare: its name, cache path, constant estimate, and how to load or train it."""
    name: str
    path: Path
    estimate: float
    run: Callable[[], object]


def _jobs(names: Sequence[str], fast: bool, retrain: bool, progress: bool, course) -> list[_Job]:
    """A _Job per name: a recipe (load_or_train) or a notebook classifier (load_or_train_classifier)."""
    from course_utils.classifier import classifier_path, load_or_train_classifier
    from course_utils.recipes import estimate_seconds, load_or_train, model_path

    configs = notebook_classifiers()
    jobs = []
    for name in names:
        if name in configs:
            jobs.append(_Job(name, classifier_path(configs[name], fast), classifier_estimate_seconds(fast),
                             partial(load_or_train_classifier, configs[name], course, retrain=retrain, log=None)))
        else:
            jobs.append(_Job(name, model_path(name, fast), estimate_seconds(name, fast),
                             partial(load_or_train, name, data=course, retrain=retrain, progress=progress,
                                     log=None)))
    return jobs


def _modified(path: Path) -> int | None:
    return path.stat().st_mtime_ns if path.exists() else None


def pretrain(names: Sequence[str] | None = None, fast: bool | None = None, progress: bool = True,
             retrain: bool = False, log: Callable[[str], None] | None = print, classifiers: bool = True,
             workers: int = 1) -> list[PretrainResult]:
    """Train and cache the models the notebooks load (default NOTEBOOK_MODELS, then notebook 08's classifiers);
    skip those already cached.

    Args:
        names: recipe names (keys of recipes.RECIPES) and/or classifier cache names (keys of
            notebook_classifiers(), e.g. "classifier-bow"); default NOTEBOOK_MODELS and every notebook classifier.
        fast: fast-mode models (cached as <name>-fast.pt, what COURSE_FAST=1 notebooks load); default fast_mode().
        progress: tqdm bars while training a translator.
        retrain: train even the cached ones (and overwrite them).
        log: where the progress lines go (None: silent).
        classifiers: with names=None, also notebook 08's classifiers (False: the translators only).
        workers: models trained at a time, each in a process of its own with torch's threads shared out (1: one
            after the other in this process). Another thread count rounds differently: the same losses up to that.
    Returns:
        one PretrainResult per name, in order.

    Used by the package, not a notebook.
    """
    from course_utils.data import load_course_data
    from course_utils.recipes import minutes
    from course_utils.runtime import fast_mode, reporter

    say = reporter(log)
    fast = fast_mode() if fast is None else fast
    configs = notebook_classifiers()
    names = list((*NOTEBOOK_MODELS, *(configs if classifiers else ())) if names is None else names)
    _check_names(names, configs)  # an unknown name fails before anything trains
    mode = " (fast mode: smoke-test models)" if fast else ""
    course = load_course_data(log=None)
    if not retrain:  # COURSE_MODELS_ARCHIVE: the lecturer's models first, when set
        from course_utils.cli.archive import import_from_env

        import_from_env(fast, course, log=say)
    jobs = _jobs(names, fast, retrain, progress, course)
    to_train = [job for job in jobs if retrain or not job.path.exists()]
    estimate = sum(job.estimate for job in to_train)
    say(f"pretrain{mode}: {len(names)} model(s), {len(names) - len(to_train)} already cached, {len(to_train)} to "
        f"train (about {minutes(estimate)} on a 2-core CPU)")
    started = time.perf_counter()
    with _fast_env(fast):
        if workers > 1 and len(to_train) > 1:
            results = _run_parallel(jobs, to_train, retrain, mode, say, fast, workers)
        else:
            results = _run_jobs(jobs, to_train, retrain, mode, say)
    trained = [r for r in results if r.status == "trained"]
    failed = [r.name for r in results if r.status == "failed"]
    say(f"pretrain done: {len(trained)} trained in {minutes(sum(r.seconds for r in trained))}, "
        f"{sum(r.status == 'cached' for r in results)} cached"
        + (f", {len(failed)} failed ({', '.join(failed)})" if failed else "")
        + (f"; {minutes(time.perf_counter() - started)} wall clock with {workers} workers" if workers > 1 else ""))
    return results


def _check_names(names: Sequence[str], configs: dict) -> None:
    """KeyError unless each name is a recipe or a notebook classifier (the message lists the classifiers)."""
    from course_utils.recipes import get_recipe

    for name in names:
        if name not in configs:
            try:
                get_recipe(name)
            except KeyError as error:
                raise KeyError(f"{error.args[0]}; notebook classifiers: {', '.join(configs)}") from None


def _run_jobs(jobs: Sequence[_Job], to_train: Sequence[_Job], retrain: bool, mode: str,
              say: Callable[[str], None]) -> list[PretrainResult]:
    """Load or train each job in order, saying what it does and how long the rest will take; a PretrainResult each."""
    from course_utils.checkpoints import CheckpointError
    from course_utils.corpus import display_path
    from course_utils.recipes import minutes

    results: list[PretrainResult] = []
    measured: list[tuple[float, float]] = []  # (seconds taken, constant estimate) of each model trained so far
    for k, job in enumerate(jobs, start=1):
        name, where, step = job.name, display_path(job.path), f"[{k}/{len(jobs)}]"
        cached, before = job.path.exists() and not retrain, _modified(job.path)
        if not cached:
            left = [j for j in to_train if j.name not in {r.name for r in results}]
            scale = sum(s for s, _ in measured) / sum(e for _, e in measured) if measured else 1.0
            this, rest = job.estimate * scale, sum(j.estimate for j in left) * scale
            say(f"{step} training {name}{mode}: about {minutes(this)}; about {minutes(rest)} "
                f"left in all ({'measured in this run' if measured else 'estimate'}); cached at {where}")
        started = time.perf_counter()
        try:
            job.run()
        except CheckpointError as error:
            results.append(PretrainResult(name, where, "failed", time.perf_counter() - started, str(error)))
            say(f"{step} {name}: the cached model at {where} does not fit: {error}\n"
                f"    retrain it: python -m course_utils pretrain --retrain {name}")
            continue
        seconds = time.perf_counter() - started
        if cached and _modified(job.path) == before:
            results.append(PretrainResult(name, where, "cached", seconds))
            say(f"{step} {name}: cached at {where}, skipped")
        else:  # a cached classifier of another config or vocabulary is trained again by load_or_train_classifier
            measured.append((seconds, job.estimate))
            results.append(PretrainResult(name, where, "trained", seconds))
            say(f"{step} {name}: trained in {minutes(seconds)}, cached at {where}"
                + (" (the cached one did not fit)" if cached else ""))
    return results


def _train_in_worker(name: str, fast: bool, retrain: bool, threads: int) -> tuple[float, str]:
    """Train model `name` in a worker process with `threads` CPU threads -> (seconds, "" or why the cached model
    does not fit)."""
    import torch

    from course_utils.checkpoints import CheckpointError
    from course_utils.data import load_course_data

    torch.set_num_threads(threads)
    with _fast_env(fast):
        job = _jobs([name], fast, retrain, False, load_course_data(log=None))[0]
        started = time.perf_counter()
        try:
            job.run()
        except CheckpointError as error:
            return time.perf_counter() - started, str(error)
    return time.perf_counter() - started, ""


def _pool(workers: int):
    """The worker processes (spawned: a fork would copy torch's thread pool)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def _run_parallel(jobs: Sequence[_Job], to_train: Sequence[_Job], retrain: bool, mode: str,
                  say: Callable[[str], None], fast: bool, workers: int) -> list[PretrainResult]:
    """The cached jobs loaded first, in order (_run_jobs); then those to train, `workers` at a time, the longest
    estimate first, each in a process with torch's threads shared out; a PretrainResult each, in the order of jobs."""
    from concurrent.futures import as_completed

    import torch

    from course_utils.corpus import display_path
    from course_utils.recipes import minutes

    training = {job.name for job in to_train}
    done = {r.name: r for r in _run_jobs([job for job in jobs if job.name not in training], [], retrain, mode, say)}
    threads = max(1, torch.get_num_threads() // workers)
    say(f"training {len(to_train)} model(s){mode}, {workers} at a time, each in a process of {threads} thread(s)")
    with _pool(workers) as pool:
        futures = {pool.submit(_train_in_worker, job.name, fast, retrain, threads): job
                   for job in sorted(to_train, key=lambda job: -job.estimate)}
        for future in as_completed(futures):
            job, (seconds, error) = futures[future], future.result()
            where = display_path(job.path)
            done[job.name] = PretrainResult(job.name, where, "failed" if error else "trained", seconds, error)
            say(f"[{len(done)}/{len(jobs)}] {job.name}: " + (
                f"the cached model at {where} does not fit: {error}\n    retrain it: python -m course_utils "
                f"pretrain --retrain {job.name}" if error else f"trained in {minutes(seconds)}, cached at {where}"))
    return [done[job.name] for job in jobs]


def import_archive(path: str, fast: bool | None = None) -> int:
    """`pretrain --import FILE`: the archive validated in full, then its models cached (cli.archive.import_models);
    nothing trains. Returns the exit status; raises cli.archive.ArchiveError. Used by the package, not a notebook."""
    from course_utils.cli.archive import import_models, read_manifest

    names = import_models(path, fast=fast, log=print)
    manifest = read_manifest(path)
    absent = [name for name in (*NOTEBOOK_MODELS, *notebook_classifiers()) if name not in names]
    print(f"imported {len(names)} {'fast-mode' if manifest.fast else 'full-mode'} model(s) from {path} (exported "
          f"{manifest.created} with course_utils {manifest.course_utils_version} and torch {manifest.torch_version}, "
          f"for {manifest.corpus.get('description')}); nothing was trained: the notebooks load the lecturer's models"
          + (f"; not in the archive (trained when a notebook needs them): {', '.join(absent)}" if absent else ""))
    return 0


def export_archive(path: str, results: Sequence[PretrainResult], fast: bool) -> int:
    """`pretrain --export FILE`: after pretrain, the models of `results` in one archive (cli.archive.export_models).
    Returns the exit status (1 when a model failed); raises cli.archive.ArchiveError. Used by the package, not a
    notebook."""
    from course_utils.cli.archive import export_models

    failed = [result.name for result in results if result.status == "failed"]
    if failed:
        print(f"error: not exported: {', '.join(failed)} did not fit (see above); retrain them, then export again",
              file=sys.stderr)
        return 1
    manifest = export_models(path, [result.name for result in results], fast=fast)
    print(f"exported {len(manifest.models)} {'fast-mode' if fast else 'full-mode'} model(s) to {path} "
          f"({Path(path).stat().st_size / 1e6:.1f} MB) with checksums, the corpus fingerprint and the recipes; "
          f"students run: python -m course_utils pretrain --import {Path(path).name}")
    return 0


def cmd_pretrain(args: argparse.Namespace) -> int:
    """`pretrain`: exit status 0 when every model is cached afterwards (and exported or imported), 1 otherwise. Used
    by the package, not a notebook."""
    from course_utils.cli.archive import ArchiveError
    from course_utils.data import CorpusError
    from course_utils.runtime import fast_mode, set_threads

    try:
        if args.import_path:
            if args.names or args.retrain or args.no_classifiers:
                raise ArchiveError("--import takes no model names, --retrain or --no-classifiers: it imports every "
                                   "model of the archive and trains nothing")
            return import_archive(args.import_path, fast=True if args.fast else None)
        set_threads(log=print)
        results = pretrain(args.names or None, fast=True if args.fast else None, progress=not args.no_progress,
                           retrain=args.retrain, classifiers=not args.no_classifiers, workers=args.workers)
        if args.export:
            return export_archive(args.export, results, fast=True if args.fast else fast_mode())
    except (KeyError, CorpusError, ArchiveError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0 if all(result.status != "failed" for result in results) else 1


def add_pretrain_parser(commands: argparse._SubParsersAction) -> None:
    """`pretrain`. Used by the package, not a notebook."""
    parser = commands.add_parser("pretrain", help="train and cache every model the notebooks load (before class)")
    parser.add_argument("names", nargs="*", help=f"recipes and/or classifiers (classifier-bow, ...) to prepare "
                        f"(default: {' '.join(NOTEBOOK_MODELS)}, then notebook 08's seven classifiers)")
    parser.add_argument("--fast", action="store_true",
                        help="the fast-mode smoke-test models (as COURSE_FAST=1; seconds each)")
    parser.add_argument("--retrain", action="store_true", help="train even the models already cached")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="train N models at a time, each in a process of its own (threads shared out)")
    parser.add_argument("--no-classifiers", action="store_true",
                        help="without names: the translators only, not notebook 08's classifiers")
    shared = parser.add_mutually_exclusive_group()
    shared.add_argument("--export", metavar="FILE", help="then write the models into one archive for the class "
                        "(with checksums, the corpus fingerprint and the recipes; --fast: the fast-mode models)")
    shared.add_argument("--import", dest="import_path", metavar="FILE", help="import a lecturer's archive (checked "
                        "in full first: same corpus and recipes) and train nothing")
    parser.set_defaults(func=cmd_pretrain)
