"""Print the internal import graph of kernelcv (stdlib ``ast`` only; nothing is imported).

For each module of ``src/kernelcv``: ``module -> the kernelcv modules it imports``, an
import made inside a function body marked ``(in function)``. With ``--packages`` the
modules collapse to their top-level package or module, each shown with its layer from
the list below (lower first; a layer may import only from itself and lower layers, as
``tests/test_layers.py`` checks), and an import of a higher layer is marked
``(upward)``, or ``(upward, deprecated re-export)`` when only shims marked
``# layer-exempt: deprecated re-export`` make it::

    python tools/import_graph.py               # module by module
    python tools/import_graph.py --packages    # top-level packages with their layers
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "kernelcv"

LAYER_FILE = Path(__file__).resolve().with_name("layers.txt")


def read_layers(path: Path = LAYER_FILE) -> list[tuple[tuple[str, ...], str]]:
    """The layers of ``tools/layers.txt``, lowest first: ``(names, description)``."""
    layers = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        names, _, description = line.partition("|")
        layers.append((tuple(names.split()), description.strip()))
    return layers


# Lower first; each layer may import only from itself and the layers below.
LAYERS = tuple(names for names, _ in read_layers())
LAYER = {name: number for number, names in enumerate(LAYERS) for name in names}
SHIM_MARK = "# layer-exempt: deprecated re-export"


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package."""
    modules = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names (resolving leading dots)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    if not is_package:
        parts.pop()
    if node.level > 1:
        parts = parts[:len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` is or lies in."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


class _Imports(ast.NodeVisitor):
    """Collects (imported kernelcv module, inside a function?) pairs of one module."""

    def __init__(self, module: str, is_package: bool, modules: dict[str, Path]):
        self.module, self.is_package, self.modules = module, is_package, modules
        self.found: dict[str, bool] = {}  # target -> imported inside a function (at least once)
        self.depth = 0

    def _add(self, name: str):
        target = _owner(name, self.modules)
        if target is None or target == self.module:
            return
        self.found[target] = self.found.get(target, False) or self.depth > 0

    def visit_FunctionDef(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name.split(".")[0] == PACKAGE:
                self._add(alias.name)

    def visit_ImportFrom(self, node):
        base = _base(self.module, self.is_package, node)
        if base.split(".")[0] != PACKAGE:
            return
        for alias in node.names:  # `from pkg import submodule` names a module
            full = f"{base}.{alias.name}"
            self._add(full if full in self.modules else base)


def import_graph(root: Path = ROOT) -> tuple[dict[str, dict[str, bool]], set[str]]:
    """module -> {imported kernelcv module: imported inside a function somewhere}, and the
    modules that are deprecated re-exports (shims)."""
    modules = module_names(root)
    graph, shims = {}, set()
    for module, path in modules.items():
        source = path.read_text(encoding="utf-8")
        visitor = _Imports(module, path.name == "__init__.py", modules)
        visitor.visit(ast.parse(source, filename=str(path)))
        graph[module] = visitor.found
        if SHIM_MARK in source:
            shims.add(module)
    return graph, shims


def top_level(module: str) -> str:
    """``kernelcv.selection.search`` -> ``selection``; the package itself stays ``kernelcv``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _label(name: str) -> str:
    layer = LAYER.get(name)
    return f"{name} [{'-' if layer is None else layer}]"


def collapse(graph: dict[str, dict[str, bool]], shims: set[str]):
    """The graph between top-level packages and modules (imports inside one dropped), and
    the edges that only shims make."""
    packages: dict[str, dict[str, bool]] = {}
    by_shims: dict[tuple[str, str], bool] = {}  # edge -> made by shims only
    for module, targets in graph.items():
        source = top_level(module)
        edges = packages.setdefault(source, {})
        for target, in_function in targets.items():
            name = top_level(target)
            if name != source:
                edges[name] = edges.get(name, False) or in_function
                by_shims[source, name] = by_shims.get((source, name), True) and (
                    module in shims)
    return packages, {edge for edge, only in by_shims.items() if only}


def render(graph: dict[str, dict[str, bool]], layers: bool,
           shim_edges: set[tuple[str, str]] = frozenset(),
           shims: set[str] = frozenset()) -> list[str]:
    order = sorted(graph, key=lambda name: (LAYER.get(name, len(LAYERS)), name)) if layers \
        else sorted(graph)
    lines = []
    for source in order:
        items = []
        for target in sorted(graph[source], key=lambda name: (LAYER.get(name, -1), name)):
            text = _label(target) if layers else target
            marks = []
            if graph[source][target]:
                marks.append("in function")
            if layers and LAYER.get(target, -1) > LAYER.get(source, len(LAYERS)):
                marks.append("upward, deprecated re-export" if (source, target) in shim_edges
                             else "upward")
            items.append(f"{text} ({', '.join(marks)})" if marks else text)
        head = _label(source) if layers else source
        if source in shims:
            head += " (deprecated re-export)"
        lines.append(f"{head} -> {', '.join(items) if items else '(nothing)'}")
    return lines


DOCS = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
BLOCKS = {"layers": ("<!-- layers: written by make architecture from tools/layers.txt -->",
                     "<!-- end of layers -->"),
          "figures": ("<!-- figures: written by make architecture -->",
                      "<!-- end of figures -->")}
# The CV methods' names: a comparison with one of them below cli/ is a string that
# should have stopped at the command line (issue 39).
METHOD_NAMES = ("exact", "closed-form", "bif", "gacv", "rff", "spectral")
MANY_PARAMETERS = 15


def layers_block() -> str:
    """The layer list as docs/architecture.md shows it, lowest first."""
    layers = [(", ".join(names), description) for names, description in read_layers()]
    width = max(len(names) for names, _ in layers)
    lines = ["```"]
    for number, (names, description) in enumerate(layers):
        lines.append(f"{number}  {names:<{width}}  {description}")
    lines.append("```")
    return "\n".join(lines)


def figures_block(root: Path = ROOT) -> str:
    """Counts that track the architecture's debts, from the source (no import)."""
    sizes: dict[str, list[int]] = {}
    many, comparisons = [], 0
    names = "|".join(map(re.escape, METHOD_NAMES))
    pattern = re.compile(rf"""(==|!=)\s*["']({names})["']|["']({names})["']\s*(==|!=)""")
    for path in sorted((root / PACKAGE).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        parts = path.relative_to(root / PACKAGE).parts
        package = parts[0].removesuffix(".py") if len(parts) == 1 else parts[0]
        entry = sizes.setdefault(package, [0, 0])
        entry[0] += 1
        entry[1] += text.count("\n")
        if parts[0] != "cli":
            comparisons += len(pattern.findall(text))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not (
                    node.name.startswith("_") and node.name != "__init__"):
                arguments = node.args
                count = (len(arguments.posonlyargs) + len(arguments.args)
                         + len(arguments.kwonlyargs))
                if arguments.args and arguments.args[0].arg in ("self", "cls"):
                    count -= 1
                if count > MANY_PARAMETERS:
                    many.append(f"`{'/'.join(parts)}:{node.name}` ({count})")
    lines = ["| package or module | modules | lines |", "|---|---|---|"]
    for package, (modules, lines_of_code) in sorted(sizes.items(),
                                                    key=lambda item: -item[1][1]):
        if modules > 1 or lines_of_code > 300:
            lines.append(f"| {package} | {modules} | {lines_of_code:,} |")
    lines += ["", f"Public functions and constructors with more than {MANY_PARAMETERS} "
              f"parameters: {len(many)}" + (": " + ", ".join(many) if many else "") + ".",
              "", f"Comparisons with a CV method's name as a string outside `cli/`: "
              f"{comparisons}."]
    return "\n".join(lines)


def write_docs(path: Path = DOCS) -> bool:
    """Rewrite the generated blocks of docs/architecture.md; True when it changed."""
    text = path.read_text(encoding="utf-8")
    updated = text
    for name, content in (("layers", layers_block()), ("figures", figures_block())):
        start, end = BLOCKS[name]
        head, found, rest = updated.partition(start)
        if not found:
            raise SystemExit(f"{path}: no '{start}' marker")
        _, found, tail = rest.partition(end)
        if not found:
            raise SystemExit(f"{path}: no '{end}' marker")
        updated = f"{head}{start}\n{content}\n{end}{tail}"
    if updated != text:
        path.write_text(updated, encoding="utf-8")
    return updated != text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", action="store_true",
                        help="collapse to top-level packages/modules with their layers")
    parser.add_argument("--write-docs", action="store_true",
                        help="rewrite the layer list and figures of docs/architecture.md")
    args = parser.parse_args(argv)
    if args.write_docs:
        print(f"{DOCS}: {'updated' if write_docs() else 'unchanged'}")
        return 0
    graph, shims = import_graph()
    if args.packages:
        packages, shim_edges = collapse(graph, shims)
        lines = render(packages, True, shim_edges)
    else:
        lines = render(graph, False, shims=shims)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
