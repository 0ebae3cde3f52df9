import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from synpmx_lite.generator.protections import (
    few_values,
    fold_categories,
    identifier_like,
    loq_floor,
    protected_value,
    share_two_sided,
    trimmed_core_size,
    trimmed_log_summary,
)
from synpmx_lite.pmx.study import load_dataset
from synpmx_lite.rounding import round_significant


def test_trimmed_summary_hand_worked():
    # logs 1..20: one set aside at each end leaves 2..19, mean 10.5, variance 18*19/12.
    meanlog, sdlog = trimmed_log_summary(np.exp(np.arange(1.0, 21.0)))
    z = stats.norm.isf(0.05)
    correction = math.sqrt(1 - 2 * z * stats.norm.pdf(z) / 0.9)
    assert meanlog == pytest.approx(10.5)
    assert sdlog == pytest.approx(math.sqrt(18 * 19 / 12) / correction)


def test_trimmed_sd_is_corrected_to_the_normal_sd():
    logs = np.random.default_rng(5).normal(4.0, 0.3, size=20000)
    meanlog, sdlog = trimmed_log_summary(np.exp(logs))
    assert meanlog == pytest.approx(4.0, abs=0.01)
    assert sdlog == pytest.approx(0.3, rel=0.02)


@settings(max_examples=50, deadline=None)
@given(st.floats(1.0, 1e6), st.integers(8, 60), st.integers(0, 2**31))
def test_one_extreme_patient_cannot_move_the_summary(extreme, n, seed):
    values = np.exp(np.random.default_rng(seed).normal(4.2, 0.2, size=n))
    top = values.argmax()
    with_extreme = values.copy()
    with_extreme[top] = max(extreme, values[top])
    assert trimmed_log_summary(with_extreme) == pytest.approx(trimmed_log_summary(values))


def test_folding_rare_levels():
    folded = fold_categories(["a"] * 5 + ["b"] * 3 + ["c"] * 2 + ["d"])
    assert folded.to_dict() == pytest.approx({"a": 8 / 11, "b": 3 / 11})
    assert fold_categories([1] * 4 + [2] * 4, min_patients=4).to_dict() == {1: 0.5, 2: 0.5}
    # Withheld: no level reaches the threshold, or only one does (its frequency 1 would
    # describe the patients folded into it).
    assert fold_categories(["a", "a", "b"]).empty
    assert fold_categories([1, 1, 1, 2, 2, 2, 2], min_patients=4).empty


def test_loq_rule():
    assert loq_floor([0.3, 0.7, 0.9, 1.5]) == 0.2  # 0.9 / 2 = 0.45 -> 0.2
    assert loq_floor([4.0, 4.0, 4.0]) == 2.0
    assert loq_floor([10.0, 11.0, 12.0, 0.5]) == 5.0  # third lowest 11 -> 5.5 -> 5
    assert loq_floor([0.3, 0.05, 0.021]) == 0.1  # 0.3 / 2 = 0.15 -> 0.1
    assert loq_floor([1.0, 2.0]) is None
    with pytest.raises(ValueError, match="lowest_per_patient"):
        loq_floor([1.0, -2.0, 3.0])


def test_trimmed_summary_needs_three_values():
    with pytest.raises(ValueError, match="at least 3"):
        trimmed_log_summary([1.0, 2.0])
    assert trimmed_log_summary([1.0, np.e, np.e**2]) == pytest.approx((1.0, 1.0))


def test_trimmed_core_size_counts_the_patients_a_summary_rests_on():
    # At least one set aside at each end: 4 patients leave 2, 5 leave 3; 21 set aside 2 each.
    assert [trimmed_core_size(n) for n in (2, 3, 4, 5, 20, 21, 40)] == [0, 0, 2, 3, 18, 17, 36]
    with pytest.raises(TypeError, match="n"):
        trimmed_core_size(4.0)


def test_folding_refuses_missing_levels():
    # Before, the ten missing values vanished and "m: 1.0" was released.
    with pytest.raises(ValueError, match="levels has 10 missing values"):
        fold_categories(["m"] * 4 + [None] * 10)
    with pytest.raises(ValueError, match="levels has 1 missing"):
        fold_categories(["m"] * 4 + ["f"] * 4 + [float("nan")])
    with pytest.raises(TypeError, match="levels"):
        fold_categories("mmmff")
    with pytest.raises(ValueError, match="levels must not be empty"):
        fold_categories([])


