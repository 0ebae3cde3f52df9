r"""Shadow releases of the real generator, computed once by a command and stored with their keys.

The likelihood-ratio audit (:mod:`synpmx_lite.attacks.audit`) calibrates, patient by patient,
what a release looks like with and without them. That takes hundreds of runs of the whole
generator per study (FOCE-I fit, influence rounds, fingerprint), too many for every build of
the book. This module runs them, keeps only what the audit reads (the released vector of each
shadow cohort at each rounding, every candidate's own two scores, who was a member, the fits'
trust signals and each patient's P5 influence), and stores them in
``synpmx_lite/data/shadow_<study>.npz`` with the seed, the settings and a SHA-256 digest of the
sources they depend on (:data:`SHADOW_SOURCES`).

:func:`shadow_releases` returns the stored arrays when both keys match and computes them afresh
(with a progress line on standard error) when either differs, so a changed setting or a changed
engine never gets numbers from other settings or other code. Regenerate the shipped files
with::

    python -m synpmx_lite.attacks.shadow_releases [study ...]

which prints how long each study took.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from .._validation import check_count, check_real
from ..generator.checks import _release_untrusted_fits, read_release
from ..generator.estimate import ModelFit, model_fingerprint, synpmx_model_estimate
from ..pmx.population import FitWarning, empirical_bayes_estimates
from ..pmx.study import StudyEvents, load_dataset, prepare_study
from ..rounding import round_significant
from ..stored import StoredResult, load_or_compute, sources_digest, store
from .membership import _population_score
from .membership_generator import (
    _cohort_shares,
    _patient_facts,
    _released_shares,
    _scored_facts,
    _shadow_cohort_size,
    _shadow_cohorts,
    _share_score,
    refuse_unauditable,
)

__all__ = [
    "RELEASE_LEVELS",
    "SHADOW_REPLICATES",
    "SHADOW_SEED",
    "SHADOW_SOURCES",
    "shadow_digest",
    "shadow_releases",
    "shadow_settings",
]

#: The three releases of the same fits: full precision, PK estimates and shares at two
#: significant figures, and the release as it leaves (PK estimates at one figure, shares as the
#: fingerprint rounds them).
RELEASE_LEVELS = ("unrounded", "2 figures", "1 figure")
#: Shadow cohorts per study: enough that the AUCs' SEs are near 0.01 and about a thousand
#: non-member scores stand behind the rate at 0.1 % false positives.
SHADOW_REPLICATES = {"warfarin": 200, "pheno_sd": 200, "mavoglurant": 120}
SHADOW_SEED = 20261202
SHADOW_FRACTION = 0.75
#: The package sources the shadow releases depend on (the digest covers only these, so that
#: changes elsewhere in the package leave the stored files valid): the engine, the generator,
#: the scores, rounding and validation, this module, and the studies' data files.
SHADOW_SOURCES = (
    "pmx",
    "generator",
    "rounding.py",
    "_validation.py",
    "attacks/membership.py",
    "attacks/membership_generator.py",
    "attacks/shadow_releases.py",
)


def shadow_settings(
    name: str, *, replicates: int, cohort_fraction: float = SHADOW_FRACTION, seed: int = SHADOW_SEED
) -> dict:
    """The settings that key one study's shadow releases (checked)."""
    _, roles = load_dataset(name)  # an unknown study is refused here
    refuse_unauditable(name, roles)  # and one whose release the audit cannot score
    return {
        "study": name,
        "replicates": check_count(replicates, "replicates", minimum=10),
        "cohort_fraction": check_real(
            cohort_fraction, "cohort_fraction", low=0, high=1, low_open=True, high_open=True
        ),
        "seed": check_count(seed, "seed", minimum=0),
        "levels": list(RELEASE_LEVELS),
    }


def shadow_digest(name: str) -> str:
    """SHA-256 digest of :data:`SHADOW_SOURCES` and the study's data file."""
    return sources_digest([*SHADOW_SOURCES, f"data/{name}.csv"])


