"""Attacks on the fingerprint and its checks, each of which must stay stopped.

Every test plays an adversary: a per-patient column, a tiny study, a release edited by hand or
built by faulty code, a subtraction between released counts, malformed data. Each asserts
that the attack is refused with a clear error, kept out of the release, or flagged FAIL by the
checks, which read only the released JSON and the source study.
"""

import dataclasses
import gc
import json
import re
import weakref

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.generator import checks as checks_module
from synpmx_lite.generator import estimate as builder
from synpmx_lite.generator import influence
from synpmx_lite.generator.cases import constructed_warfarin_cases
from synpmx_lite.generator.estimate import (
    fit_status,
    model_fingerprint,
    model_privacy_checks,
    synpmx_model_estimate,
)
from synpmx_lite.generator.generate import synpmx_model_generate
from synpmx_lite.generator.protections import fold_categories, loq_floor, trimmed_log_summary
from synpmx_lite.generator.release import Fingerprint
from synpmx_lite.pmx import _foce
from synpmx_lite.pmx.population import FitWarning
from synpmx_lite.pmx.study import load_dataset, prepare_study
from synpmx_lite.rounding import round_significant
from tests.simulated import SIMULATED_ROLES, known_fingerprint, small_study

# --- Helpers ----------------------------------------------------------------------------------


def released(fit):
    """The fit's release as the JSON object that would leave."""
    return json.loads(model_fingerprint(fit).to_json())


def judged(fit, release):
    """The checks on an edited release, by check."""
    return model_privacy_checks(fit, released=json.dumps(release)).set_index("check")


def fails(fit, release, check, *words):
    """Assert that ``check`` fails on ``release`` and its result names every word."""
    row = judged(fit, release).loc[check]
    assert row["verdict"] == "FAIL", row["result"]
    for word in words:
        assert word in row["result"], row["result"]


def with_sex(data, levels):
    """The study with patient i's SEX set to levels[i]."""
    ids = data["id"].unique()
    return data.assign(SEX=data["id"].map(dict(zip(ids, levels, strict=True))))


@pytest.fixture(scope="module")
def study():
    """Twelve patients, 100 mg at 0 h, four visits, SEX F/M six each, IDs 101 to 112."""
    return with_sex(small_study(12, seed=1), ["F", "M"] * 6)


@pytest.fixture(scope="module")
def fit(study):
    return synpmx_model_estimate(study, SIMULATED_ROLES)


@pytest.fixture(scope="module")
def tiny():
    """Four patients: SEX X, X, Y, Z."""
    data = with_sex(small_study(4, seed=3), ["X", "X", "Y", "Z"])
    return synpmx_model_estimate(data, SIMULATED_ROLES)


def test_the_builders_release_passes_every_check(fit):
    checks = model_privacy_checks(fit).set_index("check")
    assert (checks.loc[["P1", "P2", "P3", "P4"], "verdict"] == "pass").all(), checks
    # Twelve patients: one moves the weight's SD by more than 15 points, and nobody can be
    # left out for it (a tenth of the cohort is one patient).
    assert checks.loc["P5", "verdict"] != "FAIL"


# --- 1. Category levels -----------------------------------------------------------------------


def test_a_per_patient_text_column_is_refused(study):
    data = study.assign(NAME="pt" + study["id"].astype(str))
    roles = dataclasses.replace(SIMULATED_ROLES, covariates=("WT", "SEX", "NAME"))
    with pytest.raises(ValueError, match="'NAME' has 12 levels for 12 patients"):
        synpmx_model_estimate(data, roles)


def test_a_per_patient_numeric_code_declared_categorical_is_refused(study):
    data = study.assign(CODE=study["id"] + 9000)
    roles = dataclasses.replace(
        SIMULATED_ROLES, covariates=("WT", "SEX", "CODE"), categorical=("CODE",)
    )
    with pytest.raises(ValueError, match=r"'CODE'.*identifies patients"):
        synpmx_model_estimate(data, roles)


def test_the_most_common_level_is_not_released_when_too_few_hold_it(tiny):
    # X = 2, Y = 1, Z = 1: no level has three patients; before, "X: 1.0" was released.
    assert model_fingerprint(tiny).categories == {}
    assert fold_categories(["X", "X", "Y", "Z"]).empty


def test_a_covariate_folded_to_one_level_is_withheld(study):
    data = with_sex(study, ["M"] * 10 + ["F"] * 2)
    fingerprint = model_fingerprint(synpmx_model_estimate(data, SIMULATED_ROLES))
    # "M: 1.0" would misdescribe the two women folded into it.
    assert "SEX" not in fingerprint.categories


# --- 2. Identifiers in any released field -----------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda r: r["categories"].update(SEX=[[105, 0.5], ["M", 0.5]]), "categories.SEX.0.0"),
        (lambda r: r["categories"].update(SEX=[["105", 0.5], ["M", 0.5]]), "categories.SEX.0.0"),
        (lambda r: r["arms"][0].update(arm="107"), "arms.0.arm"),
        (lambda r: r["endpoints"].update({"108": r["endpoints"]["DV"]}), "endpoints.108"),
        (lambda r: r["covariates"].update({"109.0": r["covariates"]["WT"]}), "covariates.109.0"),
    ],
)
def test_p2_catches_a_numeric_identifier_in_any_label(fit, edit, where):
    release = released(fit)
    edit(release)
    fails(fit, release, "P2", where)


def test_p2_catches_a_text_identifier_inside_a_label(study):
    data = study.assign(id="PT-" + study["id"].astype(str))
    fit = synpmx_model_estimate(data, SIMULATED_ROLES)
    release = released(fit)
    release["categories"]["SEX"][0][0] = "F (first: PT-101)"
    fails(fit, release, "P2", "PT-101")


def test_engine_labels_never_look_like_source_ids(study):
    # IDs 1 to 12, arms coded 1 and 2, sex coded 1 and 2, as in many NONMEM files.
    ids = study["id"] - 100
    data = study.assign(id=ids, arm=np.where(ids <= 6, 1, 2), SEX=np.where(ids % 2, 1, 2))
    roles = dataclasses.replace(SIMULATED_ROLES, categorical=("SEX",))
    fit = synpmx_model_estimate(data, roles)
    fingerprint = model_fingerprint(fit)
    assert [arm["arm"] for arm in fingerprint.arms] == ["arm 1", "arm 2"]
    assert {level for level, _ in fingerprint.categories["SEX"]} == {1, 2}
    # The levels equal IDs 1 and 2, but six patients share each: no false FAIL.
    assert model_privacy_checks(fit).set_index("check").loc["P2", "verdict"] == "pass"


# --- 3. The checks read the artefact, and each can fail ---------------------------------------


def test_the_ordinary_call_judges_the_json_not_the_builder(fit, monkeypatch):
    heaviest = float(fit.study.covariates["WT"].max())
    honest = builder._covariate_release

    def leaking(*args):
        continuous, categories, _ = honest(*args)
        return continuous, categories, heaviest

    monkeypatch.setattr(builder, "_covariate_release", leaking)
    # No release passed in: the checks read the faulty builder's JSON and catch it.
    checks = model_privacy_checks(fit).set_index("check")
    assert (
        checks.loc["P3", "verdict"] == "FAIL" and "reference weight" in checks.loc["P3", "result"]
    )


