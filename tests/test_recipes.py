"""Recipes (a ModelConfig template + a TrainConfig), train_recipe, and the model cache of load_or_train."""
import dataclasses

import pytest
import torch

from course_utils import recipes
from course_utils.checkpoints import CheckpointError
from course_utils.runtime import FAST_ENV
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.train import TrainConfig


def test_recipes_cover_every_attention_type_and_build_models(tiny_course_data):
    for name in ["lecture-none", "lecture-bahdanau", "lecture-scaled_dot", "lecture-scaled_general", "lecture-concat",
                 "full-bahdanau"]:
        recipe = recipes.get_recipe(name)
        model = Seq2Seq(recipe.model_config(tiny_course_data.src_vocab, tiny_course_data.tgt_vocab))
        assert model.config.attention == name.split("-")[1]
        assert isinstance(recipe.train_config(device="cpu"), TrainConfig)
    assert recipes.DEFAULT_RECIPE in recipes.RECIPES
    with pytest.raises(KeyError, match="known recipes"):
        recipes.get_recipe("lecture-magic")


def test_load_or_train_trains_once_in_fast_mode_then_loads_from_the_cache(tiny_course_data, tmp_path,
                                                                          monkeypatch, capsys):
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv(FAST_ENV, "1")
    small = recipes.RECIPES["lecture-scaled_general"].with_model(embedding_size=8, hidden_size=16)
    monkeypatch.setitem(recipes.RECIPES, "lecture-scaled_general", small)
    first = recipes.load_or_train("lecture-scaled_general", data=tiny_course_data, progress=False)
    path = tmp_path / "models" / "lecture-scaled_general-fast.pt"
    assert path.exists() and first.fast and first.history.epochs == 1
    assert "cached at" in capsys.readouterr().out
    second = recipes.load_or_train("lecture-scaled_general", data=tiny_course_data, progress=False)
    assert "Loaded" in capsys.readouterr().out
    for a, b in zip(first.model.state_dict().values(), second.model.state_dict().values()):
        torch.testing.assert_close(a, b)
    monkeypatch.setenv(FAST_ENV, "0")
    # never the -fast one
    assert recipes.model_path("lecture-scaled_general") == tmp_path / "models" / "lecture-scaled_general.pt"


def test_load_or_train_refuses_a_cached_model_of_another_configuration(tiny_course_data, tmp_path, monkeypatch):
    # A recipe edited after its model was cached must not silently reuse the old model.
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv(FAST_ENV, "1")
    small = recipes.RECIPES["lecture-scaled_general"].with_model(embedding_size=8, hidden_size=16)
    monkeypatch.setitem(recipes.RECIPES, "lecture-scaled_general", small)
    recipes.load_or_train("lecture-scaled_general", data=tiny_course_data, progress=False, log=None)
    monkeypatch.setitem(recipes.RECIPES, "lecture-scaled_general", small.with_model(hidden_size=24))
    with pytest.raises(CheckpointError, match=r"(?s)hidden_size: checkpoint has 16, expected 24.*retrain=True"):
        recipes.load_or_train("lecture-scaled_general", data=tiny_course_data, progress=False, log=None)
    retrained = recipes.load_or_train("lecture-scaled_general", data=tiny_course_data, retrain=True, progress=False,
                                    log=None)
    assert retrained.model_config.hidden_size == 24


def test_every_config_field_is_a_recipe_setting():
    """A new ModelConfig or TrainConfig field reaches recipes without copying: a recipe holds both configs."""
    recipe = recipes.get_recipe("lecture-bahdanau")
    assert isinstance(recipe.model, ModelConfig) and isinstance(recipe.train, TrainConfig)
    variant = recipe.with_model(input_feeding=False, hidden_size=64).with_training(clip=0.5, lr_decay=1.0)
    assert (variant.model.hidden_size, variant.train.clip, variant.train.lr_decay) == (64, 0.5, 1.0)
    assert variant.model.embedding_size == recipe.model.embedding_size and variant.name == recipe.name
    assert recipe.model.hidden_size == 256, "with_model must not change the original recipe"
    assert recipe.train_config(epochs=2) == dataclasses.replace(recipe.train, epochs=2)
    for field in dataclasses.fields(TrainConfig):
        assert recipe.train_config(**{field.name: getattr(variant.train, field.name)}) is not None


