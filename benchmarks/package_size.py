"""The package's size and shape: lines of code, public names, import cycles and imports that point up a layer.

    python benchmarks/package_size.py            # a table (Markdown)
    python benchmarks/package_size.py --json     # the same numbers as JSON

The library is every module of course_utils/ except cli/, exercises/, bootstrap and __main__; the installed
package is everything under course_utils/. Imports are read from the source (the AST), lazy ones inside functions
included, so a cycle broken only at run time by a late import still counts. tests/test_layers.py asserts the rules.
"""
from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "course_utils"
UPPER = ("course_utils.cli", "course_utils.exercises", "course_utils.bootstrap", "course_utils.__main__")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports (a `from pkg import submodule` counts as the submodule)."""
    files = {module_name(path, root): path for path in sorted((root / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(node, module, path.name == "__init__.py")
                for alias in node.names:
                    found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in files else target)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[module] = {name for name in found if name in files and name != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def is_library(module: str) -> bool:
    return (module == PACKAGE or module.startswith(PACKAGE + ".")) and not module.startswith(UPPER)


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(library module, the command-line, exercise or bootstrap module it imports)."""
    return sorted((module, target) for module, targets in graph.items() if is_library(module)
                  for target in targets if target.startswith(UPPER))


def public_names(path: Path) -> list[str]:
    """The names of a module's `__all__` (a literal list or tuple), else []."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return [ast.literal_eval(element) for element in node.value.elts]
    return []


def measure(root: Path = ROOT) -> dict:
    files = {module_name(path, root): path for path in sorted((root / PACKAGE).rglob("*.py"))}
    lines = {module: len(path.read_text().splitlines()) for module, path in files.items()}
    graph = import_graph(root)
    library = [module for module in files if is_library(module)]
    return {
        "library_lines": sum(lines[m] for m in library),
        "installed_lines": sum(lines.values()),
        "library_modules": len(library),
        "largest_module": max(((lines[m], m) for m in files), default=(0, ""))[1],
        "largest_module_lines": max(lines.values(), default=0),
        "library_public_names": sum(len(public_names(files[m])) for m in library),
        "import_cycles": cycles(graph),
        "upward_imports": upward_imports(graph),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    numbers = measure()
    if parser.parse_args().json:
        print(json.dumps(numbers, indent=1))
        return
    print("| measure | value |\n|---|---|")
    for key, value in numbers.items():
        print(f"| {key} | {value} |")


if __name__ == "__main__":
    main()
