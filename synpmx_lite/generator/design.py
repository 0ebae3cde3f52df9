"""The study's conduct as the releases summarise it: dose changes and attended visits.

The ordinary release (:mod:`~synpmx_lite.generator.estimate`), the private release
(:mod:`~synpmx_lite.generator.private_release`) and the usefulness measures
(:mod:`~synpmx_lite.generator.utility`) read these from the study the same way, through the two
functions here. The checks (:mod:`~synpmx_lite.generator.checks`) do not: they recompute what
they judge on their own, so that a fault here cannot hide from them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["dose_changed_patients", "scheduled_visits"]


def dose_changed_patients(doses: pd.DataFrame) -> np.ndarray:
    """The patients with a dose unlike their previous one in the same period.

    Parameters
    ----------
    doses : pandas.DataFrame
        A study's dose rows (:attr:`synpmx_lite.pmx.study.StudyEvents.doses`: columns
        ``patient``, ``period``, ``amount``), in time order within each patient.

    Returns
    -------
    numpy.ndarray
        Their patient indices, each once, in order of first change.
    """
    previous = doses.groupby(["patient", "period"])["amount"].shift()
    return doses.loc[previous.notna() & (doses["amount"] != previous), "patient"].unique()


def scheduled_visits(
    rows: pd.DataFrame, *, min_patients: int = 1
) -> tuple[pd.DataFrame, pd.MultiIndex]:
    """The visits of one endpoint that at least ``min_patients`` patients attended.

    A visit counts once per patient, however many samples were taken at it.

    Parameters
    ----------
    rows : pandas.DataFrame
        One endpoint's observation rows (columns ``patient``, ``period``, ``visit``).
    min_patients : int, default 1
        Patients a visit needs to count (the ordinary release's threshold; 1 keeps every
        visit anyone attended).

    Returns
    -------
    cells : pandas.DataFrame
        One row per patient and visit attended, among those visits.
    visits : pandas.MultiIndex
        Those visits, as (period, visit).
    """
    cells = rows.drop_duplicates(["patient", "period", "visit"])
    reached = cells.groupby(["period", "visit"])["patient"].nunique()
    visits = reached.index[reached >= min_patients]
    kept = pd.MultiIndex.from_frame(cells[["period", "visit"]]).isin(visits)
    return cells[kept], visits