def test_the_ordinary_call_catches_a_field_the_json_gained(fit, monkeypatch):
    honest = Fingerprint.to_json

    def padded(self):
        return json.dumps(dict(json.loads(honest(self)), ids=[str(i) for i in fit.study.ids]))

    monkeypatch.setattr(Fingerprint, "to_json", padded)
    checks = model_privacy_checks(fit).set_index("check")
    assert checks.loc["P1", "verdict"] == "FAIL" and "ids" in checks.loc["P1", "result"]
    assert checks.loc["P2", "verdict"] == "FAIL"


@pytest.mark.parametrize(
    ("edit", "word"),
    [
        (lambda r: r.update(patients=[{"WT": 71.2}]), "patients"),
        (lambda r: r["arms"][0].update(ids=[101, 102]), "arms[0]"),
        (lambda r: r["endpoints"]["DV"].update(values=[1.5, 2.5]), "endpoints.DV"),
        (lambda r: r.update(cohort_size="12"), "cohort_size"),
        (lambda r: r.pop("typical"), "lacks typical"),
    ],
)
def test_p1_fails_on_a_field_outside_the_allowlist(fit, edit, word):
    release = released(fit)
    edit(release)
    fails(fit, release, "P1", word)


def _lowest_concentration(fit):
    observations = fit.study.observations
    return float(observations.loc[observations["dv"] > 0].groupby("patient")["dv"].min().min())


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        # The LOQ set to the lowest concentration anyone reached.
        (
            lambda r, f: r["endpoints"]["DV"].update(loq=_lowest_concentration(f)),
            ("DV LOQ", "1 patient"),
        ),
        # The reference weight set to one patient's weight.
        (
            lambda r, f: r.update(reference_weight=float(f.study.covariates["WT"].iloc[3])),
            ("reference weight", "value of 1 patient"),
        ),
        # The covariate's mean set to one patient's weight at two figures.
        (
            lambda r, f: r["covariates"]["WT"].update(
                geometric_mean=float(round_significant(f.study.covariates["WT"].max(), 2))
            ),
            ("covariate WT mean", "value of 1 patient"),
        ),
        # A visit time set to one patient's own sampling time.
        (
            lambda r, f: r["endpoints"]["DV"]["visits"].append([0, 7.123]),
            ("DV visit time 7.123", "value of 1 patient"),
        ),
        # A category level only one patient holds, with its frequency.
        (
            lambda r, f: r["categories"]["SEX"].append(["Q", 0.08]),
            ("'Q' of SEX is held by 1", "stands for 1 or fewer"),
        ),
        # More significant figures than one.
        (lambda r, f: r["typical"].update(cl=1.234), ("typical cl 1.234",)),
    ],
)
def test_p3_fails_on_a_single_patients_value(study, edit, words):
    data = study.copy()
    one = data["id"] == 104
    data.loc[one & (data["evid"] == 0), "time"] += [0.0, 0.0, 0.0, 7.123 - 12.0]
    data.loc[data["id"] == 105, "SEX"] = "Q"
    fit = synpmx_model_estimate(data, SIMULATED_ROLES)
    release = released(fit)
    assert model_privacy_checks(fit).set_index("check").loc["P3", "verdict"] == "pass"
    edit(release, fit)
    fails(fit, release, "P3", *words)


def test_p3_fails_on_a_planned_dose_one_patient_got(study):
    data = study.copy()
    data.loc[(data["id"] == 106) & (data["evid"] == 1), "amt"] = 137.0
    fit = synpmx_model_estimate(data, SIMULATED_ROLES)
    release = released(fit)
    # The arm mean is released, moved off any value one or two patients got.
    planned = release["arms"][0]["doses"][0]["amount"]
    assert planned == float(round_significant((11 * 100 + 137) / 12, 2))
    release["arms"][0]["doses"][0]["amount"] = 137.0
    fails(fit, release, "P3", "amount 137", "value of 1 patient")


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda r: r["arms"].append(dict(r["arms"][0], arm="arm 2", patients=2)), ("arm 2: 2",)),
        (lambda r: r.update(cohort_size=r["cohort_size"] + 2), ("less its released arms: 2",)),
        (
            lambda r: r["categories"].update(SEX=[["F", 0.83], ["M", 0.17]]),
            ("SEX level at 0.17: 2",),
        ),
        (
            lambda r: r["categories"].update(SEX=[["F", 0.5], ["M", 0.33]]),
            ("no released level: 2",),
        ),
        (lambda r: r["checks"].update(P4="FAIL"), ("states P4 'FAIL'",)),
    ],
)
def test_p4_fails_on_a_group_under_three(fit, edit, words):
    release = released(fit)
    edit(release)
    fails(fit, release, "P4", *words)


def test_p5_fails_on_estimates_that_are_not_the_fit_read_for_influence(fit):
    release = released(fit)
    release["typical"]["cl"] = 2 * release["typical"]["cl"]
    fails(fit, release, "P5", "typical cl", "not the estimate whose influence was read")
    release = released(fit)
    found = release["checks"]["P5"]
    release["checks"]["P5"] = "review" if found == "pass" else "pass"
    fails(fit, release, "P5", f"the check finds '{found}'")


def test_p5_fails_on_a_correlation_the_fit_did_not_estimate(fit):
    """A correlation slipped into a release of a diagonal fit is a figure nobody read: P5
    fails it (the edits of a correlated release: tests/generator/test_correlated_release.py)."""
    release = released(fit) | {"correlation": {"cl,v": 0.5}}
    fails(fit, release, "P5", "released correlation cl,v has no correlated pair behind it")


def test_p5_fails_when_a_patient_moves_an_estimate_far():
    cases = constructed_warfarin_cases()
    kept = synpmx_model_estimate(cases.misdosed, cases.roles, drop_influential=False)
    assert model_privacy_checks(kept).set_index("check").loc["P5", "verdict"] == "FAIL"


def _untrusted(fit, *, pk=False, pd=None):
    """The fit with its PK fit, or PD model ``pd``, marked as failing its diagnostics."""
    if pk:
        fit = dataclasses.replace(
            fit,
            pk=dataclasses.replace(fit.pk, converged=False, diagnostics=("SD of ka at its floor",)),
        )
    if pd is not None:
        models = dict(fit.pd)
        models[pd] = dataclasses.replace(models[pd], converged=False)
        fit = dataclasses.replace(fit, pd=models)
    return fit


