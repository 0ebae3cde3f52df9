"""A study mixing IV and oral doses (NONMEM's CMT 2 under an oral model): each planned dose
is released with its route, synthetic patients get their doses by it, and P3 reads it."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.generator.estimate import (
    model_fingerprint,
    model_privacy_checks,
    synpmx_model_estimate,
)
from synpmx_lite.generator.generate import synpmx_model_generate
from synpmx_lite.generator.protections import dose_route
from synpmx_lite.generator.release import release_problems
from synpmx_lite.generator.utility import synthetic_study
from synpmx_lite.pmx.population import FitWarning, fit_population
from synpmx_lite.pmx.study import load_dataset


@pytest.fixture(scope="module")
def mixroute():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return synpmx_model_estimate(*load_dataset("mixroute_sim"), seed=1)


def _routes(release: dict) -> list[list[str]]:
    return [[dose["route"] for dose in arm["doses"]] for arm in release["arms"]]


def test_each_arm_is_released_with_the_route_its_patients_took(mixroute):
    # mixroute_sim: 60 patients given 200 mg orally (CMT 1), 30 given 100 mg IV (CMT 2).
    release = json.loads(model_fingerprint(mixroute).to_json())
    assert [arm["patients"] for arm in release["arms"]] == [60, 30]
    assert _routes(release) == [["oral"], ["iv"]]
    assert (model_privacy_checks(mixroute)["verdict"] == "pass").all()


def test_a_route_the_source_does_not_give_fails_p3(mixroute):
    release = json.loads(model_fingerprint(mixroute).to_json())
    release["arms"][1]["doses"][0]["route"] = "oral"
    checks = model_privacy_checks(mixroute, released=json.dumps(release)).set_index("check")
    assert checks.loc["P3", "verdict"] == "FAIL"
    assert "arm 2 doses" in checks.loc["P3", "result"]


def test_synthetic_iv_doses_enter_the_central_compartment(mixroute):
    synthetic = synpmx_model_generate(mixroute, seed=2)
    doses = synthetic[synthetic["EVID"] == 1]
    # The oral arm's doses go to the depot (1), the IV arm's to the central compartment (2).
    assert set(map(tuple, doses[["AMT", "CMT"]].drop_duplicates().to_numpy())) == {
        (200.0, 1),
        (100.0, 2),
    }
    # Read back, the IV doses are IV doses: a refit on synthetic data recovers the source's
    # clearance and volume (released at one figure: 6 and 80) within a quarter.
    study = synthetic_study(model_fingerprint(mixroute), mixroute.roles, seed=3)
    assert study.dose_central is not None
    assert study.dose_central.sum() == (synthetic_iv := (study.dose_amount == 100).sum())
    assert synthetic_iv > 0
    refit = fit_population(study)
    source = mixroute.pk.typical
    np.testing.assert_allclose(refit.typical[["cl", "v"]], source[["cl", "v"]], rtol=0.25)


def test_the_schema_allows_only_the_models_routes(mixroute):
    release = json.loads(model_fingerprint(mixroute).to_json())
    assert release_problems(release) == []
    release["arms"][0]["doses"][0]["route"] = "im"
    assert any("route must be one of ['iv', 'oral']" in p for p in release_problems(release))
    # An IV model has no depot: an oral dose under it is refused.
    release["arms"][0]["doses"][0]["route"] = "oral"
    release["model"]["route"] = "iv"
    assert any("route must be one of ['iv']" in p for p in release_problems(release))
    del release["arms"][0]["doses"][0]["route"]
    assert any("lacks ['route']" in p for p in release_problems(release))


def _new_arm(*, iv: int, oral: int):
    """mixroute_sim with its first ``iv`` IV and first ``oral`` oral patients moved to an arm
    of their own (150 mg); the data, the roles and the IDs moved."""
    data, roles = load_dataset("mixroute_sim")
    doses = data["EVID"].eq(1)
    iv_ids = data.loc[data["CMT"].eq(2) & doses, "ID"].unique()[:iv]
    oral_ids = data.loc[data["CMT"].eq(1) & doses, "ID"].unique()[:oral]
    moved = data["ID"].isin(np.r_[iv_ids, oral_ids])
    data.loc[moved, "DOSE"] = 150
    data.loc[moved & doses, "AMT"] = 150
    return data, roles, (iv_ids, oral_ids)


def _quiet_fit(data, roles):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return synpmx_model_estimate(data, roles, seed=1)


def test_an_arm_split_evenly_between_routes_is_planned_and_says_nothing_of_the_split():
    """Attack: an arm of four patients, two given the dose IV and two orally. Left out of the
    plan, the dose would tell that neither route reached three of the four; planned by the
    tie's route, the release reads like any arm's. The checks plan it independently of the
    builder: a release without the dose fails P3."""
    data, roles, _ = _new_arm(iv=2, oral=2)
    fit = _quiet_fit(data, roles)
    release = json.loads(model_fingerprint(fit).to_json())
    assert [arm["patients"] for arm in release["arms"]] == [58, 28, 4]
    assert _routes(release) == [["oral"], ["iv"], ["oral"]]
    assert (model_privacy_checks(fit)["verdict"] == "pass").all()
    release["arms"][2]["doses"] = []
    checks = model_privacy_checks(fit, released=json.dumps(release)).set_index("check")
    assert checks.loc["P3", "verdict"] == "FAIL"


def test_a_later_dose_fewer_patients_reached_keeps_the_arms_route():
    """Attack (found in review): an arm of five, three given the dose IV and two orally, and a
    second dose that one IV and both oral patients took. Read dose by dose, the second dose's
    route would be oral, and tell that the two who stopped had IV doses; the route is the
    arm's, so both doses are released IV, and the checks hold it so independently."""
    data, roles, (iv_ids, oral_ids) = _new_arm(iv=3, oral=2)
    again = data[data["ID"].isin(np.r_[iv_ids[:1], oral_ids]) & data["EVID"].eq(1)]
    data = pd.concat([data, again.assign(TIME=30.0)]).sort_values(["ID", "TIME"], kind="stable")
    fit = _quiet_fit(data.reset_index(drop=True), roles)
    release = json.loads(model_fingerprint(fit).to_json())
    assert [arm["patients"] for arm in release["arms"]] == [58, 27, 5]
    assert _routes(release)[2] == ["iv", "iv"]
    assert (model_privacy_checks(fit)["verdict"] == "pass").all()
    release["arms"][2]["doses"][1]["route"] = "oral"
    checks = model_privacy_checks(fit, released=json.dumps(release)).set_index("check")
    assert checks.loc["P3", "verdict"] == "FAIL"


def test_an_arms_route_is_its_patients_majority_or_none_below_the_threshold():
    assert dose_route(["iv", "iv", "iv", "oral"], [0, 1, 2, 3], min_patients=3) == "iv"
    # A patient's repeated doses count once; a tie goes to the depot.
    assert dose_route(["iv"] * 4 + ["oral"] * 3, [0, 0, 1, 2, 3, 4, 5], min_patients=3) == "oral"
    # Split two and two: the tie's route.
    assert dose_route(["iv", "iv", "oral", "oral"], [0, 1, 2, 3], min_patients=3) == "oral"
    # Fewer than three patients took the doses by any route: no route describes them.
    assert dose_route(["iv", "oral", "oral"], [0, 1, 1], min_patients=3) is None
    with pytest.raises(ValueError, match="routes must be 'iv' or 'oral'"):
        dose_route(["im", "iv", "iv"], [0, 1, 2], min_patients=3)
    with pytest.raises(TypeError, match="min_patients"):
        dose_route(["iv"], [0], min_patients=1.5)
