"""Checkpoints: atomic save, safe load (weights_only), clear errors for mismatched or foreign files."""
import dataclasses

import pytest
import torch
from helpers import tiny_config

from course_utils.checkpoints import (
    CheckpointError,
    TrainedModel,
    load_checkpoint,
    save_checkpoint,
)
from course_utils.data import TranslationDataset, collate_batch
from course_utils.decode import greedy_decode
from course_utils.seq2seq import Seq2Seq
from course_utils.train import History, TrainConfig


def make_trained(data, attention="bahdanau") -> TrainedModel:
    torch.manual_seed(0)
    config = tiny_config(data, attention)
    model = Seq2Seq(config).eval()
    history = History([1.0], [1.1], [5.0], [0.1])
    return TrainedModel("tiny", model, data.src_vocab, data.tgt_vocab, config, TrainConfig(), history)


def test_checkpoint_round_trip_gives_identical_outputs(tiny_course_data, tmp_path):
    trained = make_trained(tiny_course_data)
    path = save_checkpoint(tmp_path / "sub" / "tiny.pt", trained)
    assert [p.name for p in path.parent.iterdir()] == ["tiny.pt"]  # no temp file left behind
    payload = torch.load(path, weights_only=True)  # plain types and tensors only
    assert payload["model_config"]["hidden_size"] == 32
    loaded = load_checkpoint(path, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, trained.model_config)
    assert loaded.src_vocab == tiny_course_data.src_vocab and loaded.history == trained.history
    assert loaded.model_config == trained.model_config and loaded.train_config == trained.train_config
    dataset = TranslationDataset(tiny_course_data.splits.train, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab)
    batch = collate_batch([dataset[i] for i in range(8)])
    torch.testing.assert_close(loaded.model(batch.src, batch.src_lengths, batch.tgt).log_probs,
                               trained.model(batch.src, batch.src_lengths, batch.tgt).log_probs, rtol=0, atol=0)
    assert greedy_decode(loaded.model, batch.src, batch.src_lengths).tokens.equal(
        greedy_decode(trained.model, batch.src, batch.src_lengths).tokens)


def test_mismatched_checkpoint_raises_a_clear_error(tiny_course_data, tmp_path):
    trained = make_trained(tiny_course_data)
    path = save_checkpoint(tmp_path / "tiny.pt", trained)
    other_config = dataclasses.replace(trained.model_config, hidden_size=64)
    with pytest.raises(CheckpointError, match="hidden_size: checkpoint has 32, expected 64"):
        load_checkpoint(path, config=other_config)
    other_vocab = type(tiny_course_data.tgt_vocab).build(["a completely different vocabulary ."])
    with pytest.raises(CheckpointError, match="target vocabulary") as error:
        load_checkpoint(path, tgt_vocab=other_vocab)
    assert "train again" in str(error.value)


def test_files_that_are_not_checkpoints_raise_checkpoint_error(tmp_path):
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a torch file")
    with pytest.raises(CheckpointError, match="not a readable course checkpoint"):
        load_checkpoint(garbage)
    torch.save({"hello": 1}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="not a course_utils checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="no checkpoint at"):
        load_checkpoint(tmp_path / "missing.pt")
