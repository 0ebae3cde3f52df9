"""The likelihood-ratio audit: on a simulated study whose answer is known, and on the stored
shadow releases of the real generator."""

import numpy as np
import pytest

from synpmx_lite.attacks.audit import (
    audit_shadows,
    epsilon_lower_bound,
    pk_width,
    rate_at,
    release_epsilon_bound,
    trusted_replicates,
)

PK_WIDTH = 3


def simulated_shadows(seed, *, patients=24, members=18, replicates=100):
    """Shadow releases of a study where membership is known to leak.

    Each patient has fixed effects ``eta``; a release is the mean of its members' effects plus
    noise. A candidate's own score is their effects against the release, plus an offset of
    their own (as a patient who always attends every visit scores high in or out): the linear
    score cannot tell the offset from membership, a per-patient calibration can.
    """
    rng = np.random.default_rng(seed)
    eta = rng.standard_t(4, size=(patients, PK_WIDTH))
    offset = 3 * rng.standard_normal(patients)
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
        "release unrounded": release,
        "own unrounded": np.stack([own, np.zeros_like(own)], axis=-1),
    }


@pytest.fixture(scope="module")
def simulated_audit():
    return audit_shadows(simulated_shadows(1), "unrounded", pk_width=PK_WIDTH).summary.set_index(
        "attack"
    )


def test_the_release_bound_is_the_largest_any_attack_gives():
    arrays = simulated_shadows(2)
    bound = release_epsilon_bound(arrays, pk_width=PK_WIDTH, level="unrounded", seed=3)
    summary = audit_shadows(arrays, "unrounded", pk_width=PK_WIDTH, seed=3).summary
    assert bound["epsilon"] == summary["epsilon"].max() > 0
    assert bound["attack"] == summary.loc[summary["epsilon"].idxmax(), "attack"]


def test_lira_beats_the_linear_score_where_the_answer_is_known(simulated_audit):
    online, linear = simulated_audit.loc["LiRA online"], simulated_audit.loc["linear"]
    gap = online["auc"] - linear["auc"]
    assert gap > 4 * np.hypot(online["auc_se"], linear["auc_se"])
    assert online["tpr_1"] > linear["tpr_1_high"]
    assert simulated_audit.loc["LiRA offline", "auc"] > linear["auc"]


def test_null_control_is_a_coin_toss():
    summary = audit_shadows(
        simulated_shadows(2), "unrounded", pk_width=PK_WIDTH, null_control=True, seed=3
    ).summary
    assert (np.abs(summary["auc"] - 0.5) < 2 * summary["auc_se"]).all()


def test_standard_errors_match_the_spread_over_reruns():
    aucs, errors = [], []
    for seed in range(10):
        shadows = simulated_shadows(10 + seed, replicates=60)
        summary = audit_shadows(shadows, "unrounded", pk_width=PK_WIDTH).summary
        row = summary.set_index("attack").loc["linear"]
        aucs.append(row["auc"])
        errors.append(row["auc_se"])
    assert 0.5 < np.std(aucs, ddof=1) / np.mean(errors) < 1.6


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

    from synpmx_lite.attacks.audit import _clopper_pearson

    for k, total in [(0, 40), (3, 40), (40, 40), (17, 1600)]:
        interval = stats.binomtest(k, total).proportion_ci(0.95, method="exact")
        assert np.allclose(_clopper_pearson(k, total), (interval.low, interval.high))
