"""Every library module declares its public surface: `__all__` lists exactly the public names it defines (functions,
classes, constants), so `from course_utils.x import *` and a reader see the same API. The tooling (command line,
site, slides, pretrain, archive, bootstrap) is not library and is not checked here."""
import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "course_utils"
LIBRARY = ["corpus", "vocab", "data", "runtime", "encoder", "shapes", "timing", "attention", "decoder", "seq2seq",
           "diagrams", "diagram_layouts", "loss", "train", "evaluate", "checkpoints", "recipes",
           "search", "translate", "metrics", "viz", "viz_padding", "explorer", "classifier", "classic", "claims",
           "overview", "transformer", "linear_attention", "alignment", "explanation",
           "fast", "fast.recurrences", "fast.packed_loss", "fast.cuda_graphs"]


def defined_public_names(module: str) -> set[str]:
    """Names a module defines at its top level (def, class, assignment, tuple assignment) that do not start with _."""
    names = set()
    path = PACKAGE / module.replace(".", "/")
    for node in ast.parse((path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {e.id for e in getattr(target, "elts", [target]) if isinstance(e, ast.Name)}
    return {name for name in names if not name.startswith("_")}


@pytest.mark.parametrize("module", LIBRARY)
def test_all_lists_exactly_the_public_names_a_module_defines(module):
    imported = importlib.import_module(f"course_utils.{module}")
    assert hasattr(imported, "__all__"), f"course_utils/{module}.py has no __all__"
    assert len(imported.__all__) == len(set(imported.__all__)), "a name is listed twice"
    assert all(hasattr(imported, name) for name in imported.__all__)
    assert set(imported.__all__) == defined_public_names(module)


def test_the_package_top_level_is_the_library_and_the_tooling_lives_in_subpackages():
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    top_level = {module for module in LIBRARY if "." not in module and not (PACKAGE / module).is_dir()}
    assert modules == top_level | {"__init__", "__main__", "bootstrap"}, "a module outside the library's list"
    assert len((PACKAGE / "__main__.py").read_text().splitlines()) < 12, "__main__ only calls course_utils.cli.main"
    subpackages = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()}
    assert subpackages == {"cli", "site", "exercises", "fast"}

