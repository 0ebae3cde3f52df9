"""Yes/no and graded endpoints, and graded covariates: level frequencies with rare levels folded."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.generator.estimate import (
    model_fingerprint,
    model_privacy_checks,
    synpmx_model_estimate,
)
from synpmx_lite.generator.generate import synpmx_model_generate
from synpmx_lite.generator.release import Fingerprint
from synpmx_lite.pmx.pd import pd_endpoints
from synpmx_lite.pmx.study import load_dataset, pmx_roles
from tests.simulated import SIMULATED_ROLES, small_study

ROLES = dataclasses.replace(SIMULATED_ROLES, pk_endpoint="DV", graded=("AE",))


def with_grades(data, seed=5):
    """The study with an adverse-event grade at each PK sample: 0, 1 or 2, and grade 4 in
    exactly two patients."""
    rng = np.random.default_rng(seed)
    samples = data[data["evid"] == 0].copy()
    samples["dvid"] = "AE"
    samples["dv"] = rng.choice([0.0, 1.0, 2.0], size=len(samples), p=[0.5, 0.3, 0.2])
    severe = samples.groupby("id").head(1).index[:2]
    samples.loc[severe, "dv"] = 4.0
    both = pd.concat([data, samples]).sort_values(["id", "time", "evid"], kind="stable")
    return both.reset_index(drop=True), samples


@pytest.fixture(scope="module")
def graded():
    data, samples = with_grades(small_study(12, seed=1))
    return synpmx_model_estimate(data, ROLES), samples


def test_a_rare_grade_is_folded_into_the_most_common_and_never_generated(graded):
    fit, samples = graded
    assert "AE" not in pd_endpoints(fit.study) and "AE" not in fit.pd
    fingerprint = model_fingerprint(fit)
    levels = dict(map(tuple, fingerprint.graded["AE"]))
    assert set(levels) == {0, 1, 2}
    assert sum(levels.values()) == pytest.approx(1.0, abs=0.02)
    holders = samples.groupby("dv")["id"].nunique()
    assert holders[4.0] == 2 and (holders.drop(4.0) >= 3).all()
    counts = samples["dv"].value_counts()
    most_common = counts.idxmax()
    expected = (counts[most_common] + counts[4.0]) / counts.sum()
    assert levels[most_common] == pytest.approx(expected, abs=0.005)
    assert Fingerprint.from_json(fingerprint.to_json()) == fingerprint
    checks = model_privacy_checks(fit).set_index("check")["verdict"]
    assert (checks[["P1", "P2", "P3", "P4"]] == "pass").all()
    synthetic = synpmx_model_generate(fit, seed=8)
    grades = synthetic.loc[(synthetic["evid"] == 0) & (synthetic["dvid"] == "AE"), "dv"]
    assert len(grades) > 0 and set(grades) <= {0.0, 1.0, 2.0}


def test_p3_fails_on_a_released_grade_two_patients_had(graded):
    fit, _ = graded
    release = json.loads(model_fingerprint(fit).to_json())
    release["graded"]["AE"].append([4, 0.02])
    checks = model_privacy_checks(fit, released=json.dumps(release)).set_index("check")
    assert checks.loc["P3", "verdict"] == "FAIL"
    assert "level 4 of AE is observed in 2 patient(s)" in checks.loc["P3", "result"]


def test_a_graded_endpoint_cannot_also_be_a_pd_model(graded):
    fit, _ = graded
    release = json.loads(model_fingerprint(fit).to_json())
    release["pd"]["AE"] = {
        "shape": "slope", "baseline": 1, "baseline_sd": 0.5,
        "parameters": {"slope": 0.01}, "residual": 0.5,
    }  # fmt: skip
    checks = model_privacy_checks(fit, released=json.dumps(release)).set_index("check")
    assert checks.loc["P1", "verdict"] == "FAIL"


def test_pheno_apgar_as_a_graded_covariate_is_released_as_levels_with_rare_scores_folded():
    # Shipped, the Apgar score is summarised as a continuous covariate, as the R generator
    # does; declared categorical, it is released as level frequencies.
    data, roles = load_dataset("pheno_sd")
    fit = synpmx_model_estimate(data, dataclasses.replace(roles, categorical=("APGR",)))
    fingerprint = model_fingerprint(fit)
    levels = [level for level, _ in fingerprint.categories["APGR"]]
    apgar = fit.study.covariates["APGR"].value_counts()
    assert set(levels) == set(apgar.index[apgar >= 3])
    assert set(apgar.index[apgar < 3])  # some scores are rare, and folded away
    assert "APGR" not in fingerprint.covariates


def test_graded_roles_are_checked():
    with pytest.raises(TypeError, match="graded"):
        pmx_roles(id="i", time="t", dv="y", amt="a", evid="e", graded="AE")
    with pytest.raises(ValueError, match="graded"):
        pmx_roles(id="i", time="t", dv="y", amt="a", evid="e", pk_endpoint="cp", graded=["cp"])
