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
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
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
        stands for every ``.py`` file below it.

    Returns
    -------
    str
        The hexadecimal digest; it changes when any of those files changes, is added or goes.

    Raises
    ------
    ValueError
        If a path names nothing in the package.
    """
    root, digest = _package_root(), hashlib.sha256()
    for path in sorted(set(paths)):
        target = root / path
        if not target.exists():
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
    """Write ``result`` to ``path`` (``.npz``), its keys beside the arrays."""
    meta = {key: getattr(result, key) for key in ("settings", "sources", "made", "seconds")}
    if _META in result.arrays:
        raise ValueError(f"arrays: the name {_META!r} is reserved for the keys")
    np.savez_compressed(path, **result.arrays, **{_META: np.array(json.dumps(meta))})


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
    started = time.perf_counter()
    arrays = work(progress(name))
    made = datetime.now(timezone.utc).date().isoformat()
    return StoredResult(arrays, dict(settings), sources, made, time.perf_counter() - started)


def load_or_compute(
    name: str,
    *,
    settings: Mapping,
    sources: str,
    work: Callable[[Callable[[int, int], None]], dict[str, np.ndarray]],
) -> StoredResult:
    """The stored result for these settings and sources, or the result computed afresh.

    Looks in ``synpmx_lite/data/<name>.npz``, then in the cache folder; a file whose settings
    or source digest differ is never used. A result computed afresh is written to the cache
    folder.

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
    for path in (shipped, cached):
        if path.exists() and (result := read_stored(path)).matches(settings, sources):
            return result
    result = compute(name, settings, sources, work)
    cached.parent.mkdir(parents=True, exist_ok=True)
    store(cached, result)
    return result
