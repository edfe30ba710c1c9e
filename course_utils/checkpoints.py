"""Checkpoints: one file holds a trained model with everything needed to use it again.

    save_checkpoint("data/models/mine.pt", trained)    # configs + vocabularies + weights + history, atomically
    trained = load_checkpoint("data/models/mine.pt")   # torch.load(weights_only=True): no code runs on load
    check_writable("out/mine.pt")                      # before training: can the checkpoint be written there?
    path, why = save_checkpoint_or_fallback("out/mine.pt", trained)   # never loses a trained model
    cached = load_classifier_checkpoint(path, config, vocab)   # a classifier cache (08); None: another config/vocab

A checkpoint that cannot be used (a directory, not a course checkpoint, corrupt or incomplete, NaN weights, a
configuration this version cannot build, another configuration or vocabulary) raises CheckpointError with a
one-line message that says what is wrong and how to fix it; so does a classifier cache (classifier.py) that cannot
be used. Both are read by read_weights_only. Introduced in notebook 05.
"""
from __future__ import annotations

import dataclasses
import errno
import os
import pickle
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import torch
from torch import nn

from course_utils.runtime import Log, resolve_device
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.train import History, TrainConfig
from course_utils.transformer import build_model, config_from_dict
from course_utils.translate import translate
from course_utils.vocab import Vocab

__all__ = ["CHECKPOINT_FORMAT", "REQUIRED_KEYS", "CheckpointError", "TrainedModel", "save_checkpoint", "atomic_save",
           "check_writable", "fallback_locations", "save_checkpoint_or_fallback", "pickled_code",
           "read_weights_only", "import_archive_on_cache_miss", "load_checkpoint", "classifier_from_payload",
           "load_classifier_checkpoint"]

if TYPE_CHECKING:
    from course_utils.classifier import ClassifierConfig, TrainedClassifier

CHECKPOINT_FORMAT = "course_utils.checkpoint/1"
REQUIRED_KEYS = ("name", "model_config", "train_config", "src_vocab", "tgt_vocab", "history", "state_dict")


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used here: not a checkpoint, or made for another config or vocabulary.

    Introduced in notebook 05.
    """


@dataclass
class TrainedModel:
    """A model with everything needed to use it again. Introduced in notebook 05."""

    name: str
    model: Seq2Seq
    src_vocab: Vocab
    tgt_vocab: Vocab
    model_config: ModelConfig
    train_config: TrainConfig
    history: History
    fast: bool = False  # trained in fast mode (COURSE_FAST=1): a smoke-test model, not a real one

    def translate(self, sentence: str, beam_width: int = 1):
        """translate.translate with this model's vocabularies."""
        return translate(self.model, self.src_vocab, self.tgt_vocab, sentence, beam_width=beam_width)


def _file_mode() -> int:
    """The mode an ordinary new file gets here: 0o666 minus the umask (mkstemp alone would give 0o600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def save_checkpoint(path: str | os.PathLike, trained: TrainedModel) -> Path:
    """Write configs + vocabularies + weights + history to `path` atomically (temp file, then os.replace).

    Only plain Python types and tensors are stored, so `load_checkpoint` can use torch.load(weights_only=True).
    The file gets the permissions of any new file (0o666 minus the umask, e.g. 0o644), not mkstemp's 0o600.
    Returns the path; raises OSError when the folder cannot be written (see `save_checkpoint_or_fallback`).
    Introduced in notebook 05.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a checkpoint file name", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "name": trained.name,
        "fast": bool(trained.fast),
        "model_config": dataclasses.asdict(trained.model_config),
        "train_config": dataclasses.asdict(trained.train_config),
        "src_vocab": trained.src_vocab.to_dict(),
        "tgt_vocab": trained.tgt_vocab.to_dict(),
        "history": trained.history.to_dict(),
        "state_dict": {key: value.detach().cpu() for key, value in trained.model.state_dict().items()},
    }
    atomic_save(payload, path)
    return path


