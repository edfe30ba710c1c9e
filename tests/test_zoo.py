"""The zoo: the model dispatch, train_recipe, the one model cache of load_or_train (translators and classifiers),
checkpoints of either architecture."""
import dataclasses

import pytest
import torch

from course_utils import recipes, zoo
from course_utils.checkpoints import CheckpointError
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.train import TrainConfig, train
from course_utils.transformer import TransformerConfig, TransformerSeq2Seq
from course_utils.zoo import TrainedModel, load_checkpoint, save_checkpoint


def test_load_or_train_trains_once_in_fast_mode_then_loads_from_the_cache(tiny_course_data, tmp_path,
                                                                          monkeypatch, capsys):
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))
    small = recipes.RECIPES["lecture-scaled_general"].with_model(embedding_size=8, hidden_size=16)
    monkeypatch.setitem(recipes.RECIPES, "lecture-scaled_general", small)
    first = zoo.load_or_train("lecture-scaled_general", data=tiny_course_data, progress=False, fast=True)
    path = tmp_path / "models" / "lecture-scaled_general-fast.pt"
    assert path.exists() and first.fast and first.history.epochs == 1
    assert "cached at" in capsys.readouterr().out
    second = zoo.load_or_train("lecture-scaled_general", data=tiny_course_data, progress=False, fast=True)
    assert "Loaded" in capsys.readouterr().out
    for a, b in zip(first.model.state_dict().values(), second.model.state_dict().values()):
        torch.testing.assert_close(a, b)
    # never the -fast one
    assert zoo.model_path("lecture-scaled_general") == tmp_path / "models" / "lecture-scaled_general.pt"


def test_load_or_train_refuses_a_cached_model_of_another_configuration(tiny_course_data, tmp_path, monkeypatch):
    # A recipe edited after its model was cached must not silently reuse the old model.
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))
    small = recipes.RECIPES["lecture-scaled_general"].with_model(embedding_size=8, hidden_size=16)
    monkeypatch.setitem(recipes.RECIPES, "lecture-scaled_general", small)
    zoo.load_or_train("lecture-scaled_general", data=tiny_course_data, progress=False, log=None, fast=True)
    monkeypatch.setitem(recipes.RECIPES, "lecture-scaled_general", small.with_model(hidden_size=24))
    with pytest.raises(CheckpointError, match=r"(?s)hidden_size: checkpoint has 16, expected 24.*retrain=True"):
        zoo.load_or_train("lecture-scaled_general", data=tiny_course_data, progress=False, log=None, fast=True)
    retrained = zoo.load_or_train("lecture-scaled_general", data=tiny_course_data, retrain=True, progress=False,
                                  log=None, fast=True)
    assert retrained.model_config.hidden_size == 24


def test_course_seed_gives_another_run_of_a_recipe(tiny_course_data, monkeypatch):
    # COURSE_SEED (the learner-run check, the claims' evidence): another seed, the same recipe otherwise
    small = recipes.RECIPES["lecture-scaled_general"].with_model(embedding_size=8, hidden_size=16)
    monkeypatch.delenv("COURSE_SEED", raising=False)
    default = zoo.train_recipe(small, tiny_course_data, fast=True, progress=False, log=None)
    monkeypatch.setenv("COURSE_SEED", "3")
    other = zoo.train_recipe(small, tiny_course_data, fast=True, progress=False, log=None)
    explicit = zoo.train_recipe(small, tiny_course_data, fast=True, progress=False, log=None, seed=0)
    assert (default.train_config.seed, other.train_config.seed, explicit.train_config.seed) == (0, 3, 0)
    weights = [next(iter(t.model.state_dict().values())) for t in (default, other, explicit)]
    assert not torch.equal(weights[0], weights[1]) and torch.equal(weights[0], weights[2])


