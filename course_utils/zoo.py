"""The zoo: every model the notebooks load, with its one cache path, its training and its checkpoint file.

`fast=True` gives smoke-test models (a few hundred pairs, one epoch) cached apart as <name>-fast.pt; the notebooks
read COURSE_FAST once (runtime.fast_mode) and pass it on. On a cache miss the archive COURSE_MODELS_ARCHIVE names is
imported before anything trains. Every file is read by the one loader, checkpoints.read_checkpoint.
Introduced in notebook 04.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
import time
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from course_utils import checkpoints, classifier
from course_utils.checkpoints import CheckpointError, CheckpointMismatch, read_checkpoint, write_checkpoint
from course_utils.classifier import ClassifierConfig, build_classifier, train_classifier
from course_utils.corpus import data_dir, display_path
from course_utils.data import CourseData, load_course_data
from course_utils.recipes import DEFAULT_RECIPE, RECIPES, Recipe, get_recipe
from course_utils.runtime import Log, course_seed, reporter, resolve_device
from course_utils.seq2seq import ModelConfig, Seq2Seq, count_parameters
from course_utils.train import History, TrainConfig, train
from course_utils.transformer import TransformerConfig, TransformerSeq2Seq
from course_utils.translate import translate
from course_utils.vocab import Vocab

if TYPE_CHECKING:
    from course_utils.seq2seq import Translator

__all__ = ["build_model", "TrainedModel", "TrainedClassifier", "FAST_EVAL_PAIRS", "FAST_OVERRIDES",
           "NOTEBOOK_MODELS", "notebook_classifiers", "model_path", "training_config", "estimate_seconds", "minutes",
           "training_notice", "train_recipe", "save_checkpoint", "load_checkpoint", "load_or_train", "ArchiveError",
           "export_models", "import_models", "import_from_env"]

_ARCHITECTURES = ("gru", "transformer")  # what a checkpoint's config dict may name; missing means "gru"


def _config_from_dict(fields: dict) -> ModelConfig | TransformerConfig:
    """A checkpoint's config dict -> TransformerConfig when its "architecture" is "transformer", else ModelConfig."""
    fields = dict(fields)
    architecture = fields.pop("architecture", "gru")
    if architecture not in _ARCHITECTURES:
        raise ValueError(f"unknown architecture {architecture!r}: choose one of {', '.join(_ARCHITECTURES)}")
    return ModelConfig(**fields) if architecture == "gru" else TransformerConfig(**fields)


def build_model(config: ModelConfig | TransformerConfig) -> Translator:
    """The untrained model a config describes: a TransformerSeq2Seq for a TransformerConfig, else the GRU Seq2Seq."""
    return TransformerSeq2Seq(config) if isinstance(config, TransformerConfig) else Seq2Seq(config)


@dataclass
class TrainedModel:
    """A translator with everything needed to use it again."""
    name: str
    model: Translator
    src_vocab: Vocab
    tgt_vocab: Vocab
    model_config: ModelConfig | TransformerConfig
    train_config: TrainConfig
    history: History
    fast: bool = False  # trained in fast mode: a smoke-test model, not a real one

    def translate(self, sentence: str, beam_width: int = 1):
        """translate.translate with this model's vocabularies."""
        return translate(self.model, self.src_vocab, self.tgt_vocab, sentence, beam_width=beam_width)


@dataclass
class TrainedClassifier:
    """A trained classifier, its French vocabulary, config and history (a dict per epoch). Introduced in notebook 08."""
    model: nn.Module
    vocab: Vocab
    config: ClassifierConfig
    history: list[dict]
    fast: bool = False


# ---------------------------------------------------------------------------------------------- names and settings
NOTEBOOK_MODELS = ("lecture-bahdanau", "lecture-scaled_dot", "lecture-scaled_general", "lecture-concat",
                   "lecture-none", "lecture-transformer")  # the recipes notebooks 04-07 and 09 load
