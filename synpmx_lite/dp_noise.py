r"""The noise a differential-privacy guarantee needs on a small study's population model.

Two routes give a population model a DP guarantee:

* **per patient**: estimate each patient's parameters from that patient's own data, clip them
  to a public range, and release their mean with noise;
* **subsample and aggregate** :cite:p:`nissim2007smooth,smith2011privacy`: split the
  patients into disjoint groups of about twenty, fit the model in each, and release the
  mean of the groups' clipped estimates with noise.

With a budget :math:`\varepsilon` split evenly over :math:`d` released numbers, each clipped to
a public range of width :math:`S` on the log scale, each number's mean over :math:`m`
contributors (patients, or groups) changes by at most :math:`S/m` when one contributor's value
is replaced, so the Laplace mechanism adds noise of scale

.. math:: b = \frac{d\,S}{m\,\varepsilon}

on the log scale :cite:p:`dwork2006calibrating`. The median of :math:`|{\rm Laplace}(b)|` is
:math:`b \ln 2`, so half of the released numbers are off by more than the fold error
:math:`e^{b \ln 2}`; the noise's SD, :math:`\sqrt2\,b`, can be set against the sampling error
:math:`\omega/\sqrt{n}` a typical value already has.

:func:`opendp_clipped_mean` builds the measurement that releases one such number with OpenDP,
and :func:`opendp_certificate` checks the formula's scale against the privacy map of the
library that would be used in practice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import opendp.prelude as dp
import pandas as pd

from ._validation import check_array, check_count, check_real

__all__ = [
    "CLIPPING_SPAN",
    "GROUP_SIZE",
    "LaplaceCertificate",
    "dp_noise_table",
    "epsilon_at_sampling_error",
    "laplace_scale",
    "median_fold_error",
    "noise_over_sampling_error",
    "opendp_certificate",
    "opendp_clipped_mean",
]

dp.enable_features("contrib")

#: Width of the public clipping range on the log scale: fourfold either side of a prior value.
CLIPPING_SPAN = float(np.log(16))

#: Patients per group in subsample and aggregate.
GROUP_SIZE = 20


def laplace_scale(
    contributors: float, released: int, *, epsilon: float = 1.0, span: float = CLIPPING_SPAN
) -> float:
    r"""Laplace scale :math:`b = d S / (m \varepsilon)` of one released log-scale number.

    Parameters
    ----------
    contributors : float
        :math:`m`, the number of clipped values averaged: patients by the per-patient route,
        groups (patients / :data:`GROUP_SIZE`) by subsample and aggregate. Positive.
    released : int
        :math:`d`, how many numbers share the budget.
    epsilon : float, default 1
        The whole release's privacy budget, positive.
    span : float, default :data:`CLIPPING_SPAN`
        Width :math:`S` of the clipping range on the log scale, positive.

    Returns
    -------
    float
        The scale :math:`b`.

    Raises
    ------
    ValueError
        For a scale that overflows a float, or underflows to zero (an epsilon near zero or
        beyond about 1e300).
    """
    contributors = check_real(contributors, "contributors", low=0, low_open=True)
    released = check_count(released, "released")
    epsilon = check_real(epsilon, "epsilon", low=0, low_open=True)
    span = check_real(span, "span", low=0, low_open=True)
    scale = released * span / (contributors * epsilon)
    if not 0 < scale < np.inf:
        raise ValueError(
            f"the Laplace scale for epsilon={epsilon:g}, released={released}, span={span:g} "
            f"and contributors={contributors:g} is {scale:g}: beyond what a float holds"
        )
    return scale


def median_fold_error(scale: object) -> np.ndarray:
    r"""Median fold error :math:`e^{b \ln 2}` of a log-scale number with Laplace noise of scale b.

    Parameters
    ----------
    scale : array_like
        Laplace scales, positive.

    Returns
    -------
    numpy.ndarray
        The fold error that half of the releases exceed.
    """
    scale = check_array(scale, "scale")
    if np.any(scale <= 0):
        raise ValueError("scale must be positive")
    return np.exp(scale * np.log(2))


def noise_over_sampling_error(
    patients: object, scale: object, *, between_subject_sd: float = 0.3
) -> np.ndarray:
    r"""How many times an estimate's sampling error :math:`\omega/\sqrt n` the noise's SD is.

    Parameters
    ----------
    patients : array_like
        Cohort sizes :math:`n`, positive.
    scale : array_like
        Laplace scales :math:`b`, positive, broadcastable against ``patients``.
    between_subject_sd : float, default 0.3
        :math:`\omega`, the between-subject SD on the log scale.

    Returns
    -------
    numpy.ndarray
        How many times the sampling error the noise is.
    """
    patients = check_array(patients, "patients")
    scale = check_array(scale, "scale")
    if np.any(patients <= 0) or np.any(scale <= 0):
        raise ValueError("patients and scale must be positive")
    between_subject_sd = check_real(between_subject_sd, "between_subject_sd", low=0, low_open=True)
    return np.sqrt(2) * scale / (between_subject_sd / np.sqrt(patients))


def dp_noise_table(
    patients: tuple[int, ...] = (30, 60, 200, 1000),
    released: tuple[int, ...] = (11, 30),
    *,
    epsilon: float = 1.0,
    between_subject_sd: float = 0.3,
) -> pd.DataFrame:
    """The noise each route adds, for every cohort size and count of released numbers.

    Parameters
    ----------
    patients : tuple of int
        Cohort sizes.
    released : tuple of int
        Counts of numbers sharing the budget: 11 is a two-compartment population model (five
        typical values, five variances and a residual error), 30 a whole fingerprint.
    epsilon : float, default 1
        The release's whole budget.
    between_subject_sd : float, default 0.3
        Between-subject SD that sets the sampling error.

    Returns
    -------
    pandas.DataFrame
        One row per (released, patients), with the per-patient scale and median fold error,
        the noise over the sampling error, and the subsample-and-aggregate scale and median
        fold error (groups of :data:`GROUP_SIZE`).
    """
    rows = []
    for count in released:
        for n in patients:
            n = check_count(n, "patients")
            per_patient = laplace_scale(n, count, epsilon=epsilon)
            subsample = laplace_scale(n / GROUP_SIZE, count, epsilon=epsilon)
            rows.append(
                {
                    "patients": n,
                    "released_numbers": count,
                    "per_patient_scale": per_patient,
                    "per_patient_median_fold_error": float(median_fold_error(per_patient)),
                    "noise_over_sampling_error": float(
                        noise_over_sampling_error(
                            n, per_patient, between_subject_sd=between_subject_sd
                        )
                    ),
                    "subsample_scale": subsample,
                    "subsample_median_fold_error": float(median_fold_error(subsample)),
                }
            )
    return pd.DataFrame(rows)


def opendp_clipped_mean(contributors: int, scale: float, *, prior: float = 0.0) -> dp.Measurement:
    r"""OpenDP's measurement of one log-scale number: a clipped mean with Laplace noise.

    The mean of ``contributors`` values, each in the public range ``prior``
    :math:`\pm` :data:`CLIPPING_SPAN`/2, released with Laplace noise of ``scale``: the
    per-patient route when the contributors are patients, subsample and aggregate when they
    are groups' estimates.

    Parameters
    ----------
    contributors : int
        How many clipped values are averaged, at least 2.
    scale : float
        The Laplace scale, positive.
    prior : float, default 0
        Centre of the public clipping range (log scale).

    Returns
    -------
    opendp.mod.Measurement
        Takes a list of ``contributors`` floats (already in the range); its privacy map at
        ``d_in=2`` (one contributor replaced, a symmetric distance of two) is the epsilon it
        spends.

    Examples
    --------
    >>> round(opendp_clipped_mean(60, laplace_scale(60, 11)).map(2) * 11, 9)
    1.0
    """
    contributors = check_count(contributors, "contributors", minimum=2)
    scale = check_real(scale, "scale", low=0, low_open=True)
    prior = check_real(prior, "prior")
    bounds = (prior - CLIPPING_SPAN / 2, prior + CLIPPING_SPAN / 2)
    space = (
        dp.vector_domain(dp.atom_domain(bounds=bounds), size=contributors),
        dp.symmetric_distance(),
    )
    return space >> dp.t.then_mean() >> dp.m.then_laplace(scale=scale)


def epsilon_at_sampling_error(
    patients: int, released: int, *, between_subject_sd: float = 0.3
) -> float:
    r"""The whole budget at which the per-patient route's noise is as large as the sampling error.

    Below this epsilon the noise's SD, :math:`\sqrt2\,b`, exceeds the sampling error
    :math:`\omega/\sqrt n` a released number carries anyway. Setting the two equal gives the
    scale :math:`b = \omega/\sqrt{2n}` of each number; the budget is what OpenDP's privacy
    map states for the basic composition of ``released`` clipped-mean measurements
    (:func:`opendp_clipped_mean`) at that scale, one patient replaced. By the formula it is
    :math:`\sqrt2\,d\,S / (\omega \sqrt n)`.

    Parameters
    ----------
    patients : int
        Cohort size :math:`n`, at least 2 (the per-patient route averages the patients).
    released : int
        :math:`d`, how many numbers share the budget equally.
    between_subject_sd : float, default 0.3
        :math:`\omega`, the between-subject SD on the log scale, positive.

    Returns
    -------
    float
        The epsilon OpenDP certifies for the whole release at that noise.

    Examples
    --------
    >>> round(epsilon_at_sampling_error(32, 11), 1)
    25.4
    """
    patients = check_count(patients, "patients", minimum=2)
    released = check_count(released, "released")
    between_subject_sd = check_real(between_subject_sd, "between_subject_sd", low=0, low_open=True)
    scale = between_subject_sd / np.sqrt(2 * patients)
    measurement = opendp_clipped_mean(patients, float(scale))
    return float(dp.c.make_composition([measurement] * released).map(2))


# The search bracket of opendp_certificate stays within the positive floats.
_SMALLEST_SCALE, _LARGEST_SCALE = float(np.nextafter(0.0, 1.0)), float(np.finfo(float).max)


@dataclass(frozen=True)
class LaplaceCertificate:
    r"""The formula's Laplace scale for one released number, checked against OpenDP's privacy map.

    Attributes
    ----------
    contributors : int
        Values averaged (patients, or groups).
    released : int
        Numbers sharing the budget.
    budget : float
        This number's share of the budget, ``epsilon / released``.
    formula_scale : float
        :func:`laplace_scale`, :math:`b = d S / (m \varepsilon)`.
    certified_epsilon : float
        What OpenDP's privacy map says :func:`opendp_clipped_mean` at the formula's scale
        spends when one contributor is replaced.
    opendp_scale : float
        The smallest scale whose map OpenDP certifies within ``budget`` (a binary search on
        the map, :func:`opendp.prelude.binary_search_param`).
    """

    contributors: int
    released: int
    budget: float
    formula_scale: float
    certified_epsilon: float
    opendp_scale: float

    def largest_gap(self) -> float:
        """The larger relative gap: certified epsilon against the budget, scale against scale."""
        return max(
            abs(self.certified_epsilon / self.budget - 1),
            abs(self.opendp_scale / self.formula_scale - 1),
        )


def opendp_certificate(
    contributors: int, released: int, *, epsilon: float = 1.0
) -> LaplaceCertificate:
    """Check the formula's Laplace scale for one released number against OpenDP.

    Builds :func:`opendp_clipped_mean` at the scale :func:`laplace_scale` gives and reads the
    epsilon OpenDP certifies for it, and searches OpenDP's map for the smallest scale that
    stays within the number's budget (between a hundredth and a hundred times the formula's).
    Both agree with the formula to floating-point accuracy when the formula is right; a wrong
    sensitivity or budget split shows as a gap of a factor, or, beyond a factor of 100, as
    OpenDP's ValueError from the search.

    Parameters
    ----------
    contributors : int
        Values averaged: patients (per-patient route) or groups (subsample and aggregate), at
        least 2.
    released : int
        How many numbers share the budget.
    epsilon : float, default 1
        The whole release's budget.

    Returns
    -------
    LaplaceCertificate
        The budget, both scales and the certified epsilon.
    """
    contributors = check_count(contributors, "contributors", minimum=2)
    released = check_count(released, "released")
    epsilon = check_real(epsilon, "epsilon", low=0, low_open=True)
    budget = epsilon / released
    formula = laplace_scale(contributors, released, epsilon=epsilon)
    # Bracketed a hundredfold either side of the formula (within the positive floats), OpenDP's
    # search builds the measurement about 60 times instead of about 1,100; a scale outside the
    # bracket (a formula wrong by more than a factor of 100) is OpenDP's ValueError, not a
    # number.
    bounds = (max(formula / 100, _SMALLEST_SCALE), min(formula * 100, _LARGEST_SCALE))
    searched = dp.binary_search_param(
        lambda s: opendp_clipped_mean(contributors, s), d_in=2, d_out=budget, bounds=bounds
    )
    return LaplaceCertificate(
        contributors=contributors,
        released=released,
        budget=budget,
        formula_scale=formula,
        certified_epsilon=float(opendp_clipped_mean(contributors, formula).map(2)),
        opendp_scale=float(searched),
    )
