"""The training engine: masked loss, the loop, determinism, overfitting, evaluation, recipes and checkpoints."""
import dataclasses
import math

import pytest
import torch

from course_utils import train
from course_utils.data import PAD_ID, Pair, TranslationDataset, collate_batch
from course_utils.decode import greedy_decode, translate
from course_utils.seq2seq import ModelConfig, Seq2Seq


def tiny_config(data, attention="bahdanau", hidden=32, **kw) -> ModelConfig:
    return ModelConfig(len(data.src_vocab), len(data.tgt_vocab), attention=attention, embedding_size=16,
                       hidden_size=hidden, **kw)


def distinct_sources(pairs, n):
    """The first n pairs whose source sentence appears once (a sentence with two translations can't be overfit)."""
    counts = {}
    for pair in pairs:
        counts[pair.source] = counts.get(pair.source, 0) + 1
    return [pair for pair in pairs if counts[pair.source] == 1][:n]


def fixed_batch(data, pairs):
    dataset = TranslationDataset(pairs, data.src_vocab, data.tgt_vocab)
    return collate_batch([dataset[i] for i in range(len(dataset))])


# ---------------------------------------------------------------------------------------------------- loss
def test_masked_loss_is_the_mean_over_real_tokens_only():
    torch.manual_seed(0)
    log_probs = torch.randn(2, 4, 7).log_softmax(-1)  # (B, T, V)
    tgt = torch.tensor([[5, 6, 2, PAD_ID], [4, 2, PAD_ID, PAD_ID]])
    expected = -(log_probs[0, 0, 5] + log_probs[0, 1, 6] + log_probs[0, 2, 2] + log_probs[1, 0, 4]
                 + log_probs[1, 1, 2]) / 5
    torch.testing.assert_close(train.masked_nll_loss(log_probs, tgt), expected)


def test_changing_predictions_at_pad_positions_changes_nothing():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 7, requires_grad=True)
    tgt = torch.tensor([[5, 6, 2, PAD_ID], [4, 2, PAD_ID, PAD_ID]])
    loss = train.masked_nll_loss(logits.log_softmax(-1), tgt)
    loss.backward()
    assert (logits.grad[tgt == PAD_ID] == 0).all()  # no gradient flows from padding
    changed = logits.detach().clone()
    changed[tgt == PAD_ID] = torch.randn(3, 7) * 10
    torch.testing.assert_close(train.masked_nll_loss(changed.log_softmax(-1), tgt), loss.detach())


def test_label_smoothing_keeps_pads_ignored_and_reduces_to_nll_at_zero():
    torch.manual_seed(0)
    log_probs = torch.randn(2, 3, 6).log_softmax(-1)
    tgt = torch.tensor([[5, 2, PAD_ID], [4, 2, PAD_ID]])
    torch.testing.assert_close(train.masked_nll_loss(log_probs, tgt, label_smoothing=0.0),
                               train.masked_nll_loss(log_probs, tgt))
    smoothed = train.masked_nll_loss(log_probs, tgt, label_smoothing=0.2)
    changed = log_probs.clone()
    changed[:, 2] = torch.randn(2, 6).log_softmax(-1)
    torch.testing.assert_close(train.masked_nll_loss(changed, tgt, label_smoothing=0.2), smoothed)


def test_masked_loss_names_shape_problems():
    with pytest.raises(ValueError, match=r"\(B, T, V\)"):
        train.masked_nll_loss(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))


# ---------------------------------------------------------------------------------------------------- loop
def test_one_step_reduces_the_loss_on_a_fixed_batch(tiny_course_data):
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data, dropout=0.0))
    batch = fixed_batch(tiny_course_data, tiny_course_data.splits.train[:8])
    config = train.TrainConfig(learning_rate=1e-2)
    optimizer = train.make_optimizer(model, config)
    before = train.masked_nll_loss(model(batch.src, batch.src_lengths, batch.tgt).log_probs, batch.tgt).item()
    train.train_epoch(model, [batch], optimizer, config, progress=False)
    after = train.masked_nll_loss(model(batch.src, batch.src_lengths, batch.tgt).log_probs, batch.tgt).item()
    assert after < before


@pytest.mark.parametrize("attention", ["bahdanau", "general"])
def test_overfitting_a_handful_of_pairs_gives_near_zero_loss_and_exact_translations(tiny_course_data, attention):
    pairs = distinct_sources(tiny_course_data.splits.train, 6)
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data, attention, hidden=48, dropout=0.0))
    batch = fixed_batch(tiny_course_data, pairs)
    config = train.TrainConfig(learning_rate=1e-2, clip=1.0)
    optimizer = train.make_optimizer(model, config)
    for _ in range(120):
        loss = train.train_epoch(model, [batch], optimizer, config, progress=False)
    assert loss < 0.05
    for pair in pairs:
        result = translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, pair.source)
        assert result.text == pair.target


