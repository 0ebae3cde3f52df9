r"""The likelihood-ratio audit's results, computed once by a command and stored with their keys.

The audit (:mod:`synpmx_lite.attacks.audit`) refits its three attacks on
:data:`~synpmx_lite.attacks.audit.RESAMPLES` bootstrap resamples of every study's shadow
releases at every rounding, and the membership chapter adds null controls, reruns over
disjoint groups and a sensitivity reading. That is most of a chapter's execution, and the
landing page and the usefulness chapter quote the same numbers. This module runs every audit
those pages read and stores them in ``synpmx_lite/data/audit_results.npz``, keyed by the
audit's settings (seed, resamples, false-positive rates, attacks, blocks, the shadow releases'
own settings) and a SHA-256 digest of the shadow releases' sources and the audit's
(:data:`AUDIT_SOURCES`).

:func:`audit_results` returns the stored audits when both keys match and computes them afresh
(with a progress line on standard error) when either differs, so an edit to the engine, the
generator or the audit is never read stale. Regenerate the shipped file with::

    python -m synpmx_lite.attacks.audit_results

which prints how long it took.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd

from .._validation import check_count
from ..stored import compute, load_or_compute, sources_digest, store
from .audit import (
    AUDIT_ATTACKS,
    AUDIT_RATES,
    AUDIT_SEED,
    BLOCKS,
    DEGENERATE_MADS,
    RESAMPLES,
    Audit,
    audit_shadows,
    pk_width,
    rerun_spread,
)
from .shadow_releases import (
    RELEASE_LEVELS,
    SHADOW_REPLICATES,
    SHADOW_SOURCES,
    shadow_releases,
    shadow_settings,
)

__all__ = [
    "AUDIT_SOURCES",
    "BOUND_RESAMPLES",
    "RERUNS",
    "SHUFFLES",
    "SHUFFLE_RESAMPLES",
    "AuditResults",
    "audit_digest",
    "audit_results",
    "audit_settings",
]

#: The sources the stored audits depend on: the shadow releases' and the audit's.
AUDIT_SOURCES = (*SHADOW_SOURCES, "attacks/audit.py", "attacks/audit_results.py")
#: Bootstrap resamples of each study's audit as released (one figure), whose Bonferroni tails
#: (a sixth of 5 % each) the release's epsilon bound reads: about 17 resamples beyond each.
BOUND_RESAMPLES = 2000
#: Disjoint groups of each study's shadow releases audited as independent reruns.
RERUNS = 5
#: Null-control reruns (shuffles) on the first study, and the bootstrap resamples of each.
SHUFFLES, SHUFFLE_RESAMPLES = 16, 20
_NAME = "audit_results"
_KINDS = ("audit", "null", "lenient")  # as released, shuffled, residual faults kept


@dataclass(frozen=True)
class AuditResults:
    """Every audit the book's pages read, with when and how long they were made.

    Attributes
    ----------
    audits : dict of (str, str) to Audit
        ``(study, level)`` for every study of
        :data:`~synpmx_lite.attacks.shadow_releases.SHADOW_REPLICATES` and level of
        :data:`~synpmx_lite.attacks.shadow_releases.RELEASE_LEVELS`. Only the audits at one
        figure keep their ``scores`` (the ROC curves and the exposed patients read them); the
        others' ``scores`` are empty, to keep the stored file small.
    nulls : dict of str to Audit
        Each study's null control at one figure (releases shuffled between cohorts), without
        scores.
    lenient : dict of str to Audit
        Each study's audit at one figure with the fits flagged for their residual error model
        alone kept in (``keep_residual_faults``), without scores.
    reruns : dict of str to pandas.DataFrame
        Each study's :func:`~synpmx_lite.attacks.audit.rerun_spread` at one figure.
    shuffles : pandas.DataFrame
        The first study's null control shuffled :data:`SHUFFLES` times (seeds ``seed + 1``
        on), each shuffle's summary rows with its number in ``shuffle``.
    settings : dict
        The settings they were computed with (:func:`audit_settings`).
    made : str
        When they were computed (UTC date).
    seconds : float
        How long the computation took.
    """

    audits: dict
    nulls: dict
    lenient: dict
    reruns: dict
    shuffles: pd.DataFrame
    settings: dict
    made: str
    seconds: float


def audit_settings(
    *,
    seed: int = AUDIT_SEED,
    resamples: int = RESAMPLES,
    bound_resamples: int = BOUND_RESAMPLES,
    reruns: int = RERUNS,
    shuffles: int = SHUFFLES,
    shuffle_resamples: int = SHUFFLE_RESAMPLES,
) -> dict:
    """The settings that key the stored audits (checked), the shadow releases' included."""
    return {
        "seed": check_count(seed, "seed", minimum=0),
        "resamples": check_count(resamples, "resamples", minimum=2),
        "bound_resamples": check_count(bound_resamples, "bound_resamples", minimum=2),
        "reruns": check_count(reruns, "reruns", minimum=2),
        "shuffles": check_count(shuffles, "shuffles", minimum=1),
        "shuffle_resamples": check_count(shuffle_resamples, "shuffle_resamples", minimum=2),
        "rates": list(AUDIT_RATES),
        "attacks": list(AUDIT_ATTACKS),
        "blocks": BLOCKS,
        "degenerate_mads": DEGENERATE_MADS,
        "shadows": [shadow_settings(n, replicates=r) for n, r in SHADOW_REPLICATES.items()],
    }


