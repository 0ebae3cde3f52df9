"""The README's workflows, tried on a small book built with the project's own configuration.

Each build test writes a scratch book (a one-cell chapter importing a scratch package) under
the repository's ``_config.yml`` and ``book/_ext`` extension, and runs the README's build
command on it, so the configuration is what is under test, not the chapters. The tests of a
one-chapter book's edits share one such book, taken through their builds once
(``one_chapter_book``); a test whose book differs (more chapters, a failing one, Ctrl-C)
builds its own.
"""

import ast
import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

import jupytext
import nbformat
import pytest
import yaml
from jupyter_cache import get_cache
from sphinx.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import book_execution  # noqa: E402

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
# import, and jsonschema goes without those two format checks, as without rfc3987_syntax.
NO_RFC3987_SYNTAX = '"""Left out of the test builds (tests/book/test_workflows.py)."""\n' + (
    'raise ImportError("rfc3987_syntax is left out of the test builds")\n'
)


def make_book(path: Path) -> Path:
    """A scratch book at ``path``: the project's configuration, one chapter, one package
    ``scratchpkg``, and beside it the stand-in for ``rfc3987_syntax`` (on the builds'
    PYTHONPATH, the book's folder)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["sphinx"]["local_extensions"] = {"book_execution": str(ROOT / "book" / "_ext")}
    config["sphinx"]["config"]["execution_depends_on"] = ["scratchpkg"]
    config["sphinx"]["config"]["execution_workers"] = 2
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


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A scratch book of its own for the test (see make_book)."""
    return make_book(tmp_path)


def build(book: Path) -> subprocess.CompletedProcess:
    """The README's build command (warnings are errors, every failing chapter reported)."""
    return subprocess.run(
        [BIN / "jupyter-book", "build", book, "-W", "-n", "--keep-going"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(book)},
        check=False,
    )


def page(book: Path, name: str = "chapter") -> str:
    return (book / "_build" / "html" / "book" / f"{name}.html").read_text()


def static_links(html: str) -> list[str]:
    return re.findall(r'_static/[^"]+', html)


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
ONE_CHAPTER_BOOK = pytest.mark.xdist_group("one_chapter_book")  # one worker builds it


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
    subprocess.run(
        [BIN / "jupytext", "--to", "notebook", book / "book" / "chapter.md"],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(book)},  # jupytext imports jsonschema too
    )
    notebook_made = (book / "book" / "chapter.ipynb").exists()
    chapter = write_chapter(book, GLUED, "print('edited')")
    cold = built(book)
    unchanged = built(book)
    # Read again, its code unchanged: Sphinx reads again a page changed since it last read
    # it, whatever the time the builds took.
    later = time.time() + 10
    os.utime(chapter, (later, later))
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


@ONE_CHAPTER_BOOK
def test_a_notebook_made_from_a_chapter_is_neither_read_nor_committed(one_chapter_book):
    # The README's command, then an edit of the chapter, then the README's build command.
    assert one_chapter_book.notebook_made
    cold = one_chapter_book.cold
    assert cold.returncode == 0, cold.log
    assert "edited" in cold.page
    # The launch buttons open the chapter, the file the repository holds.
    assert "lab/tree/book/chapter.md" in cold.page
    assert "tree/book/chapter.ipynb" not in cold.page
    ignored = subprocess.run(
        ["git", "-C", ROOT, "check-ignore", "-q", "book/privacy_protections.ipynb"], check=False
    )
    assert ignored.returncode == 0, "generated notebooks must be ignored by git"


@ONE_CHAPTER_BOOK
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


@ONE_CHAPTER_BOOK
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


def test_a_failing_chapter_fails_the_build_and_leaves_its_report(book):
    write_chapter(book, "raise ZeroDivisionError('deliberately broken')")
    result = build(book)
    assert result.returncode != 0
    report = book / "_build" / "html" / "reports" / "book" / "chapter.err.log"
    traceback = re.sub(r"\x1b\[[0-9;]*m", "", report.read_text())  # IPython's colours
    assert "ZeroDivisionError: deliberately broken" in traceback
    assert str(report) in result.stdout + result.stderr
    # Building again without mending it runs the chapter again, and fails again.
    report.unlink()
    again = build(book)
    assert again.returncode != 0
    assert report.exists()
    # Mended, the chapter's report goes: what reports/ holds is this build's failures.
    write_chapter(book, "print('mended')")
    mended = build(book)
    assert mended.returncode == 0, mended.stdout + mended.stderr
    assert not report.exists()


