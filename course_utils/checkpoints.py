"""Checkpoints: the one file format of every trained model, written atomically, read by one validating loader.

A payload holds format, kind ("classifier"; absent for a translator), name, fast, model_config, train_config, the
vocabularies, history and state_dict. The caller's `build` makes the model (course_utils.zoo owns the dispatch).
Errors are one-line CheckpointError (file, problem, fix); a valid file of another configuration: CheckpointMismatch.
"""
from __future__ import annotations

import errno
import os
import pickle
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import torch
from torch import nn

from course_utils.vocab import Vocab

__all__ = ["CheckpointError", "CheckpointMismatch", "Checkpoint", "atomic_write", "write_checkpoint",
           "check_writable", "read_checkpoint"]

_CHECKPOINT_FORMAT = "course_utils.checkpoint/1"
_REQUIRED_KEYS = ("name", "model_config", "train_config", "src_vocab", "tgt_vocab", "history", "state_dict")
_VOCABS = {"translator": (("source", "src_vocab"), ("target", "tgt_vocab")), "classifier": (("French", "src_vocab"),)}


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used here; the message is one line: the file, the problem, the fix. Introduced in
    appendix A4."""


class CheckpointMismatch(CheckpointError):
    """A valid checkpoint made with another configuration or vocabulary than the one expected."""


class Checkpoint(NamedTuple):
    """A validated checkpoint: its payload (plain data) and the model `build` made, weights loaded, in eval mode."""
    payload: dict[str, Any]
    model: nn.Module


def _file_mode() -> int:
    """0o666 minus the umask: an ordinary new file's mode (mkstemp alone would give 0o600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> Path:
    """`write` a temporary file beside `path`, then os.replace: `path` holds the old file or the whole new one, never
    half a file; the new file gets an ordinary new file's mode. Raises OSError."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file name", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
        os.chmod(temp_name, _file_mode())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    return path


def write_checkpoint(payload: dict[str, Any], path: str | os.PathLike) -> Path:
    """torch.save `payload` (plain data and tensors) to `path` with atomic_write. Returns the path."""
    return atomic_write(path, lambda file: torch.save({"format": _CHECKPOINT_FORMAT, **payload}, file))


def check_writable(path: str | os.PathLike) -> Path:
    """Check, before training, that a checkpoint can be written to `path` (folders created, a probe file written and
    removed); returns it as a Path. Raises CheckpointError."""
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


def _first_sentence(error: BaseException, limit: int = 160) -> str:
    """The first sentence of an exception's message, without terminal colour codes, at most `limit` characters."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()
    text = (text.splitlines() or [""])[0].split(". ")[0]
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _pickled_code(error: BaseException) -> str:
    """The code a pickle would have run, as torch.load(weights_only=True) names it when refusing it, else ""."""
    if not isinstance(error, pickle.UnpicklingError):
        return ""
    return (str(error).partition("GLOBAL ")[2].split() or [""])[0].rstrip(":,.")


def _differences(expected: dict, found: dict) -> list[str]:
    """'field: checkpoint has X, expected Y' for each key whose values differ."""
    return [f"{key}: checkpoint has {found.get(key)!r}, expected {expected.get(key)!r}"
            for key in sorted(set(expected) | set(found), key=str) if expected.get(key) != found.get(key)]


def _vocab_difference(which: str, expected: Vocab, found: Vocab) -> str:
    if len(expected) != len(found):
        return f"{which} vocabulary: checkpoint has {len(found):,} words, expected {len(expected):,}"
    for index, (a, b) in enumerate(zip(expected.index2word, found.index2word)):
        if a != b:
            return f"{which} vocabulary: id {index} is {b!r} in the checkpoint, expected {a!r}"
    return f"{which} vocabulary: same words, different counts or min_freq"


