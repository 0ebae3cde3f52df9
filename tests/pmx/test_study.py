import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synpmx_lite.pmx import study
from synpmx_lite.pmx.pk import PkModel
from synpmx_lite.pmx.study import DATASETS, load_dataset, pmx_roles, prepare_study

ROLES = pmx_roles(
    id="ID",
    time="TIME",
    dv="DV",
    amt="AMT",
    evid="EVID",
    covariates=["WT", "SEX"],
    weight="WT",
    model=PkModel(route="iv"),
)


def _table(n=4):
    """n patients: a 100 mg bolus at 0, observations at 1 and 4 h."""
    rows = []
    for i in range(1, n + 1):
        rows.append([i, 0.0, 100.0, 0.0, 1, 60.0 + i, "f"])
        rows.append([i, 1.0, 0.0, 5.0 + i, 0, 60.0 + i, "f"])
        rows.append([i, 4.0, 0.0, 2.0 + i, 0, 60.0 + i, "f"])
    return pd.DataFrame(rows, columns=["ID", "TIME", "AMT", "DV", "EVID", "WT", "SEX"])


@pytest.mark.parametrize(
    ("name", "patients", "doses", "pk_observations"),
    [
        ("warfarin", 32, 32, 251),
        ("theo_sd", 12, 12, 132),
        ("theo_md", 12, 84, 264),
        ("pheno_sd", 59, 589, 155),
        ("mavoglurant", 120, 198, 2427),
        ("nimoData", 12, 120, 321),
    ],
)
def test_readers_count_patients_doses_and_observations(name, patients, doses, pk_observations):
    data, roles = load_dataset(name)
    study = prepare_study(data, roles)
    assert study.n_patients == patients
    assert len(study.doses) == doses
    assert study.obs_mask.sum() == pk_observations
    # The padded arrays hold exactly the long tables' doses.
    assert np.count_nonzero(study.dose_amount) == doses
    assert study.dose_amount.sum() == pytest.approx(study.doses["amount"].sum())


def test_codings_of_the_shipped_data():
    warfarin = prepare_study(*load_dataset("warfarin"))
    assert set(warfarin.observations["endpoint"]) == {"cp", "pca"}
    assert warfarin.pk_endpoint == "cp"
    # Mavoglurant's second occasion starts again at time 0: a second dosing period.
    mavoglurant = prepare_study(*load_dataset("mavoglurant"))
    two = mavoglurant.doses.groupby("patient")["period"].nunique()
    assert (two == 2).sum() == 78 and (two == 1).sum() == 42
    assert (mavoglurant.doses["duration"] > 0).all()
    # MDV 1 observation rows are dropped: 2480 EVID 0 rows less 53 missing.
    assert len(mavoglurant.observations) == 2427
    # pheno_sd: IV bolus doses only.
    pheno = prepare_study(*load_dataset("pheno_sd"))
    assert (pheno.doses["duration"] == 0).all()


def test_rxode2_infusion_end_rows_are_dropped():
    data = _table()
    data.loc[data["EVID"] == 1, "EVID"] = 10101
    data["RATE"] = np.where(data["EVID"] == 10101, 50.0, 0.0)
    ends = data[data["EVID"] == 10101].copy()
    ends[["TIME", "AMT", "RATE"]] = [[2.0, -100.0, -50.0]] * len(ends)
    data = pd.concat([data, ends]).sort_values(["ID", "TIME"], kind="stable")
    study = prepare_study(data, dataclasses.replace(ROLES, rate="RATE"))
    assert len(study.doses) == 4
    np.testing.assert_allclose(study.doses["duration"], 2.0)


def test_baseline_covariates_arms_and_subset():
    data = _table(5)
    data["ARM"] = np.where(data["ID"] <= 2, "low", "high")
    study = prepare_study(data, dataclasses.replace(ROLES, arm="ARM"))
    np.testing.assert_array_equal(study.covariates["WT"], [61, 62, 63, 64, 65])
    assert list(study.arms) == ["low", "low", "high", "high", "high"]
    part = study.subset(np.array([True, False, True, False, True]))
    assert list(part.ids) == [1, 3, 5]
    assert sorted(part.observations["patient"].unique()) == [0, 1, 2]
    np.testing.assert_array_equal(part.obs_dv[:, 0], [6.0, 8.0, 10.0])