def test_p5_does_not_pass_readings_from_a_fit_that_is_not_to_be_trusted(warfarin_fit):
    # An SD at its floor shrinks every patient's pull to nothing: a pass read from such a fit
    # would certify what it cannot see.
    trusted = warfarin_fit
    checks = model_privacy_checks(trusted).set_index("check")
    assert checks.loc["P5", "verdict"] == "pass"
    assert "not to be trusted" not in checks.loc["P5", "result"]
    for untrusted, named in (
        (_untrusted(trusted, pk=True), "PK (SD of ka at its floor)"),
        (_untrusted(trusted, pd="pca"), "PD pca"),
    ):
        row = model_privacy_checks(untrusted).set_index("check").loc["P5"]
        assert row["verdict"] == "review", row["result"]
        assert f"fit not to be trusted: {named}" in row["result"]
        # The release states it, and a release claiming a pass fails.
        release = released(untrusted)
        assert release["checks"]["P5"] == "review"
        release["checks"]["P5"] = "pass"
        fails(untrusted, release, "P5", "the check finds 'review'")


def test_a_fail_read_from_an_untrusted_fit_stays_a_fail():
    cases = constructed_warfarin_cases()
    kept = synpmx_model_estimate(cases.misdosed, cases.roles, drop_influential=False)
    row = model_privacy_checks(_untrusted(kept, pk=True)).set_index("check").loc["P5"]
    assert row["verdict"] == "FAIL"
    assert "fit not to be trusted" in row["result"]


def test_a_public_study_whose_fit_fails_its_diagnostics_does_not_pass_p5():
    """pheno_sd's combined error on every patient is not identified, and two patients pull
    its additive part far: P5 fails it; the screen leaves them out, and the refit converges."""
    data, roles = load_dataset("pheno_sd")
    with pytest.warns(FitWarning):
        everyone = synpmx_model_estimate(data, roles, drop_influential=False)
    assert not everyone.pk.converged
    row = model_privacy_checks(everyone).set_index("check").loc["P5"]
    assert row["verdict"] == "FAIL"
    assert "largest: DV: additive residual error" in row["result"]
    assert "fit not to be trusted: PK" in row["result"]
    screened = synpmx_model_estimate(data, roles)
    assert screened.pk.converged and screened.privacy.left_out.patients == 2
    assert model_privacy_checks(screened).set_index("check").loc["P5", "verdict"] == "pass"


def test_a_fit_edited_to_look_converged_is_not_trusted(warfarin_fit):
    # The flag and the diagnostics disagree: the diagnostics win, and a flag without them is
    # still a flag.
    trusted = warfarin_fit
    for pk, named in (
        (dataclasses.replace(trusted.pk, diagnostics=("SD of ka at its floor",)), "PK (SD of ka"),
        (dataclasses.replace(trusted.pk, converged=False), "PK (not converged)"),
    ):
        row = model_privacy_checks(dataclasses.replace(trusted, pk=pk)).set_index("check")
        assert row.loc["P5", "verdict"] == "review"
        assert named in row.loc["P5", "result"]


def test_p5_does_not_pass_readings_from_leave_one_out_refits_that_did_not_converge(monkeypatch):
    # A PD reading comes from refits without each patient; a refit that stopped short of its
    # optimum may understate that patient's pull, so it cannot clear anyone.
    refits = builder.pd_loo_refits

    def one_unsettled(model):
        table = refits(model)
        return table.assign(converged=np.r_[False, table["converged"].to_numpy()[1:]])

    monkeypatch.setattr(builder, "pd_loo_refits", one_unsettled)
    with pytest.warns(FitWarning, match="leave-one-out refit"):
        fit = synpmx_model_estimate(*load_dataset("warfarin"))
    assert fit.privacy.largest["verdict"] == "pass"  # the readings alone would pass
    row = model_privacy_checks(fit).set_index("check").loc["P5"]
    assert row["verdict"] == "review"
    assert "PD pca (1 leave-one-out refits not converged)" in row["result"]
    assert released(fit)["checks"]["P5"] == "review"


def test_p5_does_not_pass_readings_from_exact_pk_refits_that_did_not_converge(monkeypatch):
    # The same for the PK fit's exact leave-one-out refits (residual errors, effects): one
    # that stopped short may understate its patient's pull, unless its reading fails already.
    refit = influence.fit_population

    def unsettled(*arguments, **keywords):
        return dataclasses.replace(refit(*arguments, **keywords), converged=False)

    monkeypatch.setattr(influence, "fit_population", unsettled)
    fit = synpmx_model_estimate(*load_dataset("warfarin"))
    unconverged = fit.privacy.unconverged_pk_refits
    assert unconverged and fit.privacy.largest["verdict"] == "pass"
    row = model_privacy_checks(fit).set_index("check").loc["P5"]
    assert row["verdict"] == "review"
    counted = re.search(r"PK \((\d+) exact leave-one-out refits not converged\)", row["result"])
    assert counted and 0 < int(counted.group(1)) <= len(unconverged)


def test_an_exact_pk_refit_at_a_bound_is_not_counted_where_its_reading_fails_already():
    # theo_md: without one patient the proportional error sits at its floor; the move read
    # (past the fail bar) understates the true one, and fails P5 as it stands.
    fit = synpmx_model_estimate(*load_dataset("theo_md"))
    (unsettled,) = fit.privacy.unconverged_pk_refits
    assert fit.privacy.moves.loc[unsettled, "DV: proportional residual error"] > fit.privacy.fail
    assert fit_status(fit) == "converged"
    p5 = model_privacy_checks(fit).set_index("check").loc["P5"]
    assert p5["verdict"] == "FAIL" and "exact leave-one-out" not in p5["result"]


def test_the_p5_result_quotes_no_source_id_from_the_fit_diagnostics(monkeypatch):
    # With no Newton step allowed for the modes, the fit's diagnostics name a patient whose
    # mode did not converge: by its row, never by its source ID.
    monkeypatch.setattr(_foce, "_MODE_ITERATIONS", 0)
    data, roles = load_dataset("theo_sd")
    data = data.assign(**{roles.id: "PT-" + data[roles.id].astype(str)})
    with pytest.warns(FitWarning, match="modes of"):
        fit = synpmx_model_estimate(data, roles)
    assert any("did not converge" in message for message in fit.pk.diagnostics)
    result = model_privacy_checks(fit).set_index("check").loc["P5", "result"]
    assert "did not converge" in result
    assert "PT-" not in result and "PT-" not in " ".join(fit.pk.diagnostics)


# --- 4. Tiny studies --------------------------------------------------------------------------


def test_a_tiny_study_withholds_what_would_give_patients_back(tiny):
    fingerprint = model_fingerprint(tiny)
    # Four patients: the trimmed core would be two, whose mean and SD give both weights back.
    assert fingerprint.covariates == {}
    checks = model_privacy_checks(tiny).set_index("check")
    assert (checks.loc[["P1", "P2", "P3", "P4"], "verdict"] == "pass").all(), checks
    assert "below 10 patients nobody can be left out" in checks.loc["P5", "result"]
    assert tiny.privacy.left_out.patients == 0
    # The summary the builder withheld, added by hand, fails P3.
    release = released(tiny)
    release["covariates"] = {"WT": {"geometric_mean": 70.0, "sdlog": 0.2}}
    fails(tiny, release, "P3", "WT is summarised on 2 kept patient(s)")


