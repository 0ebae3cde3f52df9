import dataclasses
import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from synpmx_lite.attacks.tracing import (
    STATISTICS,
    OpenDpRecord,
    _block_statistics,
    _mix,
    calibrated_threshold,
    dp_mean_query,
    exact_means,
    half_way_budget,
    load_opendp_record,
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
    # One block of 3 trials at two budgets: a sample of 4 (member first), the non-member, 6
    # other reference people and z last, over 50 predicates, answers noisy enough to need
    # clipping.
    rng = np.random.default_rng(4)
    n, others, d = 4, 6, 50
    bits = rng.integers(0, 2, (3, n + 1 + others + 1, d)).astype(float)
    answers = bits[:, :n].mean(axis=1) + rng.normal(0, 0.3, (2, 3, d))
    found = _block_statistics(bits, answers, n, 0.25, STATISTICS)
    for budget in range(2):
        for t in range(3):
            released = answers[budget, t]
            clipped = np.clip(released, 0, 1)
            z, rest = bits[t, -1], bits[t, n + 1 : -1]
            for column, candidate in enumerate((bits[t, 0], bits[t, n])):
                scores = {name: found[name][budget][0][t, column] for name in STATISTICS}
                assert scores["figure 1"] == pytest.approx(
                    single_reference_test(candidate, clipped, z).statistic
                )
                assert scores["figure 2"] == pytest.approx(
                    reference_sample_test(candidate, clipped, [z, *rest]).statistic
                )
                # The unclipped statistic, by its formula (the tests refuse such answers).
                unclipped = np.dot(2 * (candidate - z), 2 * released - 1)
                assert scores["figure 1, unclipped"] == pytest.approx(unclipped)
                # Each reference person k scored against the others and the candidate.
                null = [
                    reference_sample_test(
                        rest[k], clipped, [z, *np.delete(rest, k, axis=0), candidate]
                    ).statistic
                    for k in range(others)
                ]
                threshold = found["figure 2"][budget][1][t, column]
                assert threshold == pytest.approx(calibrated_threshold(null, delta=0.25))
            null = [single_reference_test(person, clipped, z).statistic for person in rest]
            threshold = found["figure 1"][budget][1][t, 0]
            assert threshold == pytest.approx(calibrated_threshold(null, delta=0.25))
            assert np.isnan(found["figure 1, unclipped"][budget][1][t]).all()


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


# --- The DP query --------------------------------------------------------------------------------

# The query and the number of draws of the tracing chapter's comparison of OpenDP's noise with
# numpy's (book/tracing_attack.md: a sample of 10, 4,000 predicates, epsilon 1).
CHAPTER_QUERY = (10, 4000, 1.0)
KS_DRAWS = 100_000


def on_opendp_grid(values):
    """OpenDP's Laplace noise at granularity 2**-40 lies on that grid; numpy's does not."""
    return np.array_equal(values * 2.0**40, np.round(values * 2.0**40))


@pytest.mark.parametrize(("sample_size", "predicates", "epsilon"), [(5, 400, 1.0), (30, 4000, 0.1)])
def test_dp_query_privacy_map(sample_size, predicates, epsilon):
    query = dp_mean_query(sample_size, predicates, epsilon)
    # The vector of means moves by at most d/n in L1 when one person is replaced.
    assert query.sensitivity == pytest.approx(predicates / sample_size, rel=1e-9)
    assert query.privacy_loss <= epsilon
    assert query.scale == pytest.approx(predicates / (sample_size * epsilon), rel=1e-6)
    # The scale is the smallest certified: half of it would spend twice the budget.
    space = query.measurement.input_domain, query.measurement.input_metric
    halved = space >> dp.m.then_laplace(query.scale / 2, k=-40)
    assert halved.map(query.sensitivity) > 1.9 * epsilon


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 500), st.integers(1, 5000), st.floats(1e-6, 1e4))
def test_the_release_never_spends_more_than_its_budget(sample_size, predicates, epsilon):
    # Found in review: with the scale searched for one mean at epsilon / d, the whole vector's
    # privacy map exceeded epsilon by one rounding step in about one case in seven.
    query = dp_mean_query(sample_size, predicates, epsilon)
    assert query.privacy_loss <= epsilon
    assert query.scale == pytest.approx(predicates / (sample_size * epsilon), rel=1e-9)
    one_mean = dp.t.make_mean(
        dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0), nan=False), size=sample_size),
        dp.symmetric_distance(),
    ).map(2)
    assert Fraction(query.sensitivity) >= predicates * Fraction(one_mean)
    # The smallest such scale: one a billionth smaller spends more than epsilon.
    space = query.measurement.input_domain, query.measurement.input_metric
    smaller = space >> dp.m.then_laplace(query.scale * (1 - 1e-9), k=-40)
    assert smaller.map(query.sensitivity) > epsilon


