"""Stored results of long computations, keyed by the settings and the sources that made them.

A chapter that needs hundreds of model fits (shadow releases, refits on synthetic data) reads
them from a file computed beforehand by a command, as the tracing chapter replays OpenDP's
outputs. A stored result is only ever returned for the settings it was computed with and for
the package sources it was computed by: :func:`load_or_compute` compares both keys and computes
the result afresh (printing its progress) when either differs, so a reader who changes a
setting or the engine never gets numbers from other settings or other code. A result computed
afresh is kept in a cache folder (``$SYNPMX_CACHE``, else ``~/.cache/synpmx_lite``) so that the
next build reads it; the shipped files in ``synpmx_lite/data/`` are written only by the command
that makes them (:func:`store`).

The keys are the settings and the package's own sources: a result does not follow the versions
of NumPy, SciPy or Python, so name any setting a result is known to depend on beyond those.
Settings are compared as canonical JSON, so a tuple and a list of the same values are one
setting, while ``1`` and ``1.0`` are two (the result is then computed afresh, never mistaken).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

import numpy as np

#: Keys of the metadata stored beside the arrays.
_META = "__meta__"


@dataclass(frozen=True)
class StoredResult:
    """Arrays with the keys they were computed under.

    Attributes
    ----------
    arrays : dict of str to numpy.ndarray
        The computed arrays.
    settings : dict
        The settings they were computed with (JSON values).
    sources : str
        SHA-256 digest of the package sources that computed them (:func:`sources_digest`).
    made : str
        When they were computed (UTC, ISO 8601 date).
    seconds : float
        How long the computation took.
    """

    arrays: dict[str, np.ndarray]
    settings: dict
    sources: str
    made: str
    seconds: float

    def matches(self, settings: Mapping, sources: str) -> bool:
        """Whether this result was computed with ``settings`` by sources of digest ``sources``."""
        return _canonical(self.settings) == _canonical(settings) and self.sources == sources


def _canonical(settings: Mapping) -> str:
    """``settings`` as JSON with sorted keys; refuses keys that are not strings, which JSON
    would turn into strings (``{1: x}`` and ``{"1": x}`` would read as one setting)."""

    def check_keys(value: object) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise TypeError(f"settings must have string keys only, got {key!r}")
                check_keys(item)
        elif isinstance(value, list | tuple):
            for item in value:
                check_keys(item)

    check_keys(settings)
    try:
        return json.dumps(settings, sort_keys=True, allow_nan=True)
    except TypeError as error:
        raise TypeError(f"settings must hold JSON values only: {error}") from None


def _package_root() -> Path:
    return Path(str(resources.files("synpmx_lite")))


def sources_digest(paths: Iterable[str]) -> str:
    """SHA-256 digest of the named package sources, by their names and contents.

    Parameters
    ----------
    paths : iterable of str
        Files or folders inside the package (``"pmx"``, ``"generator/estimate.py"``); a folder
        stands for every ``.py`` file below it. Name every module the computation runs, the
        shared helpers it calls included: a change to a module left out goes unseen, and the
        stored result would be returned for code that no longer makes it.

    Returns
    -------
    str
        The hexadecimal digest; it changes when any of those files changes, is added or goes.

    Raises
    ------
    ValueError
        If no path is given (a digest of nothing would never change), or a path names nothing
        in the package.
    """
    root, digest = _package_root().resolve(), hashlib.sha256()
    paths = sorted(set(paths))
    if not paths:
        raise ValueError("paths: name at least one file or folder of synpmx_lite")
    for path in paths:
        target = (root / path).resolve()
        if not target.exists() or not target.is_relative_to(root):
            raise ValueError(f"paths: {path!r} is not a file or folder of synpmx_lite")
        files = sorted(target.rglob("*.py")) if target.is_dir() else [target]
        for file in files:
            digest.update(file.relative_to(root).as_posix().encode() + b"\0")
            digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()


def read_stored(path: Path) -> StoredResult:
    """Read a result written by :func:`store` (or kept in the cache folder)."""
    with np.load(path, allow_pickle=False) as stored:
        meta = json.loads(str(stored[_META]))
        arrays = {key: stored[key] for key in stored.files if key != _META}
    return StoredResult(arrays, meta["settings"], meta["sources"], meta["made"], meta["seconds"])


def store(path: str | os.PathLike, result: StoredResult) -> None:
    """Write ``result`` to ``path`` (``.npz``), its keys beside the arrays.

    The file is written beside ``path`` and then renamed onto it, so that a reader (another
    build running at the same time) never sees a file half written.
    """
    path = Path(path)
    if path.suffix != ".npz":
        raise ValueError(f"path must end in .npz, got {str(path)!r}")
    meta = {key: getattr(result, key) for key in ("settings", "sources", "made", "seconds")}
    if _META in result.arrays:
        raise ValueError(f"arrays: the name {_META!r} is reserved for the keys")
    meta_json = json.dumps(meta, allow_nan=True)
    handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".npz")
    try:
        with os.fdopen(handle, "wb") as file:
            np.savez_compressed(file, **result.arrays, **{_META: np.array(meta_json)})
        os.chmod(scratch, 0o666 & ~_umask())  # mkstemp's file is private; a stored one is not
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def cache_folder() -> Path:
    """Where results computed afresh are kept: ``$SYNPMX_CACHE``, else ``~/.cache/synpmx_lite``."""
    return Path(os.environ.get("SYNPMX_CACHE", Path.home() / ".cache" / "synpmx_lite"))


def progress(name: str) -> Callable[[int, int], None]:
    """A progress line on standard error for a computation called ``name``."""

    def report(done: int, total: int) -> None:
        end = "\n" if done >= total else "\r"
        print(f"{name}: {done}/{total}", end=end, file=sys.stderr, flush=True)

    return report


def compute(
    name: str,
    settings: Mapping,
    sources: str,
    work: Callable[[Callable[[int, int], None]], dict[str, np.ndarray]],
) -> StoredResult:
    """Run ``work(progress)`` and key its arrays by ``settings`` and ``sources``."""
    settings = json.loads(_canonical(settings))  # as a stored file gives them back
    started = time.perf_counter()
    arrays = {key: np.asarray(value) for key, value in work(progress(name)).items()}
    made = datetime.now(timezone.utc).date().isoformat()
    return StoredResult(arrays, settings, sources, made, time.perf_counter() - started)


def load_or_compute(
    name: str,
    *,
    settings: Mapping,
    sources: str,
    work: Callable[[Callable[[int, int], None]], dict[str, np.ndarray]],
) -> StoredResult:
    """The stored result for these settings and sources, or the result computed afresh.

    Looks in ``synpmx_lite/data/<name>.npz``, then in the cache folder; a file whose settings
    or source digest differ is never used, and a cached file that cannot be read (cut short,
    or of another format) is computed afresh. A result computed afresh is written to the
    cache folder.

    Parameters
    ----------
    name : str
        The result's name, also its file name.
    settings : mapping
        Every setting the result depends on (JSON values).
    sources : str
        Digest of the sources that compute it (:func:`sources_digest`).
    work : callable
        Computes the arrays; called with a progress callback ``report(done, total)``.

    Returns
    -------
    StoredResult
    """
    key = hashlib.sha256((_canonical(settings) + sources).encode()).hexdigest()[:16]
    shipped = _package_root() / "data" / f"{name}.npz"
    cached = cache_folder() / f"{name}-{key}.npz"
    if shipped.exists() and (result := read_stored(shipped)).matches(settings, sources):
        return result
    if cached.exists():
        try:
            result = read_stored(cached)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # cut short
            result = None
        if result is not None and result.matches(settings, sources):
            return result
    result = compute(name, settings, sources, work)
    cached.parent.mkdir(parents=True, exist_ok=True)
    store(cached, result)
    return result
