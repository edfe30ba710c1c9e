"""The class archive (zoo.export_models / import_models): the lecturer's models in one plain zip of the models
folder, imported by a student after every member passes the one checkpoint loader, or refused in one line with every
cached file left byte for byte as it was.

Tiny fast-mode models of the tiny corpus (COURSE_CORPUS), in a private COURSE_DATA_DIR per test: the lecturer's
archive and the student's own models (another seed) are trained once for the whole file and copied into each test.
"""
import dataclasses
import io
import os
import shutil
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from helpers import use_tiny_notebook_models

from course_utils import classifier, cli, recipes, zoo
from course_utils.cli import pretrain as pretrain_module
from course_utils.runtime import _FAST_ENV
from course_utils.zoo import _ARCHIVE_ENV, ArchiveError, export_models, import_from_env, import_models

NAMES = ["lecture-bahdanau", "lecture-none", "classifier-bow", "classifier-gated-hard-0.05"]
FILES = [f"{name}-fast.pt" for name in NAMES]
_BUILT: dict[str, dict[str, bytes]] = {}  # "archive", "lecturer", "own": file name -> bytes, trained once


def _tiny_models(monkeypatch):
    """Tiny variants of the notebook recipes and classifiers (as tests/test_pretrain.py uses them)."""
    use_tiny_notebook_models(monkeypatch)


def _models(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((folder / "models").glob("*.pt"))}


def _build(tmp_path: Path, monkeypatch) -> None:
    """The lecturer trains NAMES and exports them; the student trained the same names with another seed."""
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path / "lecturer"))
    pretrain_module.pretrain(NAMES, fast=True, progress=False, log=None)
    export_models(tmp_path / "built.zip", NAMES, fast=True)
    _BUILT["archive"] = {"class.zip": (tmp_path / "built.zip").read_bytes()}
    _BUILT["lecturer"] = _models(tmp_path / "lecturer")
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path / "own"))
    monkeypatch.setenv("COURSE_SEED", "1")
    pretrain_module.pretrain(NAMES, fast=True, progress=False, log=None)
    monkeypatch.delenv("COURSE_SEED")
    _BUILT["own"] = _models(tmp_path / "own")


@pytest.fixture
def course(tiny_corpus_path, tmp_path, monkeypatch):
    """A student's data folder holding their own models (seed 1) and the lecturer's archive (seed 0) beside it."""
    monkeypatch.setenv("COURSE_CORPUS", str(tiny_corpus_path))
    monkeypatch.setenv(_FAST_ENV, "1")
    for name in ("COURSE_SEED", _ARCHIVE_ENV):
        monkeypatch.delenv(name, raising=False)
    _tiny_models(monkeypatch)
    if not _BUILT:
        _build(tmp_path, monkeypatch)
    student = tmp_path / "student"
    (student / "models").mkdir(parents=True)
    for name, raw in _BUILT["own"].items():
        (student / "models" / name).write_bytes(raw)
    archive = tmp_path / "class.zip"
    archive.write_bytes(_BUILT["archive"]["class.zip"])
    monkeypatch.setenv("COURSE_DATA_DIR", str(student))
    return SimpleNamespace(data=student, archive=archive, lecturer=_BUILT["lecturer"], own=_BUILT["own"])


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (hidden temporary files included), by relative path."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def refused(course, archive, *words, **kwargs) -> str:
    """import_models(archive) raises a one-line ArchiveError containing every word, and no file changed."""
    before = snapshot(course.data)
    with pytest.raises(ArchiveError) as caught:
        import_models(archive, **kwargs)
    message = str(caught.value)
    assert "\n" not in message and all(word in message for word in words), message
    assert snapshot(course.data) == before  # the student's own models byte for byte, nothing added
    return message


