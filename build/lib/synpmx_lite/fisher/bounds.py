r"""What Fisher information loss says about a differentially private mean and a biased adversary.

:func:`mean_release_fil` gives the FIL of one patient in clipped means released with OpenDP's
Laplace or Gaussian mechanism: calibrated to one patient, the noise fixes each patient's FIL
whatever the number of patients. :func:`biased_cramer_rao` gives the Cramer-Rao bound on the
mean squared error of an estimate that may be biased, the case the unbiased bound of FIL leaves
open.

References
----------
Hannun, Guo and van der Maaten (2021), "Measuring data leakage in machine-learning models with
Fisher information", Proceedings of UAI 2021, PMLR 161, 760-770.

Lehmann and Casella (1998), *Theory of Point Estimation*, 2nd edition, Springer, chapter 2.
"""

from __future__ import annotations

import numpy as np
import opendp.prelude as dp
import pandas as pd

from .._validation import check_array, check_count, check_real
from ..dp_noise import CLIPPING_SPAN

__all__ = ["biased_cramer_rao", "mean_release_fil"]

# OpenDP's Laplace and Gaussian measurements sit behind its "contrib" flag.
dp.enable_features("contrib")


# --- The Cramer-Rao bound for biased estimators -------------------------------------------------


def biased_cramer_rao(eta: object, *, slope: object = 1.0, bias: object = 0.0) -> np.ndarray:
    r"""Least mean squared error of an estimate of one entry of the data, bias allowed.

    An estimator :math:`\hat z` of an entry :math:`z` with mean :math:`\psi(z)` has
    :math:`\mathrm{Var}(\hat z) \ge \psi'(z)^2/\eta^2` when the release carries Fisher
    information :math:`\eta^2` about :math:`z` alone, so its mean squared error is at least

    .. math:: \frac{\psi'(z)^2}{\eta^2} + (\psi(z) - z)^2 .

    With ``slope`` 1 and ``bias`` 0 this is the unbiased bound :math:`1/\eta^2`. A
    shrinking estimator (slope below one) trades variance for bias; in one dimension that
    trade cannot lower the bound for every :math:`z` at once, but it can for the values near
    where it shrinks to, which is where prior knowledge helps an adversary.

    Parameters
    ----------
    eta : float or array_like
        The entry's FIL, > 0.
    slope : float or array_like, default 1.0
        :math:`\psi'(z)`, the estimator's sensitivity to the entry.
    bias : float or array_like, default 0.0
        :math:`\psi(z) - z`.

    Returns
    -------
    numpy.ndarray
        The bound, broadcast over the arguments.

    References
    ----------
    Hannun, Guo and van der Maaten (2021), UAI, equation 10; Lehmann and Casella (1998),
    chapter 2.
    """
    eta = check_array(eta, "eta")
    if np.any(eta <= 0):
        raise ValueError("eta must be positive")
    slope = check_array(slope, "slope")
    bias = check_array(bias, "bias")
    return slope**2 / eta**2 + bias**2


# --- One patient in a released mean --------------------------------------------------------


def _laplace(scale: float) -> dp.Measurement:
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    return dp.m.make_laplace(*space, scale=scale)


def _gaussian(scale: float, delta: float) -> dp.Measurement:
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
    return dp.c.make_fix_delta(
        dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale=scale)), delta
    )


