"""A build stopped while chapters execute side by side: by Ctrl-C, or by an error before
Sphinx comes to the chapters."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from jupyter_cache import get_cache

from tests.book.scratch import (
    BIN,
    CHAPTER_NAMES,
    SLEEPER,
    alive,
    hold_the_intro,
    use_chapters,
)


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
