"""Chapters executed side by side: a build of three chapters, notebook settings myst-nb
refuses, and the parts of the extension that run them (its workers, its share of the CPUs)."""

import asyncio
import os
import re
import threading
import time
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

import pytest
from jupyter_cache import get_cache
from sphinx.errors import ConfigError

from tests.book.scratch import (
    CHAPTER_NAMES,
    book_execution,
    build,
    make_book,
    page,
    use_chapters,
    write_chapter,
)

# A chapter that marks its start, then waits (up to half a minute) for the other chapter's
# mark: the two ran side by side exactly when each ended after both started, and neither waits
# a fixed time that a loaded machine might outrun. The marks' paths are absolute, so that they
# meet wherever the kernels run (found in review: a kernel in a temporary folder never would).
MEETING = (
    "import time\nfrom pathlib import Path\nstart = time.time()\n"
    "Path({0!r}).write_text('')\n"
    "while not Path({1!r}).exists() and time.time() < start + 30:\n"
    "    time.sleep(0.02)\n"
    "print(f'ran {{start}} {{time.time()}}')"
)
BROKEN = "raise ZeroDivisionError('deliberately broken')"


def _outcome(book: Path) -> SimpleNamespace:
    """The README's build command on ``book``, and what it left (read now: the next build
    rewrites it)."""
    result = build(book)
    report = book / "_build" / "html" / "reports" / "book" / "third.err.log"
    return SimpleNamespace(
        returncode=result.returncode,
        log=result.stdout + result.stderr,
        plain=re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr),  # colours
        report=re.sub(r"\x1b\[[0-9;]*m", "", report.read_text()) if report.exists() else None,
        report_path=report,
        pages={name: page(book, name) for name in CHAPTER_NAMES},
        records=get_cache(book / "_build" / ".jupyter_cache").list_project_records(),
    )


@pytest.fixture(scope="module")
def three_chapters(tmp_path_factory) -> SimpleNamespace:
    """One scratch book of three chapters taken through three builds, each build's outcome
    kept for the tests below, which only read them:

    1. cold: two chapters that each wait for the other to start (the first holds a numbered
       table the second cites twice), and a third that fails;
    2. again, its failing chapter unmended and its report deleted;
    3. with the failing chapter mended.
    """
    book = make_book(tmp_path_factory.mktemp("three_chapters"))
    table = ":::{table} A scratch table\n:name: tab-scratch\n\n| a |\n| - |\n| 1 |\n:::\n"
    marks = [str(book / "book" / f"{name}.started") for name in ("chapter", "second")]
    write_chapter(book, MEETING.format(*marks), text=table)
    second = MEETING.format(*reversed(marks))
    write_chapter(book, second, name="second", text="{numref}`tab-scratch`, {numref}`tab-scratch`")
    write_chapter(book, BROKEN, name="third")
    toc = "format: jb-book\nroot: book/intro\nchapters:\n"
    (book / "_toc.yml").write_text(toc + "".join(f"  - file: book/{n}\n" for n in CHAPTER_NAMES))
    cold = _outcome(book)
    cold.report_path.unlink()
    again = _outcome(book)
    write_chapter(book, "print('mended')", name="third")
    mended = _outcome(book)
    return SimpleNamespace(cold=cold, again=again, mended=mended)


