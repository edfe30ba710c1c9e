"""The class's models shared: one archive file from the lecturer, imported by every student.

    manifest = export_models("class-models.zip")     # the cached notebook models + checksums, corpus, recipes
    names = import_models("class-models.zip")        # everything validated first, then cached where notebooks look
    COURSE_MODELS_ARCHIVE=class-models.zip           # load_or_train(_classifier) and pretrain import it on a miss

A zip: manifest.json (format, version, time, course_utils and torch versions, corpus fingerprint; per model name,
kind, member, sha256, size, recipe, fast flag) and each model's cached file, byte for byte. An import checks it all
before it writes anything (ArchiveError: one line, the problem and the fix), then writes each file atomically, a
cached file it replaces kept in data_dir()/models/before-import/. Command line: `pretrain --export FILE` / `--import
FILE`. Not about training (recipes, classifier, pretrain), the checkpoint format (checkpoints), or carrying the file
to the class (any copy will do). Used by the package, not a notebook.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import io
import json
import os
import pickle
import shutil
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple

import torch

from course_utils import __version__, checkpoints, classifier, recipes
from course_utils import data as data_module
from course_utils.checkpoints import CheckpointError, _file_mode, _first_sentence, load_checkpoint
from course_utils.cli import pretrain
from course_utils.corpus import check_corpus, data_dir, display_path
from course_utils.runtime import reporter

__all__ = ["ARCHIVE_ENV", "ARCHIVE_FORMAT", "ARCHIVE_VERSION", "ArchiveError", "ArchivedModel", "Manifest",
           "corpus_fingerprint", "export_models", "import_from_env", "import_models", "read_manifest"]

ARCHIVE_ENV = "COURSE_MODELS_ARCHIVE"  # an archive to import on a cache miss, before anything trains
ARCHIVE_FORMAT = "course_utils.models-archive"
ARCHIVE_VERSION = 1
MANIFEST = "manifest.json"
BACKUP_FOLDER = "before-import"  # under data_dir()/models/: the cached files an import replaced
_MODE = {True: "fast-mode", False: "full-mode"}
_COPY_FIX = "copy the archive again from where it was shared (its size must match the original's)"
_EXPORT_FIX = "ask for a new export (python -m course_utils pretrain --export FILE)"
_TRAIN_FIX = "train here instead (python -m course_utils pretrain)"
_RECIPE_FIX = f"{_EXPORT_FIX} with this version of course_utils, or {_TRAIN_FIX}"
_LOAD_COURSE_DATA = data_module.load_course_data  # the real one, for its defaults (tests replace the attribute)
_plain = lambda value: json.loads(json.dumps(value))  # as a manifest gives it back: tuples become lists


class ArchiveError(Exception):
    """An archive that cannot be exported or imported; the message is one line naming the problem and the fix.
    Used by the package, not a notebook."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))  # one line, whatever was quoted into it


class ArchivedModel(NamedTuple):
    """One model of an archive: name (recipe or classifier cache name), kind ("translator" or "classifier"), member
    file name, sha256 and size of its bytes, recipe as plain data, fast flag. Used by the package, not a notebook."""
    name: str
    kind: str
    member: str
    sha256: str
    size: int
    recipe: dict
    fast: bool


class Manifest(NamedTuple):
    """manifest.json: the mode, the corpus fingerprint, the models, when and with what they were exported.
    Used by the package, not a notebook."""
    fast: bool
    corpus: dict
    models: tuple[ArchivedModel, ...]
    created: str = ""
    course_utils_version: str = __version__
    torch_version: str = torch.__version__
    format: str = ARCHIVE_FORMAT
    version: int = ARCHIVE_VERSION


def corpus_fingerprint(course: data_module.CourseData) -> dict:
    """The corpus `course` was read from, as plain data: its file, the sha256 of its text (corpus.check_corpus: zipped
    or bare hashes the same), lines, bytes, a description, and the data settings that decide the vocabularies
    (load_course_data's defaults, as load_or_train). ArchiveError for data built in memory. Used by the package, not
    a notebook."""
    if course.corpus_path is None:
        raise ArchiveError("the course data was built in memory, not read from a corpus file, so no archive can be "
                           f"checked against it; load it with load_course_data(), or unset {ARCHIVE_ENV}")
    info = check_corpus(course.corpus_path)
    settings = {name: parameter.default for name, parameter in inspect.signature(_LOAD_COURSE_DATA).parameters.items()
                if name not in ("path", "log")}
    file = info.path.name + (f":{info.member}" if info.member else "")
    return {"file": file, "known": info.known.description if info.known else None, "sha256": info.sha256,
            "lines": info.lines, "bytes": info.n_bytes, "settings": _plain({**settings, "reverse": course.reverse}),
            "description": f"{info.known.description if info.known else file} ({info.lines:,} lines, sha256 "
                           f"{info.sha256[:12]}...)"}


