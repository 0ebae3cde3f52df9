"""The README's workflows, tried on a scratch book with one chapter (tests/book/scratch.py),
and the parts of the book's extension that keep the files it writes the same on every build.

The tests of the one-chapter book's edits share one such book, taken through their builds
once (``one_chapter_book``).
"""

import ast
import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import jupytext
import nbformat
import pytest
import yaml
from jupytext.cli import jupytext as jupytext_cli
from myst_nb.ext.glue.crossref import read_glue_cache

from tests.book.scratch import (
    REPOSITORY,
    ROOT,
    book_execution,
    build,
    make_book,
    static_links,
    write_chapter,
)


def downloads(book: Path) -> list[bytes | None]:
    """The chapter's executed notebook, as kept and as offered for download."""
    folders = [book / "_build" / folder / "book" for folder in ("jupyter_execute", "html/_sources")]
    paths = [folder / "chapter.ipynb" for folder in folders]
    return [path.read_bytes() if path.exists() else None for path in paths]


def built(book: Path) -> SimpleNamespace:
    """The README's build command on ``book``, and what it left: its log, the chapter's page
    and its executed notebooks (read now: the next build rewrites them)."""
    result = build(book)
    html = book / "_build" / "html" / "book" / "chapter.html"
    return SimpleNamespace(
        returncode=result.returncode,
        log=result.stdout + result.stderr,
        page=html.read_text() if html.exists() else "",
        downloads=downloads(book),
    )


# The one-chapter book's chapter: it reads the package, and glues a value.
GLUED = (
    "import scratchpkg\nfrom myst_nb import glue\n"
    "glue('value', scratchpkg.VALUE, display=False)\nprint(f'value={scratchpkg.VALUE}')"
)


@pytest.fixture(scope="module")
def one_chapter_book(tmp_path_factory) -> SimpleNamespace:
    """One scratch book with one chapter taken through the README's workflows in turn, each
    build's outcome kept for the tests below, which only read them (four builds, where each
    test building its own book took six):

    1. the README's command making a notebook of the chapter, then an edit of the chapter;
    2. a cold build;
    3. the same build again, nothing changed;
    4. a build after the chapter is read again, its code unchanged (its time stamp moved);
    5. a build after a one-line edit of the package alone.
    """
    book = make_book(tmp_path_factory.mktemp("one_chapter_book"))
    # The README's command, by jupytext's own command-line entry in this process.
    assert jupytext_cli(["--to", "notebook", str(book / "book" / "chapter.md")]) == 0
    notebook_made = (book / "book" / "chapter.ipynb").exists()
    chapter = write_chapter(book, GLUED, "print('edited')")
    cold = built(book)
    unchanged = built(book)
    # Read again, its code unchanged: Sphinx reads again a page changed since it last read
    # it. Stamped with the present moment, after the last build's reading and before the next
    # one's, so that only the next build reads it for its time stamp: a stamp in the future
    # would make the package-edit build read it again too, and that test would pass without
    # the extension sending the pages back to be read.
    now = time.time()
    os.utime(chapter, (now, now))
    read_again = built(book)
    (book / "scratchpkg" / "__init__.py").write_text("VALUE = 2\n")
    edited = built(book)
    return SimpleNamespace(
        notebook_made=notebook_made,
        cold=cold,
        unchanged=unchanged,
        read_again=read_again,
        edited=edited,
    )


def test_a_notebook_made_from_a_chapter_is_neither_read_nor_committed(one_chapter_book):
    # The README's command, then an edit of the chapter, then the README's build command.
    assert one_chapter_book.notebook_made
    cold = one_chapter_book.cold
    assert cold.returncode == 0, cold.log
    assert "edited" in cold.page
    # The launch buttons open the chapter, the file the repository holds.
    assert "lab/tree/book/chapter.md" in cold.page
    assert "tree/book/chapter.ipynb" not in cold.page
    # The repository's buttons follow repository.url; the download menu keeps the notebook.
    assert f'href="{REPOSITORY}"' in cold.page
    assert 'href="../_sources/book/chapter.ipynb"' in cold.page
    ignored = subprocess.run(
        ["git", "-C", ROOT, "check-ignore", "-q", "book/privacy_protections.ipynb"], check=False
    )
    assert ignored.returncode == 0, "generated notebooks must be ignored by git"


def test_editing_the_package_re_executes_the_chapter(one_chapter_book):
    cold, unchanged = one_chapter_book.cold, one_chapter_book.unchanged
    assert cold.returncode == 0, cold.log
    assert "value=1" in cold.page
    assert unchanged.returncode == 0
    assert "Executing notebook" not in unchanged.log
    # A one-line edit of the package alone, the chapter untouched (since the cold build it
    # was only read again from the cache, its code unchanged).
    edited = one_chapter_book.edited
    assert edited.returncode == 0, edited.log
    assert "Executing notebook" in edited.log
    assert "value=2" in edited.page
    # The rewritten page links the same static files, with the same checksums, as the first.
    assert static_links(edited.page) == static_links(cold.page)


