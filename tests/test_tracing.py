import math

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from synpmx_lite.tracing import (
    _block_statistics,
    _mix,
    calibrated_threshold,
    dp_mean_query,
    exact_means,
    load_pums,
    random_predicates,
    reference_sample_test,
    simulate_tracing,
    single_reference_test,
)

# Hand-worked example: in +-1 coding the candidate less the reference is (2, 0, 0, 2) and the
# answers are (0.6, -0.6, 0.2, 1).
CANDIDATE = [1, 0, 1, 1]
ANSWERS = [0.8, 0.2, 0.6, 1.0]
REFERENCE = [0, 0, 1, 0]
# Four more reference people: their mean is (0.75, 0.5, 0.25, 0), (0.5, 0, -0.5, -1) in +-1
# coding, so m = 4, alpha = 1/2, eta = 1 and the clipped weights are (0.1, -0.6, 0.7, 1).
OTHERS = [[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 1, 0]]


def test_pums_data():
    data = load_pums()
    assert data.shape == (100, 18)
    assert data.loc[0, ["sex", "age", "educ", "income"]].tolist() == [1, 44, 13, 112000]
    assert not data.duplicated().any()


def test_mixer_matches_splitmix64():
    # The first output of splitmix64 seeded with 0 is the finaliser of the golden gamma.
    assert _mix(np.array([0x9E3779B97F4A7C15], dtype=np.uint64))[0] == 0xE220A8397B1DCDAF


def test_predicates_are_a_function_of_the_record_and_the_seed():
    records = pd.DataFrame({"a": [1, 2, 1, 3], "b": [5, 5, 5, 7]})
    bits = random_predicates(records, 200, rng=7)
    assert bits.shape == (4, 200) and bits.dtype == bool
    np.testing.assert_array_equal(bits[0], bits[2])  # equal records, equal predicates
    np.testing.assert_array_equal(bits, random_predicates(records, 200, rng=7))
    as_array = random_predicates(records.to_numpy(), 200, rng=7)
    np.testing.assert_array_equal(as_array[0], as_array[2])
    assert not np.array_equal(bits, random_predicates(records, 200, rng=8))


def test_predicates_behave_as_fair_independent_coins():
    bits = random_predicates(load_pums(), 64 * 100, rng=1).astype(float)
    n, d = bits.shape
    # Each bit a fair coin: the overall share within 4 standard errors of 1/2.
    assert abs(bits.mean() - 0.5) < 4 * 0.5 / math.sqrt(n * d)
    # Distinct records agree on half of the predicates: the mean agreement over all pairs.
    agree = (bits @ bits.T + (1 - bits) @ (1 - bits).T) / d
    pairs = agree[np.triu_indices(n, 1)]
    assert abs(pairs.mean() - 0.5) < 4 * 0.5 / math.sqrt(pairs.size * d)
    # Neighbouring predicates (also across the 64-bit blocks) are uncorrelated.
    r = np.corrcoef(bits[:, :-1].ravel(), bits[:, 1:].ravel())[0, 1]
    assert abs(r) < 4 / math.sqrt(n * (d - 1))


def test_exact_means():
    np.testing.assert_allclose(exact_means([[1, 0, 1], [1, 1, 0]]), [1.0, 0.5, 0.5])
    with pytest.raises(ValueError, match="rows"):
        exact_means([[1, 0, 2]])


def test_single_reference_test_by_hand():
    result = single_reference_test(CANDIDATE, ANSWERS, REFERENCE, delta=0.05)
    assert result.statistic == pytest.approx(2 * 0.6 + 2 * 1.0)
    assert result.threshold == pytest.approx(math.sqrt(8 * 4 * math.log(20)))
    assert not result.flagged


def test_reference_sample_test_by_hand():
    result = reference_sample_test(CANDIDATE, ANSWERS, [REFERENCE, *OTHERS], delta=0.05)
    assert result.statistic == pytest.approx(2 * 0.1 + 2 * 1.0)
    assert result.threshold == pytest.approx(4 * 0.5 * math.sqrt(4 * math.log(20)))