def _differences(found: object, expected: object, prefix: str = "") -> list[str]:
    """'field is X in the archive, Y here' for each leaf that differs (nested dicts walked)."""
    if isinstance(found, dict) and isinstance(expected, dict):
        return [line for key in sorted(set(found) | set(expected), key=str)
                for line in _differences(found.get(key), expected.get(key), f"{prefix}{key}.")]
    return [] if found == expected else [f"{prefix[:-1]} is {found!r} in the archive, {expected!r} here"]


def _expected(name: str, fast: bool, course: data_module.CourseData) -> tuple[str, dict, Path]:
    """(kind, recipe as plain data, cache file) of model `name` as this package trains it (configs assembled as
    train_recipe and load_or_train_classifier do); ArchiveError for a name that is neither."""
    configs = pretrain.notebook_classifiers()
    if name in configs:
        config = classifier.training_config(configs[name], fast)
        return ("classifier", _plain({"classifier": dataclasses.asdict(config)}),
                classifier.classifier_path(configs[name], fast))
    if name not in recipes.RECIPES:
        raise ArchiveError(f"this course_utils has no recipe or notebook classifier called {name!r} (known: "
                           f"{', '.join([*recipes.RECIPES, *configs])}); check the name, or update course_utils")
    recipe = recipes.RECIPES[name]
    train = recipes.training_config(recipe, fast)
    return ("translator", _plain({"model": dataclasses.asdict(recipe.model_config(course.src_vocab, course.tgt_vocab)),
                                  "train": dataclasses.asdict(train)}), recipes.model_path(name, fast))


def _check_fit(manifest: Manifest, course: data_module.CourseData, where: str) -> dict[str, Path]:
    """The corpus, then each model's kind and recipe, against this package's; {name: its cache file}."""
    here, theirs, targets = corpus_fingerprint(course), manifest.corpus, {}
    if theirs.get("sha256") != here["sha256"]:
        raise ArchiveError(f"{where} was exported for another corpus: it fits {theirs.get('description')}, but "
                           f"this course reads {here['description']}; point COURSE_CORPUS to the lecturer's corpus "
                           f"file, or {_TRAIN_FIX}")
    if _differences(theirs.get("settings"), here["settings"]):
        raise ArchiveError(f"{where} was exported with other data settings of the same corpus "
                           f"({_differences(theirs.get('settings'), here['settings'])[0]}); {_RECIPE_FIX}")
    for entry in manifest.models:
        kind, recipe, targets[entry.name] = _expected(entry.name, entry.fast, course)
        problems = _differences(entry.recipe, recipe) or ([] if entry.kind == kind else [f"kind is {entry.kind!r}"])
        if problems:
            raise ArchiveError(f"{where} was exported with another recipe for {entry.name}: {problems[0]}"
                               + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "") + f"; {_RECIPE_FIX}")
    return targets


class _Unfit(Exception):
    """A member that is not a model this package can use; the message completes '<member> ...'."""


def _check_translator(entry: ArchivedModel, raw: bytes, course: data_module.CourseData, folder: Path) -> None:
    """load_checkpoint's checks (format, configs, vocabularies, finite weights that fit), then the manifest's."""
    (temp := folder / Path(entry.member).name).write_bytes(raw)
    try:
        trained = load_checkpoint(temp, course.src_vocab, course.tgt_vocab, config=recipes.get_recipe(
            entry.name).model_config(course.src_vocab, course.tgt_vocab))
    except CheckpointError as error:  # its message without the advice to delete a file that is not the student's
        text = str(error).replace(str(temp), "it").replace(", or delete it", "; delete it")
        text = text.split("; delete it")[0].split("; train one with")[0]
        raise _Unfit(f"does not load as a course checkpoint here ({text})") from None
    finally:
        temp.unlink(missing_ok=True)
    found = {"model": dataclasses.asdict(trained.model_config), "train": dataclasses.asdict(trained.train_config)}
    if _plain(found) != entry.recipe or trained.fast is not entry.fast or trained.name != entry.name:
        raise _Unfit("differs from what the manifest says of it (name, recipe or fast flag)")