# --- 5. Subtraction ---------------------------------------------------------------------------


def test_a_dropped_arm_cannot_be_recovered_by_subtraction(study):
    data = study.assign(arm=np.where(study["id"] <= 102, "pilot", "main"))
    fit = synpmx_model_estimate(data, SIMULATED_ROLES)
    release = released(fit)
    # The cohort is the released arms' patients: 12 - 10 would have given the pilot arm's 2.
    assert release["cohort_size"] == sum(arm["patients"] for arm in release["arms"]) == 10
    assert judged(fit, release).loc["P4", "verdict"] == "pass"


def test_left_out_patients_leave_no_gap_between_released_counts(misdosed_fit):
    fit = misdosed_fit
    assert fit.privacy.left_out.patients == 3  # the misdosed patient and warfarin's own two
    release = released(fit)
    # The frequencies count the same 32 patients as cohort_size, so they read as whole counts
    # of 32 and nothing gives away the patients left out.
    sex = fit.study.covariates["sex"].value_counts()
    for level, frequency in release["categories"]["sex"]:
        assert frequency == float(round_significant(sex[level] / 32, 2))


# --- 6. Duplicates ----------------------------------------------------------------------------


def test_duplicated_rows_are_refused(study):
    doubled = pd.concat([study, study[(study["id"] == 103) & (study["evid"] == 1)]])
    doubled = doubled.sort_values(["id", "time"], kind="stable")
    with pytest.raises(ValueError, match=r"duplicated rows \d+, \d+"):
        prepare_study(doubled, SIMULATED_ROLES)


def test_an_id_split_across_blocks_is_refused(study):
    moved = study[study["id"] == 104]
    split = pd.concat([study[study["id"] != 104], moved]).reset_index(drop=True)
    split.loc[split.index[-3:], "id"] = 102  # patient 104's last rows now read as 102's
    with pytest.raises(
        ValueError, match="patient 102 has rows in separate blocks, starting at rows"
    ):
        prepare_study(split, SIMULATED_ROLES)


# --- 7. Attendance ----------------------------------------------------------------------------


def test_attendance_counts_each_visit_once_with_the_floor_on_both_sides(study, fit):
    observations = study.index[study["evid"] == 0]
    last = study.loc[observations].groupby("id").tail(1).index
    three_missed = study.drop(last[:3])
    # Patient 110 has its 2 h sample taken twice: still one visit.
    repeat = three_missed[(three_missed["id"] == 110) & (three_missed["nominal_time"] == 2.0)]
    repeated = pd.concat([three_missed, repeat.assign(dv=repeat["dv"] * 1.1)])
    repeated = repeated.sort_values(["id", "time"], kind="stable")
    rebuilt = dataclasses.replace(fit, study=prepare_study(repeated, SIMULATED_ROLES))
    expected = float(round_significant(45 / 48, 2))
    assert model_fingerprint(rebuilt).endpoints["DV"]["attendance"] == expected
    two_missed = dataclasses.replace(
        fit, study=prepare_study(study.drop(last[:2]), SIMULATED_ROLES)
    )
    assert model_fingerprint(two_missed).endpoints["DV"]["attendance"] == 1.0
    checks = model_privacy_checks(rebuilt).set_index("check")
    assert checks.loc["P4", "verdict"] == "pass"


# --- 8. Medians of times ----------------------------------------------------------------------


def test_medians_of_dose_and_visit_times_are_no_single_patients_value():
    # Three patients given 100 mg by infusions of 1.02, 1.5 and 1.98 h, first sampled at 0.41,
    # 0.5 and 0.59 h; no nominal times. Each median is the middle patient's own value.
    base = small_study(3, seed=5)
    ids = base["id"].unique()
    rate = dict(zip(ids, 100 / np.array([1.02, 1.5, 1.98]), strict=True))
    data = base.assign(rate=np.where(base["evid"] == 1, base["id"].map(rate), 0.0))
    first = data[data["evid"] == 0].groupby("id").head(1).index
    data.loc[first, "time"] = [0.41, 0.5, 0.59]
    roles = dataclasses.replace(SIMULATED_ROLES, nominal_time=None, covariates=("WT",), arm=None)
    fit = synpmx_model_estimate(data, roles)
    release = released(fit)
    duration = release["arms"][0]["doses"][0]["duration"]
    first_visit = release["endpoints"]["DV"]["visits"][0][1]
    assert duration not in (1.0, 1.5, 2.0) and first_visit not in (0.41, 0.5, 0.59)
    assert judged(fit, release).loc["P3", "verdict"] == "pass"
    release["arms"][0]["doses"][0]["duration"] = 1.5  # the median: one patient's own
    fails(fit, release, "P3", "duration 1.5", "value of 1 patient")


@pytest.mark.parametrize("edit", ["merge", "swap"])
def test_p3_fails_on_visit_times_that_merge_or_swap(fit, edit):
    # An edited (or coarsely rounded) release that puts two visits at one time, or the later
    # one first: a trough and the next peak released as one sample.
    release = released(fit)
    visits = release["endpoints"]["DV"]["visits"]
    first, second = visits[1][1], visits[2][1]
    visits[1][1], visits[2][1] = (second, second) if edit == "merge" else (second, first)
    fails(fit, release, "P3", "merged or swapped")


# --- 9. The LOQ rule follows the threshold ----------------------------------------------------


def test_the_loq_rule_follows_the_threshold(study):
    lowest = [0.3, 0.7, 0.9, 1.5, 3.3, 4.1]
    assert loq_floor(lowest, min_patients=3) == 0.2  # 0.9 / 2 = 0.45
    assert loq_floor(lowest, min_patients=4) == 0.5  # 1.5 / 2 = 0.75
    fit3 = synpmx_model_estimate(study, SIMULATED_ROLES)
    fit5 = synpmx_model_estimate(study, SIMULATED_ROLES, min_arm_patients=5)
    minima = fit3.study.observations.groupby("patient")["dv"].min()
    assert model_fingerprint(fit3).endpoints["DV"]["loq"] == loq_floor(minima, min_patients=3)
    assert model_fingerprint(fit5).endpoints["DV"]["loq"] == loq_floor(minima, min_patients=5)


# --- 10 and 11. Synthetic data ----------------------------------------------------------------


def test_the_same_fingerprint_and_seed_give_the_same_data_after_json():
    # Fields written in an order that JSON (sorted keys) does not keep.
    fingerprint = known_fingerprint(
        40,
        covariates={
            "WT": {"geometric_mean": 70.0, "sdlog": 0.2},
            "AGE": {"geometric_mean": 40.0, "sdlog": 0.3},
        },
        categories={"SEX": [["F", 0.5], ["M", 0.5]], "RACE": [["a", 0.7], ["b", 0.3]]},
    )
    read_back = Fingerprint.from_json(fingerprint.to_json())
    assert list(read_back.covariates) != list(fingerprint.covariates)
    pd.testing.assert_frame_equal(
        synpmx_model_generate(fingerprint, seed=9), synpmx_model_generate(read_back, seed=9)
    )


