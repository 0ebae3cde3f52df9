"""Released dose and visit times: distinct times of the source stay distinct and in order."""

import json
import warnings

import numpy as np
import pytest

from synpmx_lite.generator.estimate import (
    model_fingerprint,
    model_privacy_checks,
    synpmx_model_estimate,
)
from synpmx_lite.pmx.population import FitWarning
from synpmx_lite.pmx.study import load_dataset
from synpmx_lite.rounding import round_significant


@pytest.fixture(scope="module")
def onc():
    """onc_sim's fit and release (its first 30 patients, for speed: every patient has the same
    schedule): three-weekly doses, a trough an hour before each dose and a peak an hour after,
    past 1,000 h from the third dose."""
    data, roles = load_dataset("onc_sim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        fit = synpmx_model_estimate(data[data["ID"] <= 30], roles, seed=1)
    return fit, json.loads(model_fingerprint(fit).to_json())


def test_every_peak_stays_after_its_dose_and_no_visit_merges(onc):
    fit, release = onc
    doses = [d["time"] for d in release["arms"][0]["doses"]]
    source_doses = np.sort(fit.study.doses["time"].unique())
    assert len(doses) == source_doses.size
    for endpoint, rows in fit.study.observations.groupby("endpoint"):
        released = [t for _, t in release["endpoints"][str(endpoint)]["visits"]]
        source = np.sort(rows["time"].unique())  # every patient sampled at the same times
        assert len(set(released)) == source.size, (endpoint, released)
        assert released == sorted(released)
        for dose, released_dose in zip(source_doses, doses, strict=True):
            # The sample an hour after a dose (the peak) is released after it, the one an
            # hour before (the trough) before it.
            for offset, after in ((1, True), (-1, False)):
                if dose + offset in source:
                    shown = released[int(np.searchsorted(source, dose + offset))]
                    assert (shown > released_dose) == after, (endpoint, dose, offset)


def test_the_checks_pass_the_release_and_fail_two_figures(onc):
    fit, release = onc
    checks = model_privacy_checks(fit, released=json.dumps(release)).set_index("check")
    assert checks.loc["P3", "verdict"] == "pass", checks.loc["P3", "result"]
    # The release before this rule: every time at two figures, 1007, 1008 and 1009 h as 1000.
    for visit in release["endpoints"]["cp"]["visits"]:
        visit[1] = float(round_significant(visit[1], 2))
    for dose in release["arms"][0]["doses"]:
        dose["time"] = float(round_significant(dose["time"], 2))
    checks = model_privacy_checks(fit, released=json.dumps(release)).set_index("check")
    assert checks.loc["P3", "verdict"] == "FAIL"
    assert "merged or swapped" in checks.loc["P3", "result"]


def test_times_that_do_not_merge_keep_two_figures(warfarin_fit):
    release = model_fingerprint(warfarin_fit)
    times = [t for e in release.endpoints.values() for _, t in e["visits"]]
    times += [d["time"] for arm in release.arms for d in arm["doses"]]
    np.testing.assert_array_equal(times, round_significant(np.array(times), 2))
