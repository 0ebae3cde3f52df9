"""Check P6: a release against the earlier releases of the same study (data cuts)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synpmx_lite.generator.estimate import (
    model_fingerprint,
    model_privacy_checks,
    synpmx_model_estimate,
)
from synpmx_lite.generator.ledger import between_releases
from synpmx_lite.rounding import round_significant
from tests.simulated import SIMULATED_ROLES, small_study


def _sexed(n, levels, seed=1):
    data = small_study(n, seed=seed)
    ids = data["id"].unique()
    return data.assign(SEX=data["id"].map(dict(zip(ids, levels, strict=True))))


def test_p6_fails_on_an_interim_and_final_cut_a_patient_apart():
    # Interim cut: twelve patients, six women. Final cut: one more, a woman. Each release
    # passes P1-P4 alone; subtracting the SEX frequencies times the cohort sizes gives the
    # new patient's sex, and P6 fails on it.
    final = _sexed(13, ["F", "M"] * 6 + ["F"])
    interim = final[final["id"] < final["id"].unique()[12]]
    first = model_fingerprint(synpmx_model_estimate(interim, SIMULATED_ROLES))
    fit = synpmx_model_estimate(final, SIMULATED_ROLES)
    alone = model_privacy_checks(fit).set_index("check")
    assert (alone.loc[["P1", "P2", "P3", "P4"], "verdict"] == "pass").all()
    checks = model_privacy_checks(fit, earlier_releases=[first.to_json()]).set_index("check")
    assert checks.loc["P6", "verdict"] == "FAIL"
    assert "SEX level 'F' changed by 1 since earlier release 1" in checks.loc["P6", "result"]
    assert "the cohort changed by 1" in checks.loc["P6", "result"]


def test_p6_passes_cuts_that_add_enough_patients_to_every_level():
    final = _sexed(18, ["F", "M"] * 9)
    interim = final[final["id"].isin(final["id"].unique()[:12])]
    first = model_fingerprint(synpmx_model_estimate(interim, SIMULATED_ROLES))
    fit = synpmx_model_estimate(final, SIMULATED_ROLES)
    checks = model_privacy_checks(fit, earlier_releases=[first]).set_index("check")
    assert checks.loc["P6", "verdict"] == "pass", checks.loc["P6", "result"]


def _release(counts):
    """A release's counted fields for level counts (F, M, X): levels under 3 folded away."""
    cohort = int(sum(counts))
    kept = {level: c for level, c in zip("FMX", counts, strict=True) if c >= 3}
    pairs = []
    if len(kept) >= 2:
        top = max(kept, key=kept.get)
        kept[top] += cohort - sum(kept.values())
        pairs = [[lv, float(round_significant(c / cohort, 2))] for lv, c in kept.items()]
    release = {"cohort_size": cohort, "arms": [{"patients": cohort}], "dose_change_rate": 0.0}
    release["categories"] = {"SEX": pairs} if pairs else {}
    return json.dumps(release), (kept if pairs else {})


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(st.integers(0, 12), min_size=3, max_size=3),
    st.lists(st.integers(0, 6), min_size=3, max_size=3),
)
def test_no_released_difference_between_cuts_rests_on_fewer_than_three(before, added):
    # Random studies under 50 patients (frequencies at two figures are exact counts there) and
    # random cuts: where P6 passes, no count released in both cuts changed by 1 or 2 patients,
    # and a level shown only in one cut came from, or went to, a group of 3 or more.
    if sum(before) < 3:
        return
    after = [b + a for b, a in zip(before, added, strict=True)]
    old, old_kept = _release(before)
    new, new_kept = _release(after)
    problems = between_releases(new, [old])
    changes = [sum(after) - sum(before)]
    changes += [new_kept[lv] - old_kept[lv] for lv in set(new_kept) & set(old_kept)]
    if not problems:
        assert all(c == 0 or abs(c) >= 3 for c in changes)
    if any(1 <= abs(c) < 3 for c in changes[:1]):
        assert problems


def test_the_ledger_withholds_what_a_cut_would_give_away_and_p6_then_passes():
    # Final cut: three more patients, one woman and two men. Built without the ledger, the
    # women's count changes by one and P6 fails; built with it, SEX is withheld and P6 passes.
    final = _sexed(15, ["F", "M"] * 6 + ["F", "M", "M"])
    interim = final[final["id"].isin(final["id"].unique()[:12])]
    first = model_fingerprint(synpmx_model_estimate(interim, SIMULATED_ROLES)).to_json()
    without = synpmx_model_estimate(final, SIMULATED_ROLES)
    checks = model_privacy_checks(without, earlier_releases=[first]).set_index("check")
    assert checks.loc["P6", "verdict"] == "FAIL"
    assert "SEX level 'F' changed by 1" in checks.loc["P6", "result"]
    fit = synpmx_model_estimate(final, SIMULATED_ROLES, earlier_releases=[first])
    assert "SEX" not in model_fingerprint(fit).categories
    checks = model_privacy_checks(fit).set_index("check")
    assert checks.loc["P6", "verdict"] == "pass", checks.loc["P6", "result"]
    assert (checks.loc[["P1", "P2", "P3", "P4"], "verdict"] == "pass").all()


def test_a_cut_one_patient_apart_is_refused_with_the_ledger():
    final = _sexed(13, ["F", "M"] * 6 + ["F"])
    interim = final[final["id"].isin(final["id"].unique()[:12])]
    first = model_fingerprint(synpmx_model_estimate(interim, SIMULATED_ROLES))
    fit = synpmx_model_estimate(final, SIMULATED_ROLES, earlier_releases=[first])
    with pytest.raises(ValueError, match="the cohort changed by 1 since earlier release 1"):
        model_fingerprint(fit)
