"""The refits on synthetic data across studies, precisions and budgets, stored; and the frontier.

Refitting the model to many synthetic studies of every study, at three precisions and at
several budgets of the private release, costs minutes. :func:`usefulness_results` reads them
from ``synpmx_lite/data/usefulness_refits.npz``, computed by ``python -m
synpmx_lite.generator.frontier``, keyed by the settings and by a SHA-256 digest of the package
sources that compute them (:data:`SOURCES`); when either differs, the results are computed
afresh with a progress line (:func:`synpmx_lite.stored.load_or_compute`), never read stale.

The private releases are stored too, as their JSON: OpenDP's samplers cannot be seeded, so a
recomputation draws other releases; everything downstream of a release (the synthetic studies
and their refits) is seeded, and a test refits stored releases to check the stored refits.
Each study is computed in its own process (:data:`WORKERS` at once, the largest first) with
seeds fixed by precision, epsilon and draw: not by study, so every study uses the same seeds
(``seed + p`` for the ``p``-th precision, ``seed + 100 (e + 1) + draw`` for draw ``draw`` at
the ``e``-th epsilon), and the arrays depend neither on the scheduling nor on which other
studies are computed. ``benchmarks/bench_frontier.py`` extrapolates the default settings to
about 470 s of CPU per worker (36 s per draw); on two cores the shipped file has taken 15 to
25 minutes, with the machine shared with other work (its metadata's ``seconds`` says how long).

Twelve private releases per epsilon, each with one synthetic study: the synthetic studies of
one release share its noise, so with ``D`` releases of ``R`` studies the mean's variance is
``var_release / D + var_study / (D R)``; for a fixed number of refits ``D R`` it is smallest
at ``R = 1`` whenever releases differ at all (the two components were about equal in the
earlier store of 2 releases of 3 studies). Twelve releases let the standard error over them,
the independent units, be estimated to about 20 %.

:func:`frontier_table` turns the refits into usefulness, the share of the PK estimates a refit
recovers within a tolerance, against epsilon; :func:`frontier_figure` draws it, with reference
points (the ordinary releases) at a given epsilon or, where none is known, as horizontal lines.
"""

from __future__ import annotations

import importlib.metadata
import math
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import pandas as pd
import plotnine as p9

from ..plotting import theme_book
from ..pmx.population import FitWarning
from ..pmx.study import DATASETS, load_dataset
from ..stored import StoredResult, load_or_compute, sources_digest, store
from .estimate import ModelFit, synpmx_model_estimate
from .private_release import PrivateRelease, private_fingerprint, subset_estimates
from .release import Fingerprint
from .utility import (
    PRECISIONS,
    fingerprint_at,
    model_estimates,
    pd_bands,
    refit_estimates,
    synthetic_studies,
    vpc_bands_by_arm,
)

__all__ = [
    "BAND_STANDARD_ERRORS",
    "DEFAULT_SETTINGS",
    "PUBLISHED_ENROLMENT",
    "SOURCES",
    "WORKERS",
    "UsefulnessResults",
    "frontier_figure",
    "frontier_table",
    "published_groups",
    "recovered_share",
    "usefulness_results",
]

#: The package sources the stored refits depend on (folders stand for their ``.py`` files);
#: the studies' data files join them (:func:`_digest`), and OpenDP's version the settings.
SOURCES = ("pmx", "generator", "rounding.py", "_validation.py", "stored.py", "plotting.py")

#: The settings of the stored refits.
DEFAULT_SETTINGS: dict = {
    "studies": [
        "warfarin",
        "theo_sd",
        "theo_md",
        "pheno_sd",
        "mavoglurant",
        "wbcSim",
        "mad_sim",
        "pkpd_sim",
        "mixroute_sim",
        "onc_sim",
    ],
    "estimation_seed": 1,
    "replicates": 12,
    "epsilons": [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0],
    "dp_draws": 12,
    "dp_replicates": 1,
    "seed": 24,
}

#: Processes computing studies at once (the machine's two cores); not a setting, since the
#: arrays are the same for any number.
WORKERS = 2

#: The frontier's band: this many standard errors (over the private releases) either side.
BAND_STANDARD_ERRORS = 2

_NAME = "usefulness_refits"
# A stored predictive check's columns: each cell's observed percentile and its band.
_CHECK_COLUMNS = ["observed", "low", "high"]


def _fit(study: str, seed: int) -> ModelFit:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return synpmx_model_estimate(*load_dataset(study), seed=seed)


