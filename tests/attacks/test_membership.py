"""Tests of synpmx_lite.attacks.membership: worked values, invariants, the reference tables."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats

from synpmx_lite import (
    attendance_attack,
    attendance_score,
    attendance_scores,
    auc,
    auc_standard_error,
    draw_attendance,
    membership_tables,
    population_attack,
    r_reference_tables,
    release_shares,
    roc_curve,
    true_positive_rate_at,
)
from synpmx_lite.attacks.membership import POPULATION_OMEGA, POPULATION_TYPICAL

REFERENCE = r_reference_tables()

# The seed article's worked study: 10 patients, 5 visits, as it prints them.
STUDY = np.array(
    [
        [1, 1, 0, 0, 0],
        [1, 1, 0, 1, 1],
        [1, 1, 0, 0, 0],
        [0, 1, 0, 1, 1],
        [0, 1, 1, 0, 1],
        [0, 1, 0, 1, 1],
        [1, 0, 0, 0, 1],
        [1, 0, 1, 0, 0],
        [0, 1, 1, 1, 0],
        [0, 1, 0, 1, 1],
    ]
)
AVERAGE = np.array([0.3, 0.5, 0.7, 0.4, 0.6])
NON_MEMBER = np.array([0, 0, 1, 0, 1])


# --- The worked example ------------------------------------------------------------------------


def test_worked_study_shares():
    # Column sums 5, 8, 3, 5, 6 of 10; at visit 2 only two patients missed, so the floor of 3
    # releases that share as 1.
    np.testing.assert_allclose(release_shares(STUDY, floor=1), [0.5, 0.8, 0.3, 0.5, 0.6])
    np.testing.assert_allclose(release_shares(STUDY, floor=3), [0.5, 1.0, 0.3, 0.5, 0.6])


def test_worked_study_scores():
    released = release_shares(STUDY, floor=3)
    # Member terms 0.14 + 0.25 + 0.28 - 0.04 + 0; non-member -0.06 - 0.25 - 0.12 - 0.04 + 0.
    assert attendance_score(STUDY[0], AVERAGE, released) == pytest.approx(0.63)
    assert attendance_score(NON_MEMBER, AVERAGE, released) == pytest.approx(-0.47)


def test_floor_rounds_thin_shares_both_ways():
    one_sampled = np.zeros((10, 2), dtype=int)
    one_sampled[0] = 1  # visit 1 and 2: one patient of ten sampled
    one_sampled[:, 1] = 1
    one_sampled[:2, 1] = 0  # visit 2: two missed
    np.testing.assert_allclose(release_shares(one_sampled, floor=3), [0.0, 1.0])
    np.testing.assert_allclose(release_shares(one_sampled, floor=1), [0.1, 0.8])


# --- The AUC and its standard error ------------------------------------------------------------


def test_auc_hand_worked():
    # Six pairs: four wins, two ties counted half.
    assert auc([0.9, 0.4, 0.4], [0.4, 0.1]) == pytest.approx(5 / 6)
    assert auc([1.0, 2.0], [3.0, 4.0]) == 0.0
    assert auc([5.0], [5.0]) == 0.5


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(np.int64, st.integers(1, 40), elements=st.integers(-3, 3)),
    hnp.arrays(np.int64, st.integers(1, 40), elements=st.integers(-3, 3)),
)
def test_auc_is_mann_whitney_u_over_pairs_with_ties(members, others):
    u = stats.mannwhitneyu(members, others, method="asymptotic").statistic
    assert auc(members, others) == pytest.approx(u / (members.size * others.size))


def test_auc_standard_error_matches_replication_spread():
    rng = np.random.default_rng(7)
    replications, n = 400, 150
    members = rng.normal(0.6, 1, (replications, n))
    others = rng.normal(0.0, 1, (replications, n))
    aucs = np.array([auc(m, o) for m, o in zip(members, others, strict=True)])
    errors = np.array([auc_standard_error(m, o) for m, o in zip(members, others, strict=True)])
    # The SD of 400 replicate AUCs is known to within about 7 %.
    assert errors.mean() == pytest.approx(aucs.std(ddof=1), rel=0.2)


def test_paired_standard_error_accounts_for_shared_studies():
    rng = np.random.default_rng(8)
    replications, n = 400, 150
    # Member and non-member of one study share a study effect, as in the attacks.
    study = rng.normal(0, 1, (replications, n))
    members = study + rng.normal(0.6, 0.5, (replications, n))
    others = study + rng.normal(0.0, 0.5, (replications, n))
    aucs = np.array([auc(m, o) for m, o in zip(members, others, strict=True)])
    paired = np.mean(
        [auc_standard_error(m, o, paired=True) for m, o in zip(members, others, strict=True)]
    )
    unpaired = np.mean([auc_standard_error(m, o) for m, o in zip(members, others, strict=True)])
    assert paired == pytest.approx(aucs.std(ddof=1), rel=0.2)
    assert unpaired > 1.3 * paired


# --- Attendance draws --------------------------------------------------------------------------


def test_attendance_rates_are_the_requested_rates():
    rate = np.array([0.2, 0.5, 0.9])
    attendance = draw_attendance(20_000, rate, 0.0, rng=1)
    assert attendance.dtype == np.int8
    assert set(np.unique(attendance)) <= {0, 1}
    # Binomial SE at 20,000 patients is at most 0.0036.
    np.testing.assert_allclose(attendance.mean(axis=0), rate, atol=0.015)


@pytest.mark.parametrize("correlation", [0.0, 0.6])
def test_attendance_correlation_is_the_tetrachoric_one(correlation):
    # Two visits at rate 1/2 from a bivariate normal with correlation rho agree with
    # probability 1/2 + arcsin(rho)/(pi/2) / 2, so their phi coefficient is 2 arcsin(rho)/pi.
    attendance = draw_attendance(40_000, [0.5, 0.5], correlation, rng=2)
    phi = np.corrcoef(attendance.T)[0, 1]
    assert phi == pytest.approx(2 * np.arcsin(correlation) / np.pi, abs=0.02)


@settings(max_examples=50, deadline=None)
@given(
    hnp.arrays(
        np.int8, st.tuples(st.integers(1, 30), st.integers(1, 8)), elements=st.sampled_from([0, 1])
    ),
    st.integers(1, 6),
)
def test_released_shares_rest_on_at_least_floor_patients(attendance, floor):
    patients = attendance.shape[0]
    released = release_shares(attendance, floor)
    held = np.rint(released * patients)
    in_between = (released > 0) & (released < 1)
    assert np.all(np.minimum(held, patients - held)[in_between] >= floor)
    # Shares that clear the floor are released as they are.
    exact = attendance.mean(axis=0)
    clear = np.minimum(attendance.sum(0), patients - attendance.sum(0)) >= floor
    np.testing.assert_allclose(released[clear], exact[clear])


# --- The exact-distribution shortcuts agree with simulating every patient ---------------------


def test_attendance_shortcut_matches_full_simulation():
    patients, visits, draws = 10, 20, 20_000
    shortcut = attendance_attack(patients, visits, 0.0, draws=draws, rng=3)
    rng = np.random.default_rng(4)
    rate = rng.uniform(0.2, 0.8, (draws, 1, visits))
    study = (rng.random((draws, patients + 1, visits)) < rate).astype(float)
    shares = study[:, :patients].mean(axis=1)
    scores = ((study[:, [0, patients]] - rate) * (shares[:, None] - rate)).sum(axis=2)
    full = auc(scores[:, 0], scores[:, 1])
    assert abs(shortcut.without_floor - full) < 4 * np.sqrt(2) * shortcut.without_floor_se


def test_population_shortcut_matches_full_simulation():
    patients, draws = 12, 20_000
    shortcut = population_attack(patients, 0.0, draws=draws, rng=5)
    rng = np.random.default_rng(6)
    omega = POPULATION_OMEGA.to_numpy()
    centre = POPULATION_TYPICAL.to_numpy() * np.exp(rng.normal(0, 0.3, (draws, 5)))
    eta = rng.normal(0, np.sqrt(omega), (draws, patients + 1, 5))
    typical = centre * np.exp(eta[:, :patients].mean(axis=1))
    variance = (eta[:, :patients] ** 2).mean(axis=1)

    def score(candidate):
        location = candidate * np.log(typical / centre) / omega
        spread = (candidate**2 / omega - 1) * (variance / omega - 1) / 2
        return (location + spread).sum(axis=1)

    full = auc(score(eta[:, 0]), score(eta[:, patients]))
    assert abs(shortcut.unrounded - full) < 4 * np.sqrt(2) * shortcut.unrounded_se


# --- The tables --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tables():
    return membership_tables()


def _z_scores(ours: pd.DataFrame, reference: pd.DataFrame, estimates: list[str]) -> np.ndarray:
    # The R cells come from as many draws as ours, so each has about our standard error.
    difference = ours[estimates].to_numpy() - reference[estimates].to_numpy()
    return difference / (np.sqrt(2) * ours[[f"{c}_se" for c in estimates]].to_numpy())


def test_tables_have_the_reference_layout(tables):
    for name, table in [("attendance", tables.attendance), ("population", tables.population)]:
        reference = REFERENCE[name]
        assert list(table.columns[: reference.shape[1]]) == list(reference.columns)
        key = list(reference.columns[: 3 if name == "attendance" else 2])
        pd.testing.assert_frame_equal(table[key], reference[key], check_dtype=False)


@pytest.mark.parametrize(
    ("name", "estimates"),
    [
        ("attendance", ["without_floor", "released"]),
        ("population", ["unrounded", "two_figures", "released"]),
    ],
)
def test_tables_agree_with_the_r_reference(tables, name, estimates):
    ours = getattr(tables, name)
    reference = REFERENCE[name]
    z = _z_scores(ours, reference, estimates)
    # 27 rows are compared (the columns of a row score the same studies and move together).
    # Three combined SEs per cell would flag a correct implementation about one time in
    # seven over the book; the Bonferroni bound keeps that at 1 % for the whole comparison.
    # (The R population row for 12 patients and an exact reference sits 3.1 of its own SEs
    # above what 100,000 draws give, so it is the row that the plain 3-SE bound would flag.)
    bound = stats.norm.isf(0.01 / (2 * 27))
    assert np.abs(z).max() < bound
    # No systematic offset either: the mean z of a table's first column is within 3 SEs of 0.
    assert abs(z[:, 0].mean()) < 3 / np.sqrt(len(z))


def test_tables_are_reproducible(tables):
    again = membership_tables()
    pd.testing.assert_frame_equal(tables.attendance, again.attendance, check_exact=True)
    pd.testing.assert_frame_equal(tables.population, again.population, check_exact=True)


def test_the_floor_and_rounding_only_lower_or_keep_the_auc(tables):
    attendance, population = tables.attendance, tables.population
    # The floor only ever removes information, so it cannot raise the AUC by more than noise.
    assert np.all(attendance.released - attendance.without_floor < 2 * attendance.released_se)
    assert np.all(population.released - population.unrounded < 2 * population.released_se)


def test_score_piles_agree_with_the_attack():
    piles = attendance_scores(10, 20, 0.0, floor=3, draws=3000, rng=9)
    frame = piles.to_frame()
    assert list(frame.columns) == ["candidate", "score"]
    assert len(frame) == 6000
    assert piles.auc() == pytest.approx(0.84, abs=4 * piles.auc_standard_error())


# --- Bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: release_shares([[0, 2], [1, 0]], 3), ValueError, "attendance"),
        (lambda: release_shares([[0, 1], [1, 0]], 0), ValueError, "floor"),
        (lambda: release_shares([[0, 1], [1, 0]], 2.5), TypeError, "floor"),
        (lambda: release_shares([0, 1, 1], 3), ValueError, "attendance"),
        (lambda: draw_attendance(10, [0.5, 1.0], 0.0), ValueError, "rate"),
        (lambda: draw_attendance(10, [0.0, 0.5], 0.0), ValueError, "rate"),
        (lambda: draw_attendance(10, [0.5], 1.0), ValueError, "correlation"),
        (lambda: draw_attendance(10, [0.5], -0.1), ValueError, "correlation"),
        (lambda: draw_attendance(0, [0.5], 0.0), ValueError, "patients"),
        (lambda: draw_attendance(10.0, [0.5], 0.0), TypeError, "patients"),
        (lambda: draw_attendance(10, [0.5], 0.0, rng="seed"), TypeError, "rng"),
        (lambda: attendance_score([1, 0.5], [0.5, 0.5], [0.5, 0.5]), ValueError, "candidate"),
        (lambda: attendance_score([1, 0], [0.5, 1.5], [0.5, 0.5]), ValueError, "rate"),
        (lambda: attendance_score([1, 0], [0.5, 0.5], [0.5, 1.5]), ValueError, "released"),
        (lambda: attendance_score([1, 0], [0.5, 0.5, 0.5], [0.5, 0.5]), ValueError, "lengths"),
        (lambda: attendance_attack(0, 5, 0.0), ValueError, "patients"),
        (lambda: attendance_attack(10, 5.5, 0.0), TypeError, "visits"),
        (lambda: attendance_attack(10, 5, 1.2), ValueError, "correlation"),
        (lambda: attendance_attack(10, 5, 0.0, draws=1), ValueError, "draws"),
        (lambda: attendance_scores(10, 5, 0.0, floor=0), ValueError, "floor"),
        (lambda: population_attack(0, 0.1), ValueError, "patients"),
        (lambda: population_attack(12, -0.1), ValueError, "off_by"),
        (lambda: population_attack(12, float("nan")), ValueError, "off_by"),
        (lambda: population_attack(True, 0.1), TypeError, "patients"),
        (lambda: auc([], [1.0]), ValueError, "members"),
        (lambda: auc([1.0], [np.nan]), ValueError, "others"),
        (lambda: auc([[1.0]], [1.0]), ValueError, "members"),
        (
            lambda: auc_standard_error([1.0, 2.0], [1.0, 2.0, 3.0], paired=True),
            ValueError,
            "paired",
        ),
        (lambda: membership_tables(seed=-1), ValueError, "seed"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_true_positive_rate_at_a_false_positive_rate_hand_worked():
    members, others = [3.0, 2.0, 1.0], [0.0, 0.5, 2.5]
    # Flagging at most a third of non-members allows any threshold down to 1 (only 2.5 is
    # flagged among them), which flags every member; flagging none allows only 3.
    assert true_positive_rate_at(members, others, 0.34) == 1.0
    assert true_positive_rate_at(members, others, 0.2) == pytest.approx(1 / 3)
    curve = roc_curve(members, others)
    assert curve.iloc[-1].tolist() == [1.0, 1.0]
    assert curve["false_positive_rate"].is_monotonic_increasing


def test_rates_at_low_false_positive_rates_bad_input():
    with pytest.raises(ValueError, match="false_positive_rate"):
        true_positive_rate_at([1.0], [0.0], 0.0)
    with pytest.raises(ValueError, match="members"):
        roc_curve([np.inf], [0.0])


def test_table_lookups_and_formatting(tables):
    row = tables.attendance.iloc[1]
    assert tables.attendance_auc(20, 10, 0.0) == row.released
    assert tables.attendance_auc(20, 10, 0.0, "without_floor") == row.without_floor
    assert tables.population_auc(12, 0.2) == tables.population.iloc[6].released
    largest = (tables.population.released - tables.population.unrounded).abs().max()
    assert tables.largest_change("population", "released", "unrounded") == largest
    shown = tables.formatted("population")
    assert list(shown.columns) == ["patients", "off_by", "unrounded", "two_figures", "released"]
    assert shown.released.iloc[0] == (
        f"{tables.population.released.iloc[0]:.3f} ± {tables.population.released_se.iloc[0]:.3f}"
    )
    with pytest.raises(ValueError, match="no row"):
        tables.attendance_auc(7, 10, 0.0)
    with pytest.raises(ValueError, match="column"):
        tables.population_auc(12, 0.0, "auc")


# --- Bad input found by calling the public functions with wrong types and sizes ----------------


@pytest.mark.parametrize(
    ("members", "others"),
    [(["0.9", "0.4"], [0.1, 0.2]), ([0.9, 0.4], "12"), (np.array(["1", "2"]), [0.5])],
)
def test_auc_refuses_text_instead_of_parsing_it(members, others):
    with pytest.raises(TypeError, match=r"members|others"):
        auc(members, others)
    with pytest.raises(TypeError, match=r"members|others"):
        auc_standard_error(members, others)


@pytest.mark.parametrize("paired", ["yes", 1, None])
def test_auc_standard_error_paired_must_be_a_bool(paired):
    with pytest.raises(TypeError, match="paired"):
        auc_standard_error([0.9, 0.4, 0.3], [0.1, 0.2, 0.5], paired=paired)
    assert auc_standard_error([0.9, 0.4, 0.3], [0.1, 0.2, 0.5], paired=np.bool_(True)) > 0


@pytest.mark.parametrize(
    ("patients", "visits", "correlation", "draws", "gib"),
    [(10**6, 10**4, 0.5, 2, "186.3"), (10**6, 10**4, 0.0, 10**6, "558.8")],
)
def test_attendance_sizes_that_cannot_fit_are_refused_with_what_they_need(
    patients, visits, correlation, draws, gib
):
    for attack in (attendance_attack, attendance_scores):
        with pytest.raises(ValueError, match=rf"draws={draws} would need about {gib} GiB"):
            attack(patients, visits, correlation, draws=draws, rng=1)


def test_the_books_largest_attendance_setting_is_allowed():
    # membership_tables' largest row: 100 patients, 60 visits, correlation 0.6, 1500 draws;
    # and independent visits at a size the correlated simulation could never reach.
    attack = attendance_attack(100, 60, 0.6, draws=1500, rng=1)
    assert 0.5 < attack.without_floor <= 1
    assert attendance_scores(10**6, 10**4, 0.0, draws=2, rng=1).member.shape == (2,)


def test_a_negative_seed_is_refused_naming_the_argument():
    with pytest.raises(ValueError, match="rng must be a non-negative integer seed, got -1"):
        attendance_attack(10, 5, 0.0, draws=10, rng=-1)
    with pytest.raises(ValueError, match="seed"):
        membership_tables(seed=-1)