def test_training_is_deterministic_for_a_seed(tiny_course_data):
    def run(seed):
        torch.manual_seed(seed)
        model = Seq2Seq(tiny_config(tiny_course_data, dropout=0.2))
        config = train.TrainConfig(epochs=2, batch_size=8, seed=seed, device="cpu", teacher_forcing_ratio=0.5)
        return train.train(model, tiny_course_data, config, progress=False, log=None)

    first, second, other = run(0), run(0), run(1)
    assert first.train_loss == second.train_loss and first.dev_loss == second.dev_loss
    assert first.train_loss != other.train_loss


def test_train_records_a_history_per_epoch_and_logs_one_line_each(tiny_course_data):
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data))
    lines = []
    history = train.train(model, tiny_course_data, train.TrainConfig(epochs=3, batch_size=16, device="cpu"),
                          progress=False, log=lines.append)
    assert history.epochs == 3 and len(lines) == 3
    for values in (history.train_loss, history.dev_loss, history.dev_bleu, history.epoch_seconds):
        assert len(values) == 3 and all(math.isfinite(v) for v in values)
    assert history.train_loss[-1] < history.train_loss[0]
    assert "dev BLEU" in lines[0]


def test_time_budget_stops_training_early(tiny_course_data):
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data))
    history = train.train(model, tiny_course_data, train.TrainConfig(epochs=50, batch_size=4, time_budget=0.0,
                                                                      device="cpu"), progress=False, log=None)
    assert history.epochs == 1


def test_average_last_leaves_the_mean_of_the_last_epochs_weights(tiny_course_data):
    states = [{"w": torch.tensor([1.0, 2.0]), "n": torch.tensor(3)}, {"w": torch.tensor([3.0, 6.0]),
                                                                        "n": torch.tensor(3)}]
    averaged = train.average_weights(states)
    torch.testing.assert_close(averaged["w"], torch.tensor([2.0, 4.0]))
    assert averaged["n"].dtype == torch.long


def test_history_round_trips_through_plain_types():
    history = train.History([2.5, 1.5], [2.0, 1.8], [10.0, 12.5], [3.0, 2.9])
    as_dict = history.to_dict()
    assert all(type(v) is float for values in as_dict.values() for v in values)
    assert train.History.from_dict(as_dict) == history
    assert history.train_seconds == pytest.approx(5.9)
    with pytest.raises(ValueError, match="unexpected keys"):
        train.History.from_dict({"loss": [1.0]})


# ---------------------------------------------------------------------------------------------- evaluation
def test_evaluate_scores_a_perfect_model_100_and_keeps_pair_order(tiny_course_data, monkeypatch):
    pairs = distinct_sources(tiny_course_data.splits.train, 6)
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data, "general", hidden=48, dropout=0.0))
    batch = fixed_batch(tiny_course_data, pairs)
    config = train.TrainConfig(learning_rate=1e-2)
    optimizer = train.make_optimizer(model, config)
    for _ in range(120):
        train.train_epoch(model, [batch], optimizer, config, progress=False)
    result = train.evaluate(model, pairs, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, batch_size=4)
    assert [row.reference for row in result.rows] == [pair.target for pair in pairs]
    assert [row.hypothesis for row in result.rows] == [pair.target for pair in pairs]
    assert result.bleu == pytest.approx(100.0) and "nrefs:1" in result.signature
    assert result.perplexity == pytest.approx(math.exp(result.loss))
    beam = train.evaluate(model, pairs, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, beam_width=3)
    assert beam.bleu == pytest.approx(100.0)
    assert pairs[0].source in result.table(n=2) and len(result.table(n=2).splitlines()) == 4


# ------------------------------------------------------------------------------------------------- recipes
def test_recipes_cover_every_attention_type_and_build_models(tiny_course_data):
    for name in ["lecture-none", "lecture-bahdanau", "lecture-dot", "lecture-general", "lecture-concat",
                 "full-bahdanau"]:
        recipe = train.get_recipe(name)
        model = Seq2Seq(recipe.model_config(tiny_course_data.src_vocab, tiny_course_data.tgt_vocab))
        assert model.config.attention == name.split("-")[1]
        assert isinstance(recipe.train_config(device="cpu"), train.TrainConfig)
    assert train.DEFAULT_RECIPE in train.RECIPES
    with pytest.raises(KeyError, match="known recipes"):
        train.get_recipe("lecture-magic")


