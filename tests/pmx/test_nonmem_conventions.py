"""NONMEM dataset conventions: supported (ADDL/II, CMT dose routes) or refused naming the
column and rows, never ignored; and the bad inputs a sweep of the public API found silent."""

import inspect
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.attacks.tracing import dp_mean_query
from synpmx_lite.fisher.leakage import logistic_l2_path
from synpmx_lite.pmx.pk import PkModel, _dosing, _sensitivities, predict_concentrations
from synpmx_lite.pmx.population import fit_population
from synpmx_lite.pmx.study import load_dataset, pmx_roles, prepare_study


def _theo_md_nonmem_style():
    """theo_md with each patient's first dose carrying ADDL 6, II 24 and the other six doses
    removed: the same regimen, written as NONMEM writes it."""
    data, roles = load_dataset("theo_md")
    doses = data["EVID"] == 101
    first = doses & ~data.duplicated(["ID", "EVID"])
    compact = data.assign(ADDL=np.where(first, 6, 0), II=np.where(first, 24.0, 0.0))
    return compact[~doses | first].reset_index(drop=True), replace(roles, addl="ADDL", ii="II")


@pytest.fixture(scope="module")
def theo_sd():
    return load_dataset("theo_sd")


@pytest.fixture(scope="module")
def theo_md_both_ways():
    data, roles = load_dataset("theo_md")
    return prepare_study(data, roles), prepare_study(*_theo_md_nonmem_style())


def test_additional_doses_are_written_out_as_the_explicit_doses(theo_md_both_ways):
    explicit, compact = theo_md_both_ways
    for name in ("dose_time", "dose_amount", "dose_duration", "dose_period"):
        np.testing.assert_array_equal(getattr(compact, name), getattr(explicit, name))
    assert compact.doses.shape[0] == explicit.doses.shape[0] == 84


def test_additional_doses_give_the_objective_of_the_explicit_doses(theo_md_both_ways):
    explicit, compact = theo_md_both_ways
    fits = [fit_population(study, error="additive", max_iterations=60) for study in (explicit,
            compact)]  # fmt: skip
    assert fits[1].ofv == pytest.approx(fits[0].ofv, abs=1e-8)
    assert fits[1].typical["cl"] > 1  # not the collapsed 0.0003 of six doses dropped


def test_an_unmapped_nonmem_column_is_refused():
    data, roles = _theo_md_nonmem_style()
    with pytest.raises(ValueError, match="column 'ADDL' reads as NONMEM's ADDL"):
        prepare_study(data, replace(roles, addl=None, ii=None))
    with pytest.raises(ValueError, match="column 'CMT' reads as NONMEM's CMT"):
        prepare_study(*_with(load_dataset("theo_sd"), cmt=None))
    data, roles = load_dataset("theo_sd")
    with pytest.raises(ValueError, match="column 'blq' reads as NONMEM's BLQ"):
        prepare_study(data.assign(blq=0), roles)


@pytest.mark.parametrize(
    ("column", "advice"),
    [
        ("BLQ", r"pmx_roles\(cens=\.\.\.\), with DV holding the limit"),
        ("LLOQ", r"pmx_roles\(cens=\.\.\.\), with DV holding the limit"),
        ("LOQ", r"pmx_roles\(cens=\.\.\.\), with DV holding the limit"),
        ("LIMIT", r"pmx_roles\(cens=\.\.\.\), with DV holding the limit"),
        ("CENS", r"pmx_roles\(cens=\.\.\.\), with DV holding the limit"),
        ("DUR", r"infusion rate AMT/DUR in a column named in pmx_roles\(rate=\.\.\.\)"),
        ("PCMT", "drop the column: the engine observes the central compartment"),
        ("BLQFLAG", r"NONMEM's BLQ data item.*pmx_roles\(cens=\.\.\.\)"),
        ("lloq_mg", r"NONMEM's LLOQ data item.*pmx_roles\(cens=\.\.\.\)"),
        ("Cens2", r"NONMEM's CENS data item.*pmx_roles\(cens=\.\.\.\)"),
    ],
)
def test_an_unmapped_item_without_a_role_of_its_name_points_to_what_exists(theo_sd, column, advice):
    # The advice must name arguments pmx_roles has: lloq=, blq=, dur= and pcmt= do not exist.
    data, roles = theo_sd
    with pytest.raises(ValueError, match=f"column '{column}' reads as .*{advice}") as refused:
        prepare_study(data.assign(**{column: 0}), roles)
    for absent in ("lloq=", "blq=", "loq=", "limit=", "dur=", "pcmt="):
        assert absent not in str(refused.value)
    assert "rate" in inspect.signature(pmx_roles).parameters


