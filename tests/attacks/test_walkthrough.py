"""Tests of synpmx_lite.attacks.walkthrough: the R printout, shipped and reproduced."""

import numpy as np
import pytest

from synpmx_lite import attendance_score, r_worked_example, release_shares
from synpmx_lite.attacks.walkthrough import PRINTED_DECIMALS, _worked_example
from tests.attacks.test_membership import AVERAGE, NON_MEMBER, STUDY

EXAMPLE = r_worked_example()


def _reproduced(example, floor):
    """Our released shares, both candidates' terms and scores for the example's study."""
    released = release_shares(example.study.to_numpy(), floor=floor)
    terms = {
        who: (attendance - example.average) * (released - example.average)
        for who, attendance in (("member", example.member), ("non_member", example.non_member))
    }
    scores = {
        who: attendance_score(attendance, example.average, released)
        for who, attendance in (("member", example.member), ("non_member", example.non_member))
    }
    return released, terms, scores


def test_shipped_printout_is_the_articles():
    # The inputs as the article prints them (typed again in test_membership), and its scores.
    np.testing.assert_array_equal(EXAMPLE.study.to_numpy(), STUDY)
    np.testing.assert_array_equal(EXAMPLE.average, AVERAGE)
    np.testing.assert_array_equal(EXAMPLE.non_member, NON_MEMBER)
    assert EXAMPLE.floor == 3
    assert EXAMPLE.printed_scores == {"member": 0.63, "non_member": -0.47}
    assert list(EXAMPLE.study.columns) == list(EXAMPLE.printed.index)


def test_our_code_reproduces_every_printed_number():
    released, terms, scores = _reproduced(EXAMPLE, EXAMPLE.floor)
    np.testing.assert_array_equal(released, EXAMPLE.printed["released_share"])
    for who in ("member", "non_member"):
        np.testing.assert_array_equal(
            np.round(terms[who], PRINTED_DECIMALS) + 0.0, EXAMPLE.printed[f"{who}_term"]
        )
        assert round(scores[who], PRINTED_DECIMALS) == EXAMPLE.printed_scores[who]


def test_comparison_sees_a_release_without_the_floor():
    # Without the floor visit 2 releases 0.8, not the printed 1.0, and the scores move.
    released, _, scores = _reproduced(EXAMPLE, 1)
    assert released[1] == pytest.approx(0.8)
    assert not np.array_equal(released, EXAMPLE.printed["released_share"])
    assert round(scores["member"], PRINTED_DECIMALS) != EXAMPLE.printed_scores["member"]


def _raw(**changes):
    raw = {
        "patients": list(EXAMPLE.study.index),
        "visits": list(EXAMPLE.study.columns),
        "study": EXAMPLE.study.to_numpy().tolist(),
        "average": EXAMPLE.average.tolist(),
        "floor": EXAMPLE.floor,
        "member": EXAMPLE.member.tolist(),
        "non_member": EXAMPLE.non_member.tolist(),
        "scores": EXAMPLE.printed_scores,
        **{key: EXAMPLE.printed[key].tolist() for key in EXAMPLE.printed},
    }
    return {**raw, **changes}


def test_inconsistent_printout_refused():
    assert _worked_example(_raw()).printed_scores == EXAMPLE.printed_scores
    with pytest.raises(ValueError, match="member must be the study's patient 1"):
        _worked_example(_raw(member=[0, 1, 0, 0, 0]))
    with pytest.raises(ValueError, match="one entry per visit"):
        _worked_example(_raw(member_term=[0.14, 0.25]))
    with pytest.raises(ValueError, match="study must hold only 0 and 1"):
        _worked_example(_raw(study=[[2, 1, 0, 0, 0]] * 10))
    with pytest.raises(ValueError, match="average must lie strictly between 0 and 1"):
        _worked_example(_raw(average=[0.3, 0.5, 1.0, 0.4, 0.6]))