_FAST_TRAIN_PAIRS = 300  # fast mode: this many training pairs, one epoch, dev BLEU on FAST_EVAL_PAIRS
FAST_EVAL_PAIRS = 100
FAST_OVERRIDES = dict(epochs=1, max_train_pairs=_FAST_TRAIN_PAIRS, max_eval_pairs=FAST_EVAL_PAIRS, time_budget=None)
_FAST_CLASSIFIER = dict(epochs=2, max_train_pairs=1000)  # fast mode for a classifier: seconds, a smoke test
# Estimates on a 2-core CPU (the README's "Before class"): a lecture epoch with its dev evaluation, a classifier, a
# fast-mode translator.
_SECONDS_PER_EPOCH, _SECONDS_PER_CLASSIFIER, _FAST_SECONDS_PER_TRANSLATOR = 6.0, 5.0, 30.0


def notebook_classifiers() -> dict[str, ClassifierConfig]:
    """classifier.NOTEBOOK_CLASSIFIERS keyed by cache name ("classifier-bow", "classifier-gated-hard-0.05", ...)."""
    return {config.name: config for config in classifier.NOTEBOOK_CLASSIFIERS.values()}


def _named(what: str | Recipe | ClassifierConfig) -> Recipe | ClassifierConfig:
    """A recipe or its name, a notebook classifier's cache name, or a ClassifierConfig -> the recipe or the config."""
    if isinstance(what, Recipe | ClassifierConfig):
        return what
    configs = notebook_classifiers()
    if what in configs:
        return configs[what]
    try:
        return get_recipe(what)
    except KeyError as error:
        raise KeyError(f"{error.args[0]}; notebook classifiers: {', '.join(configs)}") from None


def model_path(what: str | Recipe | ClassifierConfig, fast: bool = False) -> Path:
    """Where load_or_train caches `what`: data_dir()/models/<name>.pt, or <name>-fast.pt. Introduced in notebook 07."""
    return data_dir() / "models" / f"{what if isinstance(what, str) else what.name}{'-fast' if fast else ''}.pt"


def training_config(what: Recipe | ClassifierConfig, fast: bool = False, **overrides) -> TrainConfig | ClassifierConfig:
    """The settings `what` is trained and cached with: fast mode's, then `overrides` (TrainConfig fields); the seed is
    the overrides', else COURSE_SEED (runtime.course_seed), else the recipe's or config's own."""
    if isinstance(what, ClassifierConfig):
        return dataclasses.replace(what, **(_FAST_CLASSIFIER if fast else {}), seed=course_seed(what.seed))
    overrides = {**(FAST_OVERRIDES if fast else {}), **overrides}
    overrides.setdefault("seed", course_seed(what.train.seed))
    return what.train_config(**overrides)


def minutes(seconds: float) -> str:
    """'45 s' under a minute and a half, else '3 min'."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def estimate_seconds(what: str | ClassifierConfig, fast: bool = False) -> float:
    """The constant estimate of how long training `what` takes on a 2-core CPU."""
    named = _named(what)
    if isinstance(named, ClassifierConfig):
        return _SECONDS_PER_CLASSIFIER
    return _FAST_SECONDS_PER_TRANSLATOR if fast else _SECONDS_PER_EPOCH * named.train.epochs


def training_notice(names: Sequence[str], fast: bool = False) -> str | None:
    """What a notebook says before training several models (how many, how long, `pretrain` does it ahead); None when
    all are cached. Introduced in notebook 06."""
    missing = [name for name in names if not model_path(name, fast).exists()]
    if not missing:
        return None
    seconds = sum(estimate_seconds(name, fast) for name in missing)
    return (f"This will train {len(missing)} model(s){' in fast mode' if fast else ''} ({', '.join(missing)}), "
            f"about {minutes(seconds)} on a 2-core CPU. To have them ready before class, run "
            f"`python -m course_utils pretrain{' --fast' if fast else ''}` once in a terminal.")


# ---------------------------------------------------------------------------------------------- training, files
def train_recipe(recipe: Recipe, data: CourseData, fast: bool = False, progress: bool = True, log: Log = print,
                 **overrides) -> TrainedModel:
    """Build the recipe's model (seeded) and train it on `data` with training_config(recipe, fast, **overrides)."""
    train_config = training_config(recipe, fast, **overrides)
    model_config = recipe.model_config(data.src_vocab, data.tgt_vocab)
    torch.manual_seed(train_config.seed)
    model = build_model(model_config)
    history = train(model, data, train_config, progress=progress, log=log)
    model.eval()
    return TrainedModel(recipe.name, model, data.src_vocab, data.tgt_vocab, model_config, train_config, history, fast)