def _with(loaded, **changes):
    data, roles = loaded
    return data, replace(roles, **changes)


def _one_compartment_iv_doses():
    """theo_sd with patients 1-3's doses moved into the central compartment (CMT 2)."""
    data, roles = load_dataset("theo_sd")
    iv = (data["EVID"] == 101) & data["ID"].isin([1, 2, 3])
    return data.assign(CMT=np.where(iv, 2, data["CMT"])), roles


def test_doses_into_the_central_compartment_are_iv_under_an_oral_model():
    data, roles = _one_compartment_iv_doses()
    study = prepare_study(data, roles)
    assert study.dose_central[:3, 0].all() and not study.dose_central[3:].any()
    theta = np.tile([2.8, 32.0, 1.5], (study.n_patients, 1))
    f = predict_concentrations(
        roles.model,
        theta,
        study.dose_time,
        study.dose_amount,
        study.dose_duration,
        study.obs_time,
        dose_central=study.dose_central,
    )
    bolus = study.dose_amount[:, :1] / 32.0 * np.exp(-2.8 / 32.0 * study.obs_time)
    np.testing.assert_allclose(f[:3], bolus[:3], rtol=1e-12)
    oral = predict_concentrations(
        roles.model, theta, study.dose_time, study.dose_amount, study.dose_duration,
        study.obs_time,
    )  # fmt: skip
    np.testing.assert_array_equal(f[3:], oral[3:])
    assert not np.allclose(f[:3], oral[:3])


def test_the_derivatives_with_iv_doses_under_an_oral_model_are_exact():
    model = PkModel(route="oral", lag=True)
    rng = np.random.default_rng(5)
    times = np.sort(rng.uniform(0.5, 30, (2, 6)), axis=1)
    dosing = _dosing(
        np.array([[0.0, 12.0], [0.0, 6.0]]),
        np.array([[100.0, 50.0], [80.0, 80.0]]),
        np.array([[0.0, 2.0], [0.0, 0.0]]),
        times,
        dose_central=np.array([[False, True], [True, False]]),
    )
    log_theta = np.log(np.array([[2.0, 20.0, 1.2, 0.4], [3.0, 30.0, 0.8, 0.3]]))
    f, g, G = _sensitivities(model, dosing, log_theta, 2)
    step = 1e-6
    for k in range(4):
        shifted = log_theta.copy()
        shifted[:, k] += step
        f1, g1, _ = _sensitivities(model, dosing, shifted, 1)
        np.testing.assert_allclose((f1 - f) / step, g[:, k], rtol=1e-4, atol=1e-8)
        np.testing.assert_allclose((g1 - g) / step, G[:, :, k], rtol=1e-3, atol=1e-6)


def test_the_generator_releases_an_arms_majority_route_and_not_a_minoritys():
    # Three of theo_sd's twelve patients given their dose IV (CMT 2): the arm's planned dose is
    # released oral, the route nine took, and nothing in the release tells the three apart.
    from synpmx_lite.generator.estimate import model_fingerprint, synpmx_model_estimate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = synpmx_model_estimate(*_one_compartment_iv_doses())
    (arm,) = model_fingerprint(fit).arms
    assert [dose["route"] for dose in arm["doses"]] == ["oral"]
    assert '"iv"' not in model_fingerprint(fit).to_json()


_NONMEM_STYLE = {"addl": "ADDL", "ii": "II"}


@pytest.mark.parametrize(
    ("columns", "roles_change", "message"),
    [
        ({"CMT": (3, 2)}, {}, "column 'CMT' has doses into a compartment"),
        ({"SS": (1, 0)}, {"ss": "SS"}, "column 'SS' has steady-state doses"),
        ({"ADDL": (2, 0), "II": (0.0, 0.0)}, _NONMEM_STYLE, "column 'II' has additional doses"),
        ({"ADDL": (0.5, 0), "II": (24.0, 0.0)}, _NONMEM_STYLE, "column 'ADDL' has values"),
        ({"ADDL": (0, 1), "II": (0.0, 0.0)}, _NONMEM_STYLE, "column 'ADDL' has values"),
    ],
)
def test_dose_items_the_engine_does_not_model_are_refused(columns, roles_change, message):
    data, roles = load_dataset("theo_sd")
    dose = data["EVID"] == 101
    changed = data.assign(**{c: np.where(dose, *values) for c, values in columns.items()})
    with pytest.raises(ValueError, match=message + r".*: rows \d"):
        prepare_study(changed, replace(roles, **roles_change))