def test_flagged_compares_statistic_and_threshold():
    answers = np.array([1.0, 0.0] * 50)
    candidate = answers.astype(int)
    result = single_reference_test(candidate, answers, 1 - candidate, delta=0.05)
    # Every term is 2 * 1: the statistic is 200, above sqrt(800 ln 20).
    assert result.statistic == pytest.approx(200.0)
    assert result.flagged


binary = st.lists(st.integers(0, 1), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_single_reference_statistic_is_antisymmetric(data):
    candidate = data.draw(binary)
    d = len(candidate)
    reference = data.draw(st.lists(st.integers(0, 1), min_size=d, max_size=d))
    answers = data.draw(st.lists(st.floats(0, 1), min_size=d, max_size=d))
    forward = single_reference_test(candidate, answers, reference).statistic
    backward = single_reference_test(reference, answers, candidate).statistic
    assert forward == pytest.approx(-backward, abs=1e-9)
    # Each predicate where the two differ adds at most 2 in absolute value.
    assert abs(forward) <= 2 * np.sum(np.array(candidate) != np.array(reference)) + 1e-9


def test_calibrated_threshold_by_hand():
    assert calibrated_threshold(np.arange(1, 20), delta=0.05) == 19.0
    assert calibrated_threshold(np.arange(1, 20)[::-1], delta=0.1) == 18.0
    # Fewer than 1/delta - 1 non-members: no threshold can hold the level.
    assert calibrated_threshold(np.arange(10), delta=0.05) == np.inf


def test_vectorised_statistics_match_the_one_candidate_tests():
    # One block of 3 trials: a sample of 4 (member first), the non-member, 6 other reference
    # people and z last, over 50 predicates, answers noisy enough to need clipping.
    rng = np.random.default_rng(4)
    n, others, d = 4, 6, 50
    bits = rng.integers(0, 2, (3, n + 1 + others + 1, d)).astype(float)
    answers = bits[:, :n].mean(axis=1) + rng.normal(0, 0.3, (3, d))
    table = _block_statistics(bits, answers, n, 0.25, np.arange(3)).set_index("statistic")
    for t in range(3):
        clipped = np.clip(answers[t], 0, 1)
        z, rest = bits[t, -1], bits[t, n + 1 : -1]
        for column, candidate in (("member", bits[t, 0]), ("non_member", bits[t, n])):
            figure1 = single_reference_test(candidate, clipped, z).statistic
            assert table.loc["figure 1", column].iloc[t] == pytest.approx(figure1)
            figure2 = reference_sample_test(candidate, clipped, [z, *rest]).statistic
            assert table.loc["figure 2", column].iloc[t] == pytest.approx(figure2)
            # Each reference person k scored against the others and the candidate.
            null = [
                reference_sample_test(
                    rest[k], clipped, [z, *np.delete(rest, k, axis=0), candidate]
                ).statistic
                for k in range(others)
            ]
            threshold = table.loc["figure 2", f"{column}_calibrated"].iloc[t]
            assert threshold == pytest.approx(calibrated_threshold(null, delta=0.25))
        null = [single_reference_test(person, clipped, z).statistic for person in rest]
        threshold = table.loc["figure 1", "member_calibrated"].iloc[t]
        assert threshold == pytest.approx(calibrated_threshold(null, delta=0.25))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(-5, 5), min_size=2, max_size=60),
    st.floats(0.01, 0.99),
)
def test_calibrated_threshold_holds_its_level_for_any_values(values, delta):
    # Conformal validity, deterministically: among N + 1 values, at most delta (N + 1) of them
    # exceed the threshold computed from the other N. If the non-member is equally likely to
    # be any of them, it is flagged with probability at most delta (ties included).
    values = np.array(values, dtype=float)
    exceed = sum(
        value > calibrated_threshold(np.delete(values, i), delta=delta)
        for i, value in enumerate(values)
    )
    assert exceed <= delta * values.size