def shadow_releases(
    name: str,
    *,
    replicates: int | None = None,
    cohort_fraction: float = SHADOW_FRACTION,
    seed: int = SHADOW_SEED,
) -> StoredResult:
    """One study's shadow releases: stored if the settings and sources match, else computed.

    Parameters
    ----------
    name : str
        A shipped study with a PK model.
    replicates : int, optional
        Shadow cohorts (at least 10); default :data:`SHADOW_REPLICATES` for the study.
    cohort_fraction : float, default 0.75
        Share of the study in each shadow cohort.
    seed : int
        Seed of the cohorts' draw.

    Returns
    -------
    StoredResult
        Arrays ``member`` ``(R, n)``; ``influence`` ``(n,)``, each patient's largest P5 move
        of a PK estimate in the whole study's fit (infinite for a patient the influence rounds
        left out); ``converged``, ``diagnosed`` and ``untrusted`` ``(R,)``, the fits' trust
        signals (the flag, any diagnostic, and the generator's own judgement in its checks);
        ``diagnostics`` ``(R,)``, each PK fit's diagnostics one a line (empty for a
        fit without any), so that the audit can say why it left a fit out;
        and per level of :data:`RELEASE_LEVELS`, ``release <level>`` ``(R, d)`` (log typical
        values, log variances, released shares; a share not released is 0) and ``own
        <level>`` ``(R, n, 2)`` (each candidate's shares and population scores against the
        whole study's full-precision values).
    """
    replicates = SHADOW_REPLICATES.get(name, 0) if replicates is None else replicates
    settings = shadow_settings(
        name, replicates=replicates, cohort_fraction=cohort_fraction, seed=seed
    )
    return load_or_compute(
        f"shadow_{name}",
        settings=settings,
        sources=shadow_digest(name),
        work=lambda report: _shadow_arrays(settings, report),
    )


def _shadow_arrays(settings: dict, report: Callable[[int, int], None]) -> dict[str, np.ndarray]:
    """Run the generator on every shadow cohort and keep what the audit reads."""
    name = settings["study"]
    data, roles = load_dataset(name)
    study = prepare_study(data, roles)
    n = study.n_patients
    m = _shadow_cohort_size(name, n, settings["cohort_fraction"])
    rng = np.random.default_rng(settings["seed"])
    cohorts, member = _shadow_cohorts(rng, settings["replicates"], n, m)
    with warnings.catch_warnings():
        # An untrusted fit is kept and counted; the audit excludes it.
        warnings.simplefilter("ignore", FitWarning)
        whole = synpmx_model_estimate(data, roles)
        if whole.pk is None:
            raise ValueError(f"study {name!r} has no PK fit to audit")
        fits = []
        for done, cohort in enumerate(cohorts, start=1):
            fits.append(synpmx_model_estimate(data[data[roles.id].isin(study.ids[cohort])], roles))
            report(done, len(cohorts))
    arrays = {"member": member, "influence": _influence(whole, study)}
    arrays |= _trust(fits)
    arrays |= _release_arrays(study, whole, fits, cohorts, member)
    return arrays


def _influence(whole: ModelFit, study: StudyEvents) -> np.ndarray:
    """Each patient's largest P5 move of a PK estimate (infinite if left out for it)."""
    moves = whole.privacy.moves
    pk = moves[[c for c in moves if c.startswith(f"{study.pk_endpoint}:")]].abs().max(axis=1)
    return pk.reindex(study.ids).fillna(np.inf).to_numpy(dtype=float)


def _pk_untrusted(fit: ModelFit) -> bool:
    """Whether P5 would not trust the PK fit's readings (its diagnostics, or exact refits
    that did not converge below the fail bar on the released estimates)."""
    released, _ = read_release(model_fingerprint(fit))
    found = _release_untrusted_fits(fit.pk, fit.pd, fit.privacy, released, fit.study.pk_endpoint)
    return any(name == "PK" for name, _ in found)


def _trust(fits: list[ModelFit]) -> dict[str, np.ndarray]:
    untrusted = [_pk_untrusted(f) for f in fits]
    return {
        "converged": np.array([f.pk.converged for f in fits]),
        "diagnosed": np.array([bool(f.pk.diagnostics) for f in fits]),
        "untrusted": np.array(untrusted),
        "diagnostics": np.array(["\n".join(f.pk.diagnostics) for f in fits], dtype=str),
    }