def atomic_save(payload: dict, path: Path) -> None:
    """torch.save `payload` to a temporary file beside `path`, give it an ordinary new file's mode, then os.replace:
    `path` holds the old file or the whole new one, never half a file. Used by the package, not a notebook."""
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            torch.save(payload, file)
        os.chmod(temp_name, _file_mode())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def check_writable(path: str | os.PathLike) -> Path:
    """Check, before any training, that a checkpoint can be written to `path`; returns it as a Path.

    Creates the missing parent folders and writes (then removes) a temporary file next to `path`. Raises
    CheckpointError with a one-line message naming the path, the reason and the fix. Used by the package, not a
    notebook.
    """
    path = Path(path)
    fix = "pass --output a file in a folder you can write (e.g. data/models/mine.pt)"
    if path.is_dir():
        raise CheckpointError(f"{path} is a directory; {fix}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=path.parent)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise CheckpointError(f"cannot write {path}: {error.strerror or error}; {fix}") from error
    return path


def fallback_locations(path: str | os.PathLike) -> list[Path]:
    """Where `save_checkpoint_or_fallback` tries next: data_dir()/models/, then the system's temp folder.

    Used by the package, not a notebook.
    """
    from course_utils.corpus import data_dir

    name = Path(path).name or "model.pt"
    places = [data_dir() / "models" / name, Path(tempfile.gettempdir()) / "course_utils" / name]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return [place.with_name(f"{place.stem}-{stamp}{place.suffix}") if place.exists() else place
            for place in places]  # never overwrite another model


def save_checkpoint_or_fallback(path: str | os.PathLike, trained: TrainedModel) -> tuple[Path, str | None]:
    """save_checkpoint to `path`; if that fails, to the first `fallback_locations` that works.

    Returns (where it was saved, None) or (fallback path, why `path` failed). Never loses the model silently:
    raises CheckpointError naming every place tried only when no location at all could be written. Used by the
    package, not a notebook.
    """
    try:
        return save_checkpoint(path, trained), None
    except OSError as error:
        reason = f"{error.strerror or error}"
    tried = [str(path)]
    for fallback in fallback_locations(path):
        if fallback.resolve() == Path(path).resolve():
            continue
        try:
            return save_checkpoint(fallback, trained), reason
        except OSError:
            tried.append(str(fallback))
    raise CheckpointError(f"could not save the checkpoint anywhere (tried {', '.join(tried)}): {reason}")


def _first_sentence(error: BaseException, limit: int = 160) -> str:
    """The first sentence of an exception's message, without terminal colour codes, at most `limit` characters.

    torch's unpickling errors are paragraphs with ANSI escapes; the user needs their first line only.
    """
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()
    text = (text.splitlines() or [""])[0].split(". ")[0]
    return text if len(text) <= limit else text[:limit - 3] + "..."


def pickled_code(error: BaseException) -> str:
    """The code a pickle would have run, as torch.load(weights_only=True) names it when it refuses the file (e.g.
    "os.system"), else "". Used by the package, not a notebook."""
    if not isinstance(error, pickle.UnpicklingError):
        return ""
    return (str(error).partition("GLOBAL ")[2].split() or [""])[0].rstrip(":,.")


def read_weights_only(path: str | os.PathLike, what: str, redo: str) -> object:
    """torch.load(path, map_location="cpu", weights_only=True): tensors and plain data only, no code runs.

    Raises CheckpointError in one line, "<path> is not a readable <what> (why); <redo>", for a truncated or foreign
    file, or one holding pickled code (named). load_checkpoint and load_classifier_checkpoint read through it.
    Used by the package, not a notebook.
    """
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # truncated file, pickle with code in it, not a torch file at all
        code = pickled_code(error)
        why = (f"it holds pickled code, which torch.load(weights_only=True) refused: it calls {code}" if code else
               f"{type(error).__name__}: {_first_sentence(error)}")
        raise CheckpointError(f"{path} is not a readable {what} ({why}); {redo}") from error


def import_archive_on_cache_miss(fast: bool, data, log: Log = print) -> list[str]:
    """On a cache miss, before anything trains: import the models of the archive COURSE_MODELS_ARCHIVE names, when
    set (cli.archive.import_from_env); returns the names written. The one call from the library into the tooling,
    made lazily: the archive's format is defined with the recipes and classifiers, which import this module.
    Raises cli.archive.ArchiveError when the archive is refused. Used by the package, not a notebook."""
    from course_utils.cli.archive import import_from_env

    return import_from_env(fast, data, log=log)


def _differences(expected: dict, found: dict) -> list[str]:
    return [f"{key}: checkpoint has {found.get(key)!r}, expected {expected.get(key)!r}"
            for key in sorted(set(expected) | set(found)) if expected.get(key) != found.get(key)]


def _vocab_difference(which: str, expected: Vocab, found: Vocab) -> str:
    if len(expected) != len(found):
        return f"{which} vocabulary: checkpoint has {len(found):,} words, expected {len(expected):,}"
    for index, (a, b) in enumerate(zip(expected.index2word, found.index2word)):
        if a != b:
            return f"{which} vocabulary: id {index} is {b!r} in the checkpoint, expected {a!r}"
    return f"{which} vocabulary: same words, different counts or min_freq"


def load_checkpoint(path: str | os.PathLike, src_vocab: Vocab | None = None, tgt_vocab: Vocab | None = None,
                    config: ModelConfig | None = None, device: str | torch.device = "cpu") -> TrainedModel:
    """Load a checkpoint written by `save_checkpoint` (torch.load with weights_only=True).

    Args:
        path: the checkpoint file.
        src_vocab, tgt_vocab, config: when given, the checkpoint must have been made with exactly these, else
            CheckpointError names the field that differs.
        device: where to put the model ("auto": CUDA when present).
    Returns:
        TrainedModel with the model in eval mode.
    Raises:
        CheckpointError: a directory, not a course checkpoint, a corrupt or incomplete one, a configuration this
            version cannot build, NaN/infinite weights, or a mismatched configuration/vocabulary.
        ValueError: `device` is unknown or absent on this machine (runtime.resolve_device).

    Introduced in notebook 05.
    """
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"{path} is a directory, not a checkpoint file; pass the .pt file inside it (e.g. "
                              f"{path / 'model.pt'})")
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}; train one with `python -m course_utils train --output "
                              f"{path}` or load_or_train(name)")
    target = resolve_device(device)  # an unusable device fails here, before the file is read
    redo = f"delete {path} (or pass another path) and train again"
    payload = read_weights_only(path, "course checkpoint", redo)
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} is not a course_utils checkpoint (format {CHECKPOINT_FORMAT!r} expected); "
                              "train one with `python -m course_utils train`")
    missing = [key for key in REQUIRED_KEYS if key not in payload]
    if missing:
        raise CheckpointError(f"{path} is an incomplete checkpoint: it lacks {', '.join(missing)}; {redo}")
    try:
        saved = _saved_settings(payload, src_vocab, tgt_vocab, config, redo)
    except CheckpointError as error:  # its message completes "<the file> ..." with the fix
        raise CheckpointError(f"{path} {error}") from None
    model = build_model(saved.model_config)  # the GRU Seq2Seq, or the Transformer of notebook 09
    try:
        _load_weights(model, payload["state_dict"])
    except CheckpointError as error:  # its message completes "<the file> ..."
        raise CheckpointError(f"{path} {error}; {redo}") from None
    model.to(target).eval()
    return TrainedModel(str(payload["name"]), model, saved.src_vocab, saved.tgt_vocab, saved.model_config,
                        saved.train_config, saved.history, bool(payload.get("fast", False)))


