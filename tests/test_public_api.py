"""One public API: every function and class the chapters, the README and the benchmarks import
from the package is exported at its top level (``synpmx_lite.__all__``), as the same object.

Constants (UPPER_CASE names: a chapter's thresholds, the stored results' settings) stay with the
module they configure, and a subpackage's module may be imported as a module. The benchmarks
alone may import a private name, to time one internal step of a computation on its own.
"""

import ast
import importlib
import re
from pathlib import Path

import jupytext
import pytest

import synpmx_lite

ROOT = Path(__file__).resolve().parents[1]


def code_of(path: Path) -> str:
    """The Python a chapter, a benchmark or the README runs."""
    if path.suffix == ".md" and path.parent.name == "book":
        notebook = jupytext.read(path)
        return "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    if path.suffix == ".md":
        return "\n".join(re.findall(r"```python\n(.*?)```", path.read_text(), re.S))
    return path.read_text()


def imported_names(code: str) -> list[tuple[str, str]]:
    """Each ``(module, name)`` of ``from synpmx_lite... import name`` in ``code``."""
    return [
        (node.module, alias.name)
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("synpmx_lite")
        for alias in node.names
    ]


def unexported(path: Path) -> list[str]:
    """The names ``path`` imports that the public API should hold and does not."""
    missing = []
    for module_name, name in imported_names(code_of(path)):
        value = getattr(importlib.import_module(module_name), name)
        if name.isupper() or isinstance(value, type(synpmx_lite)):
            continue
        if name.startswith("_") and path.parent.name == "benchmarks":
            continue
        if name not in synpmx_lite.__all__ or getattr(synpmx_lite, name) is not value:
            missing.append(f"{module_name}.{name}")
    return missing


USERS = sorted(
    [*(ROOT / "book").glob("*.md"), *(ROOT / "benchmarks").glob("*.py"), ROOT / "README.md"]
)


@pytest.mark.parametrize("path", USERS, ids=lambda path: path.name)
def test_every_function_and_class_the_book_uses_is_in_the_public_api(path):
    assert unexported(path) == []


def test_a_name_left_out_of_the_public_api_is_found(monkeypatch, tmp_path):
    (tmp_path / "benchmarks").mkdir()
    benchmark = tmp_path / "benchmarks" / "bench_scratch.py"
    benchmark.write_text(
        "from synpmx_lite.plotting import theme_book\n"
        "from synpmx_lite.generator.utility import BAND_RANGE, _rounded\n"
        "from synpmx_lite.pmx import population\n"
    )
    assert unexported(benchmark) == []  # a constant, a benchmark's private name, a module
    exported = [name for name in synpmx_lite.__all__ if name != "theme_book"]
    monkeypatch.setattr(synpmx_lite, "__all__", exported)
    assert unexported(benchmark) == ["synpmx_lite.plotting.theme_book"]
    chapter = tmp_path / "chapter.py"
    chapter.write_text("from synpmx_lite.generator.utility import _rounded\n")
    assert unexported(chapter) == ["synpmx_lite.generator.utility._rounded"]


def test_every_exported_name_exists():
    assert sorted(set(synpmx_lite.__all__)) == sorted(synpmx_lite.__all__)
    assert [name for name in synpmx_lite.__all__ if not hasattr(synpmx_lite, name)] == []