def test_dp_mean_query_refuses_a_budget_too_small_to_certify():
    # Found in review: epsilon 1e-300 failed inside OpenDP ("scale must not be negative").
    with pytest.raises(ValueError, match=r"epsilon = 1e-300 .* at least"):
        dp_mean_query(5, 4000, 1e-300)
    with pytest.raises(ValueError, match="epsilon"):
        simulate_tracing([4000], sample_size=5, reference_size=1, trials=2, epsilon=1e-300)
    # Just above the limit OpenDP still certifies the (enormous) scale.
    query = dp_mean_query(5, 4000, 2e-12)
    assert query.privacy_loss <= 2e-12
    assert query.scale == pytest.approx(4000 / (5 * 2e-12), rel=1e-9)


def test_dp_release_adds_laplace_noise_at_the_scale():
    query = dp_mean_query(5, 4000, 1.0)
    rows = random_predicates(load_pums().iloc[:5], 4000, rng=3)
    release = query.release(rows)
    noise = release - exact_means(rows)
    assert on_opendp_grid(release)
    # Laplace(b) has mean 0 and variance 2 b^2; the sample variance's relative SE is
    # sqrt(5 / d) for a kurtosis of 6. (OpenDP's noise is not seeded: each bound fails about
    # once in 15,000 runs.)
    assert abs(noise.mean()) < 4 * math.sqrt(2) * query.scale / math.sqrt(noise.size)
    assert abs(noise.var() / (2 * query.scale**2) - 1) < 4 * math.sqrt(5 / noise.size)


def test_simulated_noise_is_numpy_laplace_at_the_certified_scale():
    query = dp_mean_query(5, 400, 1.0)
    expected = np.random.default_rng(7).laplace(0.0, query.scale, (3, 400))
    np.testing.assert_array_equal(query.simulated_noise((3, 400), rng=7), expected)


def test_opendp_and_numpy_draw_the_same_laplace_noise():
    query = dp_mean_query(*CHAPTER_QUERY)
    opendp_draws = query.opendp_noise(KS_DRAWS)
    numpy_draws = query.simulated_noise(KS_DRAWS, rng=13)
    assert on_opendp_grid(opendp_draws)
    # Two-sample Kolmogorov-Smirnov: OpenDP's draws are fresh on every run, so this fails once
    # in a million runs if the two distributions are the same ...
    assert stats.ks_2samp(opendp_draws, numpy_draws).pvalue > 1e-6
    # ... and it can fail: at this size it tells numpy's noise from noise 10 % wider.
    wider = 1.1 * query.simulated_noise(KS_DRAWS, rng=14)
    assert stats.ks_2samp(numpy_draws, wider).pvalue < 1e-6


def test_the_shipped_record_holds_opendp_output_for_the_chapter():
    record = load_opendp_record()
    assert record.outputs
    # Every kept value came from OpenDP's sampler at granularity 2**-40.
    assert all(on_opendp_grid(values) for values in record.outputs.values())
    query = dp_mean_query(*CHAPTER_QUERY)
    kept = record.noise(query, KS_DRAWS)
    assert record.fresh == 0, (
        "the record holds no draws at the scale OpenDP certifies for the chapter's query: "
        "re-record them (see OpenDpRecord)"
    )
    # The chapter's comparison, on the kept draws and a seeded numpy draw: no longer random.
    assert stats.ks_2samp(kept, query.simulated_noise(KS_DRAWS, rng=13)).pvalue > 1e-6


def test_record_keeps_each_output_for_its_query_and_input(tmp_path):
    query = dp_mean_query(4, 30, 2.0)
    rows = random_predicates(load_pums().iloc[:4], 30, rng=1)
    record = OpenDpRecord()
    first = record.release(query, rows)
    assert record.fresh == 1 and on_opendp_grid(first)
    first[0] = 99.0  # the caller gets a copy
    np.testing.assert_array_equal(record.release(query, rows)[1:], first[1:])
    assert record.release(query, rows)[0] != 99.0 and record.fresh == 1
    # Another input, another budget or the noise alone is another output.
    record.release(query, 1 - rows)
    record.release(dp_mean_query(4, 30, 1.0), rows)
    noise = record.noise(query, 50)
    assert record.fresh == 4 and noise.shape == (50,)
    path = tmp_path / "record.npz"
    record.save(path)
    loaded = OpenDpRecord.load(path)
    np.testing.assert_array_equal(loaded.release(query, rows), record.release(query, rows))
    np.testing.assert_array_equal(loaded.noise(query, 50), noise)
    assert loaded.fresh == 0
    with pytest.raises(ValueError, match="size"):
        record.noise(query, 0)
    with pytest.raises(ValueError, match="rows"):
        record.release(query, np.full((4, 30), 2))


