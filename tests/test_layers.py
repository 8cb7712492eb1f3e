"""The package's layers, guarded: no upward import, no private name across packages, no
kernelcv import inside a function outside the cli package (see docs/architecture.md)."""

import ast
import importlib.util
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kernelcv"
TOOLS = Path(__file__).resolve().parents[1] / "tools"


def _layer_numbers():
    """Top-level module or package -> its layer, from tools/layers.txt (the one list)."""
    spec = importlib.util.spec_from_file_location("import_graph", TOOLS / "import_graph.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    numbers = {name: number for number, (names, _) in enumerate(tool.read_layers())
               for name in names}
    numbers["__init__"] = numbers.pop("kernelcv")  # the package root's own module
    return numbers


LAYERS = _layer_numbers()
SHIM_MARK = "# layer-exempt: deprecated re-export"


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        yield path, parts


def _imports(path, parts):
    """(target parts, imported names, inside a function) for each kernelcv import."""
    tree = ast.parse(path.read_text())
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    if parts[-1] == "__init__":
        package = parts[:-1]
    in_function = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            in_function.update(id(inner) for inner in ast.walk(node) if inner is not node)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[:len(package) - node.level + 1])
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "kernelcv":
                target = node.module.split(".")[1:]
            else:
                continue
            names = [alias.name for alias in node.names]
            if not node.module and node.level:  # from . import module
                for name in names:
                    yield target + [name], [], id(node) in in_function
            else:
                yield target, names, id(node) in in_function
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "kernelcv":
                    yield alias.name.split(".")[1:], [], id(node) in in_function


def _unit(parts):
    """The top-level module or package a module belongs to."""
    return parts[0] if parts else "__init__"


def _violations():
    found = []
    for path, parts in _modules():
        unit = _unit(parts)
        if unit not in LAYERS:
            found.append(f"{'.'.join(parts)}: not assigned to a layer")
            continue
        shim = SHIM_MARK in path.read_text()
        for target, names, inside in _imports(path, parts):
            where = f"{'.'.join(parts)} -> {'.'.join(target) or 'kernelcv'}"
            other = _unit(target)
            if other not in LAYERS:
                found.append(f"{where}: target not assigned to a layer")
                continue
            if LAYERS[other] > LAYERS[unit] and not shim:
                found.append(f"{where}: upward import (layer {LAYERS[unit]} imports "
                             f"layer {LAYERS[other]})")
            if other != unit:
                private = [n for n in names if n.startswith("_") and n != "__version__"]
                if private:
                    found.append(f"{where}: private name(s) {', '.join(private)} across "
                                 "packages")
                if any(p.startswith("_") and p != "__init__" for p in target[1:]):
                    found.append(f"{where}: private module across packages")
            if inside and unit != "cli":
                found.append(f"{where}: kernelcv import inside a function")
    return found


def test_every_module_is_in_a_layer_and_imports_only_downwards():
    assert _violations() == []


@pytest.mark.parametrize("source,expected", [
    ("from ..estimators import ESTIMATORS\n", "upward import"),
    ("from ..reports.io import _hidden\n", "private name"),
    ("def f():\n    from ..kernels import make_kernel\n", "inside a function"),
    ("from ..estimators._base import thing\n", "private module"),
])
def test_the_checker_catches_each_rule(tmp_path, monkeypatch, source, expected):
    fake = tmp_path / "kernelcv"
    (fake / "selection").mkdir(parents=True)
    (fake / "selection" / "probe.py").write_text(source)
    monkeypatch.setattr(f"{__name__}.SRC", fake)
    assert any(expected in line for line in _violations())


def test_the_documented_layer_list_is_the_one_the_test_reads():
    # docs/architecture.md shows tools/layers.txt as `make architecture` writes it
    spec = importlib.util.spec_from_file_location("import_graph", TOOLS / "import_graph.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    start, end = tool.BLOCKS["layers"]
    text = tool.DOCS.read_text(encoding="utf-8")
    shown = text.split(start, 1)[1].split(end, 1)[0].strip()
    assert shown == tool.layers_block(), "run `make architecture`"


def test_front_doors_stay_narrow_and_method_names_stop_at_the_cli():
    # issue 39: no public function or constructor over 15 parameters (options travel as
    # objects), and no CV method's name compared as a string below cli/ (method objects,
    # Criterion members and named constants instead)
    spec = importlib.util.spec_from_file_location("import_graph", TOOLS / "import_graph.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    figures = tool.figures_block()
    assert f"more than {tool.MANY_PARAMETERS} parameters: 0." in figures, figures
    assert "as a string outside `cli/`: 0." in figures, figures