def _study_arrays(study: str, settings: dict) -> dict[str, np.ndarray]:
    """One study's source estimates, precision refits, private releases and their refits."""
    fit = _fit(study, settings["estimation_seed"])
    arrays = {
        f"{study}|names": np.array(model_estimates(fit.pk, fit.pd).index, dtype=str),
        f"{study}|source": model_estimates(fit.pk, fit.pd).to_numpy(),
    }
    for p, (label, figures) in enumerate(PRECISIONS.items()):
        released = fingerprint_at(fit, figures)
        draws = {"replicates": settings["replicates"], "seed": settings["seed"] + p}
        arrays[f"{study}|{label}"] = refit_estimates(released, fit, **draws).to_numpy()
        synthetic = synthetic_studies(released, fit.roles, **draws)
        arrays |= _check_arrays(f"{study}|{label}", fit, released, synthetic)
    if fit.pk is not None:
        arrays.update(_private_arrays(study, fit, settings))
    return arrays


#: Each study's enrolment as its source publishes it (``synpmx_lite/data/README.md``): the
#: papers and nlmixr2data for the public studies, the designs' constants for the simulated
#: ones. A number fixed outside the data, as a protocol's planned enrolment would be.
PUBLISHED_ENROLMENT: dict[str, int] = {
    "warfarin": 32,  # O'Reilly & Aggeler 1968, as in nlmixr2data
    "theo_sd": 12,  # Boeckmann, Sheiner & Beal, NONMEM Users Guide
    "theo_md": 12,
    "pheno_sd": 59,  # Grasela & Donn 1985, as in nlmixr2data
    "mavoglurant": 120,  # Wendling et al. 2016
    "mad_sim": 60,  # four cohorts of 15 (pmx.simulated_designs)
    "pkpd_sim": 180,  # three arms of 60
    "mixroute_sim": 90,  # 30 IV, 60 oral
    "onc_sim": 200,
}


def _check_arrays(
    key: str, fit: ModelFit, released: Fingerprint, studies: list
) -> dict[str, np.ndarray]:
    """The predictive checks of the refits' own synthetic studies: each cell's observed
    percentile and band (``observed``, ``low``, ``high``), for the concentrations and for each
    PD endpoint ``released`` models, so that every precision gets the chapter's checks."""
    checks = {}
    if fit.pk is not None:
        checks["vpc"] = vpc_bands_by_arm(fit, studies)
    for endpoint in released.pd:
        checks[f"pd {endpoint}"] = pd_bands(fit, studies, endpoint=endpoint)
    return {
        f"{key}|check {name}": bands[_CHECK_COLUMNS].to_numpy() for name, bands in checks.items()
    }


