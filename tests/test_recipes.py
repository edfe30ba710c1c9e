"""Recipes: a ModelConfig template + a TrainConfig, named and commented."""
import dataclasses

import pytest

from course_utils import recipes
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


def test_the_command_line_picks_the_transformer_recipe_of_the_same_prefix():
    import argparse

    from course_utils.cli.train import _recipe_from_args

    args = argparse.Namespace(recipe="lecture-bahdanau", hidden=None, epochs=None, seed=None, batch_size=None, lr=None,
                              time_budget=None)
    assert _recipe_from_args(args, "transformer").name == "lecture-transformer"
    args.recipe = "lecture-transformer"
    assert _recipe_from_args(args).model.attention == "transformer"
    assert _recipe_from_args(args, "dot").name == "lecture-dot"  # a GRU attention: the GRU recipe of that prefix