def save_checkpoint(path: str | os.PathLike, trained: TrainedModel | TrainedClassifier) -> Path:
    """Write a trained translator or classifier to `path` in the one checkpoint format (plain data and tensors),
    atomically. Returns the path. Introduced in notebook 07."""
    state = {key: value.detach().cpu() for key, value in trained.model.state_dict().items()}
    if isinstance(trained, TrainedClassifier):
        return write_checkpoint({"kind": "classifier", "name": trained.config.name, "fast": bool(trained.fast),
                                 "model_config": dataclasses.asdict(trained.config), "train_config": {},
                                 "src_vocab": trained.vocab.to_dict(), "tgt_vocab": None,
                                 "history": list(trained.history), "state_dict": state}, path)
    return write_checkpoint({"name": trained.name, "fast": bool(trained.fast),
                             "model_config": dataclasses.asdict(trained.model_config),
                             "train_config": dataclasses.asdict(trained.train_config),
                             "src_vocab": trained.src_vocab.to_dict(), "tgt_vocab": trained.tgt_vocab.to_dict(),
                             "history": trained.history.to_dict(), "state_dict": state}, path)


def _build_translator(payload: dict[str, Any]) -> nn.Module:
    try:
        History.from_dict(payload["history"])
    except (TypeError, ValueError) as error:
        raise KeyError(f"history: {error}") from error  # read_checkpoint: "holds a damaged vocabulary or history"
    config = _config_from_dict(payload["model_config"])
    TrainConfig(**payload["train_config"])
    config.check_vocabularies(payload["src_vocab"], payload["tgt_vocab"])
    return build_model(config)


def _build_classifier(payload: dict[str, Any]) -> nn.Module:
    list(payload["history"])
    return build_classifier(ClassifierConfig(**payload["model_config"]), len(payload["src_vocab"]))


def _upgrade(payload: dict[str, Any]) -> dict[str, Any]:
    """A GRU checkpoint's config with max_length renamed to location_slots."""
    config = payload.get("model_config")
    if isinstance(config, dict) and "max_length" in config and "location_slots" not in config:
        config = {("location_slots" if key == "max_length" else key): value for key, value in config.items()}
        return {**payload, "model_config": config}
    return payload


def _read(path: Path, kind: str, expected: dict | None = None, vocabs: dict | None = None, redo: str | None = None):
    """checkpoints.read_checkpoint with this kind's builder, the caller's random state left alone."""
    with torch.random.fork_rng(devices=[]):  # building a model draws random numbers
        return read_checkpoint(path, _build_translator if kind == "translator" else _build_classifier, kind,
                               expected, vocabs, redo, upgrade=_upgrade)


def load_checkpoint(path: str | os.PathLike, src_vocab: Vocab | None = None, tgt_vocab: Vocab | None = None,
                    config: ModelConfig | TransformerConfig | None = None, device: str | torch.device = "cpu"
                    ) -> TrainedModel:
    """The translator saved at `path`, in eval mode on `device` ("auto": CUDA when present); the vocabularies and
    config, when given, must be exactly the checkpoint's. Raises CheckpointError in one line, ValueError for an
    unusable device. Introduced in notebook 07."""
    target = resolve_device(device)  # an unusable device fails before the file is read
    expected = {"model_config": dataclasses.asdict(config)} if config is not None else None
    payload, model = _read(Path(path), "translator", expected, {"src_vocab": src_vocab, "tgt_vocab": tgt_vocab})
    return TrainedModel(str(payload["name"]), model.to(target), payload["src_vocab"], payload["tgt_vocab"],
                        _config_from_dict(payload["model_config"]), TrainConfig(**payload["train_config"]),
                        History.from_dict(payload["history"]), bool(payload.get("fast", False)))


