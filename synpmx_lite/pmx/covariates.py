r"""Covariate effects on the typical values of a population PK model.

An effect is written as a formula ``"<parameter> ~ <covariate>"``, as a pharmacometrician
writes it in a NONMEM or nlmixr2 model:

* a continuous covariate enters as a power of its value over a reference,
  :math:`\theta_i = \theta\,(x_i / x_\mathrm{ref})^{\beta}`; the reference follows a slash
  (``"cl ~ wt/70"``) and is the study's median without one (``"cl ~ wt"``);
* a categorical covariate enters as a factor :math:`e^{\beta_\ell}` for each level
  :math:`\ell` but the most common, which is the reference (``"cl ~ sex"``).

Both are linear on the log scale, :math:`\log\theta_i = \log\theta + \sum_c \beta_c z_{ic}`,
with :math:`z = \log(x / x_\mathrm{ref})` or an indicator of the level: the fit estimates the
:math:`\beta_c` beside the typical values, and :math:`\theta` is the typical value of a
patient at the reference of every covariate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CovariateEffect", "effect_design", "parse_effects"]

_FORMULA = re.compile(r"^\s*(\w+)\s*~\s*(\w+)\s*(?:/\s*([^\s]+))?\s*$")


@dataclass(frozen=True)
class CovariateEffect:
    """One estimated coefficient: a power of a continuous covariate, or one level's factor.

    Attributes
    ----------
    label : str
        The name of the estimate: the formula, with ``[level]`` after it for a categorical
        covariate of more than two levels.
    parameter : str
        The structural parameter whose typical value the effect scales.
    covariate : str
        The covariate column.
    reference : float or None
        The continuous covariate's reference value (None for a categorical one).
    level : object or None
        The level whose factor this is (None for a continuous covariate).
    """

    label: str
    parameter: str
    covariate: str
    reference: float | None = None
    level: object = None

    @property
    def categorical(self) -> bool:
        """Whether the effect is one level's factor (else a power of a continuous value)."""
        return self.reference is None

    def design(self, covariates: pd.DataFrame) -> np.ndarray:
        """Each patient's ``z``: ``log(x / reference)``, or 1 at the level and 0 elsewhere."""
        if self.covariate not in covariates.columns:
            raise ValueError(f"covariates lack the column {self.covariate!r} of {self.label!r}")
        values = covariates[self.covariate]
        if self.categorical:
            return (values == self.level).to_numpy(dtype=float)
        numbers = values.to_numpy(dtype=float)
        if not np.all(np.isfinite(numbers) & (numbers > 0)):
            raise ValueError(f"covariate {self.covariate!r} of {self.label!r} must be positive")
        return np.log(numbers / self.reference)


def parse_effects(
    effects: object, covariates: pd.DataFrame, categorical: tuple[str, ...], parameters: tuple
) -> tuple[CovariateEffect, ...]:
    """The effects of formulas, with references and levels read from a study's covariates.

    Parameters
    ----------
    effects : sequence of str or CovariateEffect
        Formulas ``"cl ~ wt/70"``, ``"v ~ wt"``, ``"cl ~ sex"`` (module docstring), or the
        terms of a fit (its ``effect_terms``), taken as they stand: their references and
        levels pinned, not read again from these covariates (as a refit on some of a fit's
        patients needs, so that its coefficients mean what the fit's do).
    covariates : pandas.DataFrame
        The patients' baseline covariates, one row per patient.
    categorical : tuple of str
        The covariates that are categorical although numeric (a non-numeric one always is).
    parameters : tuple of str
        The structural model's parameters.

    Returns
    -------
    tuple of CovariateEffect
        One per estimated coefficient, in the order of the formulas.

    Raises
    ------
    TypeError, ValueError
        ``effects`` is not a sequence of strings; a formula that does not parse, names a
        parameter the model lacks or a covariate the roles lack, repeats another, gives a
        reference to a categorical covariate or one that is not positive; a covariate
        without variation (one level, or one value); a pinned term naming a parameter or
        column these lack, repeated (or given as a formula too), or whose design does not
        vary among these patients.
    """
    if isinstance(effects, str) or not isinstance(effects, (tuple, list)):
        raise TypeError(
            f"effects must be a sequence of formulas such as ('cl ~ wt/70',), got {effects!r}"
        )
    parsed: list[CovariateEffect] = []
    seen, pinned = set(), set()  # (parameter, covariate) of the formulas and the pinned terms
    for formula in effects:
        if isinstance(formula, CovariateEffect):
            parsed.append(_pinned(formula, covariates, parameters, parsed, seen))
            pinned.add((formula.parameter, formula.covariate))
            continue
        parameter, covariate, reference = _parts(formula, covariates, parameters)
        if (parameter, covariate) in seen | pinned:
            raise ValueError(f"effects repeat {parameter} ~ {covariate}")
        seen.add((parameter, covariate))
        values = covariates[covariate]
        is_categorical = covariate in categorical or not pd.api.types.is_numeric_dtype(values)
        if is_categorical:
            parsed += _levels(formula.strip(), parameter, covariate, values, reference)
        else:
            parsed.append(_power(formula.strip(), parameter, covariate, values, reference))
    return tuple(parsed)