def test_missing_and_non_numeric_columns():
    with pytest.raises(ValueError, match="'WT'"):
        prepare_study(_table().drop(columns="WT"), ROLES)
    data = _table()
    data["TIME"] = data["TIME"].astype(str)
    with pytest.raises(TypeError, match="'TIME'"):
        prepare_study(data, ROLES)
    with pytest.raises(TypeError, match="data"):
        prepare_study(_table().to_numpy(), ROLES)
    with pytest.raises(TypeError, match="roles"):
        prepare_study(_table(), {"id": "ID"})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.assign(TIME=d["TIME"] - 2.0), "negative times"),
        (lambda d: d.assign(AMT=np.where(d["EVID"] == 1, -5.0, 0.0)), "not positive"),
        (lambda d: d.assign(EVID=np.where(d["EVID"] == 1, 4, 0)), "unsupported event codes"),
        (lambda d: d[d["ID"] <= 2], "at least 3"),
    ],
)
def test_invalid_tables(change, message):
    with pytest.raises(ValueError, match=message):
        prepare_study(change(_table()), ROLES)


def test_observation_before_dose_and_patient_without_observation():
    data = _table()
    data.loc[(data["ID"] == 2) & (data["EVID"] == 1), "TIME"] = 2.0
    data = data.sort_values(["ID", "TIME"], kind="stable")
    with pytest.raises(ValueError, match=r"before any dose.*patient 2"):
        prepare_study(data, ROLES)
    data = _table()
    data = data[~((data["ID"] == 3) & (data["EVID"] == 0))]
    with pytest.raises(ValueError, match="patient 3 has no observation"):
        prepare_study(data, ROLES)


def test_endpoints_must_be_named():
    data = _table()
    data["DVID"] = "conc"
    data.loc[data["TIME"] == 4.0, "DVID"] = "effect"
    roles = dataclasses.replace(ROLES, dvid="DVID")
    with pytest.raises(ValueError, match="several endpoints"):
        prepare_study(data, roles)
    with pytest.raises(ValueError, match="not an endpoint"):
        prepare_study(data, dataclasses.replace(roles, pk_endpoint="cp"))
    study = prepare_study(data, dataclasses.replace(roles, pk_endpoint="conc"))
    assert study.obs_mask.sum() == 4


def test_pmx_roles_checks_its_arguments():
    with pytest.raises(TypeError, match="time"):
        pmx_roles(id="ID", time=3, dv="DV", amt="AMT", evid="EVID")
    with pytest.raises(ValueError, match="categorical"):
        pmx_roles(id="ID", time="T", dv="DV", amt="AMT", evid="EVID", categorical=["SEX"])
    with pytest.raises(ValueError, match="weight"):
        pmx_roles(id="ID", time="T", dv="DV", amt="AMT", evid="EVID", weight="WT")
    with pytest.raises(TypeError, match="covariates"):
        pmx_roles(id="ID", time="T", dv="DV", amt="AMT", evid="EVID", covariates="WT")
    with pytest.raises(TypeError, match="model"):
        pmx_roles(id="ID", time="T", dv="DV", amt="AMT", evid="EVID", model="oral")


def test_load_dataset_names():
    assert set(DATASETS) == {
        "warfarin",
        "theo_sd",
        "theo_md",
        "pheno_sd",
        "mavoglurant",
        "nimoData",
        "wbcSim",
        "mad_sim",
        "pkpd_sim",
        "mixroute_sim",
        "onc_sim",
    }
    with pytest.raises(ValueError, match="name"):
        load_dataset("wbcsim")
    with pytest.raises(TypeError, match="name"):
        load_dataset(3)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_missing_observation_must_be_flagged(bad):
    # Before, an observation row with a NaN or infinite DV was dropped without a word.
    data = _table()
    data.loc[4, "DV"] = bad
    with pytest.raises(ValueError, match=r"'DV' has missing or infinite values on .* rows 4"):
        prepare_study(data, ROLES)
    # Flagged with MDV 1 it is a missing observation, dropped.
    flagged = data.assign(MDV=np.where(data.index == 4, 1, 0))
    study = prepare_study(flagged, dataclasses.replace(ROLES, mdv="MDV"))
    assert study.obs_mask.sum() == 7


def test_duplicated_rows_are_named():
    data = _table()
    doubled = pd.concat([data.iloc[:4], data.iloc[3:4], data.iloc[4:]]).reset_index(drop=True)
    with pytest.raises(ValueError, match="duplicated rows 3, 4"):
        prepare_study(doubled, ROLES)


