"""Every library module declares its public surface, and the surface means something: `__all__` lists exactly the
public names a module defines, and each of them is used outside its module (by another module of the package, a
notebook, the exercises, the command line, a benchmark or the tools). A name only its own module uses gets a leading
underscore. The command line, the exercises and the bootstrap are not library and are not checked here."""
import ast
import importlib
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "course_utils"
sys.path.insert(0, str(ROOT / "benchmarks"))
import package_size  # noqa: E402

LIBRARY = sorted(module for module in package_size.import_graph() if package_size.is_library(module)
                 and module != "course_utils")


def module_path(module: str) -> Path:
    path = ROOT / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def defined_public_names(module: str) -> set[str]:
    """Names a module defines at its top level (def, class, assignment, tuple assignment) that do not start with _."""
    names = set()
    for node in ast.parse(module_path(module).read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {e.id for e in getattr(target, "elts", [target]) if isinstance(e, ast.Name)}
    return {name for name in names if not name.startswith("_")}


def _notebook_text(path: Path) -> str:
    """A notebook's code and prose: a name the lesson tells the reader to look up is public too."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] in ("code", "markdown"))


def user_texts() -> dict[str, str]:
    """{file: text} of everything that may use the library: the package, the notebooks, benchmarks, tools."""
    texts = {str(path.relative_to(ROOT)): path.read_text() for folder in ("course_utils", "benchmarks", "tools")
             for path in sorted((ROOT / folder).rglob("*.py"))}
    texts.update({str(path.relative_to(ROOT)): _notebook_text(path) for path in sorted(ROOT.glob("notebooks/*.ipynb"))})
    return texts


def signature_names(source: str) -> set[str]:
    """Names in the annotations of a module's public functions, methods and class fields: the types its public API
    hands out or takes (a result type is public when a public function returns it, even if nobody imports it)."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
                arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                for annotation in [node.returns, *(argument.annotation for argument in arguments)]:
                    if annotation is not None:
                        names.update(n.id for n in ast.walk(annotation) if isinstance(n, ast.Name))
                    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
                        names.update(re.findall(r"\w+", annotation.value))
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                for field in node.body:
                    if isinstance(field, ast.AnnAssign):
                        names.update(n.id for n in ast.walk(field.annotation) if isinstance(n, ast.Name))
                visit(node.body)

    visit(ast.parse(source).body)
    return names


def unused_public_names(module: str, texts: dict[str, str]) -> list[str]:
    """The names of `module.__all__` that no other file in `texts` mentions as a whole word and that no public
    signature of the module itself hands out."""
    own = str(module_path(module).relative_to(ROOT))
    others = "\n".join(text for name, text in texts.items() if name != own)
    handed_out = signature_names(texts.get(own, ""))
    return [name for name in importlib.import_module(module).__all__ if name not in handed_out
            and not re.search(rf"(?<![\w.]){re.escape(name)}\b|\.{re.escape(name)}\b", others)]


@pytest.mark.parametrize("module", LIBRARY)
def test_all_lists_exactly_the_public_names_a_module_defines(module):
    imported = importlib.import_module(module)
    assert hasattr(imported, "__all__"), f"{module_path(module)} has no __all__"
    assert len(imported.__all__) == len(set(imported.__all__)), "a name is listed twice"
    assert all(hasattr(imported, name) for name in imported.__all__)
    assert set(imported.__all__) == defined_public_names(module)


@pytest.mark.parametrize("module", LIBRARY)
def test_every_public_name_is_used_outside_its_module(module):
    unused = unused_public_names(module, user_texts())
    assert not unused, f"{module}: public but used only in its own module (give them an underscore): {unused}"


def test_the_unused_name_finder_sees_a_name_used_nowhere_else_not_one_used_elsewhere_nor_a_result_type(monkeypatch):
    fake = type(sys)("course_utils.fake")
    monkeypatch.setitem(sys.modules, "course_utils.fake", fake)
    fake.__all__ = ["shown", "hidden", "Result"]
    texts = {"course_utils/fake.py": "class Result: ...\ndef shown() -> Result: ...\ndef hidden(): ...",
             "course_utils/other.py": "fake.shown()"}
    assert unused_public_names("course_utils.fake", texts) == ["hidden"]


def test_the_top_level_holds_the_library_and_the_tooling_lives_in_subpackages():
    assert len((PACKAGE / "__main__.py").read_text().splitlines()) < 12, "__main__ only calls course_utils.cli.main"
    assert not (PACKAGE / "site").exists(), "the site builder is tooling: it lives in tools/, outside the package"
    assert "Used by the package" not in "".join(path.read_text() for path in PACKAGE.rglob("*.py"))


def missing_imports(path: Path, source: str) -> list[str]:
    """'line: module.name' for each name `source` imports from course_utils, or reads as an attribute of a course_utils
    module it imported, that the module does not have (a lazy import inside a function included)."""
    tree, modules, missing = ast.parse(source), {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("course_utils"):
            owner = importlib.import_module(node.module)
            for alias in node.names:  # from a package, a name may be a submodule: its attributes are checked below
                if hasattr(owner, "__path__") and importlib.util.find_spec(f"{node.module}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                elif not hasattr(owner, alias.name):
                    missing.append(f"{path}:{node.lineno}: {node.module}.{alias.name}")
    rebound = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    rebound |= {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}  # a parameter named like a module
    for node in ast.walk(tree):
        name = node.value.id if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) else None
        if name in modules and name not in rebound and isinstance(node.ctx, ast.Load) \
                and not hasattr(importlib.import_module(modules[name]), node.attr):
            missing.append(f"{path}:{node.lineno}: {modules[name]}.{node.attr}")
    return missing


def test_every_name_the_repository_takes_from_the_package_exists():
    """A benchmark, tool or test that imports a name the package no longer has fails only when it runs; this reads
    them all."""
    files = [path for folder in ("course_utils", "benchmarks", "tools", "tests")
             for path in (ROOT / folder).rglob("*.py")]
    missing = [line for path in sorted(files) for line in missing_imports(path.relative_to(ROOT), path.read_text())]
    assert not missing, missing


def test_the_import_reader_sees_a_name_and_an_attribute_the_package_does_not_have():
    source = ("def f():\n    from course_utils.recipes import get_recipe, train_recipe\n"
              "from course_utils import classic\nclassic.make_classic\nclassic.train_classic\n")
    assert missing_imports(Path("x.py"), source) == ["x.py:2: course_utils.recipes.train_recipe",
                                                     "x.py:5: course_utils.classic.train_classic"]
