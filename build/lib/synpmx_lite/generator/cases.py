"""The constructed warfarin cases: one study, changed so that a protection has work to do.

None of them is a real study. Each starts from the shipped warfarin data
(:func:`synpmx_lite.pmx.study.load_dataset`) and changes one or a few patients, as the
privacy-protections chapter and the tests use them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_real
from ..pmx.study import PmxRoles, load_dataset

__all__ = ["ConstructedCases", "constructed_warfarin_cases"]


@dataclass(frozen=True)
class ConstructedCases:
    """Warfarin, and three copies of it with patients changed.

    Attributes
    ----------
    source : pandas.DataFrame
        The warfarin data as shipped.
    misdosed : pandas.DataFrame
        The fifth patient's concentrations multiplied by ``factor``: a patient whose
        concentrations are far from what the recorded dose implies.
    extreme : pandas.DataFrame
        The third patient's weight set to ``weight``, the eighth patient's age to ``age``, and
        the twelfth patient's sex to ``level``, a level no other patient holds.
    pd_misrecorded : pandas.DataFrame
        The sixth patient's prothrombin complex activity (``pca``) after the dose multiplied
        by ``pd_factor``: a patient whose PD data moves the PD model's shape parameters.
    roles : PmxRoles
        The roles of all four.
    misdosed_id, heavy_id, old_id, lone_level_id, pd_misrecorded_id : object
        The source IDs of the changed patients.
    """

    source: pd.DataFrame
    misdosed: pd.DataFrame
    extreme: pd.DataFrame
    pd_misrecorded: pd.DataFrame
    roles: PmxRoles
    misdosed_id: object
    heavy_id: object
    old_id: object
    lone_level_id: object
    pd_misrecorded_id: object


def constructed_warfarin_cases(
    *,
    factor: float = 1000.0,
    weight: float = 250.0,
    age: float = 95.0,
    level: str = "not recorded",
    pd_factor: float = 3.0,
) -> ConstructedCases:
    """Build the constructed warfarin cases.

    Parameters
    ----------
    factor : float, default 1000
        What the misdosed patient's concentrations are multiplied by (positive).
    weight : float, default 250
        The heavy patient's weight in kg (positive).
    age : float, default 95
        The old patient's age in years (positive).
    level : str, default "not recorded"
        The sex level that only one patient holds; must not be a level already present.
    pd_factor : float, default 3
        What the PD-misrecorded patient's post-dose ``pca`` values are multiplied by
        (positive).

    Returns
    -------
    ConstructedCases
        The source data, the three changed copies, their roles and the changed patients' IDs.
    """
    factor = check_real(factor, "factor", low=0, low_open=True)
    weight = check_real(weight, "weight", low=0, low_open=True)
    age = check_real(age, "age", low=0, low_open=True)
    pd_factor = check_real(pd_factor, "pd_factor", low=0, low_open=True)
    source, roles = load_dataset("warfarin")
    if not isinstance(level, str):
        raise TypeError(f"level must be a string, got {level!r}")
    if level in set(source["sex"]):
        raise ValueError(f"level must be a sex level no patient holds, got {level!r}")
    patients = np.sort(source[roles.id].unique())
    misdosed_id, heavy_id, old_id, lone_level_id, pd_misrecorded_id = patients[[4, 2, 7, 11, 5]]

    misdosed = source.copy()
    concentrations = (
        (misdosed[roles.id] == misdosed_id)
        & (misdosed[roles.evid] == 0)
        & (misdosed[roles.dvid] == roles.pk_endpoint)
    )
    misdosed.loc[concentrations, roles.dv] *= factor

    extreme = source.copy()
    extreme.loc[extreme[roles.id] == heavy_id, "wt"] = weight
    extreme.loc[extreme[roles.id] == old_id, "age"] = age
    extreme.loc[extreme[roles.id] == lone_level_id, "sex"] = level
    pd_misrecorded = source.copy()
    after_dose = (
        (pd_misrecorded[roles.id] == pd_misrecorded_id)
        & (pd_misrecorded[roles.evid] == 0)
        & (pd_misrecorded[roles.dvid] == "pca")
        & (pd_misrecorded[roles.time] > 0)
    )
    pd_misrecorded.loc[after_dose, roles.dv] *= pd_factor
    return ConstructedCases(
        source=source,
        misdosed=misdosed,
        extreme=extreme,
        pd_misrecorded=pd_misrecorded,
        roles=roles,
        misdosed_id=misdosed_id.item(),
        heavy_id=heavy_id.item(),
        old_id=old_id.item(),
        lone_level_id=lone_level_id.item(),
        pd_misrecorded_id=pd_misrecorded_id.item(),
    )
