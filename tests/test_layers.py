"""The package's layers point one way: no import cycle, and no library module imports the command line, the
exercises or the bootstrap (benchmarks/package_size.py reads the imports from the source, lazy ones included)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import package_size  # noqa: E402


def test_the_package_has_no_import_cycle():
    assert package_size.cycles(package_size.import_graph()) == []


def test_no_library_module_imports_the_command_line_the_exercises_or_the_bootstrap():
    assert package_size.upward_imports(package_size.import_graph()) == []


def test_the_cycle_finder_finds_a_planted_cycle_and_the_upward_finder_an_upward_import():
    graph = {"course_utils.a": {"course_utils.b"}, "course_utils.b": {"course_utils.c"},
             "course_utils.c": {"course_utils.a"}, "course_utils.d": {"course_utils.cli.x"},
             "course_utils.cli.x": set()}
    assert package_size.cycles(graph) == [["course_utils.a", "course_utils.b", "course_utils.c"]]
    assert package_size.upward_imports(graph) == [("course_utils.d", "course_utils.cli.x")]
