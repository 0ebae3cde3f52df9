"""Sphinx extension: chapters follow the package, run side by side, and rebuild identically.

It does what myst-nb's cached execution does not do for this book.

**Re-execute the chapters when the package changes.** jupyter-cache keys each notebook on its
own code cells, and Sphinx re-reads a page only when the page's source changes, so after an
edit in ``synpmx_lite/`` alone the book would keep showing the old code's results. The
extension hashes the files named by the ``execution_depends_on`` setting (folders are walked;
``__pycache__``, compiled and hidden files are skipped). When the hash differs from the one the
execution cache was filled under, it empties the cache; when it differs from the one the pages
were last read under, it sends every page back to be read, so that every chapter executes
again against the new code.

**Execute the chapters side by side.** myst-nb executes each chapter when Sphinx reads it, one
after another. Before reading, the chapters to be read whose code the execution cache does not
hold start executing together in the background, as many at a time as the ``execution_workers``
setting allows (by default one per available CPU, each kernel with its share of the CPUs for
numpy's threads), those the ``execution_slowest_first`` setting names first, while Sphinx reads
the pages that execute nothing (the API reference). Their kernels skip a grammar jsonschema
would build on import and no chapter uses (``KERNEL_WITHOUT_RFC3987_SYNTAX``). When Sphinx
comes to a chapter, the extension waits for it and caches its result as myst-nb would; myst-nb
then reads every chapter from the cache. A chapter that fails (a cell's error, a timeout, a
kernel that dies) is not cached, so myst-nb executes it again and reports the failure as it
always does: a failing chapter runs twice. Ctrl-C stops the kernels at once, as it stops
myst-nb's own execution. A build that fails before Sphinx has come to every chapter starts no
other, and waits for those executing (it says so; Ctrl-C stops them) to cache them for the next
build.

**Keep failing until mended.** With ``nb_execution_raise_on_error: false`` (so that myst-nb
writes a failing chapter's report), Sphinx keeps a failed chapter as read, and the next build
would pass without running it. A chapter whose execution failed is read again on every build.

**Write the same files on every build.** Each chapter's executed notebook is offered for
download; myst-nb gives its cells random ids, an output without a text form of its own (a
plotnine figure, a pandas Styler) shows the object's memory address, and a cell's printed text
comes in as many pieces as the kernel happened to flush. Cells are numbered instead, the
addresses dropped, and the pieces merged as the pages merge them (``nb_merge_streams``).
And myst-nb copies its stylesheet only when a build ends, so the pages of a first build link
it without the checksum Sphinx adds on later builds; it is copied when the build starts
instead.

**Unpickle each page once for its numbered references.** Sphinx 7 resolves each ``{numref}``
by unpickling the whole page that holds the table or figure; a chapter's page carries its
outputs, and the book's references cost seconds of every build that writes the chapters. The
standard domain is replaced by one that keeps one unpickled copy of each page while it resolves
them (it only reads the numbered node and its ids).

**Ignore notebooks made from the chapters.** ``_config.yml`` keeps ``.ipynb`` files out of the
sources, but the theme's launch buttons still open ``book/chapter.ipynb`` instead of
``book/chapter.md`` when one lies beside the chapter; they are pointed back at the source, the
file the repository holds. The download menu's ``.ipynb`` entry is left as it is: it gives the
chapter's executed notebook.

Load it from ``_config.yml``::

    sphinx:
      local_extensions:
        book_execution: book/_ext
      config:
        execution_depends_on: [synpmx_lite]
        execution_workers: 0  # one per available CPU
        execution_slowest_first: [book/slow_chapter]  # started first
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, wait
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from pathlib import Path, PurePosixPath
from queue import Empty, SimpleQueue
from typing import NamedTuple
from weakref import WeakKeyDictionary

import nbformat
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.cache.db import NbProjectRecord
from jupyter_cache.executors.utils import ExecutionResult, single_nb_execution
from jupyter_client import AsyncKernelManager
from myst_nb.core.config import NbParserConfig
from myst_nb.core.nb_to_tokens import nb_node_to_dict
from myst_nb.core.read import create_nb_reader
from myst_nb.core.utils import coalesce_streams
from myst_nb.ext.glue import extract_glue_data_cell
from myst_nb.sphinx_ import NbMetadataCollector
from myst_nb.sphinx_ext import add_global_html_resources
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.domains.std import StandardDomain
from sphinx.environment import BuildEnvironment
from sphinx.errors import ConfigError
from sphinx.util import logging

logger = logging.getLogger(__name__)

# Stored in the execution cache's folder: the hash its notebooks were executed under.
STAMP_NAME = "execution_depends_on.sha256"
# Python's default repr of an object, "<module.Class object at 0x7f...>".
_MEMORY_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def _source_files(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for file in path.rglob("*"):
        parts = file.relative_to(path).parts
        hidden = any(part.startswith(".") or part == "__pycache__" for part in parts)
        if file.is_file() and not hidden and file.suffix not in {".pyc", ".pyo"}:
            yield file


def source_digest(paths: Iterable[Path], root: Path) -> str:
    """SHA-256 of the files under ``paths``: their paths relative to ``root`` and contents.

    Raises FileNotFoundError for a path that does not exist, so that a misspelt setting
    cannot silently disable the re-execution.
    """
    digest = hashlib.sha256()
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"execution_depends_on: {path} does not exist")
    files = sorted({file for path in paths for file in _source_files(path)})
    for file in files:
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()


def _digest(app: Sphinx) -> str:
    root = Path(app.confdir)
    return source_digest([root / path for path in app.config.execution_depends_on], root)


def clear_stale_cache(app: Sphinx) -> None:
    """Empty the execution cache if it was filled under other package sources."""
    if not app.config.execution_depends_on:
        return
    digest = _digest(app)
    cache = Path(app.env.mystnb_config.execution_cache_path)
    stamp = cache / STAMP_NAME
    if cache.exists() and (not stamp.exists() or stamp.read_text() != digest):
        logger.info("[book_execution] package sources changed: emptying the execution cache")
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest)


def pages_to_read_again(
    app: Sphinx, env: BuildEnvironment, added: set, changed: set, removed: set
) -> list[str]:
    """Pages to read (and execute) again although their sources did not change.

    Every page, if the pages were read under other package sources; otherwise each chapter
    whose execution failed, so that the failure is reported, and fails the build, on every
    build until it is mended (Sphinx would otherwise keep the failed page as read).
    """
    again = {
        docname
        for docname, data in NbMetadataCollector.get_doc_data(env).items()
        if (data.get("exec_data") or {}).get("succeeded") is False
    }
    if app.config.execution_depends_on:
        digest = _digest(app)
        if getattr(env, "book_execution_digest", None) != digest:
            # Kept in the pickled environment, which Sphinx discards when a build fails.
            env.book_execution_digest = digest
            again = env.found_docs
    return sorted((again & env.found_docs) - removed)


def steady_notebook(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Number the cells' ids, merge each cell's prints and drop memory addresses, in place.

    The prints are merged as the pages show them (``nb_merge_streams``): the kernel splits a
    cell's printed text where it happens to flush, differently from one run to the next.
    """
    for index, cell in enumerate(notebook.cells):
        cell.id = f"cell-{index}"
        if "outputs" in cell:
            cell.outputs = coalesce_streams(cell.outputs)
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/plain" in data:
                data["text/plain"] = _MEMORY_ADDRESS.sub(">", data["text/plain"])
    return notebook


