"""pretrain: trains the missing models the notebooks load, skips the cached ones, says what it does."""
import ast
import dataclasses
import json
import os
import re
from pathlib import Path

import pytest
from helpers import use_tiny_notebook_models

from course_utils import classifier, cli, recipes, zoo
from course_utils.cli import pretrain as pretrain_module
from course_utils.runtime import _FAST_ENV

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_notebook_models_are_the_recipes_the_notebooks_load():
    """Every recipe name quoted in a notebook's code, or listed in a notebook's MODEL_NAMES/LECTURE_MODELS, is in
    NOTEBOOK_MODELS, and every name of NOTEBOOK_MODELS is loaded by some notebook."""
    quoted = set()
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
        if "load_or_train" in code:
            quoted |= {name for name in re.findall(r"""["']([a-z_]+-[a-z_]+)["']""", code) if name in recipes.RECIPES}
    assert quoted == set(zoo.NOTEBOOK_MODELS)
    assert all(name in recipes.RECIPES for name in zoo.NOTEBOOK_MODELS)


def test_notebook_classifiers_are_the_ones_notebook_08_trains():
    """Notebook 08 trains classifier.NOTEBOOK_CLASSIFIERS (builds no config of its own), and the labels its later
    cells look up from its SPARSITY_WEIGHTS and LEAK_WEIGHT are keys of it; no other notebook trains a classifier."""
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
        if not notebook.name.startswith("08_"):
            assert "NOTEBOOK_CLASSIFIERS" not in code and "ClassifierConfig" not in code, notebook.name
            continue
        assert "classifier.NOTEBOOK_CLASSIFIERS" in code and "load_or_train(config" in code
        assert "ClassifierConfig(" not in code
        weights = {name: ast.literal_eval(value) for name, value in
                   re.findall(r"^(SPARSITY_WEIGHTS|LEAK_WEIGHT) = ([^#\n]+)", code, flags=re.MULTILINE)}
        labels = ["bag of words", "soft attention", f"soft gates, λ={weights['LEAK_WEIGHT']}",
                  *(f"hard gates, λ={w}" for w in weights["SPARSITY_WEIGHTS"])]
        assert list(classifier.NOTEBOOK_CLASSIFIERS) == labels
    configs = zoo.notebook_classifiers()
    assert len(configs) == len(classifier.NOTEBOOK_CLASSIFIERS) == 7  # distinct cache names
    assert configs["classifier-gated-soft-0.5"] == classifier.NOTEBOOK_CLASSIFIERS["soft gates, λ=0.5"]


@pytest.fixture
def small_recipes(tiny_course_data, tmp_path, monkeypatch):
    """Models cached in tmp_path, tiny models of the notebook recipes, the tiny corpus as the course data."""
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv(_FAST_ENV, raising=False)
    use_tiny_notebook_models(monkeypatch)
    monkeypatch.setattr("course_utils.data.load_course_data", lambda **_: tiny_course_data)
    return tmp_path


def test_pretrain_trains_the_missing_models_then_skips_the_cached_ones(small_recipes):
    lines = []
    names = ["lecture-bahdanau", "lecture-none"]
    first = pretrain_module.pretrain(names, fast=True, progress=False, log=lines.append)
    assert [(r.name, r.status) for r in first] == [("lecture-bahdanau", "trained"), ("lecture-none", "trained")]
    for name in names:
        assert (small_recipes / "models" / f"{name}-fast.pt").exists()
    assert not (small_recipes / "models" / "lecture-bahdanau.pt").exists()  # fast mode never writes a full model
    text = "\n".join(lines)
    assert "2 to train" in text and "[1/2] training lecture-bahdanau" in text and "[2/2] training lecture-none" in text
    assert re.search(r"\[2/2\] training lecture-none .*about ", text)
    assert _FAST_ENV not in os.environ  # fast mode is a parameter, never written to the environment

    lines.clear()
    second = pretrain_module.pretrain(names, fast=True, progress=False, log=lines.append)
    assert [r.status for r in second] == ["cached", "cached"]
    assert "0 to train" in lines[0] and not any("training" in line for line in lines)


def test_pretrain_reports_a_cached_model_of_another_configuration(small_recipes, monkeypatch):
    pretrain_module.pretrain(["lecture-scaled_general"], fast=True, progress=False, log=None)
    monkeypatch.setitem(recipes.RECIPES, "lecture-scaled_general",
                        recipes.RECIPES["lecture-scaled_general"].with_model(hidden_size=24))
    lines = []
    [result] = pretrain_module.pretrain(["lecture-scaled_general"], fast=True, progress=False, log=lines.append)
    assert result.status == "failed" and "hidden_size" in result.message
    assert any("pretrain --retrain lecture-scaled_general" in line for line in lines)
    [result] = pretrain_module.pretrain(["lecture-scaled_general"], fast=True, progress=False, retrain=True, log=None)
    assert result.status == "trained"