def _pinned(
    term: CovariateEffect, covariates: pd.DataFrame, parameters: tuple, parsed: list, seen: set
) -> CovariateEffect:
    """A fit's term, checked against these covariates: its parameter and column exist, it is
    not repeated (nor its pair given by a formula, ``seen``), and its design can be read (a
    positive value, for a power) and varies among these patients."""
    if term.parameter not in parameters:
        raise ValueError(
            f"effects: {term.label!r} scales {term.parameter!r}, not one of {list(parameters)}"
        )
    if term.covariate not in covariates.columns:
        raise ValueError(
            f"effects: {term.label!r} names {term.covariate!r}, not one of the roles' covariates "
            f"{list(covariates.columns)}"
        )
    if any(term.label == other.label for other in parsed) or (
        (term.parameter, term.covariate) in seen
    ):
        raise ValueError(f"effects repeat {term.label!r}")
    if np.ptp(term.design(covariates)) == 0:
        raise ValueError(
            f"effects: {term.label!r} does not vary among these patients (no patient, or every "
            f"patient, at its level or reference): they cannot estimate it"
        )
    return term


def _parts(formula: object, covariates: pd.DataFrame, parameters: tuple):
    """Parameter, covariate and reference text of one formula, checked against the study."""
    match = _FORMULA.match(formula) if isinstance(formula, str) else None
    if match is None:
        raise ValueError(
            f"effects: {formula!r} is not a formula '<parameter> ~ <covariate>' or "
            "'<parameter> ~ <covariate>/<reference>'"
        )
    parameter, covariate, reference = match.groups()
    if parameter not in parameters:
        raise ValueError(
            f"effects: {formula!r} names parameter {parameter!r}, not one of {list(parameters)}"
        )
    if covariate not in covariates.columns:
        raise ValueError(
            f"effects: {formula!r} names {covariate!r}, not one of the roles' covariates "
            f"{list(covariates.columns)}"
        )
    return parameter, covariate, reference


def _power(formula: str, parameter: str, covariate: str, values: pd.Series, reference):
    numbers = values.to_numpy(dtype=float)
    if reference is None:
        value = float(np.median(numbers))
    else:
        try:
            value = float(reference)
        except ValueError:
            value = np.nan
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"effects: the reference of {formula!r} must be a positive number")
    if np.ptp(numbers) == 0:
        raise ValueError(f"effects: {covariate!r} of {formula!r} takes one value only")
    return CovariateEffect(formula, parameter, covariate, reference=value)


def _levels(formula: str, parameter: str, covariate: str, values: pd.Series, reference):
    if reference is not None:
        raise ValueError(
            f"effects: {formula!r} gives a reference to the categorical covariate {covariate!r} "
            "(its reference is its most common level)"
        )
    counts = values.value_counts(sort=False).sort_index()
    if len(counts) < 2:
        raise ValueError(f"effects: {covariate!r} of {formula!r} takes one level only")
    most_common = counts.idxmax()  # ties: the lowest level
    others = [level for level in counts.index if level != most_common]
    if len(others) == 1:
        return [CovariateEffect(formula, parameter, covariate, level=others[0])]
    return [
        CovariateEffect(f"{formula}[{level}]", parameter, covariate, level=level)
        for level in others
    ]


def effect_design(
    effects: tuple[CovariateEffect, ...], covariates: pd.DataFrame, parameters: tuple
) -> tuple[np.ndarray, np.ndarray]:
    """The design ``Z`` ``(patients, effects)`` and each effect's parameter position."""
    design = np.column_stack([e.design(covariates) for e in effects]) if effects else None
    if design is None:
        design = np.zeros((len(covariates), 0))
    target = np.array([parameters.index(e.parameter) for e in effects], dtype=int)
    return design, target