def test_a_fit_and_its_json_give_the_same_data(misdosed_fit):
    # Warfarin's covariates are wt then age; its JSON holds them as age then wt.
    text = model_fingerprint(misdosed_fit).to_json()
    from_fit = synpmx_model_generate(misdosed_fit, seed=4)
    from_json = synpmx_model_generate(Fingerprint.from_json(text), seed=4)
    assert from_fit.to_numpy().tolist() == from_json[list(from_fit.columns)].to_numpy().tolist()


@pytest.mark.parametrize("source_id", ["syn-0001", " SYN-0003", "arm 2", "Arm 12"])
def test_synthetic_ids_and_arm_labels_can_never_be_source_ids(study, source_id):
    data = study.astype({"id": object})
    data.loc[data["id"] == 101, "id"] = source_id
    with pytest.raises(ValueError, match="read like the engine's own labels"):
        synpmx_model_estimate(data, SIMULATED_ROLES)


def test_synthetic_ids_share_nothing_with_the_source(fit):
    synthetic = synpmx_model_generate(fit, seed=2)
    assert not set(map(str, synthetic["id"])) & set(map(str, fit.study.ids))


# --- More attacks -----------------------------------------------------------------------------


def test_an_endpoint_only_two_patients_have_is_not_released(study):
    extra = study[(study["evid"] == 0) & study["id"].isin([101, 102])].assign(dvid="HIV load")
    data = pd.concat([study, extra]).sort_values(["id", "time"], kind="stable")
    fit = synpmx_model_estimate(data, dataclasses.replace(SIMULATED_ROLES, pk_endpoint="DV"))
    assert set(model_fingerprint(fit).endpoints) == {"DV"}
    release = released(fit)
    release["endpoints"]["HIV load"] = release["endpoints"]["DV"]
    fails(fit, release, "P3", "HIV load visit time")


def test_an_arm_column_that_identifies_patients_is_refused(study):
    with pytest.raises(ValueError, match="'arm' has 12 levels"):
        synpmx_model_estimate(study.assign(arm=study["id"].astype(str)), SIMULATED_ROLES)


def test_a_malformed_release_fails_p1_and_the_other_checks_still_run(fit):
    release = released(fit)
    release.update(arms="all", categories={"SEX": "F"}, endpoints={"DV": [1, 2]})
    checks = judged(fit, release)
    assert checks.loc["P1", "verdict"] == "FAIL"
    assert list(checks.index) == ["P1", "P2", "P3", "P4", "P5"]


@pytest.mark.parametrize("bad", ["[]", "12", "not json", 12])
def test_a_release_that_is_not_a_json_object_is_refused(fit, bad):
    with pytest.raises((TypeError, ValueError), match="released"):
        model_privacy_checks(fit, released=bad)


# --- Review r9: one patient counted as several ------------------------------------------------


def _entered_three_times(study, spellings):
    """Patient 101, whose SEX only they hold, entered again under two more IDs."""
    data = study.astype({"id": object})
    data.loc[data["id"] == 101, "SEX"] = "X"
    one = data[data["id"] == 101]
    return pd.concat([data, *(one.assign(id=s) for s in spellings)], ignore_index=True)


def test_one_patient_under_ids_that_read_alike_is_refused(study):
    # Before, 101, "101" and " 101 " were three patients: level X, held by one patient, was
    # released at 3/14 and every threshold passed.
    data = _entered_three_times(study, ["101", " 101 "])
    with pytest.raises(ValueError, match=r"IDs that read as one: \[101, '101', ' 101 '\]"):
        prepare_study(data, SIMULATED_ROLES)


def test_one_patient_under_new_ids_is_refused(study):
    data = _entered_three_times(study, [113, 114])
    with pytest.raises(ValueError, match="patient 101 period 1, patient 113 period 1"):
        synpmx_model_estimate(data, SIMULATED_ROLES)


def test_a_crossover_repeating_its_dose_is_not_a_duplicate(study):
    # Patient 104's second period repeats its dose row exactly (time restarts at 0): rows in
    # different periods are different events. Its own period copied row for row is not.
    one = study[study["id"] == 104]
    second = one.assign(dv=one["dv"] * 1.05)
    data = pd.concat([study[study["id"] <= 104], second, study[study["id"] > 104]])
    prepared = prepare_study(data.reset_index(drop=True), SIMULATED_ROLES)
    assert prepared.doses["period"].max() == 1
    copied = pd.concat([study[study["id"] <= 104], one, study[study["id"] > 104]])
    with pytest.raises(ValueError, match="patient 104 period 1, patient 104 period 2"):
        prepare_study(copied.reset_index(drop=True), SIMULATED_ROLES)


def test_a_key_repeated_in_the_json_fails_p1_and_is_not_read_back(fit):
    # The checks read the last value (the honest weight); a reader that keeps the first one
    # would get patient 104's own weight.
    text = model_fingerprint(fit).to_json()
    own = float(fit.study.covariates["WT"].iloc[3])
    tampered = text.replace('"reference_weight"', f'"reference_weight": {own}, "reference_weight"')
    assert json.loads(tampered)["reference_weight"] == json.loads(text)["reference_weight"]
    row = model_privacy_checks(fit, released=tampered).set_index("check").loc["P1"]
    assert row["verdict"] == "FAIL" and "repeats key 'reference_weight'" in row["result"]
    with pytest.raises(ValueError, match=r"repeats keys within one object: \['reference_weight'\]"):
        Fingerprint.from_json(tampered)


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        # IDs 101 to 112 are three characters long: before, only IDs of four or more were
        # looked for inside a label, so these passed.
        (lambda r: r["arms"][0].update(arm="arm 1 (101)"), ("source IDs", "arms.0.arm")),
        (
            lambda r: r["categories"]["SEX"][0].__setitem__(0, "F (first: 101)"),
            ("source IDs", "categories.SEX.0.0"),
        ),
        # A level no source patient holds: free text, whatever it encodes.
        (
            lambda r: r["categories"]["SEX"].append(["initials JD", 0.0001]),
            ("does not vouch for", "'initials JD'"),
        ),
        (lambda r: r["model"].update(route="oral, first dose 101"), ("model.route",)),
    ],
)
def test_p2_fails_on_a_label_the_source_does_not_vouch_for(fit, edit, words):
    release = released(fit)
    edit(release)
    fails(fit, release, "P2", *words)


def test_p2_does_not_take_a_digit_of_a_number_for_a_short_id(fit):
    # IDs 101 to 112: "1012" holds "101" but is not it. Such a label still fails as free text.
    release = released(fit)
    release["categories"]["SEX"][0][0] = "1012"
    row = judged(fit, release).loc["P2"]
    assert row["verdict"] == "FAIL"
    assert "source IDs" not in row["result"] and "does not vouch for" in row["result"]