def test_pretrain_command_line(small_recipes, capsys):
    assert cli.main(["pretrain", "--fast", "--no-progress", "lecture-scaled_dot"]) == 0
    out = capsys.readouterr().out
    assert "[1/1] training lecture-scaled_dot (fast mode" in out and "pretrain done: 1 trained" in out
    assert (small_recipes / "models" / "lecture-scaled_dot-fast.pt").exists()
    assert cli.main(["pretrain", "--fast", "lecture-magic"]) == 1
    assert "known recipes" in capsys.readouterr().err


def test_training_notice_counts_the_missing_models_and_names_pretrain(small_recipes):
    names = ["lecture-bahdanau", "lecture-scaled_dot"]
    notice = zoo.training_notice(names, fast=False)
    epochs = sum(recipes.get_recipe(name).train.epochs for name in names)
    minutes = round(zoo._SECONDS_PER_EPOCH * epochs / 60)
    assert "train 2 model(s)" in notice and f"about {minutes} min" in notice
    assert "python -m course_utils pretrain`" in notice
    pretrain_module.pretrain(["lecture-scaled_dot"], fast=True, progress=False, log=None)
    fast_notice = zoo.training_notice(names, fast=True)
    assert "train 1 model(s) in fast mode (lecture-bahdanau)" in fast_notice and "pretrain --fast" in fast_notice
    pretrain_module.pretrain(names, fast=True, progress=False, log=None)
    assert zoo.training_notice(names, fast=True) is None


def test_pretrain_trains_the_notebook_classifiers_after_the_translators_then_skips_them(small_recipes, monkeypatch):
    monkeypatch.setattr(zoo, "NOTEBOOK_MODELS", ("lecture-none",))
    names = ["lecture-none", *zoo.notebook_classifiers()]
    lines = []
    first = pretrain_module.pretrain(fast=True, progress=False, log=lines.append)
    assert [(r.name, r.status) for r in first] == [(name, "trained") for name in names]
    for name in names:
        assert (small_recipes / "models" / f"{name}-fast.pt").exists()
    assert not (small_recipes / "models" / "classifier-bow.pt").exists()  # fast mode never writes a full model
    text = "\n".join(lines)
    assert "8 model(s), 0 already cached, 8 to train" in lines[0]
    assert "[1/8] training lecture-none" in text and "[2/8] training classifier-bow (fast mode" in text
    assert "[8/8] classifier-gated-hard-0.2: trained" in text and "pretrain done: 8 trained" in text
    assert _FAST_ENV not in os.environ

    lines.clear()
    second = pretrain_module.pretrain(fast=True, progress=False, log=lines.append)
    assert [r.status for r in second] == ["cached"] * 8
    assert "0 to train" in lines[0] and not any("training" in line for line in lines)
    assert "[5/8] classifier-gated-hard-0: cached at" in "\n".join(lines)

    [again] = pretrain_module.pretrain(["classifier-soft"], fast=True, progress=False, retrain=True, log=None)
    assert again.status == "trained"
    monkeypatch.setitem(classifier.NOTEBOOK_CLASSIFIERS, "soft attention",
                        dataclasses.replace(classifier.NOTEBOOK_CLASSIFIERS["soft attention"], hidden_size=12))
    [changed] = pretrain_module.pretrain(["classifier-soft"], fast=True, progress=False, log=None)
    assert changed.status == "trained"  # the cached one was of another config: trained again, not "cached"


def test_pretrain_command_line_classifiers(small_recipes, monkeypatch, capsys):
    monkeypatch.setattr(zoo, "NOTEBOOK_MODELS", ("lecture-none",))
    assert cli.main(["pretrain", "--fast", "--no-progress", "--no-classifiers"]) == 0
    out = capsys.readouterr().out
    assert "[1/1] training lecture-none" in out and "classifier" not in out
    assert cli.main(["pretrain", "--fast", "classifier-bow"]) == 0
    assert "[1/1] training classifier-bow" in capsys.readouterr().out
    assert not (small_recipes / "models" / "classifier-soft-fast.pt").exists()
    assert cli.main(["pretrain", "--fast", "classifier-magic"]) == 1
    assert "notebook classifiers: classifier-bow" in capsys.readouterr().err