def published_groups(study: str) -> int:
    """The groups of a shipped study's private release: a tenth of its published enrolment
    (:data:`PUBLISHED_ENROLMENT`), at least 2, never read from the cohort.

    A sponsor would fix the number from the protocol's planned enrolment before the data are
    seen: computed from the cohort, it would change with one patient and regroup everyone.
    """
    if study not in PUBLISHED_ENROLMENT:
        raise ValueError(
            f"study {study!r} has no published enrolment; known: {sorted(PUBLISHED_ENROLMENT)}"
        )
    return max(2, PUBLISHED_ENROLMENT[study] // 10)


def _private_arrays(study: str, fit: ModelFit, settings: dict) -> dict[str, np.ndarray]:
    """Every private release of one study, as JSON, and the refits on its synthetic data."""
    finite = [e for e in settings["epsilons"] if math.isfinite(e)]
    # The group fits do not depend on the budget; an infinite one needs none.
    groups = subset_estimates(fit, subsets=published_groups(study)) if finite else None
    arrays = {}
    if groups is not None:
        arrays[f"{study}|group_names"] = np.array(list(groups), dtype=str)
        arrays[f"{study}|groups"] = np.array(list(groups.values()))
    for e, epsilon in enumerate(settings["epsilons"]):
        for draw in range(settings["dp_draws"]):
            release = private_fingerprint(fit, epsilon=epsilon, groups=groups)
            key = f"{study}|epsilon={epsilon:g}|draw={draw}"
            arrays[f"{key}|release"] = np.array(release.to_json())
            refits = refit_estimates(
                release.fingerprint,
                fit,
                replicates=settings["dp_replicates"],
                seed=settings["seed"] + 100 * (e + 1) + draw,
            )
            arrays[key] = refits.to_numpy()
    return arrays


def _work(settings: dict, *, workers: int = WORKERS):
    """The computation for :func:`~synpmx_lite.stored.load_or_compute`: the studies in
    ``workers`` processes (1: in this one), the largest first so that the two processes end
    together, the arrays gathered in the settings' order."""

    def work(report) -> dict[str, np.ndarray]:
        studies = settings["studies"]
        largest_first = sorted(studies, key=lambda study: -len(load_dataset(study)[0]))
        pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else nullcontext()
        with pool:
            mapped = (pool.map if workers > 1 else map)(
                _study_arrays, largest_first, repeat(settings)
            )
            parts = {}
            for study, part in zip(largest_first, mapped, strict=True):
                parts[study] = part
                report(len(parts), len(studies))
        return {key: value for study in studies for key, value in parts[study].items()}

    return work


@dataclass(frozen=True)
class UsefulnessResults:
    """The stored refits, read by study and release.

    Attributes
    ----------
    stored : StoredResult
        The arrays with their settings and source digest.
    """

    stored: StoredResult

    @property
    def settings(self) -> dict:
        """The settings they were computed with."""
        return self.stored.settings

    def source(self, study: str) -> pd.Series:
        """The source fit's estimates."""
        arrays = self.stored.arrays
        return pd.Series(arrays[f"{study}|source"], index=arrays[f"{study}|names"].tolist())

    def _frame(self, study: str, key: str) -> pd.DataFrame:
        names = self.stored.arrays[f"{study}|names"].tolist()
        return pd.DataFrame(self.stored.arrays[f"{study}|{key}"], columns=names)

    def predictive_checks(self, study: str, precision: str) -> dict[str, pd.DataFrame]:
        """The predictive checks of the refits' synthetic studies at ``precision``, by check
        (``"vpc"``, ``"pd <endpoint>"``): per cell, ``observed``, ``low`` and ``high``."""
        prefix = f"{study}|{precision}|check "
        return {
            key.removeprefix(prefix): pd.DataFrame(value, columns=_CHECK_COLUMNS)
            for key, value in self.stored.arrays.items()
            if key.startswith(prefix)
        }

    def refits(self, study: str, precision: str) -> pd.DataFrame:
        """Refits on synthetic data from the release at ``precision`` (a key of PRECISIONS)."""
        return self._frame(study, precision)

    def private_refits(self, study: str, epsilon: float) -> pd.DataFrame:
        """Refits on synthetic data from every private release at ``epsilon``, stacked."""
        draws = range(self.settings["dp_draws"])
        frames = [self._frame(study, f"epsilon={epsilon:g}|draw={d}") for d in draws]
        return pd.concat(frames, ignore_index=True)

    def private_release(self, study: str, epsilon: float, draw: int = 0) -> PrivateRelease:
        """A stored private release."""
        text = str(self.stored.arrays[f"{study}|epsilon={epsilon:g}|draw={draw}|release"])
        return PrivateRelease.from_json(text)

    def groups(self, study: str) -> dict[str, np.ndarray]:
        """The group fits of the study's private releases, by estimate (NaN: a failed fit)."""
        arrays = self.stored.arrays
        names = arrays[f"{study}|group_names"].tolist()
        return dict(zip(names, arrays[f"{study}|groups"], strict=True))

    def has_private(self, study: str) -> bool:
        """Whether the study has private releases (it has a PK model)."""
        return f"{study}|epsilon={self.settings['epsilons'][0]:g}|draw=0" in self.stored.arrays


def _digest(settings: dict) -> str:
    """SHA-256 digest of :data:`SOURCES` and the data files of the settings' studies."""
    files = [f"data/{DATASETS[study][0]}" for study in settings["studies"]]
    return sources_digest([*SOURCES, *files])


def _keyed(settings: dict) -> dict:
    """The settings with OpenDP's version, whose noise the private releases draw."""
    return {**settings, "opendp": importlib.metadata.version("opendp")}


def usefulness_results(settings: dict | None = None) -> UsefulnessResults:
    """The stored refits for ``settings`` (default :data:`DEFAULT_SETTINGS`), or computed
    afresh, with a progress line, where the settings or the sources differ."""
    settings = dict(DEFAULT_SETTINGS if settings is None else settings)
    stored = load_or_compute(
        _NAME, settings=_keyed(settings), sources=_digest(settings), work=_work(settings)
    )
    return UsefulnessResults(stored)


def recovered_share(refits: pd.DataFrame, source: pd.Series, tolerance: float) -> np.ndarray:
    """Per replicate, the share of PK estimates within ``tolerance`` of the source, as a ratio
    either way (a failed fit recovers nothing). The tolerance is on each estimate's own scale:
    for a between-subject variance, 25 % is about 12 % on its SD."""
    pk = [name for name in source.index if name.split()[0] in ("typical", "omega", "residual")]
    ratio = refits[pk].to_numpy(dtype=float) / source[pk].to_numpy()
    close = np.abs(np.log(ratio)) <= math.log1p(tolerance)
    return np.where(np.isfinite(ratio), close, False).mean(axis=1)


def _mean_and_se(share: np.ndarray, clusters: int) -> tuple[float, float]:
    """The mean of ``share`` and its standard error over ``clusters`` equal consecutive
    clusters (the private releases: synthetic studies of one release are not independent)."""
    means = share.reshape(clusters, -1).mean(axis=1)
    return float(means.mean()), float(means.std(ddof=1) / math.sqrt(clusters))


def frontier_table(results: UsefulnessResults, *, tolerance: float = 0.25) -> pd.DataFrame:
    """Usefulness of every release: the share of PK estimates recovered within ``tolerance``.

    Returns
    -------
    pandas.DataFrame
        One row per study and release: ``study``, ``release`` (a precision, or ``DP``),
        ``epsilon`` (inf for the non-private releases), ``usefulness`` (mean over synthetic
        replicates and private draws), ``se`` (its standard error: over the synthetic
        replicates of an ordinary release, over the draws of a private one, each draw's
        replicates averaged first) and ``releases`` (the independent units behind ``se``).
    """
    rows = []
    draws = results.settings["dp_draws"]
    for study in results.settings["studies"]:
        if not results.has_private(study):
            continue
        source = results.source(study)
        releases = [(label, math.inf, results.refits(study, label)) for label in PRECISIONS]
        releases += [
            ("DP", eps, results.private_refits(study, eps)) for eps in results.settings["epsilons"]
        ]
        for release, epsilon, refits in releases:
            share = recovered_share(refits, source, tolerance)
            clusters = draws if release == "DP" else share.size
            mean, se = _mean_and_se(share, clusters)
            rows.append(
                {
                    "study": study,
                    "release": release,
                    "epsilon": epsilon,
                    "usefulness": mean,
                    "se": se,
                    "releases": clusters,
                }
            )
    return pd.DataFrame(rows)


def frontier_figure(table: pd.DataFrame, references: pd.DataFrame) -> p9.ggplot:
    """Usefulness against epsilon for the private releases, with reference releases.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`frontier_table` (its ``DP`` rows are drawn).
    references : pandas.DataFrame
        Columns ``study``, ``release``, ``usefulness`` and ``epsilon``: a reference with a
        finite epsilon (the lower bound an audit puts on the ordinary release) is a point
        there, with a dotted line on to the largest epsilon (the release's own is at or above
        it); one with epsilon NaN or inf (none known) a horizontal line.
    """
    # A share lies in [0, 1]: the band is clipped there.
    private = table[table["release"] == "DP"].assign(
        low=lambda t: (t["usefulness"] - BAND_STANDARD_ERRORS * t["se"]).clip(0, 1),
        high=lambda t: (t["usefulness"] + BAND_STANDARD_ERRORS * t["se"]).clip(0, 1),
    )
    bounded = np.isfinite(references["epsilon"].astype(float))
    # A bound is a floor: the release sits at or above it, so it runs on to the right edge.
    placed = references[bounded].assign(right=float(private["epsilon"].max()))
    lines = references[~bounded]
    return (
        p9.ggplot(private, p9.aes("epsilon", "usefulness"))
        + p9.geom_hline(p9.aes(yintercept="usefulness", linetype="release"), data=lines)
        + p9.geom_ribbon(p9.aes(ymin="low", ymax="high"), alpha=0.2)
        + p9.geom_line()
        + p9.geom_point()
        + p9.geom_segment(
            p9.aes(x="epsilon", xend="right", y="usefulness", yend="usefulness"),
            data=placed,
            linetype="dotted",
        )
        + p9.geom_point(p9.aes(shape="release"), data=placed, size=3)
        + p9.scale_x_log10()
        + p9.facet_wrap("study")
        + p9.labs(
            x="epsilon of the private release",
            y="share of PK estimates recovered",
            linetype="ordinary release,\nepsilon unknown",
            shape="ordinary release, epsilon\nat or above the audit's bound",
        )
        + theme_book()
    )


def main() -> None:
    """Compute the stored refits with the default settings and write them to the package."""
    settings = dict(DEFAULT_SETTINGS)
    result = load_or_compute(
        _NAME, settings=_keyed(settings), sources=_digest(settings), work=_work(settings)
    )
    path = f"{__file__.rsplit('/generator/', 1)[0]}/data/{_NAME}.npz"
    store(path, result)
    print(f"wrote {path}: {len(result.arrays)} arrays in {result.seconds:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