def mean_release_fil(
    epsilon: object,
    *,
    patients: int,
    released: int,
    width: float = CLIPPING_SPAN,
    delta: float = 1e-6,
) -> pd.DataFrame:
    r"""FIL of one patient in ``released`` clipped means released with Laplace or Gaussian noise.

    Each released number is the mean over ``patients`` patients of one value clipped to a
    public range of width ``width``, plus noise. Replacing one patient moves each mean by at
    most ``width / patients``, so the vector moves by at most
    ``released * width / patients`` in L1 and ``sqrt(released) * width / patients`` in L2.
    OpenDP's Laplace mechanism is calibrated to :math:`\varepsilon`-DP for the whole vector
    (which gives :math:`b = \text{released}\cdot\text{width}/(\text{patients}\,\varepsilon)`,
    the budget split evenly) and its Gaussian mechanism to :math:`(\varepsilon, \delta)`-DP through
    zero-concentrated DP.

    Inside the range each mean moves by ``1 / patients`` per unit of the patient's value, and
    a Laplace or Gaussian location family of scale :math:`s` (:math:`b` or :math:`\sigma`)
    carries Fisher information :math:`1/s^2` per observation, so the patient's FIL is
    :math:`\eta = 1/(\text{patients}\cdot s)` under either.

    Parameters
    ----------
    epsilon : float or array_like
        Privacy budgets, each > 0.
    patients : int
        Patients behind each mean, at least 1.
    released : int
        Released numbers (means), at least 1.
    width : float, default :data:`~synpmx_lite.dp_noise.CLIPPING_SPAN`
        Width of the public clipping range (ln 16 on the log scale: a sixteen-fold range).
    delta : float, default 1e-6
        The :math:`\delta` of the Gaussian mechanism, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        Two rows per budget (``mechanism`` "Laplace" then "Gaussian"), columns
        ``mechanism``, ``epsilon``, ``scale`` (noise scale per number), ``eta``,
        ``cramer_rao_sd`` (:math:`1/\eta`, the least standard deviation of an unbiased
        estimate of one of the patient's values) and ``estimator_sd`` (that of the natural
        unbiased estimate, ``patients`` times the release less the others' share).

    Raises
    ------
    ValueError
        Bad arguments, or a budget OpenDP cannot calibrate: a Laplace scale beyond what a
        float holds, or a Gaussian scale so small that OpenDP's conversion from
        zero-concentrated DP overflows (an epsilon beyond about 10,000).
    """
    epsilons = np.atleast_1d(check_array(epsilon, "epsilon"))
    if epsilons.ndim != 1 or np.any(epsilons <= 0):
        raise ValueError("epsilon must be a positive number or a 1-D array of them")
    patients = check_count(patients, "patients")
    released = check_count(released, "released")
    width = check_real(width, "width", low=0, low_open=True)
    delta = check_real(delta, "delta", low=0, high=1, low_open=True, high_open=True)
    l1, l2 = released * width / patients, np.sqrt(released) * width / patients
    rows = []
    for eps in epsilons:
        # The Laplace scale is l1 / epsilon: the search is bracketed around it. (OpenDP's own
        # bracket search ends near 2**49 and misses the scale of a budget below about 1e-13.)
        scale = l1 / float(eps)
        if not 0 < scale < np.inf:
            raise ValueError(f"epsilon {eps:g} gives a Laplace scale beyond what a float holds")
        try:
            laplace = dp.binary_search_param(
                _laplace, d_in=l1, d_out=float(eps), bounds=(scale / 2, 2 * scale)
            )
            gaussian = dp.binary_search_param(
                lambda s: _gaussian(s, delta), d_in=float(l2), d_out=(float(eps), delta)
            )
        except dp.OpenDPException as error:
            # The zCDP conversion overflows at tiny noise scales (a large epsilon).
            raise ValueError(
                f"OpenDP cannot calibrate the noise for epsilon {eps:g} (delta {delta:g}, "
                f"{released} numbers of width {width:g} over {patients} patients): {error}"
            ) from error
        # A Laplace variable of scale b has variance 2 b^2; a Gaussian one sigma^2.
        rows.append(("Laplace", eps, laplace, np.sqrt(2) * laplace))
        rows.append(("Gaussian", eps, gaussian, gaussian))
    table = pd.DataFrame(rows, columns=["mechanism", "epsilon", "scale", "estimator_sd"])
    table["eta"] = 1 / (patients * table["scale"])
    table["cramer_rao_sd"] = 1 / table["eta"]
    table["estimator_sd"] = patients * table["estimator_sd"]
    return table[["mechanism", "epsilon", "scale", "eta", "cramer_rao_sd", "estimator_sd"]]