def test_record_never_replays_an_output_for_another_query_or_input():
    # Found in review: the key held the means but not the sample size, so rows stacked twice
    # (same means, 8 rows for a query of 4) replayed the kept release where the query refuses
    # them; and a query built by hand was trusted.
    query = dp_mean_query(4, 30, 2.0)
    rows = random_predicates(load_pums().iloc[:4], 30, rng=1)
    record = OpenDpRecord()
    kept = record.release(query, rows)
    doubled = np.vstack([rows, rows])
    with pytest.raises(ValueError, match=r"rows must have shape \(4, 30\)"):
        record.release(query, doubled)
    # Twice the people at half the budget: the same scale up to OpenDP's rounding and the
    # same means, but another query, so another release.
    twice = dp_mean_query(8, 30, 1.0)
    assert twice.scale == pytest.approx(query.scale, rel=1e-9)
    record.release(twice, doubled)
    assert record.fresh == 2
    # A query whose settings do not match its scale is refused, kept output or not.
    for tampered in (
        dataclasses.replace(query, epsilon=20.0),
        dataclasses.replace(query, scale=query.scale / 10),
    ):
        with pytest.raises(ValueError, match="dp_mean_query"):
            record.release(tampered, rows)
        with pytest.raises(ValueError, match="dp_mean_query"):
            record.noise(tampered, 10)
    with pytest.raises(TypeError, match="DpMeanQuery"):
        record.noise((4, 30, 2.0), 10)
    # The noise of another query with the same number of draws is drawn afresh too.
    record.noise(query, 10)
    record.noise(twice, 10)
    assert record.fresh == 4
    np.testing.assert_array_equal(record.release(query, rows), kept)


def test_record_says_which_opendp_made_its_outputs(tmp_path):
    path = tmp_path / "record.npz"
    OpenDpRecord({"noise-x": np.zeros(3)}, opendp_version="0.1.0").save(path)
    loaded = OpenDpRecord.load(path)
    assert loaded.opendp_version == "0.1.0"
    assert load_opendp_record().opendp_version.startswith("0.16")
    # Fresh outputs of the installed OpenDP are not saved under another version's name.
    loaded.noise(dp_mean_query(4, 30, 2.0), 5)
    with pytest.raises(ValueError, match=r"mixes outputs of OpenDP 0\.1\.0"):
        loaded.save(path)


# --- The simulation ----------------------------------------------------------------------------


def test_member_and_non_member_statistics_match_their_expectations():
    # With fair, independent bits, the Figure-1 statistic of a non-member has mean 0 and
    # variance 2d/n, and a member's has mean d/n (its own bit moves each answer by 1/n).
    d, n, trials = 400, 5, 2000
    simulation = simulate_tracing([d], sample_size=n, reference_size=1, trials=trials, rng=11)
    figure1 = simulation.statistics
    assert set(figure1.statistic) == {"figure 1"} and set(figure1.epsilon) == {math.inf}
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
    trials = 1000
    simulation = simulate_tracing(
        [200], sample_size=5, reference_size=20, trials=trials, epsilon=1.0, rng=9
    )
    rates = simulation.rates.set_index(["statistic", "threshold", "candidate"]).rate
    # Seeded, so exact. On unclipped noisy answers the statistic is symmetric about 0 with an
    # SD (about 4 b sqrt(d), 2,300) far above the threshold (69): about half of the
    # non-members, and of the members, are flagged.
    for candidate in ("member", "non-member"):
        assert 0.4 < rates["figure 1, unclipped", "fixed", candidate] < 0.6
    # Clipped, every test keeps its level, up to the binomial's 99.9% quantile ...
    non_members = simulation.rates[
        (simulation.rates.candidate == "non-member")
        & (simulation.rates.statistic != "figure 1, unclipped")
    ]
    assert len(non_members) == 4
    assert (non_members.flagged <= stats.binom.ppf(0.999, trials, 0.05)).all()
    # ... and has no power left at this budget: its AUC is one half within 4 standard errors.
    aucs = simulation.auc().set_index("statistic")
    assert abs(aucs.loc["figure 1", "auc"] - 0.5) < 4 * aucs.loc["figure 1", "auc_se"]