def test_load_or_train_trains_once_in_fast_mode_then_loads_from_the_cache(tiny_course_data, tmp_path,
                                                                          monkeypatch, capsys):
    monkeypatch.setattr(train, "DATA_DIR", tmp_path)
    monkeypatch.setenv(train.FAST_ENV, "1")
    small = dataclasses.replace(train.RECIPES["lecture-general"], embedding_size=8, hidden_size=16)
    monkeypatch.setitem(train.RECIPES, "lecture-general", small)
    first = train.load_or_train("lecture-general", data=tiny_course_data, progress=False)
    path = tmp_path / "models" / "lecture-general-fast.pt"
    assert path.exists() and first.fast and first.history.epochs == 1
    assert "cached at" in capsys.readouterr().out
    second = train.load_or_train("lecture-general", data=tiny_course_data, progress=False)
    assert "Loaded" in capsys.readouterr().out
    for a, b in zip(first.model.state_dict().values(), second.model.state_dict().values()):
        torch.testing.assert_close(a, b)
    monkeypatch.setenv(train.FAST_ENV, "0")
    assert train.model_path("lecture-general") == tmp_path / "models" / "lecture-general.pt"  # never the -fast one


def test_load_or_train_refuses_a_cached_model_of_another_configuration(tiny_course_data, tmp_path, monkeypatch):
    # A recipe edited after its model was cached must not silently reuse the old model.
    monkeypatch.setattr(train, "DATA_DIR", tmp_path)
    monkeypatch.setenv(train.FAST_ENV, "1")
    small = dataclasses.replace(train.RECIPES["lecture-general"], embedding_size=8, hidden_size=16)
    monkeypatch.setitem(train.RECIPES, "lecture-general", small)
    train.load_or_train("lecture-general", data=tiny_course_data, progress=False, verbose=False)
    monkeypatch.setitem(train.RECIPES, "lecture-general", dataclasses.replace(small, hidden_size=24))
    with pytest.raises(train.CheckpointError, match=r"(?s)hidden_size: checkpoint has 16, expected 24.*retrain=True"):
        train.load_or_train("lecture-general", data=tiny_course_data, progress=False, verbose=False)
    retrained = train.load_or_train("lecture-general", data=tiny_course_data, retrain=True, progress=False,
                                    verbose=False)
    assert retrained.model_config.hidden_size == 24


# --------------------------------------------------------------------------------------------- checkpoints
def make_trained(data, attention="bahdanau") -> train.TrainedModel:
    torch.manual_seed(0)
    config = tiny_config(data, attention)
    model = Seq2Seq(config).eval()
    history = train.History([1.0], [1.1], [5.0], [0.1])
    return train.TrainedModel("tiny", model, data.src_vocab, data.tgt_vocab, config, train.TrainConfig(), history)


def test_checkpoint_round_trip_gives_identical_outputs(tiny_course_data, tmp_path):
    trained = make_trained(tiny_course_data)
    path = train.save_checkpoint(tmp_path / "sub" / "tiny.pt", trained)
    assert [p.name for p in path.parent.iterdir()] == ["tiny.pt"]  # no temp file left behind
    payload = torch.load(path, weights_only=True)  # plain types and tensors only
    assert payload["model_config"]["hidden_size"] == 32
    loaded = train.load_checkpoint(path, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, trained.model_config)
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
    path = train.save_checkpoint(tmp_path / "tiny.pt", trained)
    other_config = dataclasses.replace(trained.model_config, hidden_size=64)
    with pytest.raises(train.CheckpointError, match="hidden_size: checkpoint has 32, expected 64"):
        train.load_checkpoint(path, config=other_config)
    other_vocab = type(tiny_course_data.tgt_vocab).build(["a completely different vocabulary ."])
    with pytest.raises(train.CheckpointError, match="target vocabulary") as error:
        train.load_checkpoint(path, tgt_vocab=other_vocab)
    assert "train again" in str(error.value)


def test_files_that_are_not_checkpoints_raise_checkpoint_error(tmp_path):
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a torch file")
    with pytest.raises(train.CheckpointError, match="not a readable course checkpoint"):
        train.load_checkpoint(garbage)
    torch.save({"hello": 1}, tmp_path / "other.pt")
    with pytest.raises(train.CheckpointError, match="not a course_utils checkpoint"):
        train.load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(train.CheckpointError, match="no checkpoint at"):
        train.load_checkpoint(tmp_path / "missing.pt")


def test_subsets_for_fast_mode_are_seeded_samples_not_the_shortest_prefix():
    # The splits keep corpus order (roughly shortest first): a prefix would train and score only short sentences.
    pairs = [Pair("x " * length, "y " * length) for length in range(1, 101)]  # lengths 1..100, in order
    subset = train.sample_pairs(pairs, 10, seed=0)
    assert len(subset) == 10 and len(set(subset)) == 10 and set(subset) <= set(pairs)
    assert subset != pairs[:10] and max(len(p.source) for p in subset) > len(pairs[9].source)
    assert subset == [p for p in pairs if p in subset]  # original order kept
    assert subset == train.sample_pairs(pairs, 10, seed=0) and subset != train.sample_pairs(pairs, 10, seed=1)
    assert train.sample_pairs(pairs, None, seed=0) == pairs and train.sample_pairs(pairs, 500, seed=0) == pairs