def steady_executed_notebook(app: Sphinx, doctree: object) -> None:
    """Rewrite the executed notebook myst-nb has just written for this page, if any."""
    path = Path(app.env.mystnb_config.output_folder, *app.env.docname.split("/"))
    path = path.with_name(path.name + ".ipynb")
    if not path.exists():
        return
    notebook = _with_cached_outputs(app, nbformat.read(path, as_version=4))
    path.write_bytes(nbformat.writes(steady_notebook(notebook)).encode("utf-8"))


def _with_cached_outputs(app: Sphinx, notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook with its outputs from the execution cache, if it holds them.

    A page read again from the cache (its code unchanged) is rendered from the cached
    outputs, but myst-nb 1.4 writes the notebook it was given, without them, for download.
    The glued values are taken out of the outputs, as myst-nb does after executing a page.
    """
    config = app.env.mystnb_config
    if config.execution_mode != "cache":
        return notebook
    try:
        _, merged = get_cache(config.execution_cache_path).merge_match_into_notebook(notebook)
    except KeyError:  # not in the cache: its execution failed, or it has no code
        return notebook
    for cell in merged.cells:
        if cell.cell_type == "code":
            extract_glue_data_cell(cell)
    return merged


def copy_mystnb_stylesheet(app: Sphinx) -> None:
    """Copy myst-nb's stylesheet before the pages are written (myst-nb does it at the end)."""
    if app.builder.format == "html":
        Path(app.outdir, "_static").mkdir(parents=True, exist_ok=True)
        add_global_html_resources(app, None)


def clear_old_reports(app: Sphinx) -> None:
    """Remove the execution reports of earlier builds.

    Every chapter whose execution failed runs again on every build and writes its report
    again, so what is left in ``reports/`` is the reports of this build: a mended chapter's
    report would otherwise stay beside a passing build.
    """
    shutil.rmtree(Path(app.outdir, "reports"), ignore_errors=True)


def launch_the_source(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object
) -> None:
    """Point the page's launch buttons at its source, not at a notebook made beside it.

    The download menu is left alone: its ``.ipynb`` entry is the executed notebook.
    """
    source = Path(app.env.doc2path(pagename, base=False))
    if doctree is None or source.suffix == ".ipynb":
        return
    made = source.with_suffix(".ipynb").as_posix()
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("url", "").endswith(made):
                button["url"] = button["url"][: -len(made)] + source.as_posix()


class _Chapter(NamedTuple):
    """A chapter to execute: its source, notebook, configuration and jupyter-cache reader."""

    path: Path
    notebook: nbformat.NotebookNode
    config: NbParserConfig
    read_fmt: dict | None


def _stale_notebook(app: Sphinx, env: BuildEnvironment, docname: str) -> _Chapter | None:
    """The chapter myst-nb would execute when it reads ``docname``, else None.

    The notebook is read, and the configuration completed from its metadata, as myst-nb reads
    them (``myst_nb.sphinx_.Parser.parse``), so that what is cached here is what myst-nb
    looks up: a chapter whose code the cache holds, or that is excluded from execution, is
    left alone.
    """
    path = Path(env.doc2path(docname))
    text = path.read_text(encoding=app.config.source_encoding)
    reader = create_nb_reader(str(path), env.myst_config, env.mystnb_config, text)
    if reader is None:
        return None
    notebook = reader.read(text)
    if not any(cell.cell_type == "code" for cell in notebook.cells):
        return None
    config = env.mystnb_config
    kernel = notebook.metadata.get("kernelspec", {}).get("name")
    for pattern, alias in (config.kernel_rgx_aliases or {}).items():
        if kernel is not None and re.fullmatch(pattern, kernel):
            notebook.metadata["kernelspec"]["name"] = alias
            break
    if config.metadata_key in notebook.metadata:
        overrides = nb_node_to_dict(notebook.metadata[config.metadata_key])
        overrides.pop("output_folder", None)
        # Metadata myst-nb cannot apply it reports, and executes under the book's settings.
        with suppress(Exception):
            config = config.copy(**overrides)
    excluded = any(
        PurePosixPath(path.as_posix()).match(pattern)
        for pattern in config.execution_excludepatterns
    )
    if config.execution_mode != "cache" or excluded:
        return None
    with suppress(KeyError):
        get_cache(config.execution_cache_path).match_cache_notebook(notebook)
        return None
    return _Chapter(path, notebook, config, reader.read_fmt)


def _execute(chapter: _Chapter, kernel_manager_class: type) -> ExecutionResult | BaseException:
    """Execute one chapter as myst-nb's cached execution does (``NotebookClientCache``).

    Returns jupyter-cache's result, or the exception that stopped the execution (a kernel
    that died or could not start, even an event loop cancelled), which myst-nb then meets, and
    reports, itself. It never raises: the build waits for the chapter's result.
    """
    config = chapter.config
    in_temp = config.execution_in_temp
    try:
        with tempfile.TemporaryDirectory() if in_temp else nullcontext(chapter.path.parent) as cwd:
            return single_nb_execution(
                chapter.notebook,
                cwd=os.path.abspath(cwd),
                allow_errors=config.execution_allow_errors,
                timeout=config.execution_timeout,
                meta_override=True,
                kernel_manager_class=kernel_manager_class,
            )
    except BaseException as error:  # any failure is left to myst-nb, which meets it again
        return error


# A chapter's first glue() imports nbformat, and so jsonschema, which imports rfc3987_syntax
# where it is installed (jsonschema[format-nongpl], which jupyter-events requires) and so
# builds that package's Lark grammar: 0.75 s of CPU in every kernel, for the "iri" string
# formats, which nothing in a chapter validates (jsonschema PR 1521 moves to a fork that loads
# it lazily). The kernels started here go without it, as the tests' builds do
# (tests/conftest.py): a module set to None fails to import, and jsonschema skips those two
# formats. __import__ leaves no name in the chapter's namespace. The argument takes the place of
# any exec_lines a kernel configuration of the builder's sets (none is needed to build the book).
KERNEL_WITHOUT_RFC3987_SYNTAX = (
    "--IPKernelApp.exec_lines=__import__('sys').modules.setdefault('rfc3987_syntax', None)"
)


class _Kernels:
    """The kernels of the chapters executing side by side, so that Ctrl-C can stop them.

    myst-nb executes in the main thread and stops its kernel on Ctrl-C; the threads here would
    wait for every running chapter to finish (up to its timeout) before the build stopped.
    An IPython kernel started here skips ``rfc3987_syntax`` (``KERNEL_WITHOUT_RFC3987_SYNTAX``).
    """

    def __init__(self) -> None:
        self._managers: list[AsyncKernelManager] = []
        self._lock = threading.Lock()
        kernels = self

        class TrackedKernelManager(AsyncKernelManager):
            def __init__(self, **kwargs: object) -> None:
                super().__init__(**kwargs)
                with kernels._lock:
                    kernels._managers.append(self)

            def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
                command = super().format_kernel_cmd(extra_arguments)
                if any("ipykernel" in part for part in command):
                    command.append(KERNEL_WITHOUT_RFC3987_SYNTAX)
                return command

        self.manager_class = TrackedKernelManager

    def kill(self) -> None:
        """Kill every kernel started so far; nbclient sees it die and ends its execution."""
        with self._lock:
            managers = list(self._managers)
        for manager in managers:
            process = getattr(manager.provisioner, "process", None)
            if process is not None and process.poll() is None:
                process.kill()


def _available_cpus() -> int:
    """CPUs this process may run on (its CPU affinity, where the system reports one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def slowest_first(stale: list[str], slowest: list[str], found: Iterable[str]) -> list[str]:
    """The order in which the ``stale`` chapters start: those named in ``slowest`` (the
    ``execution_slowest_first`` setting) first, in its order, then the others in reading order.

    Started last, a long chapter runs alone while the other CPUs idle; started first, the
    short ones fill the other CPUs beside it. A name that is not a page of the book is refused:
    a chapter renamed or moved would otherwise lose its place without a word.
    """
    pages = set(found)
    unknown = [name for name in slowest if name not in pages]
    if unknown:
        raise ConfigError(
            f"execution_slowest_first names {unknown}, which are not pages of the book "
            "(docnames such as book/intro, without the suffix)"
        )
    return [d for d in slowest if d in stale] + [d for d in stale if d not in slowest]


def check_execution_workers(app: Sphinx, config: Config) -> None:
    """Refuse an ``execution_workers`` that is not 0 or a positive whole number."""
    workers = config.execution_workers
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ConfigError(
            "execution_workers must be 0 (one chapter per available CPU) or a positive whole "
            f"number of chapters, got {workers!r}"
        )


@contextmanager
def _threads_per_kernel(threads: int) -> Iterator[None]:
    """Give the kernels started inside ``threads`` BLAS and OpenMP threads each.

    Kernels executing side by side that each start a thread per CPU oversubscribe the cores
    (idle BLAS threads spin). A variable the builder has set is left as it is, and the
    others are removed again afterwards, so that a chapter myst-nb executes alone has every
    CPU.
    """
    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    unset = [name for name in names if name not in os.environ]
    os.environ.update(dict.fromkeys(unset, str(threads)))
    try:
        yield
    finally:
        for name in unset:
            os.environ.pop(name, None)


class _SideBySide:
    """Chapters executing in background threads while Sphinx reads the pages before them.

    Each chapter's result is collected when Sphinx comes to read it (:meth:`collect`, on
    ``source-read``), and cached there, in the main thread, as myst-nb caches a chapter it
    executes itself. The threads are daemons and every kernel is tracked, so that an
    interrupted or failed build stops the kernels (:meth:`stop`) instead of waiting for them.
    """

    def __init__(self, chapters: dict[str, _Chapter], workers: int) -> None:
        self.chapters = chapters
        # The chapters not yet collected; the main thread's alone (the workers read the queue).
        self.futures = {docname: Future() for docname in chapters}
        self._kernels = _Kernels()
        self._queue: SimpleQueue[tuple[_Chapter, Future]] = SimpleQueue()
        for docname, future in self.futures.items():
            self._queue.put((chapters[docname], future))
        self._threads: AbstractContextManager | None = _threads_per_kernel(
            max(1, _available_cpus() // workers)
        )
        self._threads.__enter__()
        for index in range(workers):
            name = f"book_execution-{index}"
            threading.Thread(target=self._work, name=name, daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                chapter, future = self._queue.get_nowait()
            except Empty:
                return
            # A chapter cancelled before it started is marked so (stop() waits for that).
            if future.set_running_or_notify_cancel():
                future.set_result(_execute(chapter, self._kernels.manager_class))

    def collect(self, docname: str) -> None:
        """Wait for the chapter ``docname`` (if it is one of these) and cache it if it passed."""
        future = self.futures.pop(docname, None)
        if future is None:
            return
        try:
            result = future.result()
        except BaseException:  # Ctrl-C: stop now, as myst-nb's own execution does
            self.futures[docname] = future
            self.stop()
            raise
        _cache_result(self.chapters[docname], result)
        if not self.futures:
            self._release_threads()

    def _release_threads(self) -> None:
        if self._threads is not None:
            self._threads.__exit__(None, None, None)
            self._threads = None

    def stop(self, *, finish_running: bool = False) -> None:
        """Cancel the chapters not started and kill the kernels of those running, or, with
        ``finish_running``, let those finish; then cache every chapter that passed (the next
        build need not run it again). Ctrl-C while they finish kills them."""
        pending = dict(self.futures)
        self.futures.clear()
        for future in pending.values():
            future.cancel()
        try:
            running = [future for future in pending.values() if not future.done()]
            if finish_running and running:
                chapters = "1 chapter" if len(running) == 1 else f"{len(running)} chapters"
                logger.info(
                    f"[book_execution] waiting for {chapters} still executing, to cache them "
                    "for the next build (Ctrl-C stops them)"
                )
                wait(running)
        finally:
            while wait(pending.values(), timeout=0.2).not_done:  # a kernel may be starting
                self._kernels.kill()
            self._release_threads()
            for docname, future in pending.items():
                if not future.cancelled():
                    _cache_result(self.chapters[docname], future.result())


def _cache_result(chapter: _Chapter, result: ExecutionResult | BaseException) -> None:
    """Cache a chapter that passed, with the records myst-nb writes when it executes one."""
    name = chapter.path.name
    if isinstance(result, BaseException):
        failure = f"could not execute ({type(result).__name__}: {result})"
        logger.info(f"[book_execution] {name} {failure}: myst-nb runs it again")
        return
    if result.err is not None:
        logger.info(f"[book_execution] {name} failed: myst-nb runs it again to report")
        return
    logger.info(f"[book_execution] executed {name} in {result.time:.2f} seconds")
    cache = get_cache(chapter.config.execution_cache_path)
    if chapter.read_fmt is None:
        record = cache.add_nb_to_project(str(chapter.path))
    else:
        record = cache.add_nb_to_project(str(chapter.path), read_data=chapter.read_fmt)
    NbProjectRecord.remove_tracebacks([record.pk], cache.db)
    cache.cache_notebook_bundle(
        CacheBundleIn(chapter.notebook, record.uri, data={"execution_seconds": result.time}),
        check_validity=False,
        overwrite=True,
    )


# The chapters executing for each running build.
_RUNNING: WeakKeyDictionary[Sphinx, _SideBySide] = WeakKeyDictionary()


def execute_side_by_side(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    """Start the chapters about to be read, several at a time, and read the other pages first.

    Sphinx reads the pages in the order of ``docnames``; it is reordered in place so that the
    pages that execute nothing (the API reference, above all) are read while the chapters run.
    """
    stale = {d: found for d in docnames if (found := _stale_notebook(app, env, d)) is not None}
    workers = min(app.config.execution_workers or _available_cpus(), len(stale))
    if workers < 2:
        return  # nothing to gain: myst-nb executes the chapter as it reads it
    logger.info(f"[book_execution] executing {len(stale)} chapters, {workers} at a time")
    order = slowest_first(list(stale), app.config.execution_slowest_first, env.found_docs)
    running = _RUNNING[app] = _SideBySide({d: stale[d] for d in order}, workers)
    docnames[:] = [d for d in docnames if d not in stale] + list(stale)
    if app.parallel > 1:  # pages read in forked processes cannot wait on these threads
        for docname in stale:
            running.collect(docname)


def collect_chapter(app: Sphinx, docname: str, source: list[str]) -> None:
    """Before Sphinx reads a chapter executing side by side, wait for it and cache it."""
    if app in _RUNNING:
        _RUNNING[app].collect(docname)


def stop_chapters(app: Sphinx, exception: Exception | None) -> None:
    """When a build fails before reading every chapter, let the chapters already running
    finish, and cache those that pass; the others are not started."""
    running = _RUNNING.pop(app, None)
    if running is not None:
        running.stop(finish_running=True)


class NumrefReadsEachPageOnce(StandardDomain):
    """Sphinx's standard domain, but ``{numref}`` unpickles a page once, not once per reference.

    A copy is kept per page and per version of its pickled doctree (its file's size and
    modification time), so a page read again in a later build is unpickled again.
    """

    def _resolve_numref_xref(self, env: BuildEnvironment, *args: object, **kwargs: object):
        copies = self.__dict__.setdefault("_numref_copies", {})
        read = BuildEnvironment.get_doctree

        def read_once(docname: str) -> object:
            stat = Path(env.doctreedir, docname + ".doctree").stat()
            key = (docname, stat.st_size, stat.st_mtime_ns)
            if key not in copies:
                copies[key] = read(env, docname)
            return copies[key]

        env.get_doctree = read_once  # for this call only: the instance attribute shadows it
        try:
            return super()._resolve_numref_xref(env, *args, **kwargs)
        finally:
            del env.get_doctree


def setup(app: Sphinx) -> dict:
    app.add_domain(NumrefReadsEachPageOnce, override=True)
    app.add_config_value("execution_depends_on", [], "env", [list])
    # Chapters executed at a time; 0 means one per available CPU.
    app.add_config_value("execution_workers", 0, "", [int])
    # Chapters (docnames) that start executing first, slowest first.
    app.add_config_value("execution_slowest_first", [], "", [list])
    app.connect("config-inited", check_execution_workers)
    # After myst-nb (priority 500) has resolved the cache and output folders.
    app.connect("builder-inited", clear_stale_cache, priority=900)
    app.connect("env-get-outdated", pages_to_read_again)
    app.connect("env-before-read-docs", execute_side_by_side)
    app.connect("source-read", collect_chapter)
    app.connect("build-finished", stop_chapters)
    app.connect("doctree-read", steady_executed_notebook)
    app.connect("builder-inited", copy_mystnb_stylesheet)
    app.connect("builder-inited", clear_old_reports)
    # After sphinx-book-theme has made the launch buttons (priority 501).
    app.connect("html-page-context", launch_the_source, priority=600)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
