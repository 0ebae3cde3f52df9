"""Imports only go down the package's layers, and no module imports itself round a circle.

The layers, from the bottom: the shared helpers (the top-level modules), then the PMX engine
(``pmx``) and Fisher leakage (``fisher``) side by side, then the generator, then the attacks.
Every import is read from the source with ``ast`` (those inside functions too), so a lazy import
cannot hide a layer broken at run time.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "synpmx_lite"

#: What each layer may import besides itself; the shared helpers are the layer ``""``.
ALLOWED = {
    "": set(),
    "pmx": {""},
    "fisher": {""},
    "generator": {"pmx", ""},
    "attacks": {"generator", "pmx", ""},
}


def module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, package: Path) -> set[str]:
    """The package's modules that ``path`` imports, as dotted names below the package."""
    folder = list(path.relative_to(package).parts[:-1])  # where a relative import starts
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            anchor = folder[: len(folder) - node.level + 1]
            target = [*anchor, *(node.module.split(".") if node.module else [])]
            # "from . import x" and "from .m import x": x may be a module; the graph walks up
            found.update(".".join([*target, alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package.name):
            target = node.module.removeprefix(package.name).lstrip(".")
            found.update(f"{target}.{alias.name}".lstrip(".") for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(package.name + "."):
                    found.add(alias.name.removeprefix(package.name + "."))
    return {name for name in found if name}


def layer(module: str) -> str:
    head = module.split(".")[0]
    return head if head in ALLOWED else ""


def import_graph(package: Path) -> dict[str, set[str]]:
    """Each module's imports of the package's modules (the top-level ``__init__`` excluded:
    it hands on the public API from every layer)."""
    modules = {module_name(path, package): path for path in package.rglob("*.py")}
    modules.pop("", None)
    graph = {}
    for name, path in modules.items():
        targets = set()
        for target in imported_modules(path, package):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def layer_violations(package: Path) -> list[str]:
    """Imports that go up or sideways, as ``"importer -> imported"``."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in import_graph(package).items()
        for target in targets
        if layer(target) != layer(module) and layer(target) not in ALLOWED[layer(module)]
    )


def import_cycles(package: Path) -> list[list[str]]:
    """Circles of imports, each as the modules along it."""
    graph, cycles, state = import_graph(package), [], {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                cycles.append([*trail[trail.index(target) :], target])
            elif target not in state:
                visit(target, [*trail, target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return cycles


def test_imports_only_go_down_the_layers():
    assert layer_violations(PACKAGE) == []


def test_no_module_imports_itself_round_a_circle():
    assert import_cycles(PACKAGE) == []


def test_every_layer_holds_modules():
    layers = {layer(module) for module in import_graph(PACKAGE)}
    assert layers == set(ALLOWED)


@pytest.fixture
def broken_package(tmp_path: Path) -> Path:
    """A package whose engine imports the generator, whose Fisher code imports the engine,
    whose shared helper imports the engine lazily, and whose generator holds a circle."""
    package = tmp_path / "synpmx_lite"
    files = {
        "__init__.py": "from .generator.a import A\n",
        "shared.py": "def helper():\n    from .pmx import study\n",
        "pmx/__init__.py": "",
        "pmx/study.py": "from ..generator.a import A\n",
        "fisher/__init__.py": "",
        "fisher/leakage.py": "import synpmx_lite.pmx.study\nfrom synpmx_lite import pmx\n",
        "generator/__init__.py": "",
        "generator/a.py": "from .b import B\nA = 1\n",
        "generator/b.py": "from . import a\nB = 2\n",
        "attacks/__init__.py": "",
        "attacks/m.py": "from ..generator import a\nfrom ..shared import helper\n",
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    return package


def test_the_layer_check_finds_imports_up_sideways_and_inside_functions(broken_package):
    assert layer_violations(broken_package) == [
        "fisher.leakage -> pmx",
        "fisher.leakage -> pmx.study",
        "pmx.study -> generator.a",
        "shared -> pmx.study",
    ]


def test_the_cycle_check_finds_a_circle(broken_package):
    assert import_cycles(broken_package) == [["generator.a", "generator.b", "generator.a"]]