def _release_arrays(
    study: StudyEvents,
    whole: ModelFit,
    fits: list[ModelFit],
    cohorts: np.ndarray,
    member: np.ndarray,
) -> dict[str, np.ndarray]:
    """The released vectors and own scores at every level of :data:`RELEASE_LEVELS`."""
    facts = _patient_facts(study, min_patients=3)
    whole_shares = np.nanmean(facts.to_numpy(), axis=0)
    scored = _scored_facts(facts, whole_shares)
    fingerprints = [model_fingerprint(fit) for fit in fits]
    released_shares = np.array(
        [_released_shares(fp, facts, c) for fp, c in zip(fingerprints, cohorts, strict=True)]
    )
    cohort_shares = np.array([_cohort_shares(study, facts, row) for row in member])
    unrounded_shares = np.where(np.isnan(released_shares), np.nan, cohort_shares)
    tables = {
        kind: pd.DataFrame([getattr(fit.pk, kind) for fit in fits])
        for kind in ("typical", "omega", "residual")
    }
    reference_shares = np.tile(whole_shares, (len(fits), 1))
    arrays = {}
    for level, figures in zip(RELEASE_LEVELS, (None, 2, 1), strict=True):
        rounded = {kind: _rounded(table, figures) for kind, table in tables.items()}
        shares = _level_shares(figures, unrounded_shares, released_shares)
        vector, population = _pk_release(study, whole, rounded)
        share_score = _share_score(facts.to_numpy(), scored, shares, reference_shares)
        arrays[f"release {level}"] = np.hstack([vector, np.nan_to_num(shares[:, scored])])
        arrays[f"own {level}"] = np.stack([share_score, population], axis=-1)
    return arrays


def _pk_release(
    study: StudyEvents, whole: ModelFit, rounded: dict[str, pd.DataFrame]
) -> tuple[np.ndarray, np.ndarray]:
    """The released PK vector (log typical values, log variances), ``(R, 2p)``, and every
    candidate's population score under it against the whole study's values, ``(R, n)``."""
    parameters = list(study.roles.model.parameters)
    eta, _ = empirical_bayes_estimates(
        study, rounded["typical"], rounded["omega"], rounded["residual"], error=whole.pk.error
    )
    typical = rounded["typical"][parameters].to_numpy()
    omega = rounded["omega"][parameters].to_numpy()
    ref_typical = whole.pk.typical[parameters].to_numpy()
    ref_omega = whole.pk.omega[parameters].to_numpy()
    own = np.log(typical / ref_typical)[:, None] + eta  # log parameters less the reference's
    population = _population_score(own, typical[:, None], omega[:, None], ref_typical, ref_omega)
    return np.hstack([np.log(typical), np.log(omega)]), population


def _level_shares(figures: int | None, unrounded: np.ndarray, released: np.ndarray) -> np.ndarray:
    """The shares at one level: the cohort's, those at two figures, or as released."""
    if figures is None:
        return unrounded
    if figures == 1:
        return released
    known = ~np.isnan(unrounded)
    rounded = np.full_like(unrounded, np.nan)
    rounded[known] = round_significant(unrounded[known], figures)
    return rounded


def _rounded(table: pd.DataFrame, figures: int | None) -> pd.DataFrame:
    if figures is None:
        return table.reset_index(drop=True)
    return pd.DataFrame(round_significant(table.to_numpy(), figures), columns=table.columns)


def main(names: list[str]) -> None:
    """Compute and store the shipped shadow releases of ``names`` (default: every audited study)."""
    from importlib import resources

    from ..stored import compute

    for name in names or list(SHADOW_REPLICATES):
        settings = shadow_settings(name, replicates=SHADOW_REPLICATES[name])
        started = time.perf_counter()
        result = compute(
            f"shadow_{name}", settings, shadow_digest(name),
            lambda report, s=settings: _shadow_arrays(s, report),
        )  # fmt: skip
        store(resources.files("synpmx_lite") / "data" / f"shadow_{name}.npz", result)
        print(f"{name}: {settings['replicates']} shadow releases in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