def test_a_chapter_read_from_the_cache_is_downloaded_as_when_it_executed(one_chapter_book):
    # Found in review: after a rebuild that read a chapter again from the cache (a prose edit,
    # a configuration change), the executed notebook offered for download had no outputs.
    cold, again = one_chapter_book.cold, one_chapter_book.read_again
    assert cold.returncode == 0, cold.log
    executed = cold.downloads
    assert again.returncode == 0, again.log
    assert "Using cached notebook" in again.log
    assert again.downloads == executed
    assert nbformat.reads(executed[0], 4).cells[1].outputs[0].text == "value=1\n"


def test_a_page_pasting_a_chapters_value_follows_an_edit_of_the_chapter(tmp_path):
    # The landing page pastes the chapters' numbers (myst-nb's glue across pages, pasted when
    # a page is written): an edit of a chapter alone must rewrite the page that quotes it.
    book = make_book(tmp_path)
    (book / "book" / "intro.md").write_text(
        "# Scratch book\n\nPasted: {glue:text}`chapter.md::value:.2f`.\n"
    )
    for value in (1.5, 2.5):
        write_chapter(book, f"from myst_nb import glue\nglue('value', {value}, display=False)")
        read_glue_cache.cache_clear()  # in memory from the last build; a new process has none
        result = build(book)
        assert result.returncode == 0, result.stdout + result.stderr
        intro = (book / "_build" / "html" / "book" / "intro.html").read_text()
        assert f'<span class="pasted-text">{value:.2f}</span>' in intro


def test_source_digest_follows_content_and_names_but_not_caches(tmp_path):
    package = tmp_path / "pkg"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("A = 1\n")
    (package / "data" / "table.csv").write_text("x\n1\n")

    def digest():
        return book_execution.source_digest([package], tmp_path)

    before = digest()
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (package / ".swap").write_text("editor")
    assert digest() == before
    (package / "data" / "table.csv").write_text("x\n2\n")
    changed_data = digest()
    assert changed_data != before
    (package / "data" / "table.csv").rename(package / "data" / "other.csv")
    assert digest() != changed_data
    with pytest.raises(FileNotFoundError, match="execution_depends_on"):
        book_execution.source_digest([tmp_path / "missing"], tmp_path)


def test_steady_notebook_numbers_cells_and_drops_memory_addresses():
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Title"),
            nbformat.v4.new_code_cell(
                "figure",
                outputs=[
                    nbformat.v4.new_output(
                        "display_data",
                        data={
                            "text/plain": "<plotnine.ggplot.ggplot object at 0x7f54c76d2990>",
                            "image/png": "iVBORw0KGgo=",
                        },
                    )
                ],
            ),
        ]
    )
    steady = book_execution.steady_notebook(notebook)
    assert [cell.id for cell in steady.cells] == ["cell-0", "cell-1"]
    output = steady.cells[1].outputs[0].data
    assert output["text/plain"] == "<plotnine.ggplot.ggplot object>"
    assert output["image/png"] == "iVBORw0KGgo="
    nbformat.validate(steady)


def test_steady_notebook_merges_a_cells_prints_however_the_kernel_flushed_them():
    # Found in review: two cold builds split one cell's two prints differently.
    pieces = [
        nbformat.v4.new_output("stream", name="stdout", text=text)
        for text in ("merged: withheld\n", "categories released: ['sex']\n")
    ]
    whole = nbformat.v4.new_output(
        "stream", name="stdout", text="merged: withheld\ncategories released: ['sex']\n"
    )
    split, joined = (
        book_execution.steady_notebook(
            nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("", outputs=outputs)])
        )
        for outputs in (pieces, [whole])
    )
    assert split == joined
    assert len(split.cells[0].outputs) == 1
    nbformat.validate(split)


def test_pages_merge_a_cells_prints_as_the_downloaded_notebooks_do():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["config"]["nb_merge_streams"] is True


def _names(source: str) -> tuple[set[str], set[str]]:
    """Names a cell defines and names it reads (IPython magics skipped)."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("%"))
    defined, read = set(), set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (defined if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            defined.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined.add(node.name)
    return defined, read


CHAPTERS = sorted(p for p in (ROOT / "book").glob("*.md") if p.read_text().startswith("---"))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_live_code_can_run_every_cell_a_reader_sees(chapter):
    # Thebe runs only the cells on the page: a removed cell's definitions never reach it.
    visible_names, removed_names, missing = set(), set(), []
    for cell in jupytext.read(chapter).cells:
        if cell.cell_type != "code":
            continue
        defined, read = _names(cell.source)
        if "remove-cell" in cell.metadata.get("tags", []):
            removed_names |= defined - visible_names
            continue
        # A name the cell defines itself (a loop or comprehension variable) is its own.
        missing += sorted((read & removed_names) - visible_names - defined)
        visible_names |= defined
    assert not missing, f"defined only in removed cells: {missing} (tag them hide-cell)"