def test_training_config_is_what_train_recipe_trains_with(tiny_course_data, monkeypatch):
    # the one place fast mode, explicit overrides and COURSE_SEED are merged (the command line prints it first)
    small = recipes.RECIPES["lecture-none"].with_model(embedding_size=8, hidden_size=16)
    monkeypatch.setenv("COURSE_SEED", "2")
    config = zoo.training_config(small, fast=True, max_train_pairs=20)
    assert (config.epochs, config.max_train_pairs, config.seed) == (1, 20, 2)
    trained = zoo.train_recipe(small, tiny_course_data, fast=True, progress=False, log=None, max_train_pairs=20)
    assert trained.train_config == config
    assert zoo.training_config(small, seed=7).seed == 7 and zoo.training_config(small).epochs == 10


def test_the_transformer_recipes_build_transformers_and_train_without_cuda_graphs(tiny_course_data):
    from course_utils.transformer import TransformerSeq2Seq

    for name in ("lecture-transformer", "full-transformer"):
        recipe = recipes.get_recipe(name)
        model = zoo.build_model(recipe.model_config(tiny_course_data.src_vocab, tiny_course_data.tgt_vocab))
        assert isinstance(model, TransformerSeq2Seq) and model.config.attention == "transformer"
        assert not recipe.train.cuda_graphs and recipe.train.teacher_forcing_ratio == 1.0
    small = recipes.get_recipe("lecture-transformer").with_model(hidden_size=16, ff_size=16, layers=1)
    trained = zoo.train_recipe(small, tiny_course_data, fast=True, progress=False, log=None, device="cpu")
    assert isinstance(trained.model, TransformerSeq2Seq) and trained.history.epochs == 1


def test_training_and_checkpoints_rebuild_the_right_architecture(tiny_course_data, tmp_path):
    d = tiny_course_data
    config = TransformerConfig(len(d.src_vocab), len(d.tgt_vocab), hidden_size=16, heads=2, layers=1, ff_size=16)
    model = zoo.build_model(config)
    training = TrainConfig(epochs=2, batch_size=8, device="cpu", eval_bleu=False, cuda_graphs=False)
    history = train(model, d, training, progress=False, log=None)
    assert history.train_loss[-1] < history.train_loss[0]
    path = save_checkpoint(tmp_path / "t.pt", TrainedModel("t", model.eval(), d.src_vocab, d.tgt_vocab, config,
                                                           training, history))
    loaded = load_checkpoint(path, d.src_vocab, d.tgt_vocab, config=config)
    assert isinstance(loaded.model, TransformerSeq2Seq) and loaded.model_config == config
    for a, b in zip(model.state_dict().values(), loaded.model.state_dict().values()):
        torch.testing.assert_close(a, b)


def test_a_config_dict_without_architecture_is_the_gru_model():
    gru = ModelConfig(10, 12, hidden_size=8, embedding_size=8)
    fields = dataclasses.asdict(gru)
    assert "architecture" not in fields and zoo._config_from_dict(fields) == gru
    assert isinstance(zoo.build_model(gru), Seq2Seq)
    transformer = TransformerConfig(10, 12, hidden_size=8, heads=2)
    assert zoo._config_from_dict(dataclasses.asdict(transformer)) == transformer
    with pytest.raises(ValueError, match="unknown architecture"):
        zoo._config_from_dict({"architecture": "lstm"})


def test_a_gru_checkpoint_that_calls_the_location_slots_max_length_still_loads(tiny_course_data, tmp_path):
    d = tiny_course_data
    config = ModelConfig(len(d.src_vocab), len(d.tgt_vocab), attention="location", hidden_size=8, location_slots=12)
    torch.manual_seed(0)
    model = Seq2Seq(config).eval()
    training = TrainConfig(epochs=1, device="cpu")
    history = train(Seq2Seq(config), d, dataclasses.replace(training, batch_size=8, eval_bleu=False), progress=False,
                    log=None)
    path = save_checkpoint(tmp_path / "old.pt", TrainedModel("old", model, d.src_vocab, d.tgt_vocab, config, training,
                                                             history))
    payload = torch.load(path, weights_only=True)
    payload["model_config"]["max_length"] = payload["model_config"].pop("location_slots")  # the earlier name
    torch.save(payload, path)
    loaded = load_checkpoint(path, d.src_vocab, d.tgt_vocab, config=config)
    assert loaded.model_config == config and loaded.model.decoder.max_length == 12
