"""Prepare a class: train and cache, ahead of time, every model the notebooks load.

    python -m course_utils pretrain            # the lecture models of notebooks 04-07 and 09, then notebook 08's
                                               # seven classifiers (README, "Before class", says how long they take)
    python -m course_utils pretrain --fast     # their fast-mode smoke-test models, seconds each
    python -m course_utils pretrain --no-classifiers   # the translators only
    python -m course_utils pretrain --export class-models.zip   # then all of them in one archive for the class
    python -m course_utils pretrain --import class-models.zip   # a student: the lecturer's models, nothing trained
    results = pretrain()                       # the same from Python; returns one PretrainResult per model

Each model is loaded or trained by zoo.load_or_train and cached where the notebooks look for it; a model already
cached is loaded (which checks that it matches the corpus) and skipped. With COURSE_MODELS_ARCHIVE set, the models
missing here are first imported from that archive (zoo.import_from_env).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from course_utils.runtime import Log, reporter

__all__ = ["PretrainResult", "pretrain", "cmd_pretrain", "add_pretrain_parser"]


class PretrainResult(NamedTuple):
    """What pretrain did with one model: status "cached" (loaded, nothing trained), "trained", or "failed" (a cached
    model that does not match the corpus or recipe; `message` says how to fix it)."""
    name: str
    path: str
    status: str
    seconds: float
    message: str = ""


def _modified(path: Path) -> int | None:
    return path.stat().st_mtime_ns if path.exists() else None


def pretrain(names: Sequence[str] | None = None, fast: bool = False, progress: bool = True, retrain: bool = False,
             log: Log = print, classifiers: bool = True) -> list[PretrainResult]:
    """Load or train, in order, the models `names` (recipes and/or notebook classifier cache names such as
    "classifier-bow"; default zoo.NOTEBOOK_MODELS, then, with classifiers=True, notebook 08's classifiers), each
    cached in `fast`'s mode; retrain: train even the cached ones; log: a line per step (None: silent).
    Returns one PretrainResult per name. KeyError for an unknown name, before anything trains."""
    from course_utils import zoo
    from course_utils.checkpoints import CheckpointError
    from course_utils.corpus import display_path
    from course_utils.data import load_course_data

    say, mode = reporter(log), " (fast mode: smoke-test models)" if fast else ""
    names = list((*zoo.NOTEBOOK_MODELS, *(zoo.notebook_classifiers() if classifiers else ())) if names is None
                 else names)
    estimates = {name: zoo.estimate_seconds(name, fast) for name in names}  # an unknown name fails here
    paths = {name: zoo.model_path(name, fast) for name in names}
    course = load_course_data(log=None)
    if not retrain:  # COURSE_MODELS_ARCHIVE: the lecturer's models first, when set
        zoo.import_from_env(fast, course, log=say)
    to_train = [name for name in names if retrain or not paths[name].exists()]
    say(f"pretrain{mode}: {len(names)} model(s), {len(names) - len(to_train)} already cached, {len(to_train)} to "
        f"train (about {zoo.minutes(sum(estimates[name] for name in to_train))} on a 2-core CPU)")
    results: list[PretrainResult] = []
    for k, name in enumerate(names, start=1):
        where, step = display_path(paths[name]), f"[{k}/{len(names)}]"
        cached, before = paths[name].exists() and not retrain, _modified(paths[name])
        if not cached:
            say(f"{step} training {name}{mode}: about {zoo.minutes(estimates[name])}; cached at "
                f"{where}")
        started = time.perf_counter()
        try:
            zoo.load_or_train(name, course, retrain=retrain, progress=progress, log=None, fast=fast)
        except CheckpointError as error:
            results.append(PretrainResult(name, where, "failed", time.perf_counter() - started, str(error)))
            say(f"{step} {name}: the cached model at {where} does not fit: {error}\n"
                f"    retrain it: python -m course_utils pretrain --retrain {name}")
            continue
        seconds = time.perf_counter() - started
        if cached and _modified(paths[name]) == before:
            results.append(PretrainResult(name, where, "cached", seconds))
            say(f"{step} {name}: cached at {where}, skipped")
        else:  # a cached classifier of another config or vocabulary is trained again by load_or_train
            results.append(PretrainResult(name, where, "trained", seconds))
            say(f"{step} {name}: trained in {zoo.minutes(seconds)}, cached at {where}"
                + (" (the cached one did not fit)" if cached else ""))
    trained, failed = [r for r in results if r.status == "trained"], [r.name for r in results if r.status == "failed"]
    say(f"pretrain done: {len(trained)} trained in {zoo.minutes(sum(r.seconds for r in trained))}, "
        f"{sum(r.status == 'cached' for r in results)} cached"
        + (f", {len(failed)} failed ({', '.join(failed)})" if failed else ""))
    return results


def _import_archive(path: str, fast: bool | None) -> int:
    """`pretrain --import FILE`: the archive checked in full, then its models cached; nothing trains."""
    from course_utils import zoo

    names = zoo.import_models(path, fast=fast, log=print)
    absent = [name for name in (*zoo.NOTEBOOK_MODELS, *zoo.notebook_classifiers()) if name not in names]
    print(f"imported {len(names)} model(s) from {path}; nothing was trained: the notebooks load the lecturer's models"
          + (f"; not in the archive (trained when a notebook needs them): {', '.join(absent)}" if absent else ""))
    return 0


def _export_archive(path: str, results: Sequence[PretrainResult], fast: bool) -> int:
    """`pretrain --export FILE`: after pretrain, the models of `results` in one archive; 1 when a model failed."""
    from course_utils import zoo

    failed = [result.name for result in results if result.status == "failed"]
    if failed:
        print(f"error: not exported: {', '.join(failed)} did not fit (see above); retrain them, then export again",
              file=sys.stderr)
        return 1
    members = zoo.export_models(path, [result.name for result in results], fast=fast)
    print(f"exported {len(members)} {'fast-mode' if fast else 'full-mode'} model(s) to {path} "
          f"({Path(path).stat().st_size / 1e6:.1f} MB); students run: python -m course_utils pretrain --import "
          f"{Path(path).name}")
    return 0


def cmd_pretrain(args: argparse.Namespace) -> int:
    """`pretrain`: exit status 0 when every model is cached afterwards (and exported or imported), 1 otherwise."""
    from course_utils import zoo
    from course_utils.data import CorpusError
    from course_utils.runtime import set_threads

    try:
        if args.import_path:
            if args.names or args.retrain or args.no_classifiers:
                raise zoo.ArchiveError("--import takes no model names, --retrain or --no-classifiers: it imports "
                                       "every model of the archive and trains nothing")
            return _import_archive(args.import_path, fast=True if args.fast else None)
        set_threads(log=print)
        results = pretrain(args.names or None, fast=args.fast, progress=not args.no_progress, retrain=args.retrain,
                           classifiers=not args.no_classifiers)
        if args.export:
            return _export_archive(args.export, results, fast=args.fast)
    except (KeyError, CorpusError, zoo.ArchiveError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0 if all(result.status != "failed" for result in results) else 1


def add_pretrain_parser(commands: argparse._SubParsersAction) -> None:
    """`pretrain`."""
    parser = commands.add_parser("pretrain", help="train and cache every model the notebooks load (before class)")
    parser.add_argument("names", nargs="*", help="recipes and/or classifiers (classifier-bow, ...) to prepare "
                        "(default: the lecture models the notebooks load, then notebook 08's seven classifiers)")
    parser.add_argument("--fast", action="store_true", help="the fast-mode smoke-test models (seconds each)")
    parser.add_argument("--retrain", action="store_true", help="train even the models already cached")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--no-classifiers", action="store_true",
                        help="without names: the translators only, not notebook 08's classifiers")
    shared = parser.add_mutually_exclusive_group()
    shared.add_argument("--export", metavar="FILE", help="then write the models into one zip for the class "
                        "(--fast: the fast-mode models)")
    shared.add_argument("--import", dest="import_path", metavar="FILE", help="import a lecturer's zip (every model "
                        "checked first against this corpus and these recipes) and train nothing")
    parser.set_defaults(func=cmd_pretrain)
