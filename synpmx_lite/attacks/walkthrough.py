"""The R walkthrough's worked example of the attendance attack, as its article prints it.

The R walkthrough of membership inference against the fingerprint (the article the membership
chapter re-implements) scores two candidates against one drawn study of ten patients and five
visits, and prints every step: the study, the released shares, each candidate's terms and the
two scores. NumPy cannot replay R's random generator, so the printout itself ships with the
package (``synpmx_lite/data/membership_worked_r.json``, provenance in ``data/README.md``):
its inputs, for :func:`~synpmx_lite.attacks.membership.release_shares` and
:func:`~synpmx_lite.attacks.membership.attendance_score` to work on, and its printed results,
for the chapter and the tests to hold ours against.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd

from .._validation import check_binary, check_probabilities

__all__ = ["PRINTED_DECIMALS", "WorkedExample", "r_worked_example"]

PRINTED_DECIMALS = 2
"""Decimals to which the walkthrough prints its terms and scores (R's default for them)."""


@dataclass(frozen=True)
class WorkedExample:
    """The walkthrough's study, its two candidates and what it printed for them.

    Attributes
    ----------
    study : pandas.DataFrame
        A row per patient, a column per scheduled visit: 1 where the sample was taken, 0 where
        it was missed. Patient 1 is the member the walkthrough scores.
    average : numpy.ndarray
        The design's attendance rate per visit, the attacker's reference.
    floor : int
        The floor the walkthrough releases the shares with.
    non_member : numpy.ndarray
        The outsider's 0/1 attendance, drawn by the walkthrough from the same rates.
    printed : pandas.DataFrame
        Per visit (index as ``study``'s columns), the printout's ``released_share``,
        ``member_term`` and ``non_member_term``.
    printed_scores : dict of str to float
        The printed scores, ``"member"`` and ``"non_member"``.
    """

    study: pd.DataFrame
    average: np.ndarray
    floor: int
    non_member: np.ndarray
    printed: pd.DataFrame
    printed_scores: dict[str, float]

    @property
    def member(self) -> np.ndarray:
        """Patient 1's attendance, the member's."""
        return self.study.iloc[0].to_numpy()


def r_worked_example() -> WorkedExample:
    """The R walkthrough's worked example, read from the file shipped with the package.

    Returns
    -------
    WorkedExample
        The study, the reference rates, the floor, the outsider, and the printed shares, terms
        and scores.

    Raises
    ------
    ValueError
        The shipped file is inconsistent: attendance other than 0 and 1, rates outside (0, 1),
        a per-visit list of the wrong length, or a member who is not the study's patient 1.
    """
    path = resources.files("synpmx_lite").joinpath("data", "membership_worked_r.json")
    with path.open("r") as handle:
        return _worked_example(json.load(handle))


def _worked_example(raw: dict) -> WorkedExample:
    """The worked example from the printout's fields, refusing an inconsistent one."""
    study = pd.DataFrame(
        check_binary(raw["study"], "study", ndim=2), index=raw["patients"], columns=raw["visits"]
    )
    per_visit = ["average", "released_share", "member", "member_term", "non_member"]
    short = [key for key in [*per_visit, "non_member_term"] if len(raw[key]) != study.shape[1]]
    if short:
        raise ValueError(f"{short} must hold one entry per visit ({study.shape[1]})")
    if not np.array_equal(raw["member"], study.iloc[0]):
        raise ValueError("member must be the study's patient 1, as the walkthrough scores")
    printed = pd.DataFrame(
        {key: raw[key] for key in ("released_share", "member_term", "non_member_term")},
        index=study.columns,
    )
    return WorkedExample(
        study=study,
        average=check_probabilities(raw["average"], "average"),
        floor=int(raw["floor"]),
        non_member=check_binary(raw["non_member"], "non_member", ndim=1),
        printed=printed,
        printed_scores={key: float(value) for key, value in raw["scores"].items()},
    )