def test_noise_is_shared_across_budgets_at_the_certified_scales():
    d, n = 300, 5
    simulation = simulate_tracing(
        [d],
        sample_size=n,
        reference_size=20,
        trials=400,
        epsilon=[0.5, 2.0, math.inf],
        statistics=["figure 1", "figure 1, unclipped"],
        rng=21,
    )
    table = simulation.statistics.set_index(["epsilon", "statistic", "trial"])
    exact = table.loc[math.inf, "figure 1"]
    assert (math.inf, "figure 1, unclipped") not in table.index.droplevel("trial")
    # The unclipped statistic is 2 <x - z, 2 q - 1> + 4 b <x - z, L>: the same standard
    # Laplace draw L at both budgets, times each budget's certified scale b.
    for column in ("member", "non_member"):
        noise = {
            e: (table.loc[e, "figure 1, unclipped"][column] - exact[column])
            / (4 * dp_mean_query(n, d, e).scale)
            for e in (0.5, 2.0)
        }
        np.testing.assert_allclose(noise[0.5], noise[2.0], atol=1e-6)
        # x and z differ on half of the predicates, and Var L = 2: Var <x - z, L> = d.
        assert noise[0.5].var() == pytest.approx(d, rel=4 * math.sqrt(2 / noise[0.5].size))


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
    noisy = simulate_tracing(
        [64], sample_size=5, reference_size=2, trials=20, epsilon=[1, 10], rng=2
    )
    with pytest.raises(ValueError, match="epsilon"):
        noisy.roc(64)
    assert len(noisy.roc(64, epsilon=10)) >= 2


def test_same_seed_same_tables():
    settings_ = dict(sample_size=5, reference_size=20, trials=50, epsilon=[1.0, math.inf])
    first = simulate_tracing([64, 300], **settings_, rng=42)
    second = simulate_tracing([64, 300], **settings_, rng=np.random.default_rng(42))
    pd.testing.assert_frame_equal(first.rates, second.rates)
    pd.testing.assert_frame_equal(first.statistics, second.statistics)
    other = simulate_tracing([64, 300], **settings_, rng=43)
    assert not first.statistics.equals(other.statistics)


def test_simulate_tracing_refuses_runs_that_cannot_finish():
    # Found in review: sizes that would run for hours or fill the memory were accepted.
    with pytest.raises(ValueError, match=r"would compute .* terms \(about .* hours"):
        simulate_tracing([4000], sample_size=5, reference_size=50, trials=10**7)
    with pytest.raises(ValueError, match=r"keep .* rows of statistics"):
        simulate_tracing([1], sample_size=1, reference_size=1, trials=2 * 10**7)


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
    settings_ = dict(sample_size=5, reference_size=1, trials=10)
    with pytest.raises(ValueError, match="population"):
        simulate_tracing([10], sample_size=60, reference_size=40, trials=10)
    with pytest.raises(ValueError, match="predicates"):
        simulate_tracing([0], **settings_)
    with pytest.raises(ValueError, match="predicates"):
        simulate_tracing([64, 64], **settings_)
    with pytest.raises(ValueError, match="epsilon"):
        simulate_tracing([64], **settings_, epsilon=[1.0, 1])
    for epsilon in ([1.0, -1.0], [], 0.0, math.nan):
        with pytest.raises(ValueError, match="epsilon"):
            simulate_tracing([10], **settings_, epsilon=epsilon)
    with pytest.raises(TypeError, match="epsilon"):
        simulate_tracing([10], **settings_, epsilon="1")
    with pytest.raises(ValueError, match="statistics"):
        simulate_tracing([10], **settings_, statistics=["figure 3"])
    # Found in review: a statistic that applies to none of the budgets was dropped silently,
    # and with nothing left the run failed inside pandas.
    with pytest.raises(ValueError, match=r"'figure 2'.* reference_size of at least 2"):
        simulate_tracing([10], **settings_, statistics="figure 2")
    with pytest.raises(ValueError, match=r"'figure 1, unclipped'.* finite epsilon"):
        simulate_tracing([10], **settings_, statistics=["figure 1", "figure 1, unclipped"])
    with pytest.raises(ValueError, match="shape"):
        dp_mean_query(5, 10, 1.0).simulated_noise((3, -1), rng=1)
    with pytest.raises(TypeError, match="shape"):
        dp_mean_query(5, 10, 1.0).simulated_noise("10", rng=1)
    with pytest.raises(ValueError, match="epsilon"):
        dp_mean_query(5, 10, 0.0)
    with pytest.raises(ValueError, match="rows"):
        dp_mean_query(5, 10, 1.0).release(np.zeros((4, 10)))
    with pytest.raises(TypeError, match="rng"):
        random_predicates(load_pums(), 10, rng="seed")


def test_half_way_budget_interpolates_on_log_epsilon():
    rates = pd.Series([0.1, 0.3, 0.7, 0.9, 1.0], index=[0.1, 1.0, 10.0, 100.0, math.inf])
    assert half_way_budget(rates) == pytest.approx(10**0.5)
    assert math.isnan(half_way_budget(rates * 0.4))
    assert half_way_budget(rates + 0.45) == -math.inf
