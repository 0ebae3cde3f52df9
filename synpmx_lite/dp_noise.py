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

:func:`opendp_typical_value_release` releases one such number through an OpenDP measurement,
so that the formula can be checked against the library that would be used in practice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import opendp.prelude as dp
import pandas as pd

from ._validation import check_array, check_count, check_real, check_rng

__all__ = [
    "CLIPPING_SPAN",
    "GROUP_SIZE",
    "TypicalValueRelease",
    "dp_noise_table",
    "laplace_scale",
    "median_fold_error",
    "noise_over_sampling_error",
    "opendp_typical_value_release",
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
    """
    contributors = check_real(contributors, "contributors", low=0, low_open=True)
    released = check_count(released, "released")
    epsilon = check_real(epsilon, "epsilon", low=0, low_open=True)
    span = check_real(span, "span", low=0, low_open=True)
    return released * span / (contributors * epsilon)


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


@dataclass(frozen=True)
class TypicalValueRelease:
    """Releases of one log-scale typical value through an OpenDP Laplace measurement.

    Attributes
    ----------
    scale : float
        The Laplace scale, the smallest whose privacy map OpenDP certifies for the budget.
    certified_epsilon : float
        The measurement's privacy map at one patient replaced (symmetric distance 2).
    true_value : float
        The clipped mean, on the log scale.
    first_release : float
        What the measurement itself releases from the patients' values.
    released : numpy.ndarray
        Repeated releases of the same mean with noise of the same scale, from OpenDP's vector
        Laplace mechanism.
    """

    scale: float
    certified_epsilon: float
    true_value: float
    first_release: float
    released: np.ndarray

    def fold_errors(self) -> np.ndarray:
        """Each release's fold error, :math:`e^{|\\hat\\theta - \\theta|}` on the log scale."""
        return np.exp(np.abs(self.released - self.true_value))


def opendp_typical_value_release(
    patients: int,
    released: int,
    *,
    epsilon: float = 1.0,
    prior: float = 0.0,
    between_subject_sd: float = 0.3,
    releases: int = 10_000,
    rng: object = None,
) -> TypicalValueRelease:
    r"""Release one log-scale typical value by the per-patient route, with OpenDP.

    Each patient's log parameter (drawn around ``prior`` with SD ``between_subject_sd``) is
    clipped to ``prior`` :math:`\pm` :data:`CLIPPING_SPAN`/2, and the mean of the ``patients``
    clipped values is released with Laplace noise through OpenDP. The budget of this one
    number is ``epsilon / released``; the scale is the smallest whose privacy map, for one
    patient replaced, OpenDP certifies within that budget (found with
    :func:`opendp.prelude.binary_search_param`). The noise of all ``releases`` repeats comes
    from one OpenDP vector Laplace measurement of the same scale.

    Parameters
    ----------
    patients : int
        Cohort size, at least 2.
    released : int
        How many numbers share the budget.
    epsilon : float, default 1
        The whole release's budget.
    prior : float, default 0
        Centre of the public clipping range (log scale).
    between_subject_sd : float, default 0.3
        SD of the patients' log parameters.
    releases : int, default 10000
        Independent releases of the same mean, to estimate the fold-error distribution.
    rng : numpy.random.Generator, int or None
        Source of the patients' values (the noise comes from OpenDP).

    Returns
    -------
    TypicalValueRelease
        The scale, its certified epsilon, the clipped mean and the releases.
    """
    patients = check_count(patients, "patients", minimum=2)
    released = check_count(released, "released")
    epsilon = check_real(epsilon, "epsilon", low=0, low_open=True)
    prior = check_real(prior, "prior")
    between_subject_sd = check_real(between_subject_sd, "between_subject_sd", low=0, low_open=True)
    releases = check_count(releases, "releases")
    bounds = (prior - CLIPPING_SPAN / 2, prior + CLIPPING_SPAN / 2)

    space = (
        dp.vector_domain(dp.atom_domain(bounds=bounds), size=patients),
        dp.symmetric_distance(),
    )
    budget = epsilon / released
    scale = dp.binary_search_param(
        lambda s: space >> dp.t.then_mean() >> dp.m.then_laplace(scale=s), d_in=2, d_out=budget
    )
    measurement = space >> dp.t.then_mean() >> dp.m.then_laplace(scale=scale)

    values = np.clip(check_rng(rng).normal(prior, between_subject_sd, patients), *bounds)
    true_value = float(values.mean())
    noise = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float), scale=scale
    )
    return TypicalValueRelease(
        scale=float(scale),
        certified_epsilon=float(measurement.map(2)),
        true_value=true_value,
        first_release=float(measurement(values.tolist())),
        released=np.asarray(noise([true_value] * releases)),
    )
