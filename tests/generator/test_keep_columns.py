"""Keep columns: a value copied onto an arm is released only where three of its patients hold it."""

import dataclasses
import json

import pytest

from synpmx_lite.generator.estimate import (
    model_fingerprint,
    model_privacy_checks,
    synpmx_model_estimate,
)
from synpmx_lite.generator.generate import synpmx_model_generate
from synpmx_lite.generator.private_release import private_fingerprint
from synpmx_lite.generator.release import Fingerprint
from synpmx_lite.pmx.study import pmx_roles
from tests.simulated import SIMULATED_ROLES, small_study

ROLES = dataclasses.replace(SIMULATED_ROLES, keep=("SITE", "BATCH"))


def with_columns(data, **columns):
    """The study with patient i's value of each column set to values[i]."""
    ids = data["id"].unique()
    return data.assign(
        **{
            name: data["id"].map(dict(zip(ids, values, strict=True)))
            for name, values in columns.items()
        }
    )


@pytest.fixture(scope="module")
def fit():
    data = with_columns(
        small_study(12, seed=1),
        SITE=["Leeds"] * 10 + ["York"] * 2,
        BATCH=[f"b{i // 2}" for i in range(12)],  # six batches of two patients each
    )
    return synpmx_model_estimate(data, ROLES)


def test_a_value_held_by_three_is_kept_and_one_held_by_two_is_written_as_missing(fit):
    fingerprint = model_fingerprint(fit)
    assert fingerprint.arms[0]["keep"] == {"SITE": "Leeds", "BATCH": None}
    assert Fingerprint.from_json(fingerprint.to_json()) == fingerprint
    checks = model_privacy_checks(fit).set_index("check")["verdict"]
    assert (checks[["P1", "P2", "P3", "P4"]] == "pass").all()
    synthetic = synpmx_model_generate(fit, seed=4)
    assert set(synthetic["SITE"]) == {"Leeds"}
    assert synthetic["BATCH"].isna().all()


def test_the_threshold_counts_the_arms_patients_not_the_studys():
    data = small_study(12, seed=2)
    ids = data["id"].unique()
    arms = dict(zip(ids, ["A"] * 6 + ["B"] * 6, strict=True))
    # Site S1 is held by two patients of arm A and four of arm B.
    site = dict(
        zip(ids, ["S1", "S1", "S2", "S2", "S3", "S4"] + ["S1"] * 4 + ["S5"] * 2, strict=True)
    )
    data = data.assign(arm=data["id"].map(arms), SITE=data["id"].map(site))
    fit = synpmx_model_estimate(data, dataclasses.replace(SIMULATED_ROLES, keep=("SITE",)))
    keep = {arm["patients"]: arm["keep"]["SITE"] for arm in model_fingerprint(fit).arms}
    assert [arm["keep"]["SITE"] for arm in model_fingerprint(fit).arms].count(None) == 1
    assert "S1" in keep.values()


def test_p3_fails_on_a_keep_value_too_few_patients_hold(fit):
    release = json.loads(model_fingerprint(fit).to_json())
    release["arms"][0]["keep"]["BATCH"] = "b3"
    checks = model_privacy_checks(fit, released=json.dumps(release)).set_index("check")
    assert checks.loc["P3", "verdict"] == "FAIL"
    assert "BATCH" in checks.loc["P3", "result"]


def test_p2_fails_on_a_source_identifier_in_a_keep_column(fit):
    release = json.loads(model_fingerprint(fit).to_json())
    release["arms"][0]["keep"]["SITE"] = str(fit.study.ids[0])
    checks = model_privacy_checks(fit, released=json.dumps(release)).set_index("check")
    assert checks.loc["P2", "verdict"] == "FAIL"


def test_keep_columns_are_named_columns_not_covariates():
    with pytest.raises(ValueError, match="keep"):
        pmx_roles(id="i", time="t", dv="y", amt="a", evid="e", covariates=["S"], keep=["S"])
    with pytest.raises(TypeError, match="keep"):
        pmx_roles(id="i", time="t", dv="y", amt="a", evid="e", keep="S")


def test_the_private_release_refuses_keep_columns_it_would_release_unnoised(fit):
    # The arms' keep values come from the ordinary release: without noise, outside the budget.
    with pytest.raises(ValueError, match=r"does not privatise keep columns \(the roles' keep\)"):
        private_fingerprint(fit, epsilon=1.0, subsets=2)
