"""Every public object's "Introduced in notebook NN" tag names the first notebook whose code uses it.

The rule, for every public module-level function and class of the package (modules found with pkgutil, so the
test follows any split or rename; `__main__`, `bootstrap` and private names are skipped):

* A tag is optional: "Introduced in notebook 05", "Introduced in notebooks 03 and 04", "Introduced in notebook 03
  (assembled) and 05 (trained)". Only the first number after "Introduced in" is checked. The old tag "Used by the
  package, not a notebook." is not allowed: `__all__` and the leading underscore say what is public.
* A notebook "uses" an object when a code cell imports it (`from course_utils.x import name`) or reads it as
  an attribute of a course_utils module it imported (`x.name`, `course_utils.x.name`). A re-exported object is
  one object: it is checked once, under the module that defines it (`obj.__module__`), and a use through any
  module that exposes it counts.
* A tagged object used by some notebook: the tag's first number is the first notebook (`notebooks/NN_*.ipynb`, then
  the appendices `notebooks/An_*.ipynb`, tagged "Introduced in appendix A2") that uses it. A tagged object used
  by no notebook: the tag names an existing notebook whose topic the object belongs to (a result type the notebook
  reads back, a helper that a function the notebook calls relies on).

Module-level constants are covered by their module docstring's tag and are not checked here.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re
import types
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import course_utils  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
PACKAGE = "course_utils"
SKIPPED_MODULES = {"__main__", "bootstrap"}
TAG = re.compile(r"Introduced\s+in\s+(?:notebooks?|appendix)\s+(\d+|A\d)")
PACKAGE_ONLY = "Used by the package, not a notebook"
MAGIC = re.compile(r"^\s*[%!]")  # IPython magics and shell escapes are not Python


@dataclass(frozen=True)
class PublicObject:
    qualname: str  # "course_utils.viz.plot_attention": the defining module and the name
    obj: object
    doc: str

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[1]


def package_modules() -> dict[str, object]:
    """{module name: module} for the package and every submodule, subpackages included."""
    modules = {PACKAGE: course_utils}
    for info in pkgutil.walk_packages(course_utils.__path__, prefix=PACKAGE + "."):
        if info.name.rsplit(".", 1)[1] in SKIPPED_MODULES:
            continue
        modules[info.name] = importlib.import_module(info.name)
    return modules


def is_public_definition(name: str, obj) -> bool:
    """`name` is public and names a function or class defined in the package (not an import such as Tensor)."""
    if name.startswith("_"):
        return False
    obj = inspect.unwrap(obj) if inspect.isroutine(obj) else obj
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return False
    module = getattr(obj, "__module__", "") or ""
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def public_objects(modules: dict[str, object]) -> tuple[dict[int, PublicObject], dict[tuple[str, str], int]]:
    """The package's public objects (keyed by id, so a re-export is one object) and where each is exposed.

    Returns ({id(obj): PublicObject}, {(module name, attribute name): id(obj)}).
    """
    objects: dict[int, PublicObject] = {}
    exposed: dict[tuple[str, str], int] = {}
    for module_name, module in modules.items():
        for name, obj in vars(module).items():
            if not is_public_definition(name, obj):
                continue
            exposed[(module_name, name)] = id(obj)
            if id(obj) not in objects:
                objects[id(obj)] = PublicObject(f"{obj.__module__}.{obj.__name__}", obj, inspect.getdoc(obj) or "")
    return objects, exposed


def code_cells(path: Path) -> list[str]:
    """A notebook's code cells, as source strings."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells if c["cell_type"] == "code"]


