"""Check P6: a release judged against the earlier releases of the same study.

Two releases of one study at different data cuts (an interim at 20 patients, the final at 21)
can each pass P1-P5 and still give a patient away between them: a category frequency at two
figures times the cohort size is an exact count below 50 patients, so subtracting the
releases gives the new patient's level, and a level that appears only in the second shows that
the first cut held fewer than ``k`` patients with it. :func:`between_releases` reads the
released JSON of each (nothing from the source: the attacker holds no more) and finds every
released count or frequency whose change between two releases rests on one to ``k - 1``
patients, over every count the rounded numbers can stand for.

What it cannot see: releases it is not given, and continuous summaries and estimates, whose
differences bound the new patients' values rather than count them
(:mod:`synpmx_lite.generator.differencing` measures how tightly).
"""

from __future__ import annotations

import math

from .checks import SMALLEST_THRESHOLD, as_mapping, as_sequence, figures_in, is_number, read_release

__all__ = ["P6_QUESTION", "between_releases"]

#: The question P6 answers.
P6_QUESTION = "No group under the threshold between releases"


def _implied(frequency: float, total: int) -> range:
    """The whole counts out of ``total`` that ``frequency`` stands for, read as an attacker
    who knows the policy reads it: at two figures at least (0.4 is 0.40), so that a change
    the release pins down is found even where a trailing zero is not written."""
    figures = max(2, figures_in(frequency))
    half = 0.5 * 10.0 ** (math.floor(math.log10(frequency)) - figures + 1) if frequency else 0.005
    low = math.ceil((frequency - half) * total - 1e-9)
    return range(max(low, 0), min(math.floor((frequency + half) * total + 1e-9), total) + 1)


def _counts(release: dict, k_category: int) -> dict[str, range]:
    """Every count a release holds, as the range of whole patients its numbers stand for: the
    cohort, each arm, each category level (an absent level of a released covariate: 0 to
    ``k_category - 1``, the folded ones) and the patients whose dose changed."""
    cohort = release.get("cohort_size")
    if not isinstance(cohort, int) or cohort < 1:
        return {}
    counts = {"the cohort": range(cohort, cohort + 1)}
    for i, arm in enumerate(map(as_mapping, as_sequence(release.get("arms")))):
        if isinstance(arm.get("patients"), int):
            counts[f"arm {i + 1}"] = range(arm["patients"], arm["patients"] + 1)
    for name, pairs in as_mapping(release.get("categories")).items():
        for pair in as_sequence(pairs):
            if isinstance(pair, list) and len(pair) == 2 and is_number(pair[1]):
                counts[f"{name} level {pair[0]!r}"] = _implied(pair[1], cohort)
        counts[f"{name}: released"] = range(0, 0)  # marks the covariate as released
    rate = release.get("dose_change_rate")
    if is_number(rate) and 0 < rate < 1:
        counts["patients whose dose changed"] = _implied(rate, cohort)
    return counts


def between_releases(
    released: object, earlier: list, *, min_arm_patients: int = 3, min_category_patients: int = 3
) -> list[str]:
    """The changes between a release and each earlier one that rest on too few patients.

    Parameters
    ----------
    released : Fingerprint or str
        The new release (its JSON text).
    earlier : list of Fingerprint or str
        The earlier releases of the same study.
    min_arm_patients, min_category_patients : int, default 3
        The thresholds (each at least :data:`synpmx_lite.generator.checks.SMALLEST_THRESHOLD`).

    Returns
    -------
    list of str
        One problem per count whose change between the two releases is, for every count the
        rounded numbers can stand for, one to ``k - 1`` patients either way; empty where none.
    """
    if not isinstance(earlier, list | tuple):
        raise TypeError(f"earlier_releases must be a list of releases, got {earlier!r}")
    k_arm = max(min_arm_patients, SMALLEST_THRESHOLD)
    k_category = max(min_category_patients, SMALLEST_THRESHOLD)
    new = _counts(read_release(released)[0], k_category)
    problems = []
    for j, old_release in enumerate(earlier):
        old = _counts(read_release(old_release)[0], k_category)
        for what in sorted(set(new) | set(old)):
            if what.endswith(": released"):
                continue
            k = k_category if " level " in what else k_arm
            low_new, high_new = _span(new, what, k_category)
            low_old, high_old = _span(old, what, k_category)
            low, high = low_new - high_old, high_new - low_old
            if (1 <= low and high < k) or (-k < low and high <= -1):
                change = f"{low}" if low == high else f"{low} to {high}"
                problems.append(f"{what} changed by {change} since earlier release {j + 1}")
    return problems


def _span(counts: dict, what: str, k_category: int) -> tuple[int, int]:
    """The lowest and highest count a release's numbers allow for ``what``: a level its
    released covariate does not show was folded (0 to ``k_category - 1``); anything else
    absent is unknown (never isolates)."""
    if what in counts:
        span = counts[what]
        return (span[0], span[-1]) if span else (0, 10**9)
    covariate = what.split(" level ", 1)[0]
    if " level " in what and f"{covariate}: released" in counts:
        return 0, k_category - 1
    return 0, 10**9
