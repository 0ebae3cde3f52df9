"""Membership inference against the real generator: the attack, its SEs, its inputs."""


import numpy as np
import pandas as pd
import pytest

from synpmx_lite import (
    attendance_attack,
    auc,
    auc_standard_error,
    empirical_bayes_estimates,
    equivalent_patients,
    fit_population,
    generator_membership_attack,
    load_dataset,
    model_fingerprint,
    prepare_study,
    round_significant,
    simplified_prediction,
    true_positive_rate_at,
)
from synpmx_lite.attacks import membership_generator
from synpmx_lite.attacks.membership import ATTENDANCE_RANGE
from synpmx_lite.attacks.membership_generator import (
    ATTACK_REFERENCES,
    ATTACK_RELEASES,
    ATTACK_SCORES,
    _mean_standard_error,
    _patient_facts,
    _replicate_resamples,
    _replicate_terms,
    _true_positive_rates,
)

REPLICATES = 4


@pytest.fixture(scope="module")
def attack_and_runs():
    """The attack on warfarin, and the generator's runs it scored (its fits and releases of
    the whole study and of each shadow cohort), kept for a test that scores them again."""
    runs = []
    run_generator = membership_generator._generator_runs

    def kept(*arguments):
        runs.append(run_generator(*arguments))
        return runs[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(membership_generator, "_generator_runs", kept)
        attack = generator_membership_attack("warfarin", replicates=REPLICATES, seed=3)
    return attack, runs[0]


@pytest.fixture(scope="module")
def attack(attack_and_runs):
    return attack_and_runs[0]


@pytest.fixture(scope="module")
def theophylline():
    study = prepare_study(*load_dataset("theo_sd"))
    return study, fit_population(study)


# --- Empirical Bayes estimates under given estimates -------------------------------------------


def test_random_effects_at_a_fits_estimates_are_its_own(theophylline):
    study, fit = theophylline
    tables = [fit.typical.to_frame().T, fit.omega.to_frame().T, fit.residual.to_frame().T]
    eta, converged = empirical_bayes_estimates(study, *[pd.concat([t, t]) for t in tables])
    assert eta.shape == (2, study.n_patients, 3)
    assert converged.all()
    np.testing.assert_allclose(eta[0], fit.eta.to_numpy(), atol=1e-6)
    np.testing.assert_array_equal(eta[0], eta[1])


def test_random_effects_follow_the_typical_value(theophylline):
    # Raising the typical clearance by a factor e lowers every patient's clearance effect by
    # about 1 (exactly 1 without the prior's pull toward 0).
    study, fit = theophylline
    raised = fit.typical.copy()
    raised["cl"] *= np.e
    eta, _ = empirical_bayes_estimates(
        study, raised.to_frame().T, fit.omega.to_frame().T, fit.residual.to_frame().T
    )
    change = eta[0, :, 0] - fit.eta["cl"].to_numpy()
    assert np.all((change < -0.5) & (change > -1.0))


def test_random_effects_refuse_bad_tables(theophylline):
    study, fit = theophylline
    typical, omega, residual = (s.to_frame().T for s in (fit.typical, fit.omega, fit.residual))
    with pytest.raises(TypeError, match="study"):
        empirical_bayes_estimates("theo_sd", typical, omega, residual)
    with pytest.raises(TypeError, match="typical"):
        empirical_bayes_estimates(study, fit.typical, omega, residual)
    with pytest.raises(ValueError, match="omega lacks"):
        empirical_bayes_estimates(study, typical, omega.drop(columns="ka"), residual)
    with pytest.raises(ValueError, match="residual must hold positive"):
        empirical_bayes_estimates(study, typical, omega, residual * 0)
    with pytest.raises(ValueError, match="same number of rows"):
        empirical_bayes_estimates(study, pd.concat([typical, typical]), omega, residual)
    with pytest.raises(ValueError, match="error"):
        empirical_bayes_estimates(study, typical, omega, residual, error="exponential")


# --- The pooled AUC with replicates as the unit -------------------------------------------------


def test_one_member_and_one_non_member_per_replicate_is_the_paired_se():
    rng = np.random.default_rng(0)
    members, others = rng.normal(0.5, 1, (30, 1)), rng.normal(0, 1, (30, 1))
    value, terms = _replicate_terms(members, others)
    assert value == pytest.approx(auc(members.ravel(), others.ravel()))
    assert _mean_standard_error(terms, neighbours=False) == pytest.approx(
        auc_standard_error(members.ravel(), others.ravel(), paired=True)
    )


def test_replicate_terms_average_to_twice_the_auc():
    rng = np.random.default_rng(1)
    members, others = rng.normal(0.3, 1, (12, 5)), rng.normal(0, 1, (12, 2))
    value, terms = _replicate_terms(members, others)
    assert terms.mean() == pytest.approx(2 * value)


def test_neighbouring_replicates_that_move_together_widen_the_se():
    terms = np.repeat(np.random.default_rng(2).normal(size=20), 2)  # pairs of equal terms
    assert _mean_standard_error(terms, neighbours=True) > _mean_standard_error(
        terms, neighbours=False
    )
    # A negative lag-one autocovariance is not allowed to narrow it.
    alternating = np.tile([1.0, -1.0], 10)
    assert _mean_standard_error(alternating, True) == _mean_standard_error(alternating, False)


def test_neighbour_se_is_unbiased_for_one_dependent_terms():
    # Terms that share a draw with their cyclic neighbour (as replicates sharing a fit do):
    # x_r = e_r + e_(r+1), so the mean of R of them has variance 4 / R exactly. The plain
    # lag-one estimate divided by R - 1 falls short by (R - 3) / (R - 1); ours must not.
    draws, size = 40000, 10
    e = np.random.default_rng(8).standard_normal((draws, size))
    terms = e + np.roll(e, -1, axis=1)
    variance = _mean_standard_error(terms, neighbours=True) ** 2
    error = variance.std() / np.sqrt(draws)
    assert abs(variance.mean() - 4 / size) < 4 * error
    independent = _mean_standard_error(terms, neighbours=False) ** 2
    assert independent.mean() < 0.6 * 4 / size  # ignoring the sharing understates it


def test_bootstrap_draws_neighbouring_replicates_together():
    rng = np.random.default_rng(9)
    for replicates in (10, 11):
        pairs = _replicate_resamples(rng, replicates, neighbours=True)
        assert pairs.shape[1] == replicates
        follows = (pairs[:, 1::2] - pairs[:, 0:-1:2]) % replicates
        assert (follows == 1).all()
        single = _replicate_resamples(rng, replicates, neighbours=False)
        assert ((single[:, 1::2] - single[:, 0:-1:2]) % replicates != 1).any()


def test_true_positive_rates_agree_with_the_roc_curve():
    rng = np.random.default_rng(4)
    members, others = rng.normal(1, 1, 300), rng.normal(0, 1, 500)
    for rate in (0.01, 0.05, 0.2):
        assert _true_positive_rates(members, others, rate) == pytest.approx(
            true_positive_rate_at(members, others, rate)
        )


# --- The candidate's record --------------------------------------------------------------------


def test_the_facts_reproduce_the_whole_studys_released_shares(warfarin_fit):
    study = prepare_study(*load_dataset("warfarin"))
    facts = _patient_facts(study, min_patients=3)
    fingerprint = model_fingerprint(warfarin_fit)
    shares = facts.mean(axis=0)
    for endpoint, released in fingerprint.endpoints.items():
        assert round_significant(shares["attendance", endpoint], 2) == released["attendance"]
    for level, frequency in fingerprint.categories["sex"]:
        assert round_significant(shares["category", ("sex", level)], 2) == frequency
    levels = facts["category"]
    np.testing.assert_array_equal(levels.sum(axis=1), 1.0)  # one level per patient


# --- The attack ---------------------------------------------------------------------------------


def test_attack_scores_every_patient_of_every_replicate(attack):
    assert (attack.patients, attack.members) == (32, 24)
    frame = attack.scores
    combinations = len(ATTACK_RELEASES) * len(ATTACK_REFERENCES) * len(ATTACK_SCORES)
    assert len(frame) == combinations * REPLICATES * attack.patients
    per_replicate = frame.groupby(["release", "reference", "score", "replicate"])["member"].sum()
    assert (per_replicate == attack.members).all()
    assert frame.groupby("replicate")["patient"].nunique().eq(attack.patients).all()
    assert np.isfinite(frame["value"]).all()
    assert len(attack.summary) == combinations
    assert attack.summary[["auc", "tpr_1", "tpr_5"]].stack().between(0, 1).all()
    assert (attack.summary["auc_se"] > 0).all()
    assert attack.shares == 3 and attack.random_effects == 3
    assert attack.modes_unfound == 0  # every candidate's random effects were found


def test_attack_is_reproducible_from_its_seed(attack):
    again = generator_membership_attack("warfarin", replicates=REPLICATES, seed=3)
    pd.testing.assert_frame_equal(attack.summary, again.summary)
    pd.testing.assert_frame_equal(attack.scores, again.scores)


def test_released_population_scores_differ_from_unrounded_only_by_the_rounding(
    attack_and_runs, monkeypatch
):
    # The same runs of the generator scored with 12 figures: the runs (its fits, made before
    # any rounding) are the attack's, and are not made again.
    attack, runs = attack_and_runs
    monkeypatch.setattr(membership_generator, "_generator_runs", lambda *arguments: runs)
    fine = generator_membership_attack("warfarin", replicates=REPLICATES, seed=3, rounding=12)
    for reference in ATTACK_REFERENCES:
        released = fine.piles("released", reference, "population")
        unrounded = fine.piles("unrounded", reference, "population")
        for a, b in zip(released, unrounded, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
    # The cohorts drawn and the unrounded scores do not depend on the rounding.
    np.testing.assert_array_equal(
        fine.piles("unrounded", "whole study", "population")[0],
        attack.piles("unrounded", "whole study", "population")[0],
    )


def test_summary_row_is_the_auc_of_its_piles(attack):
    row = attack.result("released", "whole study", "combined")
    assert row["auc"] == pytest.approx(auc(*attack.piles("released", "whole study", "combined")))
    curve = attack.roc_curve("released", "whole study", "combined")
    assert curve["true_positive_rate"].iloc[-1] == 1.0


def test_equivalent_patients_and_prediction(attack):
    assert equivalent_patients(attack, "whole study") == 6  # 24 * 8 / 32
    assert equivalent_patients(attack, "shadow cohort") == 12
    prediction = simplified_prediction(attack, 6, draws=200)
    assert list(prediction.index) == ["shares", "population"]
    assert prediction[["released", "unrounded"]].stack().between(0, 1).all()


def test_equivalent_size_matches_shadow_cohorts_of_a_finite_population(attack):
    # Shadow cohorts of the attack's size drawn from simulated finite studies, scored by the
    # attendance score against the whole study's shares: their AUC is the simplified model's
    # at the equivalent size, not at the cohort size.
    rng = np.random.default_rng(5)
    n, m, visits, draws = attack.patients, attack.members, 5, 3000
    rate = rng.uniform(*ATTENDANCE_RANGE, size=(draws, 1, visits))
    facts = (rng.random((draws, n, visits)) < rate).astype(float)
    whole = facts.mean(axis=1, keepdims=True)
    order = rng.random((draws, n)).argsort(axis=1)
    member = np.zeros((draws, n), dtype=bool)
    np.put_along_axis(member, order[:, :m], True, axis=1)
    released = (facts * member[..., None]).sum(axis=1, keepdims=True) / m
    score = ((facts - whole) * (released - whole)).sum(axis=-1)
    studies = np.arange(draws)
    members, others = score[studies, order[:, 0]], score[studies, order[:, -1]]
    finite = auc(members, others)
    finite_se = auc_standard_error(members, others, paired=True)
    size = equivalent_patients(attack, "whole study")
    equivalent = attendance_attack(size, visits, 0.0, draws=draws, rng=6)
    naive = attendance_attack(m, visits, 0.0, draws=draws, rng=7)
    error = np.hypot(finite_se, equivalent.without_floor_se)
    assert abs(finite - equivalent.without_floor) < 4 * error
    assert finite - naive.without_floor > 8 * np.hypot(finite_se, naive.without_floor_se)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"name": "nothing"}, ValueError, "name"),
        ({"name": 3}, TypeError, "name"),
        ({"name": "warfarin", "cohort_fraction": 1.0}, ValueError, "cohort_fraction"),
        ({"name": "warfarin", "cohort_fraction": 0.2}, ValueError, "at least 10 members"),
        ({"name": "warfarin", "cohort_fraction": "half"}, TypeError, "cohort_fraction"),
        ({"name": "theo_sd"}, ValueError, "at least 10 members"),
        ({"name": "warfarin", "replicates": 2}, ValueError, "replicates"),
        ({"name": "warfarin", "rounding": 0}, ValueError, "rounding"),
        ({"name": "warfarin", "seed": -1}, ValueError, "seed"),
        ({"name": "warfarin", "seed": True}, TypeError, "seed"),
    ],
)
def test_attack_refuses_bad_input(arguments, error, message):
    name = arguments.pop("name")
    with pytest.raises(error, match=message):
        generator_membership_attack(name, **arguments)


def test_attack_accessors_refuse_unknown_choices(attack):
    with pytest.raises(ValueError, match="release"):
        attack.piles("rounded", "whole study", "shares")
    with pytest.raises(ValueError, match="reference"):
        attack.result("released", "population", "shares")
    with pytest.raises(ValueError, match="reference"):
        equivalent_patients(attack, "other study")
    with pytest.raises(TypeError, match="attack"):
        simplified_prediction("warfarin", 6)


def test_a_study_without_a_pk_fit_is_refused_by_name():
    from synpmx_lite import generator_membership_attack

    with pytest.raises(ValueError, match="wbcSim"):
        generator_membership_attack("wbcSim", replicates=4)
