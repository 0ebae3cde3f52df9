"""A failing chapter, or one whose kernel dies, fails the build, and leaves its report."""

import re
from pathlib import Path

from jupyter_cache import get_cache

from tests.book.scratch import (
    build,
    use_chapters,
    write_chapter,
)


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
