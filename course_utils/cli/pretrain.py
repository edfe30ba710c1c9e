"""`pretrain`: train and cache, before class, every model the notebooks load (or export/import them as one zip).

A model already cached is loaded (which checks it against the corpus) and skipped; with COURSE_MODELS_ARCHIVE set,
missing models are first imported from that archive.
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from course_utils.cli.commands import _error
from course_utils.runtime import Log, reporter

__all__ = ["PretrainResult", "pretrain", "cmd_pretrain", "add_pretrain_parser"]


class PretrainResult(NamedTuple):
    """What pretrain did with one model: status "cached", "trained" or "failed" (`message` says how to fix it)."""
    name: str
    path: str
    status: str
    seconds: float
    message: str = ""


def _modified(path: Path) -> int | None:
    return path.stat().st_mtime_ns if path.exists() else None


def pretrain(names: Sequence[str] | None = None, fast: bool = False, progress: bool = True, retrain: bool = False,
             log: Log = print, classifiers: bool = True) -> list[PretrainResult]:
    """Load or train, in order, the models `names` (recipes and/or classifiers such as "classifier-bow"; default:
    zoo.NOTEBOOK_MODELS, then notebook 08's classifiers). KeyError for an unknown name, before anything trains."""
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
            say(f"{step} training {name}{mode}: about {zoo.minutes(estimates[name])}; cached at {where}")
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


def cmd_pretrain(args: argparse.Namespace) -> int:
    """`pretrain`: 0 when every model is cached afterwards (and exported or imported), 1 otherwise."""
    from course_utils import zoo
    from course_utils.data import CorpusError
    from course_utils.runtime import set_threads

    try:
        if args.import_path:  # every model of the archive is checked before any is cached; nothing trains
            if args.names or args.retrain or args.no_classifiers:
                raise zoo.ArchiveError("--import takes no model names, --retrain or --no-classifiers: it imports "
                                       "every model of the archive and trains nothing")
            names = zoo.import_models(args.import_path, fast=args.fast or None, log=print)
            absent = [name for name in (*zoo.NOTEBOOK_MODELS, *zoo.notebook_classifiers()) if name not in names]
            print(f"imported {len(names)} model(s) from {args.import_path}; nothing was trained: the notebooks load "
                  "the lecturer's models" + (f"; not in the archive (trained when a notebook needs them): "
                                             f"{', '.join(absent)}" if absent else ""))
            return 0
        set_threads(log=print)
        results = pretrain(args.names or None, fast=args.fast, progress=not args.no_progress, retrain=args.retrain,
                           classifiers=not args.no_classifiers)
        failed = [result.name for result in results if result.status == "failed"]
        if args.export and failed:
            return _error(f"not exported: {', '.join(failed)} did not fit (see above); retrain them, then export again")
        if args.export:
            members = zoo.export_models(args.export, [result.name for result in results], fast=args.fast)
            path = Path(args.export)
            print(f"exported {len(members)} {'fast-mode' if args.fast else 'full-mode'} model(s) to {args.export} "
                  f"({path.stat().st_size / 1e6:.1f} MB); students run: python -m course_utils pretrain --import "
                  f"{path.name}")
    except (KeyError, CorpusError, zoo.ArchiveError) as error:
        return _error(str(error))
    return 1 if failed else 0


def add_pretrain_parser(commands: argparse._SubParsersAction) -> None:
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