def test_p3_fails_on_an_arm_mean_dose_at_full_precision(study):
    # Eleven patients got 100 mg and one 137 mg: the arm mean at full precision, 103.083...,
    # gives 137 back to anyone who knows the other eleven doses. Before, amounts had no
    # limit on their figures and this passed.
    data = study.copy()
    data.loc[(data["id"] == 106) & (data["evid"] == 1), "amt"] = 137.0
    fit = synpmx_model_estimate(data, SIMULATED_ROLES)
    release = released(fit)
    assert judged(fit, release).loc["P3", "verdict"] == "pass"
    release["arms"][0]["doses"][0]["amount"] = (11 * 100 + 137) / 12
    fails(fit, release, "P3", "amount 103.08", "more than 2 significant figures")
    # A dose every patient got is released as given, whatever its figures.
    every = study.assign(amt=np.where(study["evid"] == 1, 137.5, 0.0))
    fit = synpmx_model_estimate(every, SIMULATED_ROLES)
    release = released(fit)
    assert release["arms"][0]["doses"][0]["amount"] == 137.5
    assert judged(fit, release).loc["P3", "verdict"] == "pass"


def test_p4_fails_on_a_dosing_period_only_one_patient_had(study):
    # Patient 104 alone came back for a second period (50 mg, time restarting at 0). The
    # builder keeps it out; a release that shows its dose and visits gives the patient away.
    # Before, the dose's amount and time and the visit's time were each held by many
    # patients in period 1, and every check passed.
    one = study[study["id"] == 104]
    again = one.assign(dv=one["dv"] * 1.05, amt=np.where(one["evid"] == 1, 50.0, 0.0))
    data = pd.concat([study[study["id"] <= 104], again, study[study["id"] > 104]])
    fit = synpmx_model_estimate(data.reset_index(drop=True), SIMULATED_ROLES)
    release = released(fit)
    assert [d["period"] for d in release["arms"][0]["doses"]] == [0]
    assert judged(fit, release).loc["P4", "verdict"] == "pass"
    release["arms"][0]["doses"].append(dict(release["arms"][0]["doses"][0], period=1))
    fails(fit, release, "P4", "patients given dose 0 of period 1: 1")
    release = released(fit)
    release["endpoints"]["DV"]["visits"].append([1, 2.0])
    fails(fit, release, "P4", "DV: patients seen in period 1: 1")


def test_a_numeric_code_is_released_as_categories_not_as_a_mean(study):
    # A stage coded 1, 2, 3 and not declared categorical: six, one and five patients. Its mean
    # and SD are two equations in the three counts; before, the release held geometric mean
    # 1.7 and SD 0.78 on the log scale, which only (6, 1, 5) gives at two figures: the lone
    # stage-2 patient was counted as surely as by a frequency of 1/12.
    stage = dict(zip(range(101, 113), [1, 3, 1, 3, 1, 2, 3, 1, 3, 1, 3, 1], strict=True))
    data = study.assign(STAGE=study["id"].map(stage).astype(float))
    roles = dataclasses.replace(SIMULATED_ROLES, covariates=("WT", "SEX", "STAGE"))
    fit = synpmx_model_estimate(data, roles)
    fingerprint = model_fingerprint(fit)
    assert "STAGE" not in fingerprint.covariates
    # Released level by level: stage 2 is folded into stage 1, the most common.
    assert fingerprint.categories["STAGE"] == [[1.0, 0.58], [3.0, 0.42]]
    release = released(fit)
    assert judged(fit, release).loc["P3", "verdict"] == "pass"
    release["covariates"]["STAGE"] = {"geometric_mean": 1.7, "sdlog": 0.78}
    fails(fit, release, "P3", "covariate STAGE takes 3 values")


def test_p4_fails_on_a_visit_only_one_patient_attended(study):
    # No nominal times: a visit is the k-th sample. Patient 104 alone had a fifth, at 18.3 h.
    # A release that adds a fifth visit, at a time nobody's sample reads (20 h), still says
    # that someone had one. Before, it passed every check.
    last = study[(study["id"] == 104) & (study["evid"] == 0)].tail(1)
    extra = last.assign(time=18.3, nominal_time=18.3, dv=last["dv"] * 0.5)
    data = pd.concat([study, extra]).sort_values(["id", "time"], kind="stable")
    roles = dataclasses.replace(SIMULATED_ROLES, nominal_time=None)
    fit = synpmx_model_estimate(data.reset_index(drop=True), roles)
    release = released(fit)
    assert len(release["endpoints"]["DV"]["visits"]) == 4
    release["endpoints"]["DV"]["visits"].append([0, 20.0])
    fails(fit, release, "P4", "DV: patients at visit 5 of period 0: 1")


@pytest.mark.parametrize(
    ("edit", "check", "words"),
    [
        # Before, P3 and P4 skipped any number written as text (P1 alone failed), so they
        # passed a release holding patient 104's weight or a frequency of one patient.
        (
            lambda r, f: r.update(reference_weight=str(f.study.covariates["WT"].iloc[3])),
            "P3",
            ("reference weight", "value of 1 patient"),
        ),
        (
            lambda r, f: r["categories"].update(SEX=[["F", "0.92"], ["M", "0.08"]]),
            "P4",
            ("SEX level at 0.08: 1",),
        ),
        (lambda r, f: r.update(cohort_size=str(r["cohort_size"] + 2)), "P4", ("arms: 2",)),
    ],
)
def test_p3_and_p4_read_numbers_written_as_text(fit, edit, check, words):
    release = released(fit)
    edit(release, fit)
    fails(fit, release, check, *words)
    fails(fit, release, "P1")


def test_p3_fails_on_an_loq_set_from_the_lowest_patient_alone(study):
    # Scaled so that the three lowest patients' minima read 2.6, 3.0 and 3.1: half the third
    # is 1.55, so the rule gives an LOQ of 1. An LOQ of 2 sits just under the lowest patient's
    # own minimum, which nobody's value reads at one figure: only the rule's bound catches it.
    data = study.assign(dv=study["dv"] * 1.35)
    fit = synpmx_model_estimate(data, SIMULATED_ROLES)
    observations = fit.study.observations
    lowest = np.sort(observations[observations["dv"] > 0].groupby("patient")["dv"].min())
    assert set(round_significant(lowest, 1)) & {2.0} == set() and lowest[2] / 2 < 2 < lowest[0]
    release = released(fit)
    assert release["endpoints"]["DV"]["loq"] == 1.0
    release["endpoints"]["DV"]["loq"] = 2.0
    fails(fit, release, "P3", "LOQ 2 lies above half the lowest value 3 patients reached")


def test_a_two_valued_numeric_column_with_one_holder_is_withheld(study):
    # Coded 1 for eleven patients and 2 for one, not declared categorical: a code, so it is
    # folded like any category and, left with one level, withheld; no mean or SD is released.
    data = study.assign(FLAG=np.where(study["id"] == 107, 2.0, 1.0))
    roles = dataclasses.replace(SIMULATED_ROLES, covariates=("WT", "SEX", "FLAG"))
    fingerprint = model_fingerprint(synpmx_model_estimate(data, roles))
    assert "FLAG" not in fingerprint.covariates and "FLAG" not in fingerprint.categories