def test_a_patient_split_across_blocks_is_named():
    data = _table(4)
    moved = pd.concat([data.iloc[:2], data.iloc[3:], data.iloc[2:3]]).reset_index(drop=True)
    with pytest.raises(
        ValueError, match="patient 1 has rows in separate blocks, starting at rows 0, 11"
    ):
        prepare_study(moved, ROLES)


def test_visits_without_nominal_times_are_counted_afresh_each_period():
    """Found in the usefulness chapter: without nominal times, mavoglurant's second occasion
    numbered its visits on from the first occasion's samples, so patients with 11 and 12 first
    samples had no second-occasion visit in common, and the release listed visits twice."""
    study = prepare_study(*load_dataset("mavoglurant"))
    obs = study.observations
    first = obs.groupby(["patient", "period"])["visit"].min()
    assert (first == 0).all()
    second = obs[obs["period"] == 1]
    # Each second-occasion visit is the k-th sample of that occasion for every patient.
    rank = second.groupby("patient").cumcount()
    assert (second["visit"].to_numpy() == rank.to_numpy()).all()


_KEYS = st.integers(0, 40).flatmap(
    lambda n: st.tuples(*(st.lists(st.integers(0, 3), min_size=n, max_size=n) for _ in range(3)))
)


@settings(max_examples=40)
@given(_KEYS, st.lists(st.floats(-5, 5), min_size=40, max_size=40))
def test_the_grouping_helpers_agree_with_pandas(keys, values):
    """prepare_study's numpy grouping gives what pandas' groupby and factorize give."""
    patient, period, endpoint = (np.array(k, dtype=np.int64) for k in keys)
    endpoint = np.array(["PK", "PD", "E", "F"])[endpoint]
    frame = pd.DataFrame({"patient": patient, "period": period, "endpoint": endpoint})
    groups = study._groups(patient, period, endpoint)
    if len(patient):  # pandas does not factorize an empty MultiIndex
        pairs = pd.MultiIndex.from_arrays([patient, period])
        assert (study._groups(patient, period) == pd.factorize(pairs)[0]).all()
    expected = frame.groupby(["patient", "period", "endpoint"]).cumcount().to_numpy()
    assert (study._rank_within(groups) == expected).all()
    values = np.array(values[: len(patient)])
    minima = study._group_minima(groups, values, groups.max(initial=-1) + 1)
    assert np.isnan(minima[-1])  # a group without rows
    np.testing.assert_array_equal(
        minima[groups],
        frame.assign(v=values)
        .groupby(["patient", "period", "endpoint"])["v"]
        .transform("min")
        .to_numpy(),
    )
    ordered = np.sort(patient)
    firsts = pd.Series(np.arange(ordered.size)).groupby(ordered).transform("min").to_numpy()
    assert (study._block_firsts(ordered) == firsts).all()


_CELLS = st.sampled_from([1, 1.0, "1", "a", None, np.nan, 0.0, -0.0, 2])


@settings(max_examples=40)
@given(
    st.integers(0, 12).flatmap(
        lambda n: st.lists(st.lists(_CELLS, min_size=n, max_size=n), min_size=1, max_size=3)
    )
)
def test_rows_coded_column_by_column_are_duplicates_as_pandas_finds_them(columns):
    """Missing values, mixed types and signed zeros: the copies check's codes find the rows
    ``DataFrame.duplicated`` finds."""
    frame = pd.DataFrame({f"c{i}": pd.Series(c, dtype=object) for i, c in enumerate(columns)})
    groups = study._groups(*(study._value_codes(frame[c]) for c in frame))
    assert (np.bincount(groups)[groups] > 1).tolist() == frame.duplicated(keep=False).tolist()


def test_a_record_entered_twice_is_refused_however_its_values_are_spelled():
    # Found in review: codes of the values told an arm 1 from "1", which the engine reads alike
    # (as text); the row hashes they replaced had compared values by their text.
    data, roles = load_dataset("warfarin")
    data = data.assign(arm=pd.Series(1, index=data.index, dtype=object))
    first = data[data[roles.id] == data[roles.id].iloc[0]]
    twin = first.assign(**{roles.id: 9999, "arm": "1"})
    with pytest.raises(ValueError, match="one record entered twice"):
        prepare_study(
            pd.concat([data, twin], ignore_index=True), dataclasses.replace(roles, arm="arm")
        )
