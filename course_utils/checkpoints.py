"""Checkpoints: one file holds a trained model with everything needed to use it again.

    save_checkpoint("data/models/mine.pt", trained)    # configs + vocabularies + weights + history, atomically
    trained = load_checkpoint("data/models/mine.pt")   # torch.load(weights_only=True): no code runs on load

A checkpoint that cannot be used (not a course checkpoint, another configuration or vocabulary) raises
CheckpointError with a message that says what differs and how to fix it. Introduced in notebook 05.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from course_utils.decode import translate
from course_utils.runtime import resolve_device
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.train import History, TrainConfig
from course_utils.vocab import Vocab

CHECKPOINT_FORMAT = "course_utils.checkpoint/1"


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
        """decode.translate with this model's vocabularies."""
        return translate(self.model, self.src_vocab, self.tgt_vocab, sentence, beam_width=beam_width)


def save_checkpoint(path: str | os.PathLike, trained: TrainedModel) -> Path:
    """Write configs + vocabularies + weights + history to `path` atomically (temp file, then os.replace).

    Only plain Python types and tensors are stored, so `load_checkpoint` can use torch.load(weights_only=True).
    Returns the path. Introduced in notebook 05.
    """
    path = Path(path)
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
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            torch.save(payload, file)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    return path


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
        CheckpointError: not a course checkpoint, or mismatched configuration/vocabulary.

    Introduced in notebook 05.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}; train one with `python -m course_utils train --output "
                              f"{path}` or load_or_train(name)")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # truncated file, pickle with code in it, not a torch file at all
        raise CheckpointError(f"{path} is not a readable course checkpoint ({type(error).__name__}: {error}); "
                              "delete it and train again") from error
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} is not a course_utils checkpoint (format {CHECKPOINT_FORMAT!r} expected); "
                              "train one with `python -m course_utils train`")
    redo = f"delete {path} (or pass another path) and train again"
    if config is not None:
        problems = _differences(dataclasses.asdict(config), payload["model_config"])
        if problems:
            raise CheckpointError(f"{path} was made with another model configuration: {'; '.join(problems)}. "
                                  f"Build the model from the checkpoint's config, or {redo}")
    saved_vocabs = Vocab.from_dict(payload["src_vocab"]), Vocab.from_dict(payload["tgt_vocab"])
    for which, expected, found in (("source", src_vocab, saved_vocabs[0]), ("target", tgt_vocab, saved_vocabs[1])):
        if expected is not None and expected != found:
            raise CheckpointError(f"{path} was trained with another {which} vocabulary "
                                  f"({_vocab_difference(which, expected, found)}); the data settings (max_length, "
                                  f"min_freq, seed, corpus) must match the training run's, or {redo}")
    try:
        model_config = ModelConfig(**payload["model_config"])
        train_config = TrainConfig(**payload["train_config"])
    except TypeError as error:
        raise CheckpointError(f"{path} has config fields this version of course_utils does not know ({error}); "
                              f"{redo}") from error
    try:
        model_config.check_vocabularies(*saved_vocabs)
    except ValueError as error:
        raise CheckpointError(f"{path}: {error}; {redo}") from error
    model = Seq2Seq(model_config)
    try:
        model.load_state_dict(payload["state_dict"])
    except RuntimeError as error:
        raise CheckpointError(f"{path}: the weights do not fit the model its config describes ({error}); "
                              f"{redo}") from error
    model.to(resolve_device(device)).eval()
    return TrainedModel(payload["name"], model, *saved_vocabs, model_config, train_config,
                        History.from_dict(payload["history"]), payload.get("fast", False))