def _load_classifier(path: Path, config: ClassifierConfig, vocab: Vocab, redo: str) -> TrainedClassifier:
    payload, model = _read(path, "classifier", {"model_config": dataclasses.asdict(config)}, {"src_vocab": vocab},
                           redo)
    return TrainedClassifier(model, vocab, config, list(payload["history"]), bool(payload.get("fast", False)))


def load_or_train(what: str | ClassifierConfig = DEFAULT_RECIPE, data: CourseData | None = None,
                  retrain: bool = False, progress: bool = True, log: Log = print, fast: bool = False
                  ) -> TrainedModel | TrainedClassifier:
    """A recipe's translator or a classifier (a ClassifierConfig or its cache name), trained once on `data` (default
    load_course_data()), cached at model_path(what, fast) and loaded from there afterwards. Introduced in notebook 05.

    retrain: train and overwrite even when cached. A cached translator of other data raises CheckpointError saying
    how to retrain; a cached classifier of another config or vocabulary is trained again. ArchiveError when the
    COURSE_MODELS_ARCHIVE import on a cache miss is refused.
    """
    named, say = _named(what), reporter(log)
    data = load_course_data(log=None) if data is None else data
    path, mode = model_path(named, fast), " (fast mode)" if fast else ""
    is_classifier = isinstance(named, ClassifierConfig)
    settings = training_config(named, fast)
    if not retrain and not path.exists():  # COURSE_MODELS_ARCHIVE: the lecturer's models first, when set
        import_from_env(fast, data, log)
    if path.exists() and not retrain:
        try:
            if is_classifier:
                trained = _load_classifier(path, settings, data.src_vocab, redo="retrain it (load_or_train(config, "
                                           "retrain=True)), or delete it")
                say(f"Loaded {named.name}{mode} from {display_path(path)}")
                return trained
            trained = load_checkpoint(path, data.src_vocab, data.tgt_vocab,
                                      config=named.model_config(data.src_vocab, data.tgt_vocab))
            say(f"Loaded {named.name}{mode} from {display_path(path)} "
                f"(trained {trained.history.train_seconds:.0f} s, {trained.history.epochs} epochs)")
            return trained
        except CheckpointMismatch as error:
            if not is_classifier:
                raise CheckpointError(f"{error} (cached model of recipe {named.name!r}: retrain it with "
                                      f"load_or_train({named.name!r}, retrain=True))") from error
            say(f"{display_path(path)} was made with another config or vocabulary: training again")
    say(f"Training {named.name}{mode}; it will be cached at {display_path(path)}")
    started = time.perf_counter()
    if is_classifier:
        model = build_classifier(settings, len(data.src_vocab))
        history = train_classifier(model, data.splits.train, data.src_vocab, settings, log=log)
        trained = TrainedClassifier(model, data.src_vocab, settings, history, fast)
    else:
        trained = train_recipe(named, data, fast=fast, progress=progress, log=log)
        trained.model.cpu()
    save_checkpoint(path, trained)
    say(f"Trained {named.name} ({count_parameters(trained.model):,} parameters) in "
        f"{time.perf_counter() - started:.0f} s; saved to {display_path(path)}")
    return trained


# ---------------------------------------------------------------------------------------------- the class archive
_ARCHIVE_ENV = "COURSE_MODELS_ARCHIVE"  # an archive to import on a cache miss, before anything trains
_BACKUP = "before-import"  # under data_dir()/models/: the cached files an import replaced
_EXPORT_FIX = "ask for a new export (python -m course_utils pretrain --export FILE)"
_COPY_FIX = "copy the archive again from where it was shared"