def parse_cell(source: str) -> ast.Module | None:
    """The cell as Python, magics blanked out; None when it still does not parse."""
    lines = ["" if MAGIC.match(line) else line for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """'course_utils.data' for `data` (imported from course_utils) or `course_utils.data`; None otherwise."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return None if base is None else f"{base}.{node.attr}"
    return None


def notebook_uses(code_cells: list[str]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """What a notebook's code reads from course_utils, as (module, name) pairs: (imported, read as attributes).

    imported: `from course_utils.x import name`. Read as attributes: `alias.name` where `alias` is bound by
    `from course_utils import x [as alias]` or `import course_utils.x [as alias]`. Import aliases are collected
    over the whole notebook first (notebooks import in their first cells).
    """
    trees = [parse_cell(source) for source in code_cells]
    unparsed = [source for source, tree in zip(code_cells, trees, strict=True) if tree is None]
    assert not unparsed, f"code cells that do not parse as Python (magics aside): {unparsed[:2]}"
    aliases: dict[str, str] = {}
    imported: set[tuple[str, str]] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] != PACKAGE:
                        continue
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        aliases[PACKAGE] = PACKAGE  # `import course_utils.x` binds course_utils
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] != PACKAGE:
                    continue
                for alias in node.names:
                    imported.add((node.module, alias.name))
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"  # a module, or never a base
    attributes: set[tuple[str, str]] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                base = _dotted(node.value, aliases)
                if base is not None:
                    attributes.add((base, node.attr))
    return imported, attributes


def course_utils_uses(code_cells: list[str]) -> set[tuple[str, str]]:
    """Every (module, name) pair a notebook's code reads from course_utils, imported or as an attribute."""
    imported, attributes = notebook_uses(code_cells)
    return imported | attributes


def notebook_paths() -> dict[str, Path]:
    """{"NN" or "An": notebooks/NN_*.ipynb and the appendices notebooks/An_*.ipynb}, in reading order: the numbered
    notebooks, then the appendices."""
    paths = {path.name[:2]: path for path in NOTEBOOKS.glob("[0-9A][0-9]_*.ipynb")}
    assert paths, f"no notebooks found in {NOTEBOOKS}"
    return dict(sorted(paths.items(), key=lambda item: (item[0].startswith("A"), item[0])))


PREVIEW = "00"  # notebook 00 previews the course with the package's trained models and functions; it opens none up


def first_uses(exposed: dict[tuple[str, str], int]) -> dict[int, str]:
    """{id(obj): the first notebook whose code uses it}, through any module that exposes the object (notebook 00,
    the preview, introduces nothing: an object is introduced where a notebook dissects it)."""
    first_use: dict[int, str] = {}
    for number, path in notebook_paths().items():
        if number == PREVIEW:
            continue
        for use in course_utils_uses(code_cells(path)):
            if use in exposed:
                first_use.setdefault(exposed[use], number)
    return first_use


def missing_imports(modules: dict[str, object]) -> list[str]:
    """`from course_utils.x import name` lines of the notebooks that name nothing in the package.

    A broken import would otherwise read as "used by no notebook" (e.g. after a module is split).
    """
    missing = []
    for number, path in notebook_paths().items():
        imported, _ = notebook_uses(code_cells(path))
        for module, name in sorted(imported):
            if module not in modules or not hasattr(modules[module], name):
                missing.append(f"notebook {number}: from {module} import {name}")
    return missing


def tagged_notebook(doc: str) -> str | None:
    """The first notebook after "Introduced in" ("05", or "A2" for an appendix), or None without a tag."""
    match = TAG.search(doc)
    if not match:
        return None
    return match.group(1) if match.group(1).startswith("A") else f"{int(match.group(1)):02d}"


def check_tag(item: PublicObject, first_use: str | None, notebooks: set[str]) -> str | None:
    """What is wrong with one object's tag, or None."""
    tagged = tagged_notebook(item.doc)
    package_only = PACKAGE_ONLY in " ".join(item.doc.split())
    used = f"first used in notebook {first_use}" if first_use is not None else "used by no notebook"
    if package_only:
        return f"{item.qualname}: '{PACKAGE_ONLY}' tag ({used}): remove it; __all__ and underscores say what is public"
    if tagged is None:
        return None
    current = f"notebook {tagged}"
    if first_use is not None and tagged != first_use:
        return f"{item.qualname}: tag says {current}, {used}"
    if tagged is not None and tagged not in notebooks:
        return f"{item.qualname}: tag says {current}, which does not exist ({used})"
    return None


def tag_problems() -> list[str]:
    objects, exposed = public_objects(package_modules())
    first_use = first_uses(exposed)
    notebooks = set(notebook_paths())
    problems = [check_tag(item, first_use.get(key), notebooks) for key, item in objects.items()]
    return sorted(problem for problem in problems if problem)


def test_the_walk_finds_the_package_objects():
    objects, exposed = public_objects(package_modules())
    names = {item.qualname for item in objects.values()}
    assert len(names) == len(objects), "one object, one entry, however often it is re-exported"
    assert {"course_utils.encoder.EncoderRNN", "course_utils.viz.plot_attention"} <= names
    assert not any(name.startswith("_") for _, name in exposed), "private names are skipped"
    assert ("course_utils.encoder", "EncoderRNN") in exposed
    assert ("course_utils.encoder", "Tensor") not in exposed, "imports from outside the package are skipped"
    assert not any(".__main__." in name or ".bootstrap." in name for name in names)


def test_notebook_uses_are_read_from_imports_and_module_attributes():
    cells = ["%matplotlib inline\nfrom course_utils import data, viz as v\n"
             "from course_utils.encoder import (EncoderRNN,\n    check_source)\nimport course_utils.metrics as m",
             "x = data.load_course_data()\nv.plot_attention(w)\nm.corpus_scores([], [])\ny.not_ours()\n!ls"]
    assert course_utils_uses(cells) >= {
        ("course_utils.encoder", "EncoderRNN"), ("course_utils.encoder", "check_source"),
        ("course_utils.data", "load_course_data"), ("course_utils.viz", "plot_attention"),
        ("course_utils.metrics", "corpus_scores")}
    assert not any(name == "not_ours" for _, name in course_utils_uses(cells))


def test_a_re_exported_object_is_one_object_exposed_under_both_names():
    defining, re_exporting = types.ModuleType("course_utils.fake_corpus"), types.ModuleType("course_utils.fake_data")

    def find_corpus():
        """Introduced in notebook 01."""

    find_corpus.__module__ = defining.__name__
    defining.find_corpus = re_exporting.find_corpus = find_corpus
    objects, exposed = public_objects({defining.__name__: defining, re_exporting.__name__: re_exporting})
    assert [item.qualname for item in objects.values()] == ["course_utils.fake_corpus.find_corpus"]
    assert exposed[("course_utils.fake_data", "find_corpus")] == exposed[("course_utils.fake_corpus", "find_corpus")]


def test_the_rule_for_used_unused_and_untagged_objects():
    def problem(doc, first_use):
        return check_tag(PublicObject("course_utils.m.f", None, doc), first_use,
                         notebooks={"01", "02", "03", "04", "05", "06", "A2"})

    assert problem("Introduced in notebook 05.", "05") is None
    assert problem("Introduced in notebooks 03 and 05.", "03") is None
    assert "first used in notebook 04" in problem("Introduced in notebook 05.", "04")
    assert problem("Introduced in appendix A2.", "A2") is None
    assert "first used in notebook 04" in problem("Introduced in appendix A2.", "04")
    assert problem("No tag.", "02") is None
    assert problem("No tag.", None) is None
    assert problem("Introduced in notebook 03 (the decoder's result type).", None) is None
    assert "remove it" in problem("Used by the package,\n    not a notebook.", None)
    assert "remove it" in problem("Used by the package, not a notebook.", "02")
    assert "does not exist" in problem("Introduced in notebook 09.", None)
    assert "does not exist" in problem("Introduced in appendix A7.", None)


def test_tags_are_parsed_from_the_first_number():
    assert tagged_notebook("Blah. Introduced in notebook 05.") == "05"
    assert tagged_notebook("Introduced in notebooks 03 and 04.") == "03"
    assert tagged_notebook("Introduced in\n    notebook 03 (assembled) and 05 (trained).") == "03"
    assert tagged_notebook("Introduced in appendix A2 (speed).") == "A2"
    assert tagged_notebook("No tag here.") is None


def test_notebook_imports_from_course_utils_name_something_that_exists():
    missing = missing_imports(package_modules())
    assert not missing, "\n".join(["notebook imports of names the package does not have:"] + missing)


def test_every_tag_names_the_first_notebook_that_uses_the_object():
    problems = tag_problems()
    assert not problems, "\n".join(["tags that do not match the notebooks:"] + problems)
