"""The committed seed sweep (benchmarks/results/attention_seeds.json, made by benchmarks/attention_seeds.py) backs
notebook 04's comparison: it must cover every lecture recipe and exhibit with enough seeds, and the recipes a
student trains by default must be stable: at every seed, every lecture recipe with attention scores at least 5 test
BLEU above the recipe without attention trained with the same seed, while an unscaled exhibit falls below it at some
seed."""
import json
import statistics
import sys
from pathlib import Path

import pytest

from course_utils.recipes import RECIPES

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "attention_seeds.json"
SWEPT = [name for name in RECIPES if name.startswith(("lecture-", "exhibit-"))  # the GRU recipes attention_seeds ran
         and getattr(RECIPES[name].model, "attention", None) != "transformer"]


@pytest.fixture(scope="module")
def records():
    return json.loads(RESULTS.read_text())


def bleu_by_recipe(records):
    by_recipe = {}
    for record in records:
        by_recipe.setdefault(record["recipe"], []).append(record["test_bleu"])
    return by_recipe


def bleu_by_recipe_and_seed(records):
    return {(record["recipe"], record["seed"]): record["test_bleu"] for record in records}


def test_every_lecture_recipe_and_exhibit_has_at_least_three_seeds(records):
    by_recipe = bleu_by_recipe(records)
    for name in SWEPT:
        assert len(by_recipe.get(name, [])) >= 3, f"{name}: run benchmarks/attention_seeds.py for it"
    for record in records:
        assert RECIPES[record["recipe"]].model.attention == record["attention"], "a recipe changed since the sweep"
        assert len(record["dev_bleu"]) == RECIPES[record["recipe"]].train.epochs
        assert len(record["attention_per_epoch"]) == len(record["dev_bleu"]) + 1  # before training, then each epoch
    assert len({(record["recipe"], record["seed"]) for record in records}) == len(records)


def test_lecture_recipes_with_attention_beat_no_attention_at_every_seed(records):
    bleu = bleu_by_recipe_and_seed(records)
    seeds = [seed for recipe, seed in bleu if recipe == "lecture-none"]
    for name in SWEPT:
        if name.startswith("lecture-") and RECIPES[name].model.attention != "none":
            for seed in seeds:
                assert bleu[name, seed] >= bleu["lecture-none", seed] + 5, f"{name}, seed {seed}"


def test_the_exhibits_are_unstable_which_is_why_they_are_not_lecture_recipes(records):
    bleu = bleu_by_recipe_and_seed(records)
    exhibits = [(name, seed) for name, seed in bleu if name.startswith("exhibit-")]
    assert any(bleu[name, seed] < bleu["lecture-none", seed] for name, seed in exhibits)


def test_the_summary_table_is_what_the_script_prints(records):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from attention_seeds import summary
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    table = summary(records)
    bahdanau = bleu_by_recipe(records)["lecture-bahdanau"]
    assert f"{statistics.mean(bahdanau):6.2f}" in table.splitlines()[1]