def members_of(archive: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(archive) as opened:
        return {member: opened.read(member) for member in opened.namelist()}


def rewrite(course, edit_members=None, name="edited.zip") -> Path:
    """A copy of the lecturer's archive with its members ({name: bytes}) edited in place."""
    members = members_of(course.archive)
    if edit_members:
        edit_members(members)
    path = course.archive.with_name(name)
    with zipfile.ZipFile(path, "w") as archive:
        for member, raw in members.items():
            archive.writestr(member, raw)
    return path


def replace_member(course, member: str, raw: bytes) -> Path:
    """The archive with `member` holding `raw`: only a check of the content itself can refuse it."""
    return rewrite(course, lambda members: members.update({member: raw}))


def lecturer_payload(course, file: str) -> dict:
    return torch.load(io.BytesIO(course.lecturer[file]), weights_only=True)


def saved(payload: dict) -> bytes:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def no_training(monkeypatch):
    """Any training from here on fails the test: the models must come from the cache."""
    def fail(*args, **kwargs):
        raise AssertionError("a model was trained")
    monkeypatch.setattr(zoo, "train_recipe", fail)
    monkeypatch.setattr(zoo, "train_classifier", fail)


def load_all(names=NAMES) -> dict[str, dict[str, torch.Tensor]]:
    """Each model's state dict as load_or_train gives it."""
    return {name: zoo.load_or_train(name, progress=False, log=None, fast=True).model.state_dict() for name in names}


# ---------------------------------------------------------------------------------------------- round trip
def test_export_wipe_import_gives_the_same_models_tensor_for_tensor(course, monkeypatch):
    lecturer = course.data.parent / "lecturer-again"
    (lecturer / "models").mkdir(parents=True)
    for name, raw in course.lecturer.items():
        (lecturer / "models" / name).write_bytes(raw)
    monkeypatch.setenv("COURSE_DATA_DIR", str(lecturer))
    no_training(monkeypatch)
    exported = load_all()
    members = export_models(course.data.parent / "again.zip", NAMES, fast=True)
    assert members == [f"models/{file}" for file in FILES]
    assert members_of(course.data.parent / "again.zip") == {f"models/{name}": raw for name, raw in
                                                            course.lecturer.items()}  # a plain zip of the files
    shutil.rmtree(lecturer / "models")
    assert import_models(course.data.parent / "again.zip") == NAMES
    assert _models(lecturer) == course.lecturer  # the very bytes exported
    imported = load_all()
    for name in NAMES:
        assert exported[name].keys() == imported[name].keys()
        for key, tensor in exported[name].items():
            assert torch.equal(tensor, imported[name][key]), (name, key)


def test_import_keeps_the_replaced_models_and_a_second_import_changes_nothing(course):
    lines = []
    assert import_models(course.archive, log=lines.append) == NAMES
    assert _models(course.data) == course.lecturer
    kept = course.data / "models" / "before-import"
    assert {path.name: path.read_bytes() for path in kept.iterdir()} == course.own  # nothing lost
    assert len(lines) == 4 and all("kept at" in line and "before-import" in line for line in lines)
    before = snapshot(course.data)
    lines.clear()
    assert import_models(course.archive, fast=True, log=lines.append) == NAMES
    assert snapshot(course.data) == before and all("identical" in line for line in lines)


# ---------------------------------------------------------------------------------------------- refusals
def test_a_missing_archive_or_a_folder_is_refused(course):
    refused(course, course.data / "nowhere.zip", "no archive at", "nowhere.zip", "pretrain --export")
    refused(course, course.data, "no archive at", "a directory")


def test_a_damaged_or_truncated_archive_is_refused(course):
    raw = course.archive.read_bytes()
    truncated = course.archive.with_name("truncated.zip")
    truncated.write_bytes(raw[:len(raw) // 2])
    refused(course, truncated, "damaged or truncated", "copy the archive again")
    text = course.archive.with_name("notes.zip")
    text.write_text("not a zip at all\n")
    refused(course, text, "damaged or truncated")
    with zipfile.ZipFile(course.archive) as archive:  # one byte of a member's compressed data flipped: CRC or zlib
        info = archive.getinfo("models/lecture-none-fast.pt")
    start = info.header_offset + 30 + len(info.filename) + int.from_bytes(raw[info.header_offset + 28:][:2], "little")
    flipped = bytearray(raw)
    flipped[start + info.compress_size // 2] ^= 0xFF
    damaged = course.archive.with_name("damaged.zip")
    damaged.write_bytes(bytes(flipped))
    refused(course, damaged, "damaged or truncated", "lecture-none-fast.pt")


def test_an_archive_of_foreign_files_or_no_models_is_refused(course):
    repeated = rewrite(course)
    with zipfile.ZipFile(repeated, "a") as archive, pytest.warns(UserWarning, match="Duplicate name"):
        archive.writestr("models/lecture-none-fast.pt", b"again")
    refused(course, repeated, "repeated member names")
    refused(course, rewrite(course, edit_members=lambda m: m.update({"manifest.json": b"{}"})),
            "'manifest.json'", "not a model of this course")
    refused(course, rewrite(course, edit_members=lambda m: m.update({"models/lecture-magic-fast.pt": b"x"})),
            "'models/lecture-magic-fast.pt'", "not a model of this course")
    refused(course, rewrite(course, edit_members=lambda m: m.clear()), "holds no models")


def test_unlisted_missing_and_unsafe_members_are_refused(course):
    refused(course, rewrite(course, edit_members=lambda m: m.update({"models/notes.txt": b"hi"})),
            "'models/notes.txt'", "not a model of this course")
    for unsafe in ("../escape.pt", "/etc/escape.pt", "models/../../escape.pt"):
        refused(course, rewrite(course, edit_members=lambda m, name=unsafe: m.update({name: b"x"})),
                "unsafe member name", repr(unsafe))
    assert not (course.data.parent / "escape.pt").exists()


def test_a_member_holding_another_model_is_refused(course):
    def swap(members):
        members["models/lecture-none-fast.pt"] = course.lecturer["lecture-bahdanau-fast.pt"]
    refused(course, rewrite(course, edit_members=swap), "models/lecture-none-fast.pt", "another model configuration",
            "attention: checkpoint has 'bahdanau', expected 'none'")


def test_an_archive_of_another_corpus_is_refused_by_its_vocabularies(course, tiny_corpus_path, monkeypatch):
    other = course.data.parent / "other-corpus.txt"  # four more pairs: another French vocabulary
    other.write_text(tiny_corpus_path.read_text(encoding="utf-8") + "".join(
        f"I am {word}.\tJe suis {word}.\n" for word in ("tall", "fine", "zorglub", "happy")), encoding="utf-8")
    monkeypatch.setenv("COURSE_CORPUS", str(other))
    refused(course, course.archive, "class.zip: models/lecture-bahdanau-fast.pt was trained with another source "
            "vocabulary", "checkpoint has 57 words, expected 58", "corpus")


@pytest.mark.parametrize("name, change, field", [
    ("lecture-none", dict(hidden_size=24), "another model configuration: hidden_size: checkpoint has 16, expected 24"),
    ("lecture-bahdanau", dict(learning_rate=1e-3), "another training: learning_rate: checkpoint has 0.006, expected "
                                                   "0.001"),
])
def test_an_archive_of_another_recipe_names_the_model_and_field(course, monkeypatch, name, change, field):
    recipe = recipes.RECIPES[name]
    changed = recipe.with_training(**change) if "learning_rate" in change else recipe.with_model(**change)
    monkeypatch.setitem(recipes.RECIPES, name, changed)
    refused(course, course.archive, f"models/{name}-fast.pt was made with {field}")


def test_an_archive_of_another_classifier_config_or_seed_is_refused(course, monkeypatch):
    label = "hard gates, λ=0.05"
    with monkeypatch.context() as patch:
        patch.setitem(classifier.NOTEBOOK_CLASSIFIERS, label,
                      dataclasses.replace(classifier.NOTEBOOK_CLASSIFIERS[label], hidden_size=12))
        refused(course, course.archive, "models/classifier-gated-hard-0.05-fast.pt was made with another model "
                "configuration", "hidden_size: checkpoint has 8, expected 12")
    monkeypatch.setenv("COURSE_SEED", "1")  # another run of every recipe: not the lecturer's models
    refused(course, course.archive, "models/lecture-bahdanau-fast.pt was made with another training",
            "seed: checkpoint has 0, expected 1")


def test_an_archive_of_the_other_mode_is_refused(course):
    refused(course, course.archive, "holds fast-mode models, not full-mode ones", "with --fast", fast=False)


class RunsCode:
    """Pickled, it would call os.makedirs(marker) when loaded with weights_only=False."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.makedirs, (self.marker,)


def test_a_member_holding_pickled_code_is_refused_without_running_it(course):
    marker = course.data.parent / "the-code-ran"
    payload = {**lecturer_payload(course, "lecture-none-fast.pt"), "extra": RunsCode(marker)}
    archive = replace_member(course, "models/lecture-none-fast.pt", saved(payload))
    with pytest.raises(ArchiveError):
        import_models(archive)
    assert not marker.exists()  # the code never ran (it does with torch.load(weights_only=False))
    refused(course, archive, "models/lecture-none-fast.pt is not a readable course checkpoint", "pickled code",
            "it calls os.makedirs", "weights_only=True")


@pytest.mark.parametrize("file, edit, words", [
    ("lecture-none-fast.pt", lambda p: b"not a torch file", "is not a readable course checkpoint"),
    ("lecture-none-fast.pt", lambda p: saved({"weights": torch.ones(2)}), "is not a course_utils checkpoint"),
    ("lecture-none-fast.pt", lambda p: saved({**p, "train_config": {**p["train_config"], "epochs": 3}}),
     "another training: epochs: checkpoint has 3, expected 1"),
    ("lecture-none-fast.pt", lambda p: saved({**p, "name": "lecture-bahdanau"}), "is named 'lecture-bahdanau'"),
    ("classifier-bow-fast.pt", lambda p: saved({**p, "model_config": {**p["model_config"], "seed": 5}}),
     "was made with another model configuration: seed: checkpoint has 5, expected 0"),
    ("classifier-bow-fast.pt", lambda p: saved({**p, "src_vocab": {**p["src_vocab"], "min_freq": 2}}),
     "another French vocabulary"),
    ("classifier-bow-fast.pt", lambda p: saved({**p, "state_dict": {k: v * float("nan") for k, v in
                                                                      p["state_dict"].items()}}), "NaN"),
    ("classifier-bow-fast.pt", lambda p: saved({**p, "format": "other"}), "is not a course_utils checkpoint"),
    ("classifier-bow-fast.pt", lambda p: saved({**p, "kind": "translator"}), "holds a translator, not a classifier"),
    ("classifier-bow-fast.pt", lambda p: saved({k: v for k, v in p.items() if k != "history"}),
     "incomplete checkpoint: it lacks history"),  # the cache's rule: load_or_train refuses it too
])
def test_a_member_that_does_not_load_as_the_package_loads_its_cache_is_refused(course, file, edit, words):
    raw = edit(lecturer_payload(course, file))
    refused(course, replace_member(course, f"models/{file}", raw), f"models/{file}", words)


# ---------------------------------------------------------------------------------------------- the hook, the CLI
def test_the_environment_variable_imports_on_a_cache_miss_before_anything_trains(course, monkeypatch,
                                                                                 tiny_course_data):
    monkeypatch.setenv(_ARCHIVE_ENV, str(course.archive))
    no_training(monkeypatch)
    (course.data / "models" / "lecture-none-fast.pt").unlink()
    (course.data / "models" / "classifier-bow-fast.pt").unlink()
    load_all(["lecture-none"])  # imports the two missing models, leaves the student's cached ones alone
    assert _models(course.data) == {**course.own, "lecture-none-fast.pt": course.lecturer["lecture-none-fast.pt"],
                                    "classifier-bow-fast.pt": course.lecturer["classifier-bow-fast.pt"]}
    assert not (course.data / "models" / "before-import").exists()
    shutil.rmtree(course.data / "models")
    results = pretrain_module.pretrain(NAMES, fast=True, progress=False, log=None)  # imports first, trains nothing
    assert [result.status for result in results] == ["cached"] * 4 and _models(course.data) == course.lecturer
    shutil.rmtree(course.data / "models")
    load_all(["classifier-gated-hard-0.05"])
    assert _models(course.data) == course.lecturer
    lines = []
    assert import_from_env(False, None, log=lines.append) == [] and "holds no full-mode models" in lines[0]
    assert import_from_env(True, tiny_course_data) == []  # data built in memory: no corpus file an archive fits


def test_the_environment_variable_refuses_a_damaged_archive_and_changes_nothing(course, monkeypatch):
    damaged = course.archive.with_name("damaged.zip")
    damaged.write_bytes(course.archive.read_bytes()[:1000])
    monkeypatch.setenv(_ARCHIVE_ENV, str(damaged))
    no_training(monkeypatch)
    (course.data / "models" / "lecture-none-fast.pt").unlink()
    before = snapshot(course.data)
    with pytest.raises(ArchiveError, match=f"^{_ARCHIVE_ENV}=.*damaged or truncated.*unset {_ARCHIVE_ENV}"):
        zoo.load_or_train("lecture-none", progress=False, log=None, fast=True)
    assert snapshot(course.data) == before


def test_the_command_line_imports_and_refuses_a_damaged_archive_in_one_line(course, capsys):
    truncated = course.archive.with_name("truncated.zip")
    truncated.write_bytes(course.archive.read_bytes()[:100])
    before = snapshot(course.data)
    assert cli.main(["pretrain", "--import", str(truncated)]) == 1
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line.startswith("error: ") and "truncated.zip is damaged or truncated" in line and captured.out == ""
    assert snapshot(course.data) == before
    assert cli.main(["pretrain", "--import", str(course.archive), "lecture-none"]) == 1
    assert "--import takes no model names" in capsys.readouterr().err
    assert cli.main(["pretrain", "--import", str(course.archive)]) == 0
    out = capsys.readouterr().out
    assert "imported 4 model(s)" in out and "nothing was trained" in out and "lecture-scaled_dot" in out
    assert _models(course.data) == course.lecturer


def test_the_command_line_trains_what_is_missing_then_exports(course, capsys):
    shutil.rmtree(course.data / "models")
    target = course.data.parent / "out" / "class-models.zip"
    assert cli.main(["pretrain", "--fast", "--no-progress", "--export", str(target), "lecture-none",
                     "classifier-bow"]) == 0
    out = capsys.readouterr().out
    assert "[1/2] training lecture-none" in out and "exported 2 fast-mode model(s)" in out
    assert "pretrain --import class-models.zip" in out
    assert list(members_of(target)) == ["models/lecture-none-fast.pt", "models/classifier-bow-fast.pt"]


def test_export_refuses_unknown_and_uncached_models(course):
    shutil.rmtree(course.data / "models")
    with pytest.raises(ArchiveError, match="lecture-none is not cached at .*pretrain --fast lecture-none"):
        export_models(course.data / "x.zip", ["lecture-none"], fast=True)
    with pytest.raises(ArchiveError, match="no recipe or notebook classifier called 'lecture-magic'"):
        export_models(course.data / "x.zip", ["lecture-magic"], fast=True)
    assert not (course.data / "x.zip").exists()
