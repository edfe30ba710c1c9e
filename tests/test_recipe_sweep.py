"""benchmarks/recipe_sweep.py: settings parse to ModelConfig/TrainConfig fields, and the committed sweep records are
complete (dev split only, every setting a real field)."""
import json
import sys
from pathlib import Path

import pytest

from course_utils.recipes import get_recipe

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import recipe_sweep  # noqa: E402

sys.path.remove(str(ROOT / "benchmarks"))


@pytest.mark.parametrize("text, expected", [("dropout=0.2", ("dropout", 0.2)), ("epochs=8", ("epochs", 8)),
                                            ("bucket_by=source", ("bucket_by", "source")),
                                            ("time_budget=None", ("time_budget", None))])
def test_settings_are_python_literals_or_strings(text, expected):
    assert recipe_sweep.parse_setting(text) == expected


@pytest.mark.parametrize("text", ["droput=0.2", "dropout", "dropout="])
def test_a_setting_that_is_no_field_stops_with_the_list_of_fields(text):
    with pytest.raises(SystemExit, match="not field=value.*fields: .*learning_rate"):
        recipe_sweep.parse_setting(text)


def test_settings_go_to_the_config_that_has_the_field():
    recipe = recipe_sweep.apply(get_recipe("lecture-bahdanau"), {"dropout": 0.2, "learning_rate": 1e-3})
    assert recipe.model.dropout == 0.2 and recipe.train.learning_rate == 1e-3
    assert recipe.name == "lecture-bahdanau" and recipe.model.attention == "bahdanau"


def test_committed_sweep_records_are_dev_scores_of_real_fields():
    records = json.loads((ROOT / "benchmarks" / "results" / "recipe_sweep.json").read_text())
    fields = recipe_sweep.MODEL_FIELDS | recipe_sweep.TRAIN_FIELDS
    assert records and all(set(record["settings"]) <= fields for record in records)
    assert all("test_bleu" not in record and 0 < record["dev_bleu"] < 100 for record in records)
    for record in records:
        epochs = record["settings"].get("epochs", get_recipe(record["recipe"]).train.epochs)
        assert len(record["dev_bleu_per_epoch"]) <= epochs  # a time budget may stop a run early


@pytest.mark.parametrize("workers", [1, 2])
def test_run_jobs_hands_every_result_to_the_callback_in_one_process_or_several(workers):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from common import run_jobs
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    results = []
    run_jobs(abs, [-3, 1, -2], workers, results.append)  # abs: importable in a spawned process
    assert sorted(results) == [1, 2, 3]