class _SavedSettings(NamedTuple):
    src_vocab: Vocab
    tgt_vocab: Vocab
    model_config: ModelConfig
    train_config: TrainConfig
    history: History


def _saved_settings(payload: dict, src_vocab: Vocab | None, tgt_vocab: Vocab | None, config: ModelConfig | None,
                    redo: str) -> _SavedSettings:
    """A checkpoint's vocabularies, configurations and history, checked against the expected ones where given.
    A CheckpointError's message completes "<the file> ..." and ends with the fix (`redo`)."""
    if config is not None:
        problems = _differences(dataclasses.asdict(config), payload["model_config"])
        if problems:
            raise CheckpointError(f"was made with another model configuration: {'; '.join(problems)}. Build the "
                                  f"model from the checkpoint's config, or {redo}")
    try:
        saved_vocabs = Vocab.from_dict(payload["src_vocab"]), Vocab.from_dict(payload["tgt_vocab"])
        history = History.from_dict(payload["history"])
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise CheckpointError(f"holds a damaged vocabulary or history ({error}); {redo}") from error
    for which, expected, found in (("source", src_vocab, saved_vocabs[0]), ("target", tgt_vocab, saved_vocabs[1])):
        if expected is not None and expected != found:
            raise CheckpointError(f"was trained with another {which} vocabulary "
                                  f"({_vocab_difference(which, expected, found)}); the data settings (max_length, "
                                  f"min_freq, seed, corpus) must match the training run's, or {redo}")
    try:
        model_config = config_from_dict(payload["model_config"])  # no "architecture" field: the GRU model
        train_config = TrainConfig(**payload["train_config"])
    except TypeError as error:
        raise CheckpointError(f"has config fields this version of course_utils does not know ({error}); {redo}"
                              ) from error
    except ValueError as error:  # e.g. an attention kind this version does not have
        raise CheckpointError(f"has a configuration this version of course_utils cannot build ({error}); {redo}"
                              ) from error
    try:
        model_config.check_vocabularies(*saved_vocabs)
    except ValueError as error:
        raise CheckpointError(f"does not fit its own vocabularies: {error}; {redo}") from error
    return _SavedSettings(*saved_vocabs, model_config, train_config, history)