class ArchiveError(Exception):
    """An archive that cannot be exported or imported; the message is one line naming the problem and the fix."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))  # one line, whatever was quoted into it


def _known_members() -> dict[str, tuple[str, bool]]:
    """'models/<cache file>' -> (model name, fast) for every recipe and notebook classifier, in both modes."""
    return {f"models/{model_path(name, fast).name}": (name, fast)
            for name in (*RECIPES, *notebook_classifiers()) for fast in (False, True)}


def _check_member(member: str, raw: bytes, course: CourseData, folder: Path) -> None:
    """The member, as a cache file, through the one loader against `course` and this package's training settings."""
    name, fast = _known_members()[member]
    named, temp = _named(name), folder / Path(member).name
    temp.write_bytes(raw)
    kind = "classifier" if isinstance(named, ClassifierConfig) else "translator"
    settings = training_config(named, fast)
    expected = ({"model_config": dataclasses.asdict(settings)} if kind == "classifier" else
                {"model_config": dataclasses.asdict(named.model_config(course.src_vocab, course.tgt_vocab)),
                 "train_config": dataclasses.asdict(settings)})
    try:
        payload = _read(temp, kind, expected, {"src_vocab": course.src_vocab, "tgt_vocab": course.tgt_vocab},
                        redo="FIX").payload
        if payload["name"] != named.name or bool(payload.get("fast")) is not fast:
            raise CheckpointError(f"{temp} is named {payload['name']!r} (fast: {payload.get('fast')}) inside; FIX")
    except CheckpointError as error:
        text = re.sub(r"(\. Build the model from the checkpoint's config, or|,? or|;) FIX", "",
                      str(error).replace(str(temp), "")).strip()
        raise ArchiveError(f"{member} {text}") from None
    finally:
        temp.unlink(missing_ok=True)


def _read_archive(path: Path, fast: bool | None, course: CourseData) -> dict[str, bytes]:
    """{member: bytes} of the archive at `path`, every member checked; ArchiveError before anything is written."""
    where, known = display_path(path), _known_members()
    if not path.is_file():
        raise ArchiveError(f"no archive at {where}{' (a directory)' if path.is_dir() else ''}; pass the .zip file "
                           f"the lecturer exported (python -m course_utils pretrain --export FILE)")
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            unsafe = [name for name in names if name.startswith("/") or "\\" in name or ":" in name
                      or any(part in ("", ".", "..") for part in name.split("/"))]
            foreign = [name for name in names if name not in known]
            mode = {True: "fast-mode", False: "full-mode"}
            problem = (
                f"has an unsafe member name {unsafe[0]!r} (absolute, or with '..'); do not use it:" if unsafe else
                "has repeated member names: not a course model archive;" if len(set(names)) != len(names) else
                f"holds {foreign[0]!r}, which is not a model of this course (models/<recipe or classifier>[-fast]"
                f".pt);" if foreign else "holds no models;" if not names else
                f"holds {mode[not fast]} models, not {mode[fast]} ones; import it {'without' if fast else 'with'} "
                f"--fast, or" if fast is not None and {known[name][1] for name in names} != {fast} else None)
            if problem:
                raise ArchiveError(f"{where} {problem} {_EXPORT_FIX}")
            members = {name: archive.read(name) for name in names}  # checks each CRC
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, NotImplementedError,
            RuntimeError) as error:  # RuntimeError: an encrypted member
        raise ArchiveError(f"{where} is damaged or truncated (zip: {error}); {_COPY_FIX}") from None
    with tempfile.TemporaryDirectory(prefix="course-archive-") as folder:
        for member, raw in members.items():
            try:
                _check_member(member, raw, course, Path(folder))
            except ArchiveError as error:
                raise ArchiveError(f"{where}: {error}; do not use this archive: {_EXPORT_FIX}") from None
    return members