def test_identifier_like_columns():
    assert identifier_like([f"pt{i}" for i in range(20)])
    assert identifier_like([*range(16), 1, 2, 3, 4])  # 16 levels for 20 patients
    assert not identifier_like(["a"] * 10 + ["b"] * 10)


def test_loq_rule_refuses_subnormal_values():
    # Before, halving 5e-324 underflowed and the LOQ came out NaN.
    with pytest.raises(ValueError, match="lowest_per_patient must be at least 1e-300"):
        loq_floor([5e-324] * 3)
    with pytest.raises(ValueError, match="lowest_per_patient"):
        loq_floor([1e-310, 1.0, 2.0])
    assert loq_floor([1e-300, 2e-300, 4e-300]) == pytest.approx(2e-300)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(1e-6, 1e6), min_size=3, max_size=40),
    st.integers(3, 5),
)
def test_loq_is_never_the_lowest_value_of_one_or_two_patients(lowest, k):
    loq = loq_floor(lowest, min_patients=k)
    if len(lowest) < k:
        assert loq is None
        return
    assert loq <= np.sort(lowest)[k - 1] / 2 * (1 + 1e-9)
    mantissa = loq / 10.0 ** math.floor(math.log10(loq))
    assert any(math.isclose(mantissa, m) for m in (1, 2, 5))
    holders = np.isclose(round_significant(lowest, 1), loq, rtol=1e-9, atol=0).sum()
    assert not 0 < holders < k


def test_share_two_sided():
    assert share_two_sided(2, 30, 3) == 0.0
    assert share_two_sided(28, 30, 3) == 1.0
    assert share_two_sided(27, 30, 3) == 0.9
    assert share_two_sided(4, 30, 5) == 0.0


def test_protected_value_hand_worked():
    owners = [0, 1, 2]
    # The median of three is the middle patient's: 1.5 moves to 1.4 (a tie, the smaller).
    assert protected_value(1.5, [1.02, 1.5, 1.98], owners, figures=2, min_patients=3) == 1.4
    # A value three patients share stays.
    assert protected_value(2.0, [2.0, 2.0, 2.04], owners, figures=2, min_patients=3) == 2.0
    # One unit of the last figure below 10 is 0.1: 10 moves to 9.9.
    assert protected_value(10.0, [10.0, 20.0, 30.0], owners, figures=2, min_patients=3) == 9.9
    # Below 0.01 the grid is 0.009, 0.008, ...; a dose is never released as 0.
    assert protected_value(0.01, [0.01, 0.5, 0.6], owners, figures=1, min_patients=3) == 0.009
    assert protected_value(
        0.0, [0.0, 0.5, 0.6], owners, figures=1, min_patients=3, positive=True
    ) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="owners"):
        protected_value(1.0, [1.0, 2.0], [0], figures=2, min_patients=3)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(0.01, 1000), min_size=3, max_size=30),
    st.integers(1, 3),
    st.integers(2, 5),
)
def test_a_protected_value_is_held_by_nobody_or_enough(values, figures, k):
    values = np.asarray(values)
    owners = np.arange(values.size)
    center = float(np.median(values))
    released = protected_value(center, values, owners, figures=figures, min_patients=k)
    holders = np.isclose(round_significant(values, figures), released, rtol=1e-9).sum()
    assert not 0 < holders < k
    assert released == float(round_significant(released, figures))


def test_the_code_rule_withholds_nimodatas_measurements():
    # twelve patients with nine or ten values of each measurement: never summarised, and at
    # most one value of any held by three patients, so none is released as categories either
    data, roles = load_dataset("nimoData")
    per_patient = data.groupby(roles.id)[list(roles.covariates)].first()
    assert len(per_patient) == 12
    for name in per_patient:
        values = per_patient[name].to_numpy(dtype=float)
        assert few_values(values)
        assert fold_categories(values, min_patients=3).empty