def _load_weights(model: nn.Module, state_dict: object) -> None:
    """Load `state_dict` into `model` once it is a dict of finite tensors that fits: the one rule for translators
    and classifiers. A CheckpointError's message completes "<the file> ..."."""
    if not isinstance(state_dict, dict) or not all(isinstance(value, torch.Tensor) for value in state_dict.values()):
        raise CheckpointError("holds no usable weights (state_dict is not a dict of tensors)")
    broken = [key for key, value in state_dict.items()
              if value.is_floating_point() and not bool(torch.isfinite(value).all())]
    if broken:
        raise CheckpointError(f"has NaN or infinite weights in {len(broken)} tensor(s) (first: {broken[0]}): "
                              "training diverged (a lower learning rate helps)")
    try:
        model.load_state_dict(state_dict)
    except RuntimeError as error:
        raise CheckpointError(f"holds weights that do not fit its config ({_first_sentence(error, 80)})") from None


def classifier_from_payload(payload: object, config: ClassifierConfig, vocab: Vocab, fast: bool = False,
                            strict: bool = False) -> TrainedClassifier | None:
    """The classifier a cache file's payload (read with weights_only=True) holds, in eval mode, once it passes every
    check a classifier cache must: the format, its fields, `config` and `vocab`, weights that are finite and fit.
    A valid file of another config or vocabulary gives None (train again), or with strict=True a CheckpointError;
    a CheckpointError's message completes "<the file> ...": the caller names the file and the fix. The one place
    of these rules (load_classifier_checkpoint, cli.archive). Used by the package, not a notebook."""
    from course_utils.classifier import CLASSIFIER_FORMAT, TrainedClassifier, build_classifier  # it imports this module

    if not isinstance(payload, dict) or payload.get("format") != CLASSIFIER_FORMAT:
        raise CheckpointError(f"is not a course classifier (format {CLASSIFIER_FORMAT!r} expected)")
    try:
        other_config = _differences(dataclasses.asdict(config), payload["config"])
        saved_vocab, history, state = Vocab.from_dict(payload["vocab"]), list(payload["history"]), payload["state_dict"]
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as error:
        raise CheckpointError(f"holds a damaged classifier ({type(error).__name__}: {_first_sentence(error, 80)})"
                              ) from None
    other = (f"was made with another config ({other_config[0]})" if other_config else f"was trained with another "
             f"{_vocab_difference('French', vocab, saved_vocab)}" if saved_vocab != vocab else None)
    if other:  # None: a valid file, made for another run (load_or_train_classifier trains again)
        if strict:
            raise CheckpointError(other)
        return None
    model = build_classifier(config, len(vocab))
    _load_weights(model, state)
    return TrainedClassifier(model.eval(), vocab, config, history, fast)


def load_classifier_checkpoint(path: str | Path, config: ClassifierConfig, vocab: Vocab, fast: bool = False
                               ) -> TrainedClassifier | None:
    """The classifier cached at `path`, read with torch.load(weights_only=True) (no code runs) and checked by
    classifier_from_payload; None when it is a valid file of another config or vocabulary (train it again).
    Raises CheckpointError in one line naming the file, the problem and the fix: unreadable or truncated, pickled
    code, not a course classifier, damaged, NaN weights, weights that do not fit. Used by the package, not a
    notebook."""
    path = Path(path)
    redo = "retrain it (load_or_train_classifier(config, retrain=True)), or delete it"
    payload = read_weights_only(path, "course classifier", redo)
    try:
        return classifier_from_payload(payload, config, vocab, fast)
    except CheckpointError as error:
        raise CheckpointError(f"{path} {error}; {redo}") from None
