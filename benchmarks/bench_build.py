"""Time a cold build of the book against a cold build of an empty Jupyter Book 1 book.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_build.py               # one full build
    .venv/bin/python benchmarks/bench_build.py --repeats 3   # the median of three
    .venv/bin/python benchmarks/bench_build.py --workers 1   # chapters one after another

Both builds run here, one after the other, with the README's build command
(``jupyter-book build . -W -n --keep-going``) and no cache: the empty book (a ``_config.yml``,
a ``_toc.yml`` and one page of text) in a scratch folder, the book in a scratch copy of the
working tree (the files git tracks or would track), with that copy's package on
``PYTHONPATH``. The empty book is built three times for each full build and its median taken.

The chapters execute side by side, as many at a time as ``execution_workers`` in
``_config.yml`` says (0: one per available CPU); ``--workers`` sets it in the copy. It then
prints each chapter's execution time as jupyter-cache recorded it in the last full build, and
their sum. Chapters executed side by side share the CPUs, so each one's time is longer than
alone and the sum is more than the chapters take one after another (``--workers 1``).

The last line is ``cold_build_seconds: X (Y times an empty book of Z s)``.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parents[1]
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"

EMPTY_CONFIG = "title: Empty\nauthor: Nobody\nexecute:\n  execute_notebooks: cache\n"
EMPTY_TOC = "format: jb-book\nroot: intro\n"


def timed_build(book: Path) -> float:
    """Seconds for the README's build command on ``book``; raises if the build fails."""
    start = time.perf_counter()
    result = subprocess.run(
        [JUPYTER_BOOK, "build", book, "-W", "-n", "--keep-going"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(book)},
        check=False,
    )
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"the build of {book} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return seconds


def empty_book(folder: Path) -> Path:
    folder.mkdir()
    (folder / "_config.yml").write_text(EMPTY_CONFIG)
    (folder / "_toc.yml").write_text(EMPTY_TOC)
    (folder / "intro.md").write_text("# Empty\n\nA page of text.\n")
    return folder


def working_tree_copy(folder: Path) -> Path:
    """Copy the files git tracks, or would track, as a fresh clone of this tree would have."""
    listed = subprocess.run(
        ["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / os.fsdecode(name)
        if source.is_file():
            target = folder / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return folder


def set_workers(book: Path, workers: int) -> None:
    """Set ``execution_workers`` in the copy's ``_config.yml``."""
    config = book / "_config.yml"
    text, count = re.subn(
        r"(?m)^(\s*execution_workers:).*$", rf"\g<1> {workers}", config.read_text()
    )
    if count != 1:
        sys.exit("_config.yml has no single execution_workers setting")
    config.write_text(text)


def chapter_seconds(book: Path) -> dict[str, float]:
    """Each executed chapter's run time, as jupyter-cache recorded it."""
    cache = get_cache(book / "_build" / ".jupyter_cache")
    return {
        Path(record.uri).stem: record.data["execution_seconds"]
        for record in sorted(cache.list_cache_records(), key=lambda record: record.uri)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="full cold builds (default 1)")
    parser.add_argument(
        "--workers", type=int, help="chapters executed at a time (default: _config.yml's)"
    )
    arguments = parser.parse_args()
    repeats = arguments.repeats

    empty, full = [], []
    with tempfile.TemporaryDirectory(prefix="bench_build_") as scratch:
        for repeat in range(repeats):
            for index in range(3):
                folder = empty_book(Path(scratch, f"empty_{repeat}_{index}"))
                empty.append(timed_build(folder))
            book = working_tree_copy(Path(scratch, f"book_{repeat}"))
            if arguments.workers is not None:
                set_workers(book, arguments.workers)
            full.append(timed_build(book))
            shown = ", ".join(f"{seconds:.1f}" for seconds in empty[-3:])
            print(f"build {repeat + 1}: empty book {shown} s; the book {full[-1]:.1f} s")
        chapters = chapter_seconds(book)

    print("chapter execution (jupyter-cache, last build):")
    for name, seconds in chapters.items():
        print(f"  {name:<28} {seconds:6.1f} s")
    print(f"  {'sum':<28} {sum(chapters.values()):6.1f} s")
    empty_seconds, full_seconds = statistics.median(empty), statistics.median(full)
    print(f"empty_book_seconds: {empty_seconds:.1f} (median of {len(empty)})")
    print(
        f"cold_build_seconds: {full_seconds:.1f} ({full_seconds / empty_seconds:.1f} times "
        f"an empty book of {empty_seconds:.1f} s)"
    )


if __name__ == "__main__":
    main()