@pytest.mark.parametrize(("sample_size", "predicates", "epsilon"), [(5, 400, 1.0), (30, 4000, 0.1)])
def test_dp_query_privacy_map(sample_size, predicates, epsilon):
    query = dp_mean_query(sample_size, predicates, epsilon)
    # The vector of means moves by at most d/n in L1 when one person is replaced.
    assert query.sensitivity == pytest.approx(predicates / sample_size, rel=1e-9)
    assert query.measurement.map(query.sensitivity) <= epsilon
    assert query.scale == pytest.approx(predicates / (sample_size * epsilon), rel=1e-6)
    # The scale is the smallest certified: half of it would spend twice the budget.
    space = query.measurement.input_domain, query.measurement.input_metric
    halved = space >> dp.m.then_laplace(query.scale / 2, k=-40)
    assert halved.map(query.sensitivity) > 1.9 * epsilon


def test_dp_release_adds_laplace_noise_at_the_scale():
    query = dp_mean_query(5, 4000, 1.0)
    rows = random_predicates(load_pums().iloc[:5], 4000, rng=3)
    noise = query.release(rows) - exact_means(rows)
    # Laplace(b) has mean 0 and variance 2 b^2; the sample variance's relative SE is
    # sqrt(5 / d) for a kurtosis of 6.
    assert abs(noise.mean()) < 4 * math.sqrt(2) * query.scale / math.sqrt(noise.size)
    assert abs(noise.var() / (2 * query.scale**2) - 1) < 4 * math.sqrt(5 / noise.size)


def test_member_and_non_member_statistics_match_their_expectations():
    # With fair, independent bits, the Figure-1 statistic of a non-member has mean 0 and
    # variance 2d/n, and a member's has mean d/n (its own bit moves each answer by 1/n).
    d, n, trials = 400, 5, 2000
    simulation = simulate_tracing([d], sample_size=n, reference_size=1, trials=trials, rng=11)
    figure1 = simulation.statistics
    se = math.sqrt(2 * d / n / trials)
    assert abs(figure1.non_member.mean()) < 4 * se
    assert abs(figure1.member.mean() - d / n) < 4 * se
    assert figure1.non_member.var() == pytest.approx(2 * d / n, rel=4 * math.sqrt(2 / trials))


def test_false_positive_rates_on_exact_answers_are_at_most_delta():
    delta, trials = 0.1, 2000
    simulation = simulate_tracing(
        [50, 400], sample_size=10, reference_size=20, trials=trials, delta=delta, rng=5
    )
    non_members = simulation.rates[simulation.rates.candidate == "non-member"]
    assert len(non_members) == 8  # two statistics, two thresholds, two predicate counts
    # At most delta, up to the binomial's 99.9% quantile.
    assert (non_members.flagged <= stats.binom.ppf(0.999, trials, delta)).all()
    # The calibrated tests hold their level almost exactly: 2 of 20 ranks, 0.1.
    calibrated = non_members[non_members.threshold == "calibrated"]
    assert (calibrated.flagged >= stats.binom.ppf(0.001, trials, delta * 0.9)).all()
    # ... and they have power: at 400 predicates they flag most members of a sample of 10.
    members = simulation.rates[simulation.rates.candidate == "member"]
    assert (
        members[(members.predicates == 400) & (members.threshold == "calibrated")].rate > 0.9
    ).all()