def _check_classifier(entry: ArchivedModel, payload: object, course: data_module.CourseData) -> None:
    """The cache's own checks (checkpoints.classifier_from_payload), strict: the manifest's config and this course's
    French vocabulary exactly, weights that are finite and fit."""
    try:
        checkpoints.classifier_from_payload(payload, classifier.ClassifierConfig(**entry.recipe["classifier"]),
                                            course.src_vocab, strict=True)
    except CheckpointError as error:  # its message completes "<member> ..."
        raise _Unfit(str(error)) from None


def _member_problem(entry: ArchivedModel, raw: bytes, course: data_module.CourseData, folder: Path) -> str | None:
    """None when the member is tensors and plain data (weights_only: no code runs) and loads as the cache would."""
    try:
        payload = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:  # names the code, e.g. "... unsupported GLOBAL os.system ..."
        code = checkpoints.pickled_code(error)
        return (f"holds pickled code, not only tensors and plain data (it calls {code}; torch.load(weights_only=True) "
                f"refused it)" if code else "is not a readable torch file (nor pickled plain data)")
    except Exception as error:  # not a torch file at all
        return f"is not a readable torch file ({type(error).__name__}: {_first_sentence(error, 80)})"
    try:
        with torch.random.fork_rng(devices=[]):  # building models draws random numbers: leave the caller's alone
            if entry.kind == "translator":
                _check_translator(entry, raw, course, folder)
            else:
                _check_classifier(entry, payload, course)
    except _Unfit as problem:
        return str(problem)
    return None


def _manifest_of(archive: zipfile.ZipFile, where: str) -> Manifest:
    """The checked manifest: safe member names, a manifest of this format and version listing exactly the members."""
    names = archive.namelist()
    unsafe = [name for name in names if name.startswith("/") or "\\" in name or ":" in name
              or any(part in ("", ".", "..") for part in name.split("/"))]
    if unsafe:
        raise ArchiveError(f"{where} has an unsafe member name {unsafe[0]!r} (absolute, or with '..'); do not use "
                           f"it: {_EXPORT_FIX}")
    if len(set(names)) != len(names) or MANIFEST not in names:
        raise ArchiveError(f"{where} has {'repeated member names' if MANIFEST in names else f'no {MANIFEST}'}: "
                           f"not a course model archive; {_EXPORT_FIX}")
    try:
        raw = json.loads(archive.read(MANIFEST).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ArchiveError(f"{where} has an invalid {MANIFEST} ({error}); {_EXPORT_FIX}") from None
    if not isinstance(raw, dict) or raw.get("format") != ARCHIVE_FORMAT:
        raise ArchiveError(f"{where} is not a course model archive (manifest format {ARCHIVE_FORMAT!r} expected); "
                           f"{_EXPORT_FIX}")
    if raw.get("version") != ARCHIVE_VERSION:
        raise ArchiveError(f"{where} is archive format version {raw.get('version')!r}, this course_utils reads "
                           f"version {ARCHIVE_VERSION}: update course_utils (git pull), or {_EXPORT_FIX}")
    try:
        models = tuple(ArchivedModel(**{key: entry[key] for key in ArchivedModel._fields}) for entry in raw["models"])
        manifest = Manifest(**{key: raw[key] for key in Manifest._fields if key != "models"}, models=models)
    except (KeyError, TypeError) as error:
        raise ArchiveError(f"{where} has an incomplete manifest (lacks or mangles {error}); {_EXPORT_FIX}") from None
    bad = [] if all(isinstance(v, t) for v, t in zip(manifest, (bool, dict, tuple, str, str, str))) else ["header"]
    bad += [m.name for m in models if not (all(isinstance(v, t) for v, t in zip(m, (str, str, str, str, int, dict,
            bool))) and m.fast is manifest.fast and m.kind in ("translator", "classifier"))]  # ArchivedModel's types
    if bad or len({m.name for m in models}) != len(models):
        raise ArchiveError(f"{where} has an invalid manifest (malformed: {bad or 'repeated names'}); {_EXPORT_FIX}")
    missing = [model.member for model in manifest.models if model.member not in names]
    unlisted = [name for name in names if name not in {MANIFEST, *(model.member for model in manifest.models)}]
    if missing or unlisted:
        raise ArchiveError(f"{where} lacks {missing[0]!r}, which its manifest lists; {_COPY_FIX}" if missing else
                           f"{where} holds {unlisted[0]!r}, which its manifest does not list; {_EXPORT_FIX}")
    return manifest


def _read_archive(path: Path, members: bool = True) -> tuple[Manifest, dict[str, bytes]]:
    """The checked manifest and (members=True) each member's bytes, checked by the zip's CRC, its size and sha256."""
    where, contents = display_path(path), {}
    if not path.is_file():
        raise ArchiveError(f"no archive at {where}{' (a directory)' if path.is_dir() else ''}; pass the .zip file "
                           f"the lecturer exported (python -m course_utils pretrain --export FILE)")
    try:
        with zipfile.ZipFile(path) as archive:
            manifest = _manifest_of(archive, where)
            for entry in manifest.models if members else ():
                same_size = archive.getinfo(entry.member).file_size == entry.size
                contents[entry.member] = archive.read(entry.member) if same_size else b""  # checks the CRC too
                if not same_size or hashlib.sha256(contents[entry.member]).hexdigest() != entry.sha256:
                    raise ArchiveError(f"{where}: {entry.member} fails its checksum (its size or sha256 differ from "
                                       f"the manifest's): changed after export; {_COPY_FIX}, or {_EXPORT_FIX}")
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, NotImplementedError,
            RuntimeError) as error:  # RuntimeError: an encrypted member
        raise ArchiveError(f"{where} is damaged or truncated (zip: {error}); {_COPY_FIX}") from None
    return manifest, contents