def test_chapters_execute_side_by_side_and_a_failing_one_is_still_reported(three_chapters):
    cold = three_chapters.cold
    assert cold.returncode != 0
    assert "[book_execution] executing 3 chapters, 2 at a time" in cold.log
    # The page that executes nothing was read while the chapters ran.
    read_intro = re.search(r"reading sources\.\.\. \[ *\d+%\] book/intro", cold.plain)
    assert read_intro.start() < cold.plain.index("[book_execution] executed chapter.md")
    spans = [
        [float(t) for t in re.search(r"ran ([\d.]+) ([\d.]+)", cold.pages[name]).groups()]
        for name in ("chapter", "second")
    ]
    assert max(start for start, _ in spans) < min(end for _, end in spans), spans
    # myst-nb read the two from the cache; the failing one it ran again, to report it.
    assert cold.log.count("Using cached notebook") == 2
    assert "ZeroDivisionError: deliberately broken" in cold.report
    assert str(cold.report_path) in cold.log
    assert cold.pages["second"].count("Table 1") == 2
    # The cache's records are those myst-nb writes when it executes a chapter itself.
    tracebacks = {Path(record.uri).name: record.traceback for record in cold.records}
    assert sorted(tracebacks) == ["chapter.md", "second.md", "third.md"]
    assert tracebacks["chapter.md"] is None and tracebacks["second.md"] is None
    assert "deliberately broken" in tracebacks["third.md"]


def test_a_failing_chapter_fails_every_build_until_mended_and_its_report_goes(three_chapters):
    # Building again without mending it runs the chapter again, and fails again; the
    # chapters that passed are not run again.
    again = three_chapters.again
    assert again.returncode != 0
    assert "ZeroDivisionError: deliberately broken" in again.report
    assert re.findall(r"(\w+)(?:\.md)?:\d*:? Executing notebook using", again.plain) == ["third"]
    # Mended, the chapter's report goes: what reports/ holds is this build's failures.
    mended = three_chapters.mended
    assert mended.returncode == 0, mended.log
    assert mended.report is None
    assert "mended" in mended.pages["third"]


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


def test_the_chapters_named_slowest_start_first_and_the_others_keep_their_order():
    found = ["a", "b", "c", "d", "index"]
    order = book_execution.slowest_first(["a", "b", "c", "d"], ["c", "index", "a"], found)
    # "index" executes nothing here (not stale): it takes no place.
    assert order == ["c", "a", "b", "d"]


def test_a_slowest_chapter_that_is_not_a_page_is_refused():
    with pytest.raises(ConfigError, match=r"execution_slowest_first names \['gone'\]"):
        book_execution.slowest_first(["a"], ["a", "gone"], ["a"])


def test_kernels_side_by_side_get_a_share_of_the_cpus_only_while_they_run(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")  # the builder's own choice stays
    with book_execution._threads_per_kernel(2):
        assert os.environ["OMP_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == "2"
        assert os.environ["OPENBLAS_NUM_THREADS"] == "3"
    assert "OMP_NUM_THREADS" not in os.environ and "MKL_NUM_THREADS" not in os.environ
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"


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


async def _run_in_kernel(manager_class: type, code: str) -> str:
    """What ``code`` prints in a kernel that ``manager_class`` starts."""
    manager = manager_class(kernel_name="python3")
    await manager.start_kernel()
    client = manager.client()
    client.start_channels()
    printed = []
    try:
        await client.wait_for_ready(timeout=60)
        await client.execute_interactive(
            code,
            timeout=60,
            output_hook=lambda msg: printed.append(msg["content"].get("text", "")),
        )
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)
    return "".join(printed)


def test_the_kernels_skip_rfc3987_syntax_and_leave_the_namespace_alone():
    # jsonschema (myst-nb's glue imports it) builds rfc3987_syntax's grammar on import where
    # that is installed: 0.75 s in every chapter's kernel. The kernels go without it, jsonschema
    # still validates, and the chapter's namespace holds no name it did not define.
    manager_class = book_execution._Kernels().manager_class
    command = manager_class(kernel_name="python3").format_kernel_cmd()
    assert command[-1] == book_execution.KERNEL_WITHOUT_RFC3987_SYNTAX
    printed = asyncio.run(
        _run_in_kernel(
            manager_class,
            "import jsonschema\n"
            "jsonschema.validate(1, {'type': 'integer'})\n"
            "print(__import__('sys').modules['rfc3987_syntax'], 'sys' in dir())",
        )
    )
    assert printed.split() == ["None", "False"]
