"""A chapter whose kernel dies fails the build, as myst-nb fails it, and the chapters beside it
are cached. (A chapter that raises: tests/book/test_side_by_side.py.)"""

from pathlib import Path

from jupyter_cache import get_cache

from tests.book.scratch import (
    build,
    use_chapters,
)


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