def test_a_date_column_gives_no_patient_its_date(study):
    # Enrolment dates: as text, one per patient, an identifier (refused); as a day number, a
    # continuous covariate whose summary, at its two figures, is no day that one or two
    # patients alone read as.
    days = dict(zip(range(101, 113), 19_000 + 37 * np.arange(12), strict=True))
    as_text = study.assign(ENROLLED=study["id"].map(lambda i: f"2022-{(i - 100):02d}-15"))
    roles = dataclasses.replace(SIMULATED_ROLES, covariates=("WT", "SEX", "ENROLLED"))
    with pytest.raises(ValueError, match="'ENROLLED' has 12 levels for 12 patients"):
        synpmx_model_estimate(as_text, roles)
    as_day = study.assign(ENROLLED=study["id"].map(days).astype(float))
    fit = synpmx_model_estimate(as_day, roles)
    summary = model_fingerprint(fit).covariates["ENROLLED"]
    holders = (round_significant(list(days.values()), 2) == summary["geometric_mean"]).sum()
    assert not 0 < holders < 3
    assert judged(fit, released(fit)).loc["P3", "verdict"] == "pass"


# --- Issue 21: codes pinned by their summary, and every released number recomputed ------------


def _coded(study, codes, name="STAGE"):
    """The study with a numeric column ``name`` (patient i holds codes[i]) among the covariates."""
    ids = study["id"].unique()
    data = study.assign(**{name: study["id"].map(dict(zip(ids, codes, strict=True))).astype(float)})
    return data, dataclasses.replace(SIMULATED_ROLES, covariates=("WT", "SEX", name))


def _summary_of(values):
    """The trimmed geometric mean and SD on the log scale of ``values`` at two figures."""
    meanlog, sdlog = trimmed_log_summary(np.asarray(values, float))
    return {
        "geometric_mean": float(round_significant(np.exp(meanlog), 2)),
        "sdlog": float(round_significant(sdlog, 2)),
    }


def test_six_codes_at_twelve_patients_are_never_summarised(study):
    # Codes 1-6 held by 3, 3, 3, 1, 1, 1 patients: six values at twelve patients escaped the
    # old code rule (at most five values) and were released as a geometric mean and SD, which
    # only that count vector fits; P3 used the same rule and passed.
    codes = [1, 2, 3, 1, 2, 3, 1, 2, 3, 4, 5, 6]
    data, roles = _coded(study, codes)
    fit = synpmx_model_estimate(data, roles)
    assert "STAGE" not in model_fingerprint(fit).covariates
    release = released(fit)
    release["covariates"]["STAGE"] = _summary_of(codes)
    fails(fit, release, "P3", "covariate STAGE takes 6 values", "count vector(s) of its 6 values")


def test_three_codes_at_five_patients_are_never_summarised():
    # Three values at five patients (2, 2, 1): twice the values exceed the patients, so the old
    # rule took the column for continuous and released its summary; folded, no level reaches
    # three and it is withheld.
    data, roles = _coded(with_sex(small_study(5, seed=2), ["F", "M"] * 2 + ["F"]), [1, 1, 2, 2, 3])
    fingerprint = model_fingerprint(synpmx_model_estimate(data, roles))
    assert "STAGE" not in fingerprint.covariates and "STAGE" not in fingerprint.categories


def test_an_apgar_like_score_is_released_as_categories(study):
    # Scores 1 to 10, as pheno_sd's Apgar: ten values, so never a mean and SD.
    codes = [7, 8, 9, 7, 8, 9, 7, 8, 9, 1, 10, 4]
    data, roles = _coded(study, codes, "APGAR")
    fingerprint = model_fingerprint(synpmx_model_estimate(data, roles))
    assert "APGAR" not in fingerprint.covariates
    assert {level for level, _ in fingerprint.categories["APGAR"]} == {7.0, 8.0, 9.0}


def test_an_inflated_cohort_size_fails(fit):
    # P3 and P4 turn frequencies into counts with the released cohort size: inflated (with the
    # arm to match), it hid a level two patients hold. Before, every check passed.
    release = released(fit)
    release["cohort_size"] += 20
    release["arms"][0]["patients"] += 20
    fails(fit, release, "P4", "cohort_size 32 is not what the source gives (12)")


def test_a_covariate_summary_of_two_patients_fails(fit):
    # The geometric mean of the two heaviest patients, with an SD taken from a third: no
    # check recomputed the summaries, so it passed.
    weights = np.sort(fit.study.covariates["WT"].to_numpy())
    release = released(fit)
    release["covariates"]["WT"] = {
        "geometric_mean": float(round_significant(np.sqrt(weights[-1] * weights[-2]), 2)),
        "sdlog": float(round_significant(np.log(weights[-3]) / 10, 2)),
    }
    fails(fit, release, "P3", "covariate WT geometric mean", "covariate WT sdlog")


def test_a_keep_value_is_judged_within_its_arm(study):
    # Arm A's one York patient: York is held by six patients in the study (five in arm B), so
    # judging it over the study let an arm A release name that patient's site.
    arms = ["A"] * 6 + ["B"] * 6
    sites = ["Leeds"] * 5 + ["York"] + ["York"] * 5 + ["Leeds"]
    ids = study["id"].unique()
    data = study.assign(
        arm=study["id"].map(dict(zip(ids, arms, strict=True))),
        SITE=study["id"].map(dict(zip(ids, sites, strict=True))),
    )
    fit = synpmx_model_estimate(data, dataclasses.replace(SIMULATED_ROLES, keep=("SITE",)))
    release = released(fit)
    assert [arm["keep"]["SITE"] for arm in release["arms"]] == ["Leeds", "York"]
    assert judged(fit, release).loc["P3", "verdict"] == "pass"
    release["arms"][0]["keep"]["SITE"] = "York"
    fails(fit, release, "P3", "arm 1 keep column SITE value 'York'")


def test_a_graded_level_only_a_dropped_arm_shows_fails(study):
    # Grade 4 in three patients, two of them in an arm too small to release: in the cohort one
    # patient shows it. P3 counted its holders over the whole study and P4 read no graded
    # frequency, so a release adding it passed.
    ids = study["id"].unique()
    data = study.assign(arm=study["id"].map(dict(zip(ids, ["A"] * 10 + ["B"] * 2, strict=True))))
    samples = data[data["evid"] == 0].copy()
    samples["dvid"] = "AE"
    samples["dv"] = np.resize([0.0, 1.0, 0.0, 2.0], len(samples))
    samples.loc[samples.groupby("id").head(1).index[-3:], "dv"] = 4.0
    data = pd.concat([data, samples]).sort_values(["id", "time", "evid"], kind="stable")
    roles = dataclasses.replace(SIMULATED_ROLES, pk_endpoint="DV", graded=("AE",))
    fit = synpmx_model_estimate(data.reset_index(drop=True), roles)
    release = released(fit)
    assert 4 not in {level for level, _ in release["graded"]["AE"]}
    assert judged(fit, release).loc["P4", "verdict"] == "pass"
    release["graded"]["AE"].append([4, 0.03])
    fails(fit, release, "P3", "level 4 of AE is observed in 1 patient(s)")
    fails(fit, release, "P4", "AE level 4: 1")