def test_an_amount_on_an_observation_row_is_refused():
    data, roles = load_dataset("pheno_sd")
    row = data.index[(data["EVID"] == 0)][3]
    data.loc[row, ["AMT", "MDV"]] = [20.0, 1]
    with pytest.raises(ValueError, match=rf"'AMT' has an amount on observation rows.*rows {row}"):
        prepare_study(data, roles)


def test_negative_concentrations_on_a_linear_scale_are_refused():
    data, roles = load_dataset("theo_sd")
    row = data.index[data["EVID"] == 0][5]
    data.loc[row, "DV"] = -0.5
    with pytest.raises(ValueError, match=rf"'DV' has negative concentrations.*rows {row}$"):
        prepare_study(data, roles)
    assert prepare_study(data, replace(roles, negative_dv=True)).n_patients == 12


def test_rows_out_of_time_order_are_refused_as_such():
    data, roles = load_dataset("theo_sd")
    first = data[data["ID"] == data["ID"].iloc[0]]
    reordered = pd.concat([first.iloc[[0]], first.iloc[:0:-1], data.drop(first.index)])
    with pytest.raises(ValueError, match=r"time goes back within patient 1 at rows .*not doses"):
        prepare_study(reordered, roles)


def test_two_patients_under_one_id_are_refused():
    data, roles = load_dataset("theo_sd")
    two = data.assign(ID=data["ID"].replace({2: 1}))  # patients 1 and 2, back to back
    with pytest.raises(ValueError, match="covariate 'WT' changes within patient 1"):
        prepare_study(two, roles)


def test_a_baseline_covariate_changing_within_a_patient_is_refused_unless_declared():
    data, roles = load_dataset("theo_sd")
    later = data.index[(data["ID"] == 4) & (data["TIME"] > 5)]
    data.loc[later, "WT"] += 30
    with pytest.raises(ValueError, match="covariate 'WT' changes within patient 4"):
        prepare_study(data, roles)
    study = prepare_study(data, replace(roles, varying=("WT",)))
    assert (
        study.covariates.loc[3, "WT"] == load_dataset("theo_sd")[0].query("ID == 4")["WT"].iloc[0]
    )


def test_one_column_for_two_roles_is_refused():
    with pytest.raises(ValueError, match="column 'ID' is named for two roles \\(id and time\\)"):
        pmx_roles(id="ID", time="ID", dv="DV", amt="AMT", evid="EVID")
    with pytest.raises(ValueError, match="column 'AMT' is named for two roles"):
        pmx_roles(id="ID", time="T", dv="DV", amt="AMT", evid="EVID", covariates=["AMT"])
    with pytest.raises(ValueError, match="addl needs ii"):
        pmx_roles(id="ID", time="T", dv="DV", amt="AMT", evid="EVID", addl="ADDL")


@pytest.mark.parametrize(
    ("changes", "column", "roles"),
    [
        ({"time": "ID"}, "ID", "id and time"),
        ({"dvid": "CMT"}, "CMT", "dvid and cmt"),
        ({"arm": "WT"}, "WT", "arm and a covariate or keep column"),
        ({"covariates": ("WT", "ID")}, "ID", "id and a covariate or keep column"),
    ],
)
def test_one_column_for_two_roles_is_refused_on_roles_made_by_replace(
    theo_sd, changes, column, roles
):
    # dataclasses.replace skips pmx_roles' check; prepare_study must repeat it (time="ID"
    # once read as "duplicated rows", dvid="CMT" read every observation's endpoint as "2").
    data, base = theo_sd
    with pytest.raises(ValueError, match=f"column '{column}' is named for two roles \\({roles}\\)"):
        prepare_study(data, replace(base, **changes))


def test_absurd_doses_and_overflowing_predictions_are_refused():
    data, roles = load_dataset("theo_sd")
    data.loc[data["EVID"] == 101, "AMT"] = 1e300
    with pytest.raises(ValueError, match=r"column 'AMT' has doses above 1e\+15.*rows 0, 12"):
        prepare_study(data, roles)
    with pytest.raises(ValueError, match="predictions overflow"):
        predict_concentrations(PkModel(route="iv"), [[1.0, 1e-10]], [[0.0]], [[1e308]],
                               [[0.0]], [[1.0]])  # fmt: skip


def test_a_single_class_label_is_refused_by_the_logistic_path():
    X = np.random.default_rng(0).standard_normal((20, 3))
    with pytest.raises(ValueError, match="y must hold both labels 0 and 1, got only 1"):
        logistic_l2_path(X, np.ones(20))


def test_a_sample_past_opendp_32_bit_range_is_refused_clearly():
    assert dp_mean_query(2**31 - 1, 2, 1.0).scale > 0
    with pytest.raises(ValueError, match="sample_size must be at most 2147483647"):
        dp_mean_query(2**31, 2, 1.0)
