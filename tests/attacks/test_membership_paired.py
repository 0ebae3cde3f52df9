"""Tests of the paired comparison of two releases of the same simulated studies.

`auc_difference` and `MembershipTables.paired_change` measure what a protection (the floor, a
rounding) changes in the AUC, with the standard error of that change; the constants
`ATTENDANCE_FLOOR` and `POPULATION_ROUNDINGS` say which releases the tables compare.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synpmx_lite import (
    PopulationAttack,
    attendance_attack,
    attendance_scores,
    auc,
    auc_difference,
    auc_standard_error,
    membership_tables,
)
from synpmx_lite.attacks.membership import ATTENDANCE_FLOOR, POPULATION_ROUNDINGS

# --- auc_difference ----------------------------------------------------------------------------


def test_auc_difference_hand_worked():
    # Compared: placements of the members 1, 2/3, 2/3 (AUC 7/9) and of the non-members 1, 1/3, 1,
    # so the studies' terms are 2, 1, 5/3. Baseline: members 1, 1, 2/3 (AUC 8/9), non-members
    # 1, 2/3, 1, terms 2, 5/3, 5/3. The terms change by 0, -2/3, 0: SD 2 sqrt(3)/9 over sqrt(3).
    difference, error = auc_difference(
        [3.0, 2.0, 1.0], [0.0, 2.5, 0.5], [3.0, 2.0, 1.0], [0.0, 1.5, 0.5]
    )
    assert difference == pytest.approx(-1 / 9)
    assert error == pytest.approx(2 / 9)


def test_the_same_release_twice_changes_nothing():
    rng = np.random.default_rng(1)
    members, others = rng.normal(0.5, 1, 50), rng.normal(0, 1, 50)
    assert auc_difference(members, others, members, others) == (0.0, 0.0)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 30).flatmap(
        lambda n: st.lists(
            st.lists(st.integers(-3, 3), min_size=n, max_size=n), min_size=4, max_size=4
        )
    )
)
def test_difference_is_the_difference_of_aucs_and_antisymmetric(scores):
    members, others, baseline_members, baseline_others = map(np.array, scores)
    difference, error = auc_difference(members, others, baseline_members, baseline_others)
    assert difference == auc(members, others) - auc(baseline_members, baseline_others)
    reverse, reverse_error = auc_difference(baseline_members, baseline_others, members, others)
    assert reverse == -difference
    assert reverse_error == pytest.approx(error)
    assert error >= 0


def test_paired_error_matches_the_spread_of_replicate_differences():
    rng = np.random.default_rng(2)
    replications, n = 400, 150
    # Each study shifts its member and non-member alike; the compared release adds noise to
    # the baseline's scores of the same candidates, as a coarser release would.
    study = rng.normal(0, 1, (replications, n))
    members = study + rng.normal(0.6, 0.5, (replications, n))
    others = study + rng.normal(0.0, 0.5, (replications, n))
    noisy_members = members + rng.normal(0, 0.3, (replications, n))
    noisy_others = others + rng.normal(0, 0.3, (replications, n))
    results = np.array(
        [
            auc_difference(*four)
            for four in zip(noisy_members, noisy_others, members, others, strict=True)
        ]
    )
    differences, errors = results[:, 0], results[:, 1]
    # The SD of 400 replicate differences is known to within about 7 %.
    assert errors.mean() == pytest.approx(differences.std(ddof=1), rel=0.2)
    # Treating the two AUCs as independent would overstate the error several times over.
    unpaired = np.mean(
        [
            np.hypot(auc_standard_error(a, b, paired=True), auc_standard_error(c, d, paired=True))
            for a, b, c, d in zip(noisy_members, noisy_others, members, others, strict=True)
        ]
    )
    assert unpaired > 2 * errors.mean()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (([1.0, 2.0], [0.0, 1.0], [1.0, 2.0], [0.0, 1.0, 2.0]), "lengths"),
        (([1.0], [0.0], [1.0], [0.0]), "at least 2"),
        (([1.0, np.nan], [0.0, 1.0], [1.0, 2.0], [0.0, 1.0]), "members"),
        (([1.0, 2.0], [0.0, 1.0], [1.0, 2.0], [[0.0, 1.0]]), "baseline_others"),
    ],
)
def test_auc_difference_bad_input(arguments, message):
    with pytest.raises(ValueError, match=message):
        auc_difference(*arguments)


# --- The releases the tables compare ------------------------------------------------------------


def test_released_attendance_column_applies_the_attendance_floor():
    attack = attendance_attack(10, 20, 0.0, draws=400, rng=3)
    floored = attendance_scores(10, 20, 0.0, floor=ATTENDANCE_FLOOR, draws=400, rng=3)
    whole = attendance_scores(10, 20, 0.0, floor=1, draws=400, rng=3)
    assert attack.released == floored.auc()
    assert attack.without_floor == whole.auc()
    assert attack.released != attack.without_floor


def test_population_columns_are_the_roundings():
    fields = [f.name for f in dataclasses.fields(PopulationAttack)]
    assert fields == [name for c in POPULATION_ROUNDINGS for name in (c, f"{c}_se")]
    assert POPULATION_ROUNDINGS["released"] == 1  # the fingerprint's one significant figure


# --- MembershipTables.paired_change ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tables():
    return membership_tables()


@pytest.mark.parametrize(
    ("table", "column", "baseline", "fine"),
    [
        ("attendance", "released", "without_floor", True),
        ("population", "two_figures", "unrounded", True),
        ("population", "released", "unrounded", False),
    ],
)
def test_paired_change_redraws_the_tables_studies(tables, table, column, baseline, fine):
    frame = getattr(tables, table)
    change = tables.paired_change(table, column, baseline)
    settings_columns = list(frame.columns[: change.shape[1] - 2])
    assert list(change.columns) == [*settings_columns, "change", "change_se"]
    assert change[settings_columns].equals(frame[settings_columns])
    # The same studies, so exactly the table's own difference.
    np.testing.assert_array_equal(change["change"], frame[column] - frame[baseline])
    # Shared studies: the change is known better than two independent draws would give.
    independent = np.hypot(frame[f"{column}_se"], frame[f"{baseline}_se"])
    assert np.all(change["change_se"] < independent)
    if fine:
        # The floor and two figures leave most scores as they were, so the change is known
        # better than either AUC; one figure moves them too much for that.
        assert np.all(change["change_se"] < frame[f"{baseline}_se"])


def test_paired_change_follows_the_draws_of_smaller_tables():
    small = membership_tables(5, attendance_draws=200, population_draws=200)
    change = small.paired_change("attendance", "released", "without_floor")
    expected = small.attendance["released"] - small.attendance["without_floor"]
    np.testing.assert_array_equal(change["change"], expected)


def test_the_floor_lowers_the_auc_where_shares_are_thin(tables):
    # Ten patients behind each share and independent visits: a share with one or two
    # patients on a side is common, and the floor's drop stands well clear of its paired SE.
    change = tables.paired_change("attendance", "released", "without_floor").set_index(
        ["visits", "patients", "correlation"]
    )
    for visits in (20, 60):
        row = change.loc[(visits, 10, 0.0)]
        assert row["change"] < -3 * row["change_se"]
    # A hundred patients: no share is thin, so the floor changes nothing at all.
    hundred = change.xs(100, level="patients")
    assert np.all(hundred["change"] == 0) and np.all(hundred["change_se"] == 0)


@pytest.mark.parametrize(
    ("table", "column", "baseline", "error", "message"),
    [
        ("visits", "released", "unrounded", ValueError, "table"),
        ("population", "released", "without_floor", ValueError, "baseline"),
        ("attendance", "released_se", "without_floor", ValueError, "column"),
    ],
)
def test_paired_change_bad_input(tables, table, column, baseline, error, message):
    with pytest.raises(error, match=message):
        tables.paired_change(table, column, baseline)