def test_chapters_execute_side_by_side_and_a_failing_one_is_still_reported(book):
    # Each records when it ran; the first holds a numbered table the second cites twice.
    timed = "import time\nstart = time.time()\ntime.sleep(3)\nprint(f'ran {start} {time.time()}')"
    table = ":::{table} A scratch table\n:name: tab-scratch\n\n| a |\n| - |\n| 1 |\n:::\n"
    write_chapter(book, timed, text=table)
    write_chapter(book, timed, name="second", text="{numref}`tab-scratch`, {numref}`tab-scratch`")
    write_chapter(book, "raise ZeroDivisionError('deliberately broken')", name="third")
    toc = "format: jb-book\nroot: book/intro\nchapters:\n"
    (book / "_toc.yml").write_text(toc + "".join(f"  - file: book/{n}\n" for n in CHAPTER_NAMES))
    result = build(book)
    log = result.stdout + result.stderr
    assert result.returncode != 0
    assert "[book_execution] executing 3 chapters, 2 at a time" in log
    # The page that executes nothing was read while the chapters ran.
    plain = re.sub(r"\x1b\[[0-9;]*m", "", log)
    read_intro = re.search(r"reading sources\.\.\. \[ *\d+%\] book/intro", plain)
    assert read_intro.start() < plain.index("[book_execution] executed chapter.md")
    spans = [
        [float(t) for t in re.search(r"ran ([\d.]+) ([\d.]+)", page(book, name)).groups()]
        for name in ("chapter", "second")
    ]
    assert max(start for start, _ in spans) < min(end for _, end in spans), spans
    # myst-nb read the two from the cache; the failing one it ran again, to report it.
    assert log.count("Using cached notebook") == 2
    report = book / "_build" / "html" / "reports" / "book" / "third.err.log"
    assert "ZeroDivisionError: deliberately broken" in re.sub(
        r"\x1b\[[0-9;]*m", "", report.read_text()
    )
    assert page(book, "second").count("Table 1") == 2
    # The cache's records are those myst-nb writes when it executes a chapter itself.
    records = get_cache(book / "_build" / ".jupyter_cache").list_project_records()
    tracebacks = {Path(record.uri).name: record.traceback for record in records}
    assert sorted(tracebacks) == ["chapter.md", "second.md", "third.md"]
    assert tracebacks["chapter.md"] is None and tracebacks["second.md"] is None
    assert "deliberately broken" in tracebacks["third.md"]


def use_chapters(book: Path, **chapters: str) -> None:
    """Replace the scratch book's chapters by ``name=code`` chapters, in the table of contents."""
    (book / "book" / "chapter.md").unlink()
    for name, code in chapters.items():
        write_chapter(book, code, name=name)
    toc = "format: jb-book\nroot: book/intro\nchapters:\n"
    (book / "_toc.yml").write_text(toc + "".join(f"  - file: book/{n}\n" for n in chapters))


def test_a_kernel_that_dies_fails_the_build_as_myst_nb_does_and_the_rest_is_cached(book):
    # Found in review: a chapter whose kernel died stopped the extension with an error of its
    # own, and the chapters that had passed beside it were not cached.
    use_chapters(
        book,
        alive="print('alive')",
        dies="import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
        third="print('third')",
    )
    result = build(book)
    log = result.stdout + result.stderr
    assert result.returncode != 0
    assert "dies.md could not execute (DeadKernelError" in log
    assert "execute_side_by_side" not in log  # myst-nb, executing it again, stops the build
    assert "DeadKernelError: Kernel died" in log
    cached = get_cache(book / "_build" / ".jupyter_cache").list_cache_records()
    assert sorted(Path(record.uri).name for record in cached) == ["alive.md", "third.md"]


