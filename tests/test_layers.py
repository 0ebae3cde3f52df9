"""Imports only go down the package's layers, and no module imports itself round a circle.

The layers, from the bottom: the shared helpers (the top-level modules), then the PMX engine
(``pmx``) and Fisher leakage (``fisher``) side by side, then the generator, then the attacks.
Every import is read from the source with ``ast`` (those inside functions too, and calls of
``importlib.import_module`` or ``__import__`` with a literal name), so a lazy import cannot hide a
layer broken at run time. An import of the package itself (``from synpmx_lite import x``,
``from .. import x`` naming no module) loads every layer through ``__init__``; it is refused
inside the package.
"""

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "synpmx_lite"

#: The name of the package's own ``__init__`` in the import graph.
ROOT = "<synpmx_lite>"

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
    """The package's modules that ``path`` imports, as dotted names below the package (a name
    imported from a module may stand for a submodule; :func:`import_graph` walks up to one)."""
    folder = list(path.relative_to(package).parts[:-1])  # where a relative import starts
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            anchor = folder[: len(folder) - node.level + 1]
            target = [*anchor, *(node.module.split(".") if node.module else [])]
            found.update(".".join([*target, alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and _in_package(node.module or "", package):
            target = node.module.removeprefix(package.name).lstrip(".")
            found.update(f"{target}.{alias.name}".lstrip(".") for alias in node.names)
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
            found.update(_below(name, package) for name in names if _in_package(name, package))
        elif (name := _dynamic_import(node)) is not None and _in_package(name, package):
            found.add(_below(name, package))
    return found


def _in_package(name: str, package: Path) -> bool:
    return name == package.name or name.startswith(package.name + ".")


def _below(name: str, package: Path) -> str:
    """``synpmx_lite.pmx.study`` as ``pmx.study``; the package itself as ``""``."""
    return name.removeprefix(package.name).lstrip(".")


def _dynamic_import(node: ast.AST) -> str | None:
    """The literal module name of an ``importlib.import_module(...)`` or ``__import__(...)``."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0]
    if called in {"import_module", "__import__"} and isinstance(first, ast.Constant):
        return first.value if isinstance(first.value, str) else None
    return None


def layer(module: str) -> str:
    head = module.split(".")[0]
    return head if head in ALLOWED or module == ROOT else ""


@functools.cache
def import_graph(package: Path) -> dict[str, set[str]]:
    """Each module's imports of the package's modules. The top-level ``__init__`` imports none
    (it hands on the public API from every layer), but an import of it, or of a name it holds,
    is an edge to :data:`ROOT`. Read once per package (three tests read the package's; each
    broken package is a test's own folder)."""
    modules = {module_name(path, package): path for path in package.rglob("*.py")}
    modules.pop("", None)
    graph = {}
    for name, path in modules.items():
        targets = set()
        for target in imported_modules(path, package):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            target = target or ROOT
            if target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def layer_violations(package: Path) -> list[str]:
    """Imports that go up or sideways, as ``"importer -> imported"``."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in import_graph(package).items()
        for target in targets
        if target == ROOT
        or (layer(target) != layer(module) and layer(target) not in ALLOWED[layer(module)])
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


def subpackages(package: Path) -> set[str]:
    """Every folder of the package that holds Python, with an ``__init__.py`` or without one (a
    namespace package imports as well)."""
    return {
        path.relative_to(package).parts[0]
        for path in package.rglob("*.py")
        if len(path.relative_to(package).parts) > 1
    }


def test_every_subpackage_is_a_layer():
    """A new subpackage must be placed in ``ALLOWED``: unlisted, it would pass as a shared
    helper that the engine could import."""
    assert subpackages(PACKAGE) <= set(ALLOWED)


def test_a_folder_without_an_init_is_a_subpackage_too(tmp_path):
    # Found in review: a folder of modules without __init__.py went unseen, and so counted as a
    # shared helper.
    (tmp_path / "pmx").mkdir()
    (tmp_path / "pmx" / "__init__.py").write_text("")
    (tmp_path / "release_ledger").mkdir()
    (tmp_path / "release_ledger" / "core.py").write_text("")
    (tmp_path / "shared.py").write_text("")
    assert subpackages(tmp_path) == {"pmx", "release_ledger"}


@pytest.fixture
def broken_package(tmp_path: Path) -> Path:
    """A package whose engine imports the generator (once through importlib) and the package
    itself, whose Fisher code imports the engine and the package itself, whose shared helper
    imports the engine lazily, and whose generator holds a circle."""
    package = tmp_path / "synpmx_lite"
    files = {
        "__init__.py": "from .generator.a import A\n",
        "shared.py": "def helper():\n    from .pmx import study\n",
        "pmx/__init__.py": "",
        "pmx/study.py": "from ..generator.a import A\n",
        "pmx/pk.py": "from .. import A\n",
        "pmx/pd.py": "def lazy():\n    importlib.import_module('synpmx_lite.generator.b')\n",
        "fisher/__init__.py": "",
        "fisher/leakage.py": "import synpmx_lite.pmx.study\nfrom synpmx_lite import pmx\n",
        "fisher/bounds.py": "import synpmx_lite\n",
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
        f"fisher.bounds -> {ROOT}",
        "fisher.leakage -> pmx",
        "fisher.leakage -> pmx.study",
        "pmx.pd -> generator.b",
        f"pmx.pk -> {ROOT}",
        "pmx.study -> generator.a",
        "shared -> pmx.study",
    ]


def test_the_cycle_check_finds_a_circle(broken_package):
    assert import_cycles(broken_package) == [["generator.a", "generator.b", "generator.a"]]