def audit_digest() -> str:
    """SHA-256 digest of :data:`AUDIT_SOURCES` and every audited study's data file."""
    return sources_digest([*AUDIT_SOURCES, *(f"data/{n}.csv" for n in SHADOW_REPLICATES)])


def audit_results(
    *,
    seed: int = AUDIT_SEED,
    resamples: int = RESAMPLES,
    bound_resamples: int = BOUND_RESAMPLES,
    reruns: int = RERUNS,
    shuffles: int = SHUFFLES,
    shuffle_resamples: int = SHUFFLE_RESAMPLES,
) -> AuditResults:
    """The stored audits if their settings and sources match, else computed afresh.

    Parameters
    ----------
    seed : int, default AUDIT_SEED
        Seed of every audit's threshold split, shuffle and bootstrap (keyword-only).
    resamples : int, default RESAMPLES
        Bootstrap resamples of every audit but the shuffles and the audits as released
        (keyword-only).
    bound_resamples : int, default BOUND_RESAMPLES
        Bootstrap resamples of each study's audit as released, at one figure (keyword-only).
    reruns : int, default RERUNS
        Groups of :func:`~synpmx_lite.attacks.audit.rerun_spread` (keyword-only).
    shuffles, shuffle_resamples : int
        Null-control shuffles of the first study and their resamples (keyword-only).

    Returns
    -------
    AuditResults
    """
    settings = audit_settings(
        seed=seed, resamples=resamples, bound_resamples=bound_resamples, reruns=reruns,
        shuffles=shuffles, shuffle_resamples=shuffle_resamples,
    )  # fmt: skip
    stored = load_or_compute(
        _NAME, settings=settings, sources=audit_digest(),
        work=lambda report: _audit_arrays(settings, report),
    )  # fmt: skip
    return _from_arrays(stored.arrays, stored.settings, stored.made, stored.seconds)


def _audit_arrays(settings: dict, report: Callable[[int, int], None]) -> dict[str, np.ndarray]:
    """Run every audit and flatten it to named arrays."""
    names = list(SHADOW_REPLICATES)
    steps, done, arrays = len(names) * (len(RELEASE_LEVELS) + 3) + 1, 0, {}
    for name in names:
        shadows = shadow_releases(name, replicates=SHADOW_REPLICATES[name]).arrays
        for kind, level, options in _runs(settings):
            audit = audit_shadows(shadows, level, pk_width=pk_width(name), **options)
            keep_scores = kind == "audit" and level == "1 figure"  # the only ones a page reads
            arrays |= _flatten(f"{kind}|{name}|{level}", audit, scores=keep_scores)
            done += 1
            report(done, steps)
        spread = rerun_spread(
            shadows, "1 figure", pk_width=pk_width(name), groups=settings["reruns"]
        ).loc[list(AUDIT_ATTACKS)]
        arrays[f"reruns|{name}"] = spread.to_numpy(dtype=float)
        arrays["reruns columns"] = np.array(spread.columns, dtype=str)
        done += 1
        report(done, steps)
    arrays["shuffles"] = np.concatenate([_shuffle(names[0], k, settings) for k in
                                         range(1, settings["shuffles"] + 1)])  # fmt: skip
    report(steps, steps)
    return arrays


def _runs(settings: dict) -> list[tuple[str, str, dict]]:
    """Each audit of one study: its kind, level and options of ``audit_shadows``."""
    common = {"seed": settings["seed"], "resamples": settings["resamples"]}
    released = common | {"resamples": settings["bound_resamples"]}
    return [
        *(
            ("audit", level, released if level == "1 figure" else common)
            for level in RELEASE_LEVELS
        ),
        ("null", "1 figure", common | {"null_control": True}),
        ("lenient", "1 figure", common | {"keep_residual_faults": True}),
    ]


