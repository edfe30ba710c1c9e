"""Checkpoints: atomic save, safe load (weights_only), clear errors for mismatched or foreign files (one loader for
translators and classifiers)."""
import dataclasses
import os

import pytest
import torch
from helpers import tiny_config

from course_utils.checkpoints import CheckpointError
from course_utils.data import TranslationDataset, collate_batch
from course_utils.search import greedy_decode
from course_utils.seq2seq import Seq2Seq
from course_utils.train import History, TrainConfig
from course_utils.zoo import TrainedModel, load_checkpoint, save_checkpoint


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


# ---------------------------------------------------------------------------------------------- bad files
def first_line_only(message: str) -> bool:
    return "\n" not in message and len(message) < 400


def tampered(path, **changes):
    """Rewrite the checkpoint at `path` with payload keys replaced (value None: key removed)."""
    payload = torch.load(path, weights_only=True)
    for key, value in changes.items():
        if value is None:
            payload.pop(key)
        else:
            payload[key] = value
    torch.save(payload, path)
    return path


def test_unknown_attention_in_the_stored_config_is_a_checkpoint_error(tiny_course_data, tmp_path):
    path = save_checkpoint(tmp_path / "tiny.pt", make_trained(tiny_course_data))
    config = torch.load(path, weights_only=True)["model_config"]
    tampered(path, model_config={**config, "attention": "telepathic"})
    with pytest.raises(CheckpointError, match="'telepathic'.*train again") as error:
        load_checkpoint(path)
    assert first_line_only(str(error.value))


@pytest.mark.parametrize("key", ["src_vocab", "history", "state_dict", "model_config"])
def test_a_checkpoint_lacking_a_key_is_a_checkpoint_error_naming_it(tiny_course_data, tmp_path, key):
    path = tampered(save_checkpoint(tmp_path / "tiny.pt", make_trained(tiny_course_data)), **{key: None})
    with pytest.raises(CheckpointError, match=f"incomplete checkpoint: it lacks {key}"):
        load_checkpoint(path)


def test_a_damaged_vocabulary_or_history_is_a_checkpoint_error(tiny_course_data, tmp_path):
    path = tampered(save_checkpoint(tmp_path / "tiny.pt", make_trained(tiny_course_data)), history={"loss": [1.0]})
    with pytest.raises(CheckpointError, match="damaged vocabulary or history"):
        load_checkpoint(path)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_or_infinite_weights_are_refused(tiny_course_data, tmp_path, bad):
    trained = make_trained(tiny_course_data)
    with torch.no_grad():
        trained.model.decoder.out.weight[0, 0] = bad
    path = save_checkpoint(tmp_path / "tiny.pt", trained)
    with pytest.raises(CheckpointError, match=r"NaN or infinite weights .*decoder\.out\.weight"):
        load_checkpoint(path)


def test_a_corrupt_checkpoint_gives_a_short_message_not_torchs_paragraph(tiny_course_data, tmp_path):
    good = save_checkpoint(tmp_path / "tiny.pt", make_trained(tiny_course_data)).read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good[: len(good) // 2])
    pickled = tmp_path / "pickled.pt"
    torch.save({"format": "x", "code": torch.nn.Linear(1, 1)}, pickled)  # weights_only refuses the module
    for path in (truncated, pickled):
        with pytest.raises(CheckpointError, match="not a readable course checkpoint") as error:
            load_checkpoint(path)
        assert first_line_only(str(error.value)) and "\x1b" not in str(error.value), str(error.value)


class RunsCode:
    """Pickled, it would call os.makedirs(marker) when loaded with torch.load(weights_only=False)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.makedirs, (self.marker,)


def test_a_checkpoint_holding_pickled_code_names_the_code_and_never_runs_it(tiny_course_data, tmp_path):
    path = save_checkpoint(tmp_path / "tiny.pt", make_trained(tiny_course_data))
    marker = tmp_path / "the-code-ran"
    torch.save({**torch.load(path, weights_only=True), "extra": RunsCode(marker)}, path)
    with pytest.raises(CheckpointError, match="not a readable course checkpoint") as error:
        load_checkpoint(path)
    message = str(error.value)
    assert first_line_only(message) and "pickled code" in message and "os.makedirs" in message, message
    assert not marker.exists()


def test_a_directory_is_named_as_a_directory(tmp_path):
    with pytest.raises(CheckpointError, match="is a directory"):
        load_checkpoint(tmp_path)


def test_checkpoints_get_the_mode_of_an_ordinary_file(tiny_course_data, tmp_path):
    import os

    old = os.umask(0o022)
    try:
        path = save_checkpoint(tmp_path / "tiny.pt", make_trained(tiny_course_data))
        assert path.stat().st_mode & 0o777 == 0o644
        os.umask(0o077)
        path = save_checkpoint(tmp_path / "private.pt", make_trained(tiny_course_data))
        assert path.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


def unwritable_folder(tmp_path):
    """A folder nobody can create or write, even root: its would-be parent is a plain file."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    return blocker / "models"


def test_check_writable_refuses_an_unwritable_folder_and_a_directory(tmp_path):
    from course_utils.checkpoints import check_writable

    with pytest.raises(CheckpointError, match=r"cannot write .*blocker.*--output") as error:
        check_writable(unwritable_folder(tmp_path) / "model.pt")
    assert first_line_only(str(error.value))
    with pytest.raises(CheckpointError, match="is a directory"):
        check_writable(tmp_path)
    assert check_writable(tmp_path / "new" / "model.pt") == tmp_path / "new" / "model.pt"
    assert list((tmp_path / "new").iterdir()) == []  # the probe file is gone


def test_a_classifier_checkpoint_is_not_loaded_as_a_translator(tiny_course_data, tmp_path):
    path = tampered(save_checkpoint(tmp_path / "tiny.pt", make_trained(tiny_course_data)), kind="classifier")
    with pytest.raises(CheckpointError, match="holds a classifier, not a translator") as error:
        load_checkpoint(path)
    assert first_line_only(str(error.value))
