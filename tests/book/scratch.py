"""Scratch books for the book's tests: the project's configuration, chapters of the test's
own, and the README's build command run on them.

A scratch book is written under the repository's ``_config.yml`` and ``book/_ext`` extension,
so the configuration is what is under test, not the chapters.
"""

import os
import re
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import yaml
from click.testing import CliRunner
from jupyter_book.cli.main import main as jupyter_book_cli

ROOT = Path(__file__).resolve().parents[2]
# The book's extension, for the tests of its parts: from tests.book.scratch import book_execution
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import book_execution  # noqa: E402, F401

BIN = Path(sys.executable).parent
HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


CHAPTER_NAMES = ("chapter", "second", "third")
REPOSITORY = "https://github.com/example-owner/example-book"


def write_chapter(
    book: Path, *cells: str, title: str = "Chapter", name: str = "chapter", text: str = ""
) -> Path:
    body = "".join(f"\n```{{code-cell}} ipython3\n{cell}\n```\n" for cell in cells)
    path = book / "book" / f"{name}.md"
    path.write_text(f"{HEADER}\n# {title}\n{text}\n{body}")
    return path


# Every build imports jsonschema (Jupyter Book checks its configuration with it), which imports
# rfc3987_syntax if installed (jsonschema[format-nongpl], needed by jupyter-events, JupyterLab's)
# and so compiles 38 Lark parsers for the "iri" string formats: 1.3 s of CPU, a third of a
# scratch book's build (jsonschema issue 1428). No schema of the build has such a format, or is
# checked with formats at all, so the builds here find a module of that name that fails to
# import, and jsonschema goes without those two format checks, as without rfc3987_syntax: the
# builds in this process by tests/conftest.py, those in a process of their own (the interrupt
# tests') by this file on their PYTHONPATH.
NO_RFC3987_SYNTAX = '"""Left out of the test builds (tests/book/scratch.py)."""\n' + (
    'raise ImportError("rfc3987_syntax is left out of the test builds")\n'
)


def make_book(path: Path) -> Path:
    """A scratch book at ``path``: the project's configuration, one chapter, one package
    ``scratchpkg``, and beside it the stand-in for ``rfc3987_syntax`` (on the builds'
    PYTHONPATH, the book's folder)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    extensions = config["sphinx"]["local_extensions"]
    config["sphinx"]["local_extensions"] = dict.fromkeys(extensions, str(ROOT / "book" / "_ext"))
    config["sphinx"]["config"]["execution_depends_on"] = ["scratchpkg"]
    # A book with a home: its launch buttons are rendered (they follow repository.url).
    config["repository"]["url"] = REPOSITORY
    config["sphinx"]["config"]["execution_workers"] = 2
    # The book's slowest chapters are not pages of this one (the order is tested on its own).
    config["sphinx"]["config"]["execution_slowest_first"] = []
    (path / "_config.yml").write_text(yaml.safe_dump(config))
    (path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n  - file: book/chapter\n"
    )
    shutil.copytree(ROOT / "book" / "_static", path / "book" / "_static")
    for bibfile in config["bibtex_bibfiles"]:
        (path / bibfile).write_text("")
    (path / "book" / "intro.md").write_text("# Scratch book\n\nIts one chapter.\n")
    (path / "scratchpkg").mkdir()
    (path / "scratchpkg" / "__init__.py").write_text("VALUE = 1\n")
    (path / "rfc3987_syntax.py").write_text(NO_RFC3987_SYNTAX)
    write_chapter(path, "import scratchpkg\nprint(f'value={scratchpkg.VALUE}')")
    return path


def build(book: Path) -> subprocess.CompletedProcess:
    """The README's build command (warnings are errors, every failing chapter reported), run
    in this process: jupyter-book's own command-line entry, with the book's folder on the
    PYTHONPATH its kernels get, and its output and exit code as the command's would be.

    In this process because Sphinx, myst-nb and the book's extension are imported already: a
    new process per build spent 1.7 of its 2.6 CPU-seconds importing them. The tests that
    signal a build (tests/book/test_interrupts.py) start the command itself.
    """
    args = ["build", str(book), "-W", "-n", "--keep-going"]
    result = CliRunner().invoke(jupyter_book_cli, args, env={"PYTHONPATH": str(book)})
    stderr = result.stderr
    if result.exc_info and not isinstance(result.exception, SystemExit):
        # What Python prints of an exception that ends the command.
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(
        [BIN / "jupyter-book", *args], result.exit_code, result.stdout, stderr
    )


def page(book: Path, name: str = "chapter") -> str:
    return (book / "_build" / "html" / "book" / f"{name}.html").read_text()


def static_links(html: str) -> list[str]:
    return re.findall(r'_static/[^"]+', html)


def use_chapters(book: Path, **chapters: str) -> None:
    """Replace the scratch book's chapters by ``name=code`` chapters, in the table of contents."""
    (book / "book" / "chapter.md").unlink()
    for name, code in chapters.items():
        write_chapter(book, code, name=name)
    toc = "format: jb-book\nroot: book/intro\nchapters:\n"
    (book / "_toc.yml").write_text(toc + "".join(f"  - file: book/{n}\n" for n in chapters))


SLEEPER = "import os, time\nopen('{0}.pid', 'w').write(str(os.getpid()))\ntime.sleep({1})"


def hold_the_intro(book: Path, then: str) -> None:
    """Make reading the intro page wait until two chapters' kernels run, and then do ``then``.

    A scratch extension, loaded by the scratch book: Sphinx is reading a page that executes
    nothing while the chapters run.
    """
    folder = book / "scratch_ext"
    folder.mkdir()
    (folder / "hold_intro.py").write_text(
        "import time\nfrom pathlib import Path\n\n\n"
        "def hold(app, docname, source):\n"
        "    if docname != 'book/intro':\n"
        "        return\n"
        "    pids = [Path(app.srcdir, 'book', f'{n}.pid') for n in ('chapter', 'second')]\n"
        "    while not all(pid.exists() and pid.read_text() for pid in pids):\n"
        "        time.sleep(0.1)\n"
        "    Path(app.srcdir, 'reading_intro').write_text('')\n"
        f"    {then}\n\n\n"
        "def setup(app):\n"
        "    app.connect('source-read', hold)\n"
        "    return {'parallel_read_safe': True}\n"
    )
    config = yaml.safe_load((book / "_config.yml").read_text())
    config["sphinx"]["local_extensions"]["hold_intro"] = str(folder)
    (book / "_config.yml").write_text(yaml.safe_dump(config))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