def export_models(path: str | os.PathLike, names: Sequence[str] | None = None, fast: bool = False,
                  data: CourseData | None = None) -> list[str]:
    """Zip the cached models `names` (default NOTEBOOK_MODELS, then notebook 08's classifiers) to `path`, atomically,
    each checked as an import will check it. Returns the members written. ArchiveError for a model unknown, not
    cached or unfit here."""
    course = load_course_data(log=None) if data is None else data
    members, flag = {}, " --fast" if fast else ""
    with tempfile.TemporaryDirectory(prefix="course-archive-") as folder:
        for name in dict.fromkeys(names if names is not None else [*NOTEBOOK_MODELS, *notebook_classifiers()]):
            try:
                cached = model_path(_named(name), fast)
            except KeyError:
                raise ArchiveError(f"this course_utils has no recipe or notebook classifier called {name!r}; check "
                                   f"the name") from None
            if not cached.is_file():
                raise ArchiveError(f"{name} is not cached at {display_path(cached)}; train it first: python -m "
                                   f"course_utils pretrain{flag} {name}")
            member = f"models/{cached.name}"
            members[member] = cached.read_bytes()
            try:
                _check_member(member, members[member], course, Path(folder))
            except ArchiveError as error:
                raise ArchiveError(f"the cached {error}; retrain it: python -m course_utils pretrain{flag} --retrain "
                                   f"{name}") from None

    def write(file) -> None:
        with zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED) as archive:
            for member, raw in members.items():
                archive.writestr(member, raw)
    try:
        checkpoints.atomic_write(path, write)
    except OSError as error:
        raise ArchiveError(f"cannot write {display_path(path)} ({error.strerror or error}); pass a file in a "
                           f"writable folder") from None
    return list(members)


def import_models(path: str | os.PathLike, fast: bool | None = None, data: CourseData | None = None,
                  only_missing: bool = False, log: Log = None) -> list[str]:
    """Check every model of the archive at `path` (fast: only that mode's models; None: either) against `data`, then
    cache them where load_or_train looks. Returns the names now cached from it. only_missing: write only models not
    cached yet; else a differing cached file is first copied to data_dir()/models/before-import/. ArchiveError, before
    anything is written, for a missing, damaged or foreign archive or a member the one loader refuses."""
    course = load_course_data(log=None) if data is None else data
    say, known, done = reporter(log), _known_members(), []
    for member, raw in _read_archive(Path(path), fast, course).items():
        name, target = known[member][0], data_dir() / member
        if target.exists() and (only_missing or target.read_bytes() == raw):
            if not only_missing:
                done.append(name)
                say(f"{name}: already cached, identical ({display_path(target)})")
            continue
        try:
            kept = target.parent / _BACKUP / target.name if target.exists() else None
            if kept:
                kept = kept.with_stem(f"{target.stem}-{time.time_ns()}") if kept.exists() else kept  # never over one
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(target, kept)
            checkpoints.atomic_write(target, lambda file, raw=raw: file.write(raw))
        except OSError as error:
            raise ArchiveError(f"cannot write {display_path(target)} ({error.strerror or error}); make its folder "
                               f"writable, or set COURSE_DATA_DIR to a writable folder") from None
        done.append(name)
        say(f"{name}: imported to {display_path(target)}"
            + (f" (the one cached before is kept at {display_path(kept)})" if kept else ""))
    return done


def import_from_env(fast: bool, data: CourseData | None, log: Log = None) -> list[str]:
    """On a cache miss: import_models(only_missing=True) of the COURSE_MODELS_ARCHIVE archive's `fast`-mode models;
    [] when unset or for data built in memory. ArchiveError, naming the variable, on refusal."""
    named = os.environ.get(_ARCHIVE_ENV, "").strip()
    if not named or (data is not None and data.corpus_path is None):
        return []
    try:
        with zipfile.ZipFile(Path(named).expanduser()) as archive:
            ours = any(_known_members().get(name, ("", fast))[1] == fast for name in archive.namelist())
    except (zipfile.BadZipFile, OSError, EOFError):
        ours = True  # import_models says what is wrong with it
    if not ours:
        reporter(log)(f"{_ARCHIVE_ENV}: {named} holds no {'fast' if fast else 'full'}-mode models: not imported")
        return []
    try:
        return import_models(Path(named).expanduser(), fast, data, only_missing=True, log=log)
    except ArchiveError as error:
        raise ArchiveError(f"{_ARCHIVE_ENV}={named}: {error} (or unset {_ARCHIVE_ENV} to train here)") from None
