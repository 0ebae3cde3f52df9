r"""What each public study's fingerprint releases to a membership attacker, stored with its keys.

The membership chapter counts, in the fingerprint of every public study that ships with the
package, the numbers its attacks could read: random effects (PK and PD) and shares of a
yes/no fact about each patient. Counting them needs every study fitted, the chapter's slowest
step, while the privacy chapter fits the same studies with the same seed for its own tables
and needs the fits themselves. This module stores the counts, a few integers per study, in
``synpmx_lite/data/public_releases.npz``, keyed by the studies, the seed and a SHA-256 digest
of the sources that fit and release them and of the studies' data (:data:`PUBLIC_SOURCES`);
:func:`public_releases` computes them afresh (with a progress line) when either key differs.
Regenerate the shipped file with::

    python -m synpmx_lite.attacks.public_releases
"""

from __future__ import annotations

import sys
import time
from importlib import resources

import numpy as np
import pandas as pd

from .._validation import check_count
from ..generator.estimate import model_fingerprint, privacy_checks_across_studies
from ..pmx.simulated_designs import SIMULATED_DESIGNS
from ..pmx.study import DATASETS
from ..stored import compute, load_or_compute, sources_digest, store

__all__ = ["PUBLIC_COLUMNS", "PUBLIC_SOURCES", "public_digest", "public_releases", "public_studies"]

#: The package sources the counts depend on (the studies' data files are added to them).
PUBLIC_SOURCES = ("pmx", "generator", "rounding.py", "_validation.py", "attacks/public_releases.py")

#: The table's columns: those of
#: :func:`~synpmx_lite.generator.estimate.privacy_checks_across_studies` it keeps, and
#: ``pd_random_effects``, the released PD models' baseline variances among ``random_effects``.
PUBLIC_COLUMNS = (
    "study",
    "patients",
    "random_effects",
    "pd_random_effects",
    "attendance_below_1",
    "free_frequencies",
    "fit",
)
_TEXT = ("study", "fit")
_NAME = "public_releases"


def public_studies() -> list[str]:
    """The shipped studies with public data behind them (not the package's simulated designs)."""
    return [name for name in DATASETS if name not in SIMULATED_DESIGNS]


def public_digest(studies: list[str]) -> str:
    """SHA-256 digest of :data:`PUBLIC_SOURCES` and the studies' data files."""
    return sources_digest([*PUBLIC_SOURCES, *(f"data/{DATASETS[s][0]}" for s in studies)])


def public_releases(seed: int = 1) -> pd.DataFrame:
    """Each public study's released counts: stored if the keys match, else computed afresh.

    Parameters
    ----------
    seed : int, default 1
        Passed to :func:`~synpmx_lite.generator.estimate.privacy_checks_across_studies` (the
        generator's default seed, as the privacy chapter fits the studies).

    Returns
    -------
    pandas.DataFrame
        One row per public study (:func:`public_studies`), columns :data:`PUBLIC_COLUMNS`;
        ``fit`` is "converged" or why the fits cannot be trusted, as in
        :func:`~synpmx_lite.generator.estimate.privacy_checks_across_studies`.
    """
    settings = _settings(seed)
    stored = load_or_compute(
        _NAME,
        settings=settings,
        sources=public_digest(settings["studies"]),
        work=lambda report: _release_arrays(settings, report),
    )
    return pd.DataFrame(
        {
            column: stored.arrays[column].astype(str if column in _TEXT else int)
            for column in PUBLIC_COLUMNS
        }
    )


def _settings(seed: int) -> dict:
    """The stored counts' settings: the public studies and the seed."""
    return {"studies": public_studies(), "seed": check_count(seed, "seed", minimum=0)}


def _release_arrays(settings: dict, report) -> dict[str, np.ndarray]:
    """Fit each study in turn (a progress step each) and keep its counts."""
    rows = []
    for done, name in enumerate(settings["studies"], start=1):
        table, fits = privacy_checks_across_studies([name], seed=settings["seed"], return_fits=True)
        if name not in fits:  # refused: the generator releases nothing of it to count
            raise ValueError(f"studies: {name} is refused by the generator, so releases nothing")
        row = table.iloc[0].to_dict()
        row["pd_random_effects"] = len(model_fingerprint(fits[name]).pd)
        rows.append(row)
        report(done, len(settings["studies"]))
    frame = pd.DataFrame(rows)
    # Text as numpy strings, not objects: a stored file is read without pickle.
    return {
        column: frame[column].to_numpy(str if column in _TEXT else np.int64)
        for column in PUBLIC_COLUMNS
    }


def main() -> None:
    """Compute and store the shipped counts (default seed)."""
    settings = _settings(1)
    started = time.perf_counter()
    result = compute(
        _NAME,
        settings,
        public_digest(settings["studies"]),
        lambda report: _release_arrays(settings, report),
    )
    store(resources.files("synpmx_lite") / "data" / f"{_NAME}.npz", result)
    print(f"public releases in {time.perf_counter() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