def _shuffle(name: str, shuffle: int, settings: dict) -> np.ndarray:
    """One null-control shuffle's summary, a row per attack, its number in the first column."""
    audit = audit_shadows(
        shadow_releases(name, replicates=SHADOW_REPLICATES[name]).arrays, "1 figure",
        pk_width=pk_width(name), null_control=True, seed=settings["seed"] + shuffle,
        resamples=settings["shuffle_resamples"],
    )  # fmt: skip
    values = audit.summary.drop(columns="attack").to_numpy(dtype=float)
    return np.column_stack([np.full(len(values), shuffle), values])


def _flatten(prefix: str, audit: Audit, *, scores: bool) -> dict[str, np.ndarray]:
    """One audit as arrays named ``prefix|field``, its scores only if ``scores`` (they are most
    of the file); the summary's rows follow AUDIT_ATTACKS."""
    if audit.replicates > np.iinfo(np.int16).max:
        raise ValueError(f"audit: {audit.replicates} replicates, too many to store")
    summary = audit.summary.set_index("attack").loc[list(AUDIT_ATTACKS)]
    arrays = {
        "summary columns": np.array(summary.columns, dtype=str),
        f"{prefix}|summary": summary.to_numpy(dtype=float),
        f"{prefix}|excluded": np.array([audit.excluded["flagged"], audit.excluded["degenerate"]]),
        f"{prefix}|member": audit.member,
        # Indices of at most a few hundred releases: small integers keep the file small.
        f"{prefix}|resample_index": audit.resample_index.astype(np.int16),
    }
    for attack in AUDIT_ATTACKS:
        if scores:
            arrays[f"{prefix}|scores|{attack}"] = audit.scores[attack]
        arrays[f"{prefix}|resampled|{attack}"] = audit.resampled[attack]
    return arrays


def _unflatten(arrays: dict, prefix: str, level: str) -> Audit:
    """The :class:`~synpmx_lite.attacks.audit.Audit` that :func:`_flatten` stored."""
    summary = pd.DataFrame(arrays[f"{prefix}|summary"], columns=arrays["summary columns"])
    summary.insert(0, "attack", list(AUDIT_ATTACKS))
    flagged, degenerate = (int(v) for v in arrays[f"{prefix}|excluded"])
    member = arrays[f"{prefix}|member"]
    return Audit(
        level=level,
        replicates=len(member),
        excluded={"flagged": flagged, "degenerate": degenerate},
        summary=summary,
        scores={a: arrays[k] for a in AUDIT_ATTACKS if (k := f"{prefix}|scores|{a}") in arrays},
        member=member,
        resampled={a: arrays[f"{prefix}|resampled|{a}"] for a in AUDIT_ATTACKS},
        resample_index=arrays[f"{prefix}|resample_index"].astype(np.intp),
    )


def _from_arrays(arrays: dict, settings: dict, made: str, seconds: float) -> AuditResults:
    names = [s["study"] for s in settings["shadows"]]
    found = {kind: {} for kind in _KINDS}
    for kind, name, level in itertools.product(_KINDS, names, RELEASE_LEVELS):
        if f"{kind}|{name}|{level}|summary" in arrays:
            found[kind][name, level] = _unflatten(arrays, f"{kind}|{name}|{level}", level)
    columns = ["shuffle", *arrays["summary columns"]]
    shuffles = pd.DataFrame(arrays["shuffles"], columns=columns).astype({"shuffle": int})
    shuffles.insert(1, "attack", np.tile(AUDIT_ATTACKS, settings["shuffles"]))
    reruns = {
        n: pd.DataFrame(
            arrays[f"reruns|{n}"], columns=arrays["reruns columns"],
            index=pd.Index(AUDIT_ATTACKS, name="attack"),
        )
        for n in names
    }  # fmt: skip
    return AuditResults(
        audits=found["audit"],
        nulls={n: a for (n, _), a in found["null"].items()},
        lenient={n: a for (n, _), a in found["lenient"].items()},
        reruns=reruns,
        shuffles=shuffles,
        settings=settings,
        made=made,
        seconds=seconds,
    )


def main() -> None:
    """Compute and store the shipped audits (default settings)."""
    settings = audit_settings()
    started = time.perf_counter()
    result = compute(
        _NAME, settings, audit_digest(), lambda report: _audit_arrays(settings, report)
    )
    store(resources.files("synpmx_lite") / "data" / f"{_NAME}.npz", result)
    print(f"audits in {time.perf_counter() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
