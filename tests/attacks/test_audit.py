"""The likelihood-ratio audit: on a simulated study whose answer is known, and on the stored
shadow releases of the real generator."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from synpmx_lite.attacks.audit import (
    AUDIT_ATTACKS,
    AUDIT_RATES,
    Audit,
    _group_rates,
    audit_shadows,
    epsilon_lower_bound,
    exposed_rates,
    fault_kinds,
    paired_change,
    pk_width,
    rate_at,
    release_epsilon_bound,
    resampled_epsilon,
    residual_faults_only,
    trusted_replicates,
)

PK_WIDTH = 3


def simulated_shadows(seed, *, patients=24, members=18, replicates=100, study_seed=None):
    """Shadow releases of a study where membership is known to leak.

    Each patient has fixed effects ``eta``; a release is the mean of its members' effects plus
    noise. A candidate's own score is their effects against the release, plus an offset of
    their own (as a patient who always attends every visit scores high in or out): the linear
    score cannot tell the offset from membership, a per-patient calibration can. With
    ``study_seed`` the patients are drawn from it and only the cohorts and noise from ``seed``
    (reruns of one study).
    """
    rng = np.random.default_rng(seed if study_seed is None else study_seed)
    eta = rng.standard_t(4, size=(patients, PK_WIDTH))
    offset = 3 * rng.standard_normal(patients)
    rng = rng if study_seed is None else np.random.default_rng(seed)
    member = np.zeros((replicates, patients), dtype=bool)
    for row in member:
        row[rng.choice(patients, members, replace=False)] = True
    release = member @ eta / members + 0.05 * rng.standard_normal((replicates, PK_WIDTH))
    own = np.einsum("pd,rd->rp", eta, release) + offset + 0.3 * rng.standard_normal(member.shape)
    return {
        "member": member,
        "converged": np.ones(replicates, dtype=bool),
        "diagnosed": np.zeros(replicates, dtype=bool),
        "untrusted": np.zeros(replicates, dtype=bool),
        "diagnostics": np.full(replicates, ""),
        "release unrounded": release,
        "own unrounded": np.stack([own, np.zeros_like(own)], axis=-1),
    }


@pytest.fixture(scope="module")
def simulated_audit():
    shadows = simulated_shadows(1)
    return audit_shadows(shadows, "unrounded", pk_width=PK_WIDTH, resamples=40).summary.set_index(
        "attack"
    )


def test_the_release_bound_is_the_largest_resampled_bound_corrected_for_three_attacks():
    audit = audit_shadows(simulated_shadows(2), "unrounded", pk_width=PK_WIDTH, seed=3)
    bound = release_epsilon_bound(audit)
    corrected = {
        name: resampled_epsilon(values, confidence=1 - 0.05 / 3)
        for name, values in audit.resampled.items()
    }
    assert bound["confidence"] == pytest.approx(1 - 0.05 / 3)
    assert bound["epsilon"] == max(corrected.values()) > 0
    assert bound["attack"] == max(corrected, key=corrected.get)
    # Wider tails give a smaller bound than any attack's uncorrected one.
    summary = audit.summary.set_index("attack")
    assert bound["epsilon"] <= summary.loc[bound["attack"], "epsilon_resampled"]


def test_resampled_epsilon_reads_the_held_out_rates_tails():
    tpr = np.linspace(0.5, 0.7, 41)
    fpr = np.linspace(0.01, 0.03, 41)
    resampled = np.column_stack([np.zeros((41, 4)), tpr, fpr])
    expected = np.log(np.percentile(tpr, 2.5) / np.percentile(fpr, 97.5))
    assert resampled_epsilon(resampled) == pytest.approx(expected)
    assert resampled_epsilon(resampled, confidence=0.5) > resampled_epsilon(resampled)
    with pytest.raises(ValueError, match="confidence"):
        resampled_epsilon(resampled, confidence=1.0)


def test_resampled_epsilon_is_below_the_exact_one_where_scores_are_dependent(simulated_audit):
    # Exact intervals count every score as an independent trial; the resamples refit the
    # attack and so carry the dependence, giving wider rates and a smaller bound.
    online = simulated_audit.loc["LiRA online"]
    assert 0 < online["epsilon_resampled"] < online["epsilon"]


def test_lira_beats_the_linear_score_where_the_answer_is_known(simulated_audit):
    online, linear = simulated_audit.loc["LiRA online"], simulated_audit.loc["linear"]
    gap = online["auc"] - linear["auc"]
    assert gap > 4 * np.hypot(online["auc_se"], linear["auc_se"])
    assert online["tpr_1"] > linear["tpr_1_high"]
    assert simulated_audit.loc["LiRA offline", "auc"] > linear["auc"]


# How many SEs from a half each attack's null AUC may lie: 5 % family-wise over the attacks
# (Bonferroni, two-sided), as the book reads them together. "Within one SE" would fail an
# honest null about a third of the time per attack; the reruns below check the SEs are honest.
NULL_Z = stats.norm.ppf(1 - 0.05 / (2 * len(AUDIT_ATTACKS)))


@pytest.mark.parametrize("null_control", [True, False])
def test_null_control_is_a_coin_toss_and_a_leaky_one_is_not(null_control):
    summary = audit_shadows(
        simulated_shadows(2),
        "unrounded",
        pk_width=PK_WIDTH,
        null_control=null_control,
        seed=3,
        resamples=40,
    ).summary.set_index("attack")
    within = np.abs(summary["auc"] - 0.5) < NULL_Z * summary["auc_se"]
    if null_control:
        assert within.all(), summary
    else:  # the same releases left with their cohorts leak, and the check must see it
        assert not within[["LiRA online", "LiRA offline"]].any(), summary


RERUNS = 32


def reruns(first_seed, study_seed, *, null_control):
    """The audit rerun on one simulated study: new cohorts, noise (and shuffle) each time."""
    return pd.concat(
        audit_shadows(
            simulated_shadows(first_seed + seed, replicates=40, study_seed=study_seed),
            "unrounded",
            pk_width=PK_WIDTH,
            null_control=null_control,
            seed=seed,
            resamples=12,
        ).summary
        for seed in range(RERUNS)
    ).groupby("attack")


@pytest.fixture(scope="module")
def null_reruns():
    """The null control rerun: membership says nothing about a release."""
    return reruns(100, 7, null_control=True)


def rerun_limits(level=0.99):
    """Where spread over SE falls for right-sized SEs with this many reruns (chi-squared), with
    a tenth more room for the SEs' own noise (12 resamples each: the mean SE over the reruns
    is good to about 4 %)."""
    low, high = np.sqrt(
        stats.chi2.ppf([(1 - level) / 2, (1 + level) / 2], RERUNS - 1) / (RERUNS - 1)
    )
    return low / 1.1, high * 1.1


def test_standard_errors_match_the_spread_over_reruns(null_reruns):
    # The online attack's scores in one calibration block are fitted on the others, so the
    # releases' first-order terms are dependent: the SE that treats them as independent
    # falls short of the spread, the bootstrap that recalibrates does not.
    low, high = rerun_limits()
    spread = null_reruns["auc"].std()
    ratio = spread / null_reruns["auc_se"].mean()
    assert ((low < ratio) & (ratio < high)).all(), ratio
    independent = spread / null_reruns["auc_se_independent"].mean()
    assert independent["LiRA online"] > high, independent


@pytest.fixture(scope="module")
def signal_reruns():
    """The audit rerun on one simulated study with membership leaking."""
    return reruns(200, 8, null_control=False)


def test_standard_errors_match_the_spread_over_reruns_with_signal(signal_reruns):
    # With real signal the AUC's variance has a members' and a non-members' share that the
    # null control does not exercise (the linear score cannot see past the offsets).
    assert (signal_reruns["auc"].mean()[["LiRA online", "LiRA offline"]] > 0.6).all()
    low, high = rerun_limits()
    ratio = signal_reruns["auc"].std() / signal_reruns["auc_se"].mean()
    assert ((low < ratio) & (ratio < high)).all(), ratio


def test_null_control_holds_within_two_standard_errors_over_reruns(null_reruns):
    # Within two (honest) SEs in about 95 % of reruns; a binomial allowance for 32 of them.
    inside = null_reruns.apply(lambda g: (np.abs(g["auc"] - 0.5) < 2 * g["auc_se"]).mean())
    assert (inside >= stats.binom.ppf(0.005, RERUNS, 0.95) / RERUNS).all(), inside


def test_paired_change_needs_the_same_resamples():
    shadows = simulated_shadows(5)
    first = audit_shadows(shadows, "unrounded", pk_width=PK_WIDTH, seed=1, resamples=5)
    again = audit_shadows(shadows, "unrounded", pk_width=PK_WIDTH, seed=1, resamples=5)
    change, se = paired_change(first, again, "LiRA online")
    assert change == 0 and se == 0
    other = audit_shadows(shadows, "unrounded", pk_width=PK_WIDTH, seed=2, resamples=5)
    with pytest.raises(ValueError, match="resamples"):
        paired_change(first, other, "LiRA online")


def test_resampled_rate_intervals_hold_the_estimate():
    summary = audit_shadows(
        simulated_shadows(6), "unrounded", pk_width=PK_WIDTH, resamples=40
    ).summary
    for rate in ("10", "1"):
        assert (summary[f"tpr_{rate}_boot_low"] <= summary[f"tpr_{rate}"]).all()
        assert (summary[f"tpr_{rate}"] <= summary[f"tpr_{rate}_boot_high"]).all()


def test_exposed_rates_count_the_groups_own_false_positives():
    # Patients with a large offset score high in and out of a cohort: made the "most
    # influential", their members are flagged often, but so are their non-members.
    arrays = simulated_shadows(9)
    audit = audit_shadows(arrays, "unrounded", pk_width=PK_WIDTH, resamples=2)
    offset = (arrays["own unrounded"][..., 0]).mean(axis=0)
    table = exposed_rates(audit, offset, "linear", share=0.2).set_index(["rate", "group"])
    exposed, everyone = table.loc[(0.1, "most influential")], table.loc[(0.1, "everyone")]
    assert exposed["tpr"] > everyone["tpr"]
    assert exposed["fpr"] > 3 * everyone["fpr"]
    assert everyone["fpr"] <= 0.1
    assert exposed["tpr"] / exposed["fpr"] < everyone["tpr"] / everyone["fpr"]
    # The group's AUC is its members against its own non-members, by brute force.
    group = np.argsort(-offset, kind="stable")[: int(np.ceil(0.2 * offset.size))]
    scores, member = audit.scores["linear"][:, group], audit.member[:, group]
    pairs = scores[member][:, None] - scores[~member][None, :]
    assert exposed["auc"] == pytest.approx((pairs > 0).mean() + (pairs == 0).mean() / 2)
    assert exposed["non_members"] == (~member).sum()


def test_exposed_intervals_resample_patients_not_scores():
    # A patient's scores rise and fall together: the offsets make some patients score high in
    # and out of every cohort, so resampling patients widens what Clopper-Pearson, counting
    # every score as a trial, calls exact.
    arrays = simulated_shadows(9)
    audit = audit_shadows(arrays, "unrounded", pk_width=PK_WIDTH, resamples=2)
    influence = np.arange(arrays["member"].shape[1], dtype=float)
    table = exposed_rates(audit, influence, "linear", share=0.25, seed=1, resamples=400)
    for _, cell in table.iterrows():
        for rate in ("tpr", "fpr", "auc"):
            assert cell[f"{rate}_patients_low"] <= cell[rate] <= cell[f"{rate}_patients_high"]
    everyone = table[table["group"] == "everyone"].iloc[0]
    assert everyone["patients"] == influence.size
    width = everyone["tpr_patients_high"] - everyone["tpr_patients_low"]
    assert width > 3 * (everyone["high"] - everyone["low"])
    # Reproducible by its seed, and another seed draws other patients.
    again = exposed_rates(audit, influence, "linear", share=0.25, seed=1, resamples=400)
    pd.testing.assert_frame_equal(table, again)
    other = exposed_rates(audit, influence, "linear", share=0.25, seed=2, resamples=400)
    assert not np.allclose(table["tpr_patients_low"], other["tpr_patients_low"])


def test_exposed_intervals_collapse_where_every_patient_is_alike():
    # Every patient in every cohort-half alike: a resample of patients changes no rate.
    # Half the patients are in the even releases and the others in the odd ones; a pair of
    # releases shares its scores, so every patient's member and non-member scores are alike.
    member = np.tile([True, False], (40, 3))
    member[1::2] = ~member[1::2]
    scores = np.where(member, 1.0, 0.0) + np.repeat(np.linspace(0, 3, 20), 2)[:, None]
    audit = Audit(
        "unrounded", 40, {"flagged": 0, "degenerate": 0}, pd.DataFrame(),
        {"linear": scores}, member, {}, np.zeros((2, 40), dtype=int),
    )  # fmt: skip
    table = exposed_rates(audit, np.arange(6.0), "linear", share=0.5, resamples=50)
    for rate in ("tpr", "fpr", "auc"):
        np.testing.assert_allclose(table[f"{rate}_patients_low"], table[rate])
        np.testing.assert_allclose(table[f"{rate}_patients_high"], table[rate])


def test_exposed_rates_refuse_influence_of_another_study():
    audit = audit_shadows(simulated_shadows(9), "unrounded", pk_width=PK_WIDTH, resamples=2)
    with pytest.raises(ValueError, match="influence"):
        exposed_rates(audit, np.ones(3), "linear")


def test_fits_flagged_for_the_residual_error_alone_are_told_apart():
    arrays = simulated_shadows(4)
    arrays["converged"][:3] = False
    arrays["diagnosed"][:3] = True
    arrays["diagnostics"] = arrays["diagnostics"].astype("<U200")
    arrays["diagnostics"][0] = "residual proportional sits at a bound of its search range"
    arrays["diagnostics"][1] = (
        "the data do not determine residual proportional: its RSE is 300 % (a 95 % interval "
        "wider than a factor 100 either way); not identified"
    )
    arrays["diagnostics"][2] = (
        "residual proportional sits at a bound of its search range\nthe between-subject SD of "
        "v collapsed to its floor (0.001): the data do not identify it"
    )
    kinds = fault_kinds(arrays)
    assert kinds[:4] == [
        ("residual SD at a bound",),
        ("residual SD not determined",),
        ("residual SD at a bound", "between-subject SD at its floor"),
        (),
    ]
    assert residual_faults_only(arrays)[:4].tolist() == [True, True, False, False]
    _, strict = trusted_replicates(arrays, pk_width=PK_WIDTH)
    keep, lenient = trusted_replicates(arrays, pk_width=PK_WIDTH, keep_residual_faults=True)
    assert strict["flagged"] == 3 and lenient["flagged"] == 1
    assert keep[:2].all() and not keep[2]
    del arrays["diagnostics"]
    assert fault_kinds(arrays)[:4] == [("not recorded",)] * 3 + [()]


def test_a_converged_fit_flagged_for_its_leave_one_out_refits_is_told_so():
    arrays = simulated_shadows(4)
    arrays["diagnostics"] = arrays["diagnostics"].astype("<U200")
    arrays["diagnostics"][:3] = ""
    arrays["untrusted"][:2] = True
    arrays["converged"][1] = False  # flagged by its own search too, with no message kept
    assert fault_kinds(arrays)[:3] == [
        ("leave-one-out refit not converged",),
        ("not converged",),
        (),
    ]


def test_untrusted_and_degenerate_fits_are_counted_and_left_out():
    arrays = simulated_shadows(4)
    arrays["converged"][0] = False
    arrays["diagnosed"][1] = True
    arrays["release unrounded"] = arrays["release unrounded"].copy()
    arrays["release unrounded"][2, 1] -= 3.4  # a typical value a thirtieth of the others'
    keep, excluded = trusted_replicates(arrays, pk_width=PK_WIDTH)
    assert excluded == {"flagged": 2, "degenerate": 1}
    assert not keep[:3].any() and keep[3:].all()
    assert audit_shadows(arrays, "unrounded", pk_width=PK_WIDTH).replicates == len(keep) - 3


def test_epsilon_lower_bound_known_values():
    assert epsilon_lower_bound(50, 1000, 50, 1000) == 0.0
    # Everyone flagged and no one else: the bound is large but finite, set by the counts.
    strong = epsilon_lower_bound(1000, 1000, 0, 1000)
    assert 4 < strong < 8
    assert epsilon_lower_bound(500, 1000, 10, 1000) > epsilon_lower_bound(500, 1000, 20, 1000)


def test_rate_at_flags_at_most_the_rate():
    others = np.arange(1000.0)
    tp, members, fp, total = rate_at(np.array([995.5, 10.0]), others, 0.01)
    assert (tp, members, fp, total) == (1, 2, 10, 1000) or fp <= 10


def test_audit_refuses_an_unknown_level():
    with pytest.raises(ValueError, match="level"):
        audit_shadows(simulated_shadows(1), "3 figures", pk_width=PK_WIDTH)


def test_pk_width_reads_the_study_model():
    assert pk_width("warfarin") == 6


def test_clopper_pearson_agrees_with_scipy_binomtest():
    from scipy import stats

    from synpmx_lite.attacks.audit import AUDIT_CONFIDENCE, _clopper_pearson

    for k, total in [(0, 40), (3, 40), (40, 40), (17, 1600)]:
        interval = stats.binomtest(k, total).proportion_ci(0.95, method="exact")
        assert np.allclose(_clopper_pearson(k, total), (interval.low, interval.high))
    # The stored audits were computed with scipy.stats.beta.ppf: the bounds are its values.
    tail = (1 - AUDIT_CONFIDENCE) / 2
    for k, total in [(1, 40), (3, 40), (39, 40), (17, 1600), (800, 1600), (1, 60_000)]:
        low, high = _clopper_pearson(k, total)
        assert low == stats.beta.ppf(tail, k, total - k + 1)
        assert high == stats.beta.ppf(1 - tail, k + 1, total - k)


def test_fast_rates_agree_with_the_placements_and_rate_at():
    from synpmx_lite.attacks.audit import AUDIT_RATES, _auc_and_rates
    from synpmx_lite.attacks.membership import auc

    rng = np.random.default_rng(0)
    members, others = np.round(rng.normal(0.3, 1, 700), 1), np.round(rng.normal(0, 1, 1500), 1)
    fast = _auc_and_rates(members, others)  # rounded scores: ties on purpose
    assert np.isclose(fast[0], auc(members, others))
    assert fast[1:] == [rate_at(members, others, rate)[0] / members.size for rate in AUDIT_RATES]


def test_release_epsilon_bound_refuses_what_is_not_an_audit():
    with pytest.raises(TypeError, match="audit must be an Audit"):
        release_epsilon_bound({"member": np.zeros(3)})


@pytest.mark.parametrize("seed", range(4))
def test_weighted_group_rates_equal_the_rates_of_rows_duplicated_by_their_counts(seed):
    # A patient resample weights each patient by their count in it; repeating each patient's
    # column that many times must give the same rates and AUC (ties half, own pairs included).
    rng = np.random.default_rng(seed)
    replicates, patients = 30, 9
    member = rng.random((replicates, patients)) < 0.75
    scores = np.round(rng.standard_normal(member.shape) + member, 1)  # ties across patients
    thresholds = list(np.quantile(scores, 1 - np.asarray(AUDIT_RATES)))
    # One resample, so that its interval's ends are that resample's own rates.
    table = _group_rates(scores, member, thresholds, np.random.default_rng(seed), 1)
    counts = np.random.default_rng(seed).multinomial(patients, np.full(patients, 1 / patients))
    copies = np.repeat(np.arange(patients), counts)
    scores, member = scores[:, copies], member[:, copies]
    for threshold, (_, cell) in zip(thresholds, table.iterrows(), strict=True):
        for name, rate in (
            ("tpr", (scores[member] > threshold).mean()),
            ("fpr", (scores[~member] > threshold).mean()),
            ("auc", roc_auc_score(member.ravel(), scores.ravel())),
        ):
            assert cell[f"{name}_patients_low"] == pytest.approx(rate, rel=1e-12)
            assert cell[f"{name}_patients_high"] == pytest.approx(rate, rel=1e-12)