def read_checkpoint(path: str | os.PathLike, build: Callable[[dict[str, Any]], nn.Module], kind: str = "translator",
                    expected: dict[str, dict] | None = None, vocabs: dict[str, Vocab | None] | None = None,
                    redo: str | None = None, upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None = None
                    ) -> Checkpoint:
    """The one loader: torch.load(weights_only=True) (no code runs), every check, then the weights.

    build: payload -> the untrained model (TypeError/ValueError: it cannot). expected: {"model_config": ...,
    "train_config": ...} and vocabs: {"src_vocab": ..., "tgt_vocab": ...}, where given, must match exactly. redo: the
    fix a message ends with. upgrade: applied to the payload as soon as it is read (older field names to today's).
    Returns Checkpoint(payload with Vocab vocabularies, model in eval mode on the CPU). Raises CheckpointError, or
    CheckpointMismatch for a valid file of another configuration or vocabulary.
    """
    path = Path(path)
    redo = redo or f"delete {path} (or pass another path) and train again"
    if path.is_dir():
        raise CheckpointError(f"{path} is a directory, not a checkpoint file; pass the .pt file inside it (e.g. "
                              f"{path / 'model.pt'})")
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}; train one with `python -m course_utils train --output "
                              f"{path}` or load_or_train(name)")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # truncated file, pickle with code in it, not a torch file at all
        code = _pickled_code(error)
        why = (f"it holds pickled code, which torch.load(weights_only=True) refused: it calls {code}" if code else
               f"{type(error).__name__}: {_first_sentence(error)}")
        raise CheckpointError(f"{path} is not a readable course checkpoint ({why}); {redo}") from error
    if not isinstance(payload, dict) or payload.get("format") != _CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} is not a course_utils checkpoint (format {_CHECKPOINT_FORMAT!r} expected); "
                              f"{redo}")
    if upgrade is not None:
        payload = upgrade(payload)
    if payload.get("kind", "translator") != kind:
        raise CheckpointError(f"{path} holds a {payload.get('kind', 'translator')}, not a {kind}; {redo}")
    missing = [key for key in _REQUIRED_KEYS if key not in payload]
    if missing:
        raise CheckpointError(f"{path} is an incomplete checkpoint: it lacks {', '.join(missing)}; {redo}")
    try:
        payload = {**payload, **{key: Vocab.from_dict(payload[key]) for _, key in _VOCABS[kind]}}
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise CheckpointError(f"{path} holds a damaged vocabulary or history ({error}); {redo}") from error
    for which, key in _VOCABS[kind]:
        wanted = (vocabs or {}).get(key)
        if wanted is not None and wanted != payload[key]:
            raise CheckpointMismatch(f"{path} was trained with another {which} vocabulary "
                                     f"({_vocab_difference(which, wanted, payload[key])}); the data settings "
                                     f"(max_length, min_freq, seed, corpus) must match the training run's, or {redo}")
    for field, wanted in (expected or {}).items():
        problems = _differences(wanted, payload[field] if isinstance(payload[field], dict) else {})
        if problems:
            what = field.replace("_config", "").replace("model", "model configuration").replace("train", "training")
            raise CheckpointMismatch(f"{path} was made with another {what}: {'; '.join(problems)}. Build the model "
                                     f"from the checkpoint's config, or {redo}")
    try:
        model = build(payload)
    except (KeyError, AttributeError) as error:
        raise CheckpointError(f"{path} holds a damaged vocabulary or history ({error}); {redo}") from error
    except TypeError as error:
        raise CheckpointError(f"{path} has config fields this version of course_utils does not know ({error}); "
                              f"{redo}") from error
    except ValueError as error:  # e.g. an attention kind this version does not have, or a config that misfits
        raise CheckpointError(f"{path} has a configuration this version of course_utils cannot build ({error}); "
                              f"{redo}") from error
    state_dict = payload["state_dict"]
    if not isinstance(state_dict, dict) or not all(isinstance(value, torch.Tensor) for value in state_dict.values()):
        raise CheckpointError(f"{path} holds no usable weights (state_dict is not a dict of tensors); {redo}")
    broken = [key for key, value in state_dict.items()
              if value.is_floating_point() and not bool(torch.isfinite(value).all())]
    if broken:
        raise CheckpointError(f"{path} has NaN or infinite weights in {len(broken)} tensor(s) (first: {broken[0]}): "
                              f"training diverged (a lower learning rate helps); {redo}")
    try:
        model.load_state_dict(state_dict)
    except RuntimeError as error:
        raise CheckpointError(f"{path} holds weights that do not fit its config ({_first_sentence(error, 80)}); "
                              f"{redo}") from None
    return Checkpoint(payload, model.eval())