def read_manifest(path: str | os.PathLike) -> Manifest:
    """The Manifest of the archive at `path`, once the archive's structure is checked (a readable zip, safe member
    names, a valid manifest of this format version, exactly the members it lists); the models are not read.
    Raises ArchiveError. Used by the package, not a notebook."""
    return _read_archive(Path(path), members=False)[0]


def _atomic_write(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """`write` a temporary file beside `path`, then os.replace: the old file or the whole new one, as atomic_save."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
        os.chmod(temp_name, _file_mode())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def _install(entry: ArchivedModel, raw: bytes, target: Path, only_missing: bool) -> str | None:
    """Write one validated member to its cache file (a differing one first copied to before-import/); what was done."""
    if target.exists() and (only_missing or target.read_bytes() == raw):
        return None if only_missing else f"{entry.name}: already cached, identical ({display_path(target)})"
    kept = data_dir() / "models" / BACKUP_FOLDER / target.name if target.exists() else None
    if kept:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept = kept.with_stem(f"{target.stem}-{time.time_ns()}") if kept.exists() else kept  # never over a copy
        shutil.copy2(target, kept)
    _atomic_write(target, lambda file: file.write(raw))
    return f"{entry.name}: imported to {display_path(target)}" + (
        f" (the one cached before is kept at {display_path(kept)})" if kept else "")


def export_models(path: str | os.PathLike, names: Sequence[str] | None = None, fast: bool = False,
                  data: data_module.CourseData | None = None) -> Manifest:
    """Write the cached models `names` (recipes and/or notebook classifier cache names; default NOTEBOOK_MODELS, then
    notebook 08's classifiers; fast=True: their fast-mode files) into one archive at `path`, atomically, with the
    manifest; `data`: the course data (default load_course_data()). Returns the Manifest. ArchiveError when a model
    is unknown, not cached or unfit here (checked as an import checks it), or `path` cannot be written. Used by the
    package, not a notebook."""
    path, flag, members = Path(path), " --fast" if fast else "", []
    course = data if data is not None else data_module.load_course_data(log=None)
    names = dict.fromkeys(names if names is not None else [*pretrain.NOTEBOOK_MODELS, *pretrain.notebook_classifiers()])
    with tempfile.TemporaryDirectory(prefix="course-archive-") as folder:
        for name in names:  # each cached model checked as an import will check it
            kind, recipe, cached = _expected(name, fast, course)
            if not cached.is_file():
                raise ArchiveError(f"{name} is not cached at {display_path(cached)}; train it first: python -m "
                                   f"course_utils pretrain{flag} {name}")
            raw = cached.read_bytes()
            members.append((ArchivedModel(name, kind, f"models/{cached.name}", hashlib.sha256(raw).hexdigest(),
                                          len(raw), recipe, fast), raw))
            problem = _member_problem(members[-1][0], raw, course, Path(folder))
            if problem:
                raise ArchiveError(f"the cached {name} at {display_path(cached)} {problem}; retrain it: python -m "
                                   f"course_utils pretrain{flag} --retrain {name}")
    manifest = Manifest(fast, corpus_fingerprint(course), tuple(entry for entry, _ in members),
                        time.strftime("%Y-%m-%dT%H:%M:%S%z"))

    def write(file: BinaryIO) -> None:
        with zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(MANIFEST, json.dumps({**manifest._asdict(), "models": [
                entry._asdict() for entry in manifest.models]}, indent=1))
            for entry, raw in members:
                archive.writestr(entry.member, raw)
    try:
        _atomic_write(path, write)
    except OSError as error:
        raise ArchiveError(f"cannot write {display_path(path)} ({error.strerror or error}); pass a file in a "
                           f"writable folder") from None
    return manifest


def import_models(path: str | os.PathLike, fast: bool | None = None, data: data_module.CourseData | None = None,
                  only_missing: bool = False, log: Callable[[str], None] | None = None) -> list[str]:
    """Validate the whole archive at `path`, then cache its models where the notebooks load them. fast: the archive
    must hold fast-mode (True) or full-mode (False) models, None: either; data: the course data to check against
    (default load_course_data(), as load_or_train); only_missing: write only models not cached yet (the hook), else a
    differing cached file is copied to data_dir()/models/before-import/ and replaced; log: a line per model written.
    Returns the names now cached from the archive (written or identical). Raises ArchiveError before anything is
    written: a missing, damaged or truncated archive; a missing, invalid or newer manifest; unlisted, missing or
    unsafe members; a failed checksum; another mode, corpus or recipe; a member that is not tensors and plain data
    or does not load as the package loads its own cache. Used by the package, not a notebook."""
    where, say = display_path(path), reporter(log)
    manifest, members = _read_archive(Path(path))
    if fast is not None and manifest.fast != fast:
        raise ArchiveError(f"{where} holds {_MODE[manifest.fast]} models, not {_MODE[fast]} ones; import it "
                           f"{'with' if manifest.fast else 'without'} --fast, or {_EXPORT_FIX}")
    course = data if data is not None else data_module.load_course_data(log=None)
    targets = _check_fit(manifest, course, where)
    with tempfile.TemporaryDirectory(prefix="course-archive-") as folder:
        for entry in manifest.models:
            problem = _member_problem(entry, members[entry.member], course, Path(folder))
            if problem:
                raise ArchiveError(f"{where}: {entry.member} {problem}; do not use this archive: {_EXPORT_FIX}")
    done = []
    for entry in manifest.models:
        try:
            line = _install(entry, members[entry.member], targets[entry.name], only_missing)
        except OSError as error:
            raise ArchiveError(f"cannot write {display_path(targets[entry.name])} ({error.strerror or error}); make "
                               f"its folder writable, or set COURSE_DATA_DIR to a writable folder") from None
        if line:
            done.append(entry.name)
            say(line)
    return done


def import_from_env(fast: bool, data: data_module.CourseData | None, log: Callable[[str], None] | None = None
                    ) -> list[str]:
    """The COURSE_MODELS_ARCHIVE hook, on a cache miss before anything trains: import_models(only_missing=True) of
    the archive it names when it holds `fast`'s mode; returns the names written ([] when unset, of the other mode,
    or for data built in memory, which no archive fits). Raises ArchiveError, naming the variable, when the archive
    is refused. Used by the package, not a notebook."""
    named = os.environ.get(ARCHIVE_ENV, "").strip()
    if not named or (data is not None and data.corpus_path is None):
        return []
    try:
        if read_manifest(Path(named).expanduser()).fast == fast:
            return import_models(Path(named).expanduser(), fast, data, only_missing=True, log=log)
    except ArchiveError as error:
        raise ArchiveError(f"{ARCHIVE_ENV}={named}: {error} (or unset {ARCHIVE_ENV} to train here)") from None
    reporter(log)(f"{ARCHIVE_ENV}: {named} holds {_MODE[not fast]} models, not {_MODE[fast]} ones: "
                              "not imported")
    return []