def test_notebook_settings_myst_nb_refuses_are_left_to_it(book):
    # Found in review: notebook metadata myst-nb cannot apply (it warns, and executes under
    # the book's settings) stopped the side-by-side execution with a TypeError.
    use_chapters(book, chapter="print('one')", second="print('two')")
    chapter = book / "book" / "chapter.md"
    unknown = "mystnb:\n  no_such_setting: 1\nkernelspec:"
    chapter.write_text(chapter.read_text().replace("kernelspec:", unknown))
    result = build(book)
    log = result.stdout + result.stderr
    assert "Failed to update configuration with notebook metadata" in log
    assert "execute_side_by_side" not in log
    assert "executed chapter.md" in log and "one" in page(book)


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


@pytest.mark.parametrize("reading", ["a chapter", "a page that executes nothing"])
def test_ctrl_c_stops_the_chapters_executing_side_by_side_at_once(book, reading):
    # Found in review: the build went on until every running chapter had finished; later,
    # with a chapter still waiting for a free worker, it never stopped.
    use_chapters(book, **{name: SLEEPER.format(name, 300) for name in CHAPTER_NAMES})
    if reading != "a chapter":
        hold_the_intro(book, then="time.sleep(300)")
    process = subprocess.Popen(
        [BIN / "jupyter-book", "build", book, "-W", "-n", "--keep-going"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(book)},
        start_new_session=True,  # a terminal's Ctrl-C: SIGINT to the build's process group
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    pid_files = [book / "book" / f"{name}.pid" for name in ("chapter", "second")]
    kernels = []
    try:
        deadline = time.monotonic() + 120
        while not all(path.exists() and path.read_text() for path in pid_files):
            assert process.poll() is None and time.monotonic() < deadline, "no kernel ran"
            time.sleep(0.2)
        kernels = [int(path.read_text()) for path in pid_files]
        if reading != "a chapter":
            while not (book / "reading_intro").exists():
                time.sleep(0.1)
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=30) != 0
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in kernels) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(pid) for pid in kernels)
        assert not (book / "book" / "third.pid").exists()  # the chapter waiting never ran
    finally:  # leave nothing running, whatever failed
        for pid in [process.pid, *kernels]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        process.wait()


def test_a_build_failing_before_the_chapters_caches_those_running_and_starts_no_other(book):
    # Found in review: the build never ended (a chapter waiting for a free worker was never
    # marked as not to run), and it waited for the running chapters without a word.
    use_chapters(book, **{name: SLEEPER.format(name, 3) for name in CHAPTER_NAMES})
    hold_the_intro(book, then="raise RuntimeError('deliberately broken')")
    try:
        result = subprocess.run(
            [BIN / "jupyter-book", "build", book, "-W", "-n", "--keep-going"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(book)},
            timeout=120,
            check=False,
        )
    finally:  # a kernel left running must not outlive the test
        for name in CHAPTER_NAMES:
            pid = book / "book" / f"{name}.pid"
            if pid.exists() and pid.read_text() and alive(int(pid.read_text())):
                os.kill(int(pid.read_text()), signal.SIGKILL)
    log = result.stdout + result.stderr
    assert result.returncode != 0
    assert "deliberately broken" in log
    assert "[book_execution] waiting for 2 chapters still executing" in log
    assert "Exception in thread" not in log
    cached = get_cache(book / "_build" / ".jupyter_cache").list_cache_records()
    assert sorted(Path(record.uri).name for record in cached) == ["chapter.md", "second.md"]
    assert not (book / "book" / "third.pid").exists()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_cpus_are_counted_where_the_system_has_no_affinity_call(monkeypatch):
    # Found in review: os.sched_getaffinity exists on Linux only; the build failed on a Mac.
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert book_execution._available_cpus() == 6


@pytest.mark.parametrize("workers", [-1, True, "2", 1.5])
def test_execution_workers_must_be_zero_or_a_positive_whole_number(workers):
    config = SimpleNamespace(execution_workers=workers)
    with pytest.raises(ConfigError, match="execution_workers must be 0"):
        book_execution.check_execution_workers(None, config)