def test_a_recipe_template_has_no_vocabulary_sizes_and_cannot_build_a_model(tiny_course_data):
    template = recipes.get_recipe("lecture-scaled_general").model
    assert template.src_vocab_size is None
    with pytest.raises(ValueError, match="recipe.model_config"):
        Seq2Seq(template)
    recipe = recipes.get_recipe("lecture-scaled_general")
    config = recipe.model_config(tiny_course_data.src_vocab, tiny_course_data.tgt_vocab)
    assert config.src_vocab_size == len(tiny_course_data.src_vocab)



def test_course_seed_gives_another_run_of_a_recipe(tiny_course_data, monkeypatch):
    # COURSE_SEED (the learner-run check, the claims' evidence): another seed, the same recipe otherwise
    small = recipes.RECIPES["lecture-scaled_general"].with_model(embedding_size=8, hidden_size=16)
    monkeypatch.delenv("COURSE_SEED", raising=False)
    default = recipes.train_recipe(small, tiny_course_data, fast=True, progress=False, log=None)
    monkeypatch.setenv("COURSE_SEED", "3")
    other = recipes.train_recipe(small, tiny_course_data, fast=True, progress=False, log=None)
    explicit = recipes.train_recipe(small, tiny_course_data, fast=True, progress=False, log=None, seed=0)
    assert (default.train_config.seed, other.train_config.seed, explicit.train_config.seed) == (0, 3, 0)
    weights = [next(iter(t.model.state_dict().values())) for t in (default, other, explicit)]
    assert not torch.equal(weights[0], weights[1]) and torch.equal(weights[0], weights[2])


def test_training_config_is_what_train_recipe_trains_with(tiny_course_data, monkeypatch):
    # the one place fast mode, explicit overrides and COURSE_SEED are merged (the command line prints it first)
    small = recipes.RECIPES["lecture-none"].with_model(embedding_size=8, hidden_size=16)
    monkeypatch.setenv("COURSE_SEED", "2")
    config = recipes.training_config(small, fast=True, max_train_pairs=20)
    assert (config.epochs, config.max_train_pairs, config.seed) == (1, 20, 2)
    trained = recipes.train_recipe(small, tiny_course_data, fast=True, progress=False, log=None, max_train_pairs=20)
    assert trained.train_config == config
    assert recipes.training_config(small, seed=7).seed == 7 and recipes.training_config(small).epochs == 10


def test_the_transformer_recipes_build_transformers_and_train_without_cuda_graphs(tiny_course_data):
    from course_utils.transformer import TransformerSeq2Seq, build_model

    for name in ("lecture-transformer", "full-transformer"):
        recipe = recipes.get_recipe(name)
        model = build_model(recipe.model_config(tiny_course_data.src_vocab, tiny_course_data.tgt_vocab))
        assert isinstance(model, TransformerSeq2Seq) and model.config.attention == "transformer"
        assert not recipe.train.cuda_graphs and recipe.train.teacher_forcing_ratio == 1.0
    small = recipes.get_recipe("lecture-transformer").with_model(hidden_size=16, ff_size=16, layers=1)
    trained = recipes.train_recipe(small, tiny_course_data, fast=True, progress=False, log=None, device="cpu")
    assert isinstance(trained.model, TransformerSeq2Seq) and trained.history.epochs == 1


def test_the_command_line_picks_the_transformer_recipe_of_the_same_prefix():
    import argparse

    from course_utils.cli.train import _recipe_from_args

    args = argparse.Namespace(recipe="lecture-bahdanau", hidden=None, epochs=None, seed=None, batch_size=None, lr=None,
                              time_budget=None)
    assert _recipe_from_args(args, "transformer").name == "lecture-transformer"
    args.recipe = "lecture-transformer"
    assert _recipe_from_args(args).model.attention == "transformer"
    assert _recipe_from_args(args, "dot").name == "lecture-dot"  # a GRU attention: the GRU recipe of that prefix