def _numbers(value, path=()):
    """Every number in a JSON value with its path (bools are flags, not numbers)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _numbers(item, (*path, i))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, value


def _edited(value):
    """A number changed to another at the same precision: counts by one, others one step."""
    if isinstance(value, int):
        return value + 1
    if value == 0:
        return 0.5
    return float(round_significant(value * 1.13, 2))


@pytest.fixture
def warfarin(warfarin_fit):
    """The session's warfarin fit (tests/conftest.py)."""
    return warfarin_fit


def test_every_released_number_of_warfarin_is_recomputed_by_a_check(warfarin):
    # Edit each number of the released JSON in turn: some check must FAIL on every one.
    release = released(warfarin)
    assert (judged(warfarin, release)["verdict"] != "FAIL").all()
    passed = []
    for path, value in _numbers(release):
        edited = json.loads(json.dumps(release))
        *parents, last = path
        target = edited
        for step in parents:
            target = target[step]
        target[last] = _edited(value)
        if not (judged(warfarin, edited)["verdict"] == "FAIL").any():
            passed.append((path, value, target[last]))
    assert passed == []


def test_a_withheld_reference_weight_does_not_tell(study):
    # The median, 70 kg at one figure, is what two patients' weights (66 and 74) read as.
    # Before, the reference was withheld, and a null beside a geometric mean of about 70 said
    # that one or two patients weigh about the median; now it is the nearest reading three
    # patients share (60 kg: 58, 61 and 63), and a null fails.
    weights = [52.0, 55, 58, 61, 63, 66, 74, 77, 82, 86, 88, 95]
    ids = study["id"].unique()
    data = study.assign(WT=study["id"].map(dict(zip(ids, weights, strict=True))))
    fit = synpmx_model_estimate(data, SIMULATED_ROLES)
    release = released(fit)
    assert release["reference_weight"] == 60.0
    assert judged(fit, release).loc["P3", "verdict"] == "pass"
    release["reference_weight"] = None
    fails(fit, release, "P3", "reference weight None is not what the source gives (60)")


# --- The checks' memory of a study ---------------------------------------------------------------


def test_a_study_changed_in_place_after_a_check_is_read_afresh(study):
    # The checks keep what they recompute from a study while it lives (a fingerprint is checked
    # as it is built and as it leaves). A study edited in place must not be judged from that
    # memory: after the nominal visit at 2 h is moved to 5 h, and then every weight doubled,
    # the same release, unchanged, fails P3 on each.
    fitted = synpmx_model_estimate(study, SIMULATED_ROLES)
    released = model_fingerprint(fitted)
    before = model_privacy_checks(fitted, released=released).set_index("check")
    assert before.loc["P3", "verdict"] == "pass"
    observations = fitted.study.observations
    observations.loc[observations["visit"] == 2.0, "visit"] = 5.0
    moved = model_privacy_checks(fitted, released=released).set_index("check")
    assert moved.loc["P3", "verdict"] == "FAIL"
    assert "time 2.0 is not the time rule's 5" in moved.loc["P3", "result"]
    fitted.study.covariates["WT"] *= 2
    heavier = model_privacy_checks(fitted, released=released).set_index("check")
    assert "covariate WT geometric mean" in heavier.loc["P3", "result"]


def test_a_fits_release_is_built_once_and_each_caller_gets_a_copy(fit, monkeypatch):
    # The chapters and checks ask for the same fit's release many times; it is built (and
    # checked) once. Each caller gets a copy: editing one leaves the next as built. (Each test
    # that patches the builder starts with no release kept: tests/conftest.py.)
    built = []
    build = builder._built_fingerprint
    monkeypatch.setattr(builder, "_built_fingerprint", lambda f: built.append(f) or build(f))
    first = model_fingerprint(fit)
    first.typical[next(iter(first.typical))] = 1e6
    first.categories.clear()
    again = model_fingerprint(fit)
    assert len(built) == 1 and again is not first
    assert again.to_json() == build(fit).to_json() != first.to_json()


def test_a_fit_edited_in_place_gets_a_release_of_its_own(study, monkeypatch):
    # A release kept for a fit must never stand for the fit once it is edited: with every
    # weight doubled in place, the release summarises the new weights (and passes P3).
    fitted = synpmx_model_estimate(study, SIMULATED_ROLES)
    before = model_fingerprint(fitted)
    fitted.study.covariates["WT"] *= 2
    after = model_fingerprint(fitted)
    assert after.covariates["WT"] != before.covariates["WT"]
    assert after.to_json() == builder._built_fingerprint(fitted).to_json()
    checks = model_privacy_checks(fitted).set_index("check")
    assert checks.loc["P3", "verdict"] == "pass"


def test_a_fit_with_other_thresholds_gets_a_release_of_its_own(fit, monkeypatch):
    # Same study, same estimates, another category threshold: SEX (six patients a level) is
    # released at a threshold of 6 and left out at 7, whichever was built first.
    assert model_fingerprint(dataclasses.replace(fit, min_category_patients=6)).categories
    higher = dataclasses.replace(fit, min_category_patients=7)
    assert model_fingerprint(higher).to_json() == builder._built_fingerprint(higher).to_json()
    assert not model_fingerprint(higher).categories


def test_a_fit_pickle_cannot_write_is_released_unkept(fit, monkeypatch):
    # Anything a caller hangs on the study that pickle refuses costs the memory, not the release.
    unwritable = dataclasses.replace(fit, earlier_releases=(lambda: None,))
    monkeypatch.setattr(builder, "_built_fingerprint", lambda f: "built afresh")
    assert model_fingerprint(unwritable) == "built afresh"
    assert not builder._RELEASES


def test_the_releases_kept_go_with_their_study(monkeypatch):
    # As the checks' memory: once the caller drops the fit and its study, no release built
    # from them stays reachable from the package; here one the checks fail (two patients X).
    rare = with_sex(small_study(12, seed=1), ["F", "M"] * 5 + ["X", "X"])
    fitted = dataclasses.replace(
        synpmx_model_estimate(rare, SIMULATED_ROLES), min_category_patients=1
    )
    assert model_fingerprint(fitted).checks["P4"] == "FAIL"
    kept = weakref.ref(next(iter(builder._RELEASES[id(fitted.study)][1].values())))
    del fitted
    gc.collect()
    assert not builder._RELEASES and kept() is None


def test_the_checks_forget_a_study_once_it_is_gone(study):
    # What the checks keep of a study is derived from it and goes with it: no patient's data
    # stay reachable from the package after the caller has dropped the fit.
    fitted = synpmx_model_estimate(study, SIMULATED_ROLES)
    model_privacy_checks(fitted)
    place = id(fitted.study)
    assert place in checks_module._SOURCES
    del fitted
    gc.collect()
    assert place not in checks_module._SOURCES