def test_kernels_side_by_side_get_a_share_of_the_cpus_only_while_they_run(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")  # the builder's own choice stays
    with book_execution._threads_per_kernel(2):
        assert os.environ["OMP_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == "2"
        assert os.environ["OPENBLAS_NUM_THREADS"] == "3"
    assert "OMP_NUM_THREADS" not in os.environ and "MKL_NUM_THREADS" not in os.environ
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"


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
        missing += sorted((read & removed_names) - visible_names)
        visible_names |= defined
    assert not missing, f"defined only in removed cells: {missing} (tag them hide-cell)"


def fake_chapters(*names: str) -> dict:
    return {name: book_execution._Chapter(Path(f"{name}.md"), None, None, None) for name in names}


@pytest.fixture
def no_thread_limits(monkeypatch):
    """Chapters side by side without the BLAS thread variables (this process's own)."""
    monkeypatch.setattr(book_execution, "_threads_per_kernel", lambda threads: nullcontext())


def returns_within(seconds: float, function, *args, **kwargs) -> bool:
    """Whether ``function(*args, **kwargs)`` returns within ``seconds`` (a build that hangs)."""
    waiter = threading.Thread(target=function, args=args, kwargs=kwargs, daemon=True)
    waiter.start()
    waiter.join(seconds)
    return not waiter.is_alive()


def test_a_chapter_collected_before_it_starts_is_still_executed(monkeypatch, no_thread_limits):
    # Found in review: a chapter Sphinx came to while it still waited for a free worker was
    # taken out of the table the workers read, the worker died looking it up, and the build
    # waited for it for ever. Sphinx reads the chapters in any order another extension sets.
    monkeypatch.setattr(book_execution, "_execute", lambda chapter, _: time.sleep(0.3) or "ran")
    cached = []
    monkeypatch.setattr(book_execution, "_cache_result", lambda c, r: cached.append((c.path, r)))
    failures = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    running = book_execution._SideBySide(fake_chapters("first", "second"), workers=1)
    assert returns_within(10, running.collect, "second"), "the build waits for ever"
    assert returns_within(10, running.collect, "first")
    assert sorted(cached) == [(Path("first.md"), "ran"), (Path("second.md"), "ran")]
    assert not failures


def test_stopping_while_workers_take_chapters_leaves_no_worker_failing(
    monkeypatch, no_thread_limits
):
    # Found in review: the chapters not started were cancelled and taken out of the table the
    # workers read; a worker taking one next died looking it up, and a failed build waited for
    # them for ever.
    monkeypatch.setattr(book_execution, "_execute", lambda chapter, _: time.sleep(0.1) or "ran")
    monkeypatch.setattr(book_execution, "_cache_result", lambda c, r: None)
    failures = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    running = book_execution._SideBySide(fake_chapters(*"abcdefgh"), workers=2)
    time.sleep(0.05)
    assert returns_within(10, running.stop, finish_running=True), "the build waits for ever"
    time.sleep(0.5)  # the workers take the cancelled chapters off the queue
    assert not failures, [failure.exc_value for failure in failures]


def test_a_chapter_whose_execution_raises_anything_is_left_to_myst_nb(
    monkeypatch, no_thread_limits
):
    # An execution stopped by an exception that is not an Exception (a cancelled event
    # loop) left its chapter unfinished, and the build waited for it for ever.
    def cancelled(*args, **kwargs):
        raise asyncio.CancelledError

    monkeypatch.setattr(book_execution, "single_nb_execution", cancelled)
    config = SimpleNamespace(
        execution_in_temp=False, execution_allow_errors=False, execution_timeout=1
    )
    chapter = book_execution._Chapter(Path("chapter.md"), None, config, None)
    results = []
    monkeypatch.setattr(book_execution, "_cache_result", lambda c, result: results.append(result))
    running = book_execution._SideBySide({"chapter": chapter}, workers=1)
    assert returns_within(10, running.collect, "chapter"), "the build waits for ever"
    assert [type(result) for result in results] == [asyncio.CancelledError]