def test_noise_breaks_the_fixed_threshold_but_not_the_honest_tests():
    trials = 200
    simulation = simulate_tracing(
        [200], sample_size=5, reference_size=20, trials=trials, epsilon=1.0, rng=9
    )
    rates = simulation.rates.set_index(["statistic", "threshold", "candidate"]).flagged
    # OpenDP's noise is not seeded, so the bounds are wide (each fails once in 10,000 runs).
    # On unclipped noisy answers the statistic is symmetric about 0 with an SD far above the
    # threshold: about half of the non-members are flagged.
    assert (
        stats.binomtest(rates["figure 1, unclipped", "fixed", "non-member"], trials).pvalue > 1e-4
    )
    non_members = rates.xs("non-member", level="candidate").drop(("figure 1, unclipped", "fixed"))
    assert (non_members <= stats.binom.ppf(0.9999, trials, 0.05)).all()


def test_roc_and_auc():
    simulation = simulate_tracing([1000], sample_size=5, reference_size=20, trials=200, rng=2)
    aucs = simulation.auc().set_index("statistic")
    # At 1000 predicates and 5 people the member stands out: the AUC is near 1.
    assert aucs.loc["figure 1", "auc"] > 0.95
    roc = simulation.roc(1000, "figure 1")
    assert roc.fpr.is_monotonic_increasing and roc.tpr.is_monotonic_increasing
    assert roc.fpr.iloc[-1] == roc.tpr.iloc[-1] == 1.0
    # The trapezoid area under the ROC curve is the AUC (ties counted half).
    area = np.sum(np.diff(roc.fpr) * (roc.tpr.to_numpy()[1:] + roc.tpr.to_numpy()[:-1]) / 2)
    assert area == pytest.approx(aucs.loc["figure 1", "auc"])
    with pytest.raises(ValueError, match="statistic"):
        simulation.roc(1000, "figure 3")


def test_same_seed_same_tables():
    settings_ = dict(sample_size=5, reference_size=20, trials=50)
    first = simulate_tracing([64, 300], **settings_, rng=42)
    second = simulate_tracing([64, 300], **settings_, rng=np.random.default_rng(42))
    pd.testing.assert_frame_equal(first.rates, second.rates)
    pd.testing.assert_frame_equal(first.statistics, second.statistics)
    other = simulate_tracing([64, 300], **settings_, rng=43)
    assert not first.statistics.equals(other.statistics)


def test_bad_input():
    with pytest.raises(ValueError, match="candidate"):
        single_reference_test([1, 2, 0, 1], ANSWERS, REFERENCE)
    with pytest.raises(ValueError, match="answers"):
        single_reference_test(CANDIDATE, [0.8, 0.2, 0.6, 1.2], REFERENCE)
    with pytest.raises(ValueError, match="answers"):
        reference_sample_test(CANDIDATE, [-0.1, 0.2, 0.6, 1.0], [REFERENCE, *OTHERS])
    with pytest.raises(ValueError, match="answers"):
        single_reference_test(CANDIDATE, ANSWERS[:3], REFERENCE)
    with pytest.raises(ValueError, match="reference"):
        single_reference_test(CANDIDATE, ANSWERS, REFERENCE[:3])
    with pytest.raises(ValueError, match="references"):
        reference_sample_test(CANDIDATE, ANSWERS, [REFERENCE])
    for delta in (0, 1, 1.5):
        with pytest.raises(ValueError, match="delta"):
            single_reference_test(CANDIDATE, ANSWERS, REFERENCE, delta=delta)
    with pytest.raises(TypeError, match="delta"):
        calibrated_threshold([1.0, 2.0], delta="0.05")
    with pytest.raises(ValueError, match="population"):
        simulate_tracing([10], sample_size=60, reference_size=40, trials=10)
    with pytest.raises(ValueError, match="predicates"):
        simulate_tracing([0], sample_size=5, reference_size=1, trials=10)
    with pytest.raises(ValueError, match="epsilon"):
        dp_mean_query(5, 10, 0.0)
    with pytest.raises(ValueError, match="rows"):
        dp_mean_query(5, 10, 1.0).release(np.zeros((4, 10)))
    with pytest.raises(TypeError, match="rng"):
        random_predicates(load_pums(), 10, rng="seed")
