r"""Population PK estimation: a nonlinear mixed-effects model fitted by FOCE with interaction.

The model, for patient :math:`i` and observation :math:`j`:

.. math::

    \theta_{ik} = \theta_k e^{\eta_{ik}}, \quad \eta_i \sim N(0, \Omega),\ \Omega
    \text{ diagonal (or one correlated pair)},
    \qquad y_{ij} = f(t_{ij}; \theta_i) + \varepsilon_{ij},\quad
    \varepsilon_{ij} \sim N(0, V_{ij}),

with :math:`f` a closed-form model of :mod:`synpmx_lite.pmx.pk` and residual variance
:math:`V = a^2` (additive), :math:`b^2 f^2` (proportional) or :math:`a^2 + b^2 f^2` (combined).
With covariate effects (``effects=``, :mod:`synpmx_lite.pmx.covariates`) the typical value
is each patient's own, :math:`\log\theta_{ik} = \log\theta_k + \sum_c \beta_c z_{ic}` over
the effects on parameter :math:`k`; a patient's OFV term depends on :math:`\theta_k` and the
:math:`\beta_c` only through it, so that their exact gradient is the typical value's scaled by
:math:`z_{ic}`.

**Chosen random effects.** ``random=("cl", "v")`` gives only the named parameters an eta;
the others are typical values shared by every patient (:math:`\eta_{ik} = 0`). The fit
carries each of them with its between-subject SD held at :math:`10^{-5}`, not estimated: the
FOCE-I objective below tends to the objective without that eta as the SD goes to 0 (the
prior pins the mode at 0 and :math:`\log|\Omega| + \log|H_i/2|` loses the eta's term), and
at :math:`10^{-5}` the two differ by less than :math:`10^{-6}` in OFV (theo_sd and nimoData).
Such a parameter has no row in ``omega``, no column in ``eta``, and no variance in the
covariance step.

**A correlated pair.** ``correlated=("cl", "v")`` makes :math:`\Omega` a 2 x 2 block
for the two parameters' etas, diagonal elsewhere: :math:`\Omega = DRD`, :math:`D` the
between-subject SDs and :math:`R` the identity but for the pair's correlation
:math:`\rho = \tanh z`. The outer problem estimates the log SDs and Fisher's :math:`z`,
so that it stays unconstrained and :math:`\Omega` positive definite; the covariance step
gives :math:`\mathrm{SE}(z)`, and :math:`\mathrm{SE}(\rho) = (1 - \rho^2)\,\mathrm{SE}(z)`
by the delta method. :math:`\log|\Omega|` gains :math:`\log(1 - \rho^2)`, and the
derivatives below carry :math:`\Omega^{-1}` as a matrix (``pmx._foce``).

**Objective: FOCE with interaction (FOCE-I).** Each patient's marginal likelihood is
approximated by Laplace's method around the mode :math:`\hat\eta_i` of the joint density
(minimizing :math:`L_i(\eta) = \sum_j (\log V_{ij} + r_{ij}^2/V_{ij}) + \eta^\top\Omega^{-1}\eta`,
:math:`r = y - f`), with the Hessian replaced by its first-order (expected-information) form
:math:`H_i = \sum_j w_{ij}\, g_{ij} g_{ij}^\top + 2\Omega^{-1}`,
:math:`w = 2/V + (\partial V/\partial f)^2/V^2`, :math:`g_{ij} = \partial f_{ij}/\partial \eta_i`,
and :math:`V_{ij}` evaluated at :math:`\hat\eta_i` (the interaction). This is the objective
NONMEM's FOCE-I minimizes (Wang 2007). The objective function value (OFV) is

.. math::

    \sum_i \Big[L_i(\hat\eta_i) + \log|\Omega| + \log|H_i/2|\Big],

minus twice the log-likelihood less :math:`N_{obs} \log 2\pi`, as NONMEM reports it.

**Proportional error where the prediction or the observation is 0.** Under the proportional
model a prediction of exactly 0 (before the first dose, or before an absorption lag) gives
:math:`V = 0`: the likelihood of a non-zero observation there is 0, and the objective
infinite. As nlmixr2's FOCEi does, and as NONMEM users write ``IF (W.EQ.0) W = 1``, such a
variance is set to 1 (in squared observation units): the observation then adds :math:`y^2`
to the OFV whatever the parameters (Fidler 2021). And an observation of exactly 0 has, under
the proportional model, a density :math:`\propto 1/f` that grows without bound as the
prediction :math:`f` goes to 0: a fit could gain any amount by placing a patient's lag time
just before a sample measured as 0. Such observations are records below the limit of
quantification, and under proportional error they are left out of the likelihood, Beal's
method M1 (Beal 2001). Neither rule touches the additive or combined models, whose variance
is never 0. Both are conventions, not likelihoods, and the fit says where it used them
(``n_left_out``, ``n_unit_variance``, printed with the fit). A proportional fit that leaves
observations out is fitted to fewer data than an additive or combined one: their OFVs cannot
be compared. The variance of 1 is in the observations' units, so that the terms :math:`y^2`
depend on them: harmless for samples before the first dose, whose prediction is 0 whatever
the parameters (a constant in the OFV), but a fit that predicts 0 for a sample taken after a
dose (a lag time placed past it) trades the sample's fit for :math:`y^2`, and its estimates
change with the units. Such a fit is reported as not converged.

**Below the limit of quantification: Beal's M3.** An observation flagged censored
(``roles.cens`` 1, its value the limit :math:`L`) adds :math:`-2\log\Phi((L - f)/\sqrt{V})`,
minus twice the log-probability of a value below the limit, to :math:`L_i(\eta)` in place of
its normal term, in the modes and in the OFV alike, under the additive and proportional error
models and on log concentrations (Beal 2001; Ahn et al. 2008). Combined error on censored
data is refused: its additive part is set by the low concentrations the censoring hides, and
M3 can return it far off while reporting convergence (``benchmarks/bench_m3.py``). In
:math:`H_i` its weight is :math:`g''(z)(\partial z/\partial f)^2`
(``synpmx_lite.pmx._censored``): the term's exact second derivative in :math:`f` under
additive error, its Gauss-Newton part where :math:`V` moves with :math:`f`. This is FOCE-I
with the M3 likelihood, not NONMEM's M3 under ``LAPLACIAN``: the first-order :math:`H_i`
leaves out the prediction's curvature in :math:`\eta` for censored rows as for measured ones.
The OFV is then minus twice the log-likelihood less :math:`\log 2\pi` for each uncensored
observation only. A study without censored observations runs exactly the arithmetic it ran
before.

**Method.**

The objective, the modes and their derivatives are computed in the private module
``synpmx_lite.pmx._foce``; this module runs the search, the covariance step and the diagnostics.

* Derivatives: :math:`g` and the second derivatives :math:`\partial^2 f/\partial\eta^2` are
  exact, from the closed forms (``synpmx_lite.pmx.pk._sensitivities``); nothing is
  differentiated numerically inside the fit.
* Inner problem: the modes of all patients (and of several outer points) at once, by Newton
  steps on the exact Hessian of :math:`L_i` (its first-order form where the exact one is not
  positive definite), with step halving; each outer evaluation starts from the modes at the
  best point so far.
* Outer problem: typical values, between-subject SDs and residual errors, all on the log
  scale, by L-BFGS-B (:func:`scipy.optimize.minimize`) with the OFV's exact gradient: the
  envelope theorem for :math:`L_i`, and the implicit-function theorem for the dependence of
  :math:`\log|H_i|` on the modes (:math:`d\hat\eta/dx = -(\nabla^2_\eta L)^{-1}
  \nabla^2_{\eta x} L`).
* Starting values: naive pooled fits (all :math:`\eta = 0`) by
  :func:`scipy.optimize.least_squares` from non-compartmental estimates (dose over peak for
  the volume, terminal slope for clearance), several absorption rates and, for two
  compartments, a grid of distribution parameters. The OFV of every start is evaluated in
  one batch, and the search runs from the best (from the best three for two compartments);
  the fit reports the lowest optimum reached, and the table of runs (``starts``). A fit
  that leaves parameters without an eta (``random=``) also runs from the full model's
  optimum (an eta on every parameter, fitted first) with those SDs held, as NONMEM users
  start a reduced model: the reduced model's optimum is then never above that point's OFV.
* Covariance step: :math:`R`, the Hessian of the OFV in the estimated (log) parameters, by
  central differences of the exact gradient, and :math:`S = \sum_i \nabla O_i \nabla
  O_i^\top` from each patient's gradient. The covariance is :math:`2R^{-1}` (the inverse of
  the observed information, as nlme reports it) or the sandwich :math:`R^{-1} S R^{-1}`
  (NONMEM's default). Each patient's pull on the estimates is read by the infinitesimal
  jackknife (``jackknife``): with the patient's term :math:`O_i` removed, one Newton step
  :math:`R^{-1}\nabla O_i` from the optimum (Jaeckel 1972). Standard errors on the natural
  scale follow by the delta method
  (:math:`\mathrm{SE}(\theta) = \theta\, \mathrm{SE}(\log\theta)`), so that the relative
  standard error is :math:`100\,\mathrm{SE}(\log\theta)` %.
* Diagnostics: a fit is ``converged`` only when no parameter sits at a bound, no
  between-subject SD has collapsed to its floor or exceeds 2 on the log scale (a factor
  :math:`e^2 = 7.4` per SD is not a population), every mode converged, the covariance step
  succeeded, every parameter's 95 % interval is narrower than a factor 100 either way (RSE
  below 235 %), a Newton step from the optimum would gain less than 0.001 in OFV, and no
  sample after a dose is predicted as 0 under proportional error; otherwise a
  :class:`FitWarning` says what went wrong and ``converged`` is False.

Eta-shrinkage is :math:`1 - \mathrm{SD}(\hat\eta_k)/\omega_k`.

References
----------
Wang Y. Derivation of various NONMEM estimation methods. J Pharmacokinet Pharmacodyn.
2007;34(5):575-593.

Beal SL, Sheiner LB. NONMEM Users Guides. Icon Development Solutions; 1989-2009.

Savic RM, Karlsson MO. Importance of shrinkage in empirical Bayes estimates for diagnostics.
AAPS J. 2009;11(3):558-569.

Jaeckel LA. The infinitesimal jackknife. Bell Laboratories Memorandum MM 72-1215-11; 1972.

Beal SL. Ways to fit a PK model with some data below the quantification limit.
J Pharmacokinet Pharmacodyn. 2001;28(5):481-504.

Ahn JE, Karlsson MO, Dunne A, Ludden TM. Likelihood based approaches to handling data below
the quantification limit using NONMEM VI. J Pharmacokinet Pharmacodyn. 2008;35(4):401-421.

Fidler M. Problems with estimating a proportional error with SAEM. nlmixr issue 488, 2021.
https://github.com/nlmixrdevelopment/nlmixr/issues/488
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import pandas as pd
from scipy import linalg, optimize, special
from threadpoolctl import ThreadpoolController

from .._validation import check_count, check_rng
from . import _foce
from ._foce import (
    _LOG_BOUND,
    _TINY,
    _Evaluation,
    _joint,
    _mode_sensitivity,
    _modes,
    _ofv_and_gradient,
    _Problem,
    _residual_changes,
    _select,
)
from .covariates import CovariateEffect, parse_effects
from .pk import PkModel, _sensitivities
from .study import StudyEvents, _correlated_names, _random_names

__all__ = [
    "ERROR_MODELS",
    "WIDEST_OMEGA_SD",
    "FitWarning",
    "PopulationFit",
    "empirical_bayes_estimates",
    "fit_population",
    "importance_sampling_ofv",
]

#: Residual error models and the parameters each estimates: ``additive`` SD ``a`` (units of
#: the observations) and ``proportional`` fraction ``b``.
ERROR_MODELS = {
    "additive": ("additive",),
    "proportional": ("proportional",),
    "combined": ("additive", "proportional"),
}

_SAME_OPTIMUM = 0.02  # log scale: a search this close to an earlier run's optimum has joined it
_OMEGA_SD_BOUNDS = (0.01, 5.0)
# A parameter without a random effect is carried with its between-subject SD held here, not
# estimated: the FOCE-I objective tends to the one without that eta as the SD goes to 0, and
# at 1e-5 the two differ by about SD^2 times the patient's information (below 1e-6 in OFV
# on theo_sd; ``tests/pmx/test_random_effects.py`` checks it against an SD of 1e-7).
_NO_ETA_LOG_SD = float(np.log(1e-5))
#: The widest between-subject SD (log scale) a converged fit may have: one above it moves a
#: patient a factor e^2 = 7.4 per SD (a 95 % range of 2,500-fold), no longer a population of
#: similar patients, and is flagged.
WIDEST_OMEGA_SD = 2.0
# An exponent within +-10; a categorical level's factor within a factor 100 either way.
_EFFECT_BOUNDS = {False: (-10.0, 10.0), True: (-np.log(100.0), np.log(100.0))}
# Fisher's z of a correlation within +-5: |rho| up to 0.9999.
_CORRELATION_Z_BOUNDS = (-5.0, 5.0)
_TYPICAL_RANGE = np.log(100.0)  # typical values within a factor 100 of the start
_AT_BOUND = 1e-4  # on the log scale: a parameter this close to a bound sits on it
_HESSIAN_STEP = 1e-4  # central differences of the gradient, log scale
_NEWTON_GAIN = 1e-3  # OFV a Newton step from a converged optimum may still gain
# A log-scale SE above this gives a 95 % interval wider than a factor 100 either way: the
# data do not determine the parameter, however the Hessian's inverse came out.
_UNDETERMINED_LOG_SE = np.log(100.0) / 1.96
# The summary's columns as the printed fit heads them.
_SUMMARY_LABELS = {
    "se": "SE",
    "rse_percent": "RSE %",
    "ci_low": "95 % CI low",
    "ci_high": "95 % CI high",
    "shrinkage_percent": "shrinkage %",
}


@cache
def _thread_pools() -> ThreadpoolController:
    return ThreadpoolController()


class FitWarning(UserWarning):
    """A population fit not to be trusted as it stands (see ``PopulationFit.diagnostics``)."""


@dataclass(frozen=True)
class PopulationFit:
    """A fitted population PK model.

    Attributes
    ----------
    model : PkModel
        The structural model.
    error : str
        The residual error model (a key of :data:`ERROR_MODELS`).
    typical : pandas.Series
        Typical values, one per parameter of ``model``.
    omega : pandas.Series
        Between-subject variances of the log parameters (diagonal of :math:`\\Omega`), one
        per parameter with a random effect (``random``): a parameter without one has no row.
    residual : pandas.Series
        Residual error: ``additive`` SD and/or ``proportional`` fraction.
    eta : pandas.DataFrame
        Empirical Bayes random effects, one row per patient (index: source ID), one column
        per parameter with a random effect.
    shrinkage : pandas.Series
        Eta-shrinkage per parameter, between 0 and 1.
    ofv : float
        Objective function value (-2 log-likelihood less :math:`N_{obs}\\log 2\\pi`).
    converged : bool
        Whether the fit can be trusted: True only when ``diagnostics`` is empty.
    iterations : int
        Outer (L-BFGS-B) iterations of the run that reached the reported optimum.
    n_observations : int
        Observations in the likelihood.
    covariance : pandas.DataFrame or None
        Covariance of the estimates on the log scale, :math:`2R^{-1}` (rows and columns a
        MultiIndex of ``("typical" | "omega_sd" | "residual", name)``); None where the
        covariance step failed. Parameters at a bound are left out.
    sandwich : pandas.DataFrame or None
        The sandwich covariance :math:`R^{-1}SR^{-1}`, same layout.
    jackknife : pandas.DataFrame or None
        How far leaving out each patient moves each estimate on the scale it is estimated
        on (logs; an exponent as it stands), by the infinitesimal jackknife: one Newton step
        :math:`R^{-1}\\nabla O_i` from the optimum, :math:`O_i` the patient's OFV term (rows:
        patients as ``eta``; columns as ``covariance``). None where the covariance step
        failed.
    diagnostics : tuple of str
        What makes the fit untrustworthy, one sentence each (empty for a sound fit).
    starts : pandas.DataFrame or None
        One row per optimizer run, best start first: its starting typical values
        (``start cl``, ...), the OFV there, the OFV it reached, its iterations, and whether
        it stopped on reaching an earlier run's optimum (``joined_earlier_run``); the
        reported optimum is the lowest.
    n_left_out : int
        Observations of exactly 0 left out of the likelihood (proportional error only,
        Beal's M1; see :mod:`synpmx_lite.pmx.population`). Fits that leave out different
        observations have OFVs that cannot be compared.
    n_unit_variance : int
        Non-zero observations predicted as exactly 0 at the estimates, whose proportional
        error variance is set to 1 (each adds its squared value to the OFV).
    n_censored : int
        Observations below the limit of quantification (``roles.cens`` 1), which enter the
        likelihood by Beal's M3 (``synpmx_lite.pmx._censored``); they count in
        ``n_observations``.
    study : StudyEvents or None
        The study fitted, which :meth:`residuals` reads.
    effects : pandas.Series
        Covariate effects, indexed by their labels (:mod:`synpmx_lite.pmx.covariates`): the
        exponent of a continuous covariate, the factor :math:`e^{\\beta}` of a categorical
        level; empty for a fit without effects. ``typical`` then holds the typical values of
        a patient at every covariate's reference.
    effect_terms : tuple of CovariateEffect
        What each effect is (parameter, covariate, reference or level), in the order of
        ``effects``.
    covariate_shift : pandas.DataFrame or None
        What the effects add to each patient's log typical values (rows as ``eta``); None
        without effects.
    correlation : pandas.Series
        The correlation of a correlated pair's etas (``correlated=``), indexed ``"cl,v"``;
        empty for a diagonal Omega. The covariance step holds it as Fisher's z, ``arctanh``.
    """

    model: PkModel
    error: str
    typical: pd.Series
    omega: pd.Series
    residual: pd.Series
    eta: pd.DataFrame
    shrinkage: pd.Series
    ofv: float
    converged: bool
    iterations: int
    n_observations: int
    covariance: pd.DataFrame | None = None
    sandwich: pd.DataFrame | None = None
    jackknife: pd.DataFrame | None = None
    diagnostics: tuple[str, ...] = ()
    starts: pd.DataFrame | None = None
    n_left_out: int = 0
    n_unit_variance: int = 0
    n_censored: int = 0
    study: StudyEvents | None = field(default=None, repr=False, compare=False)
    effects: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))
    effect_terms: tuple[CovariateEffect, ...] = ()
    covariate_shift: pd.DataFrame | None = None
    correlation: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))

    @property
    def omega_sd(self) -> pd.Series:
        """Between-subject SDs on the log scale (about the CV)."""
        return np.sqrt(self.omega)

    @property
    def random(self) -> tuple[str, ...]:
        """The parameters with a random effect (the others are typical values only)."""
        return tuple(self.omega.index)

    @property
    def correlated(self) -> tuple[str, str] | None:
        """The two parameters whose etas are correlated (``correlation``), or None."""
        if not len(self.correlation):
            return None
        first, second = self.correlation.index[0].split(",")
        return first, second

    @property
    def n_patients(self) -> int:
        """Patients fitted."""
        return len(self.eta)

    def residuals(self) -> pd.DataFrame:
        """PRED, IPRED, WRES, CWRES and IWRES per observation (NONMEM's definitions; see
        :func:`synpmx_lite.pmx.diagnostics.fit_residuals`)."""
        from .diagnostics import fit_residuals  # diagnostics builds on this module

        if self.study is None:
            raise ValueError("this fit holds no study: call fit_residuals(fit, study)")
        return fit_residuals(self, self.study)

    @property
    def epsilon_shrinkage(self) -> float:
        """Epsilon-shrinkage, 1 - SD(IWRES) (Savic and Karlsson, 2009), beside the
        eta-shrinkage in ``shrinkage``."""
        from .diagnostics import epsilon_shrinkage

        return epsilon_shrinkage(self.residuals())

    @property
    def individual(self) -> pd.DataFrame:
        """Each patient's parameters: typical value, covariate effects and random effects."""
        names = list(self.model.parameters)
        log_values = np.log(self.typical[names].to_numpy(float)) + self.eta.reindex(
            columns=names, fill_value=0.0
        )
        if self.covariate_shift is not None:
            log_values = log_values + self.covariate_shift.to_numpy()
        return np.exp(log_values)

    def summary(self, method: str = "hessian") -> pd.DataFrame:
        r"""The parameter table of a PMX report: estimate, SE, RSE %, 95 % interval, shrinkage.

        Every parameter is estimated on the log scale, so that its RSE is
        :math:`100\,\mathrm{SE}(\log\theta)` and its 95 % interval
        :math:`\theta e^{\pm 1.96\,\mathrm{SE}(\log\theta)}` (never below 0); the SE on the
        natural scale follows by the delta method, :math:`\theta\,\mathrm{SE}(\log\theta)`.
        Between-subject variability is given as the SD of the log parameter (about the CV):
        its RSE is half that of the variance :math:`\omega^2`, which NONMEM reports.

        Parameters
        ----------
        method : {"hessian", "sandwich"}, default "hessian"
            Which covariance the standard errors come from.

        Returns
        -------
        pandas.DataFrame
            One row per estimated parameter (index ``(kind, name)`` with kind ``typical``,
            ``omega_sd`` or ``residual``); columns ``estimate``, ``se``, ``rse_percent``,
            ``ci_low`` and ``ci_high`` (the 95 % interval), and ``shrinkage_percent``: on a
            between-subject SD its eta-shrinkage, :math:`1 - \mathrm{SD}(\hat\eta_k)/\omega_k`
            (``shrinkage``), on every residual error row the fit's epsilon-shrinkage,
            :math:`1 - \mathrm{SD}(\mathrm{IWRES})` over the observations in the likelihood
            (``epsilon_shrinkage``; Savic and Karlsson, 2009; NaN for a fit that holds no
            study), as percentages, NaN
            elsewhere. SEs and intervals are NaN where the
            covariance step failed or the parameter sits at a bound.
        """
        if method not in ("hessian", "sandwich"):
            raise ValueError(f"method must be 'hessian' or 'sandwich', got {method!r}")
        parts = {"typical": self.typical, "omega_sd": self.omega_sd, "residual": self.residual}
        if len(self.effects):
            parts["effect"] = self.effects
        if len(self.correlation):
            parts["correlation"] = self.correlation
        estimates = pd.concat(parts, names=["kind", "parameter"])
        covariance = self.covariance if method == "hessian" else self.sandwich
        log_se = pd.Series(np.nan, index=estimates.index)
        if covariance is not None:
            log_se.loc[covariance.index] = np.sqrt(np.diag(covariance.to_numpy()))
        shrinkage = pd.Series(np.nan, index=estimates.index)
        shrinkage.loc["omega_sd"] = 100 * self.shrinkage.to_numpy()
        if self.study is not None:
            # One IWRES pool, so one epsilon-shrinkage for every residual error component.
            shrinkage.loc["residual"] = 100 * self.epsilon_shrinkage
        half_width = special.ndtri(0.975) * log_se
        table = pd.DataFrame(
            {
                "estimate": estimates,
                "se": estimates * log_se,
                "rse_percent": 100 * log_se,
                "ci_low": estimates * np.exp(-half_width),
                "ci_high": estimates * np.exp(half_width),
                "shrinkage_percent": shrinkage,
            }
        )
        # An exponent is estimated as it stands (it may be 0 or negative), not on a log scale.
        powers = [("effect", e.label) for e in self.effect_terms if not e.categorical]
        if powers:
            beta, se = estimates.loc[powers], log_se.loc[powers]
            table.loc[powers, "se"] = se
            table.loc[powers, "rse_percent"] = 100 * se / beta.abs()
            table.loc[powers, "ci_low"] = beta - half_width.loc[powers]
            table.loc[powers, "ci_high"] = beta + half_width.loc[powers]
        if len(self.correlation):
            table.loc["correlation"] = _correlation_rows(
                self.correlation, log_se.loc["correlation"]
            ).to_numpy()
        return table

    def __str__(self) -> str:
        status = "converged" if self.converged else "NOT converged"
        table = self.summary().rename(columns=_SUMMARY_LABELS)
        lines = [
            f"{self.model}; {self.n_patients} patients, {self.n_observations} observations, "
            f"{self.error} error",
            table.to_string(float_format=lambda v: f"{v:.3g}", na_rep="-"),
            f"OFV {self.ofv:.2f} ({status})",
        ]
        return "\n".join(lines + _fit_notes(self))


def _correlation_rows(rho: pd.Series, z_se: pd.Series) -> pd.DataFrame:
    """The summary's rows of a correlation estimated as Fisher's z: the SE by the delta
    method, :math:`(1 - \\rho^2)\\,\\mathrm{SE}(z)`, and the interval
    :math:`\\tanh(z \\pm 1.96\\,\\mathrm{SE}(z))`, inside (-1, 1). The RSE,
    :math:`\\mathrm{SE}/|\\rho|`, grows without bound as :math:`\\rho` nears 0, where a
    correlation may still be well determined: the fit's diagnostic that the data do not
    determine it reads the interval (nearly all of (-1, 1)) and quotes this RSE beside it."""
    z, half = np.arctanh(rho), special.ndtri(0.975) * z_se.to_numpy()
    se = (1 - rho**2) * z_se.to_numpy()
    return pd.DataFrame(
        {
            "estimate": rho,
            "se": se,
            "rse_percent": 100 * se / rho.abs(),
            "ci_low": np.tanh(z - half),
            "ci_high": np.tanh(z + half),
            "shrinkage_percent": np.nan,
        }
    )


def _wide_omega_message(name: str, sd: float, eta: np.ndarray) -> str:
    """The diagnostic of a between-subject SD past ``WIDEST_OMEGA_SD``, with the SD of the
    patients' random effects (``eta``, their EBEs) beside it: a figure of every patient, where
    their span would quote the two most extreme (the diagnostics reach the privacy checks)."""
    return (
        f"implausible variance: the between-subject SD of {name} is {sd:.3g} on the log "
        f"scale, above {WIDEST_OMEGA_SD:g}: one SD moves a patient's {name} by a factor "
        f"{np.exp(sd):.3g} (the SD of the patients' random effects, their EBEs, is "
        f"{np.std(eta):.3g}), which is not a population of similar patients: remove "
        "the random effect (eta) on "
        f"{name} if the data do not determine it, or find what makes patients differ so (a "
        "covariate, a subpopulation, an error in the data)"
    )


def _undetermined_message(
    key: tuple[str, str], label: str, value: float, se: float, residual: tuple[str, ...]
) -> str:
    """The diagnostic of an estimate whose SE on the search scale is past
    ``_UNDETERMINED_LOG_SE``, quoting the summary's RSE and interval of it, with the simpler
    model that drops it: the eta, or a combined error's other component alone (``residual``
    is the fit's residual components)."""
    kind, name = key
    if kind == "correlation":  # ``value`` is Fisher's z; the summary reads rho = tanh z
        row = _correlation_rows(pd.Series({name: np.tanh(value)}), pd.Series({name: se})).iloc[0]
        return (
            f"the data do not determine the correlation {name}: its 95 % interval "
            f"({row['ci_low']:.3g}, {row['ci_high']:.3g}) spans nearly all of (-1, 1) (RSE "
            f"{row['rse_percent']:.3g} %, SE of Fisher's z {se:.3g}); not identified: fit "
            "without correlated"
        )
    remedy = "; not identified"
    if kind == "omega_sd":
        remedy += f": remove the random effect (eta) on {name}"
    elif kind == "residual" and len(residual) == 2:
        (other,) = set(residual) - {name}
        remedy += f": fit error={other!r}, the combined error's other component alone"
    return (
        f"the data do not determine {label}: its RSE is {100 * se:.3g} % "
        f"(a 95 % interval wider than a factor 100 either way){remedy}"
    )


def _fit_notes(fit: PopulationFit) -> list[str]:
    """The printed fit's notes on the conventions it used, and its warnings."""
    notes = []
    if fit.n_left_out:
        notes.append(
            f"note: {fit.n_left_out} observations of 0 left out of the likelihood "
            "(proportional error, Beal's M1)"
        )
    if fit.n_censored:
        notes.append(
            f"note: {fit.n_censored} observations below the limit of quantification, "
            "fitted by Beal's M3 (the probability of a value below the limit)"
        )
    if fit.n_unit_variance:
        notes.append(
            f"note: {fit.n_unit_variance} non-zero observations predicted as 0, "
            "with variance 1 (they add their squares to the OFV)"
        )
    return notes + [f"warning: {message}" for message in fit.diagnostics]


def _unpacked_series(problem: _Problem, x: np.ndarray):
    """Typical values, omega, residual error and covariate effects as Series."""
    names = list(problem.model.parameters)
    _, log_sd, residual = (a[0] for a in problem.unpack(x[None]))
    residual_names = list(problem.residual_names)
    beta = x[problem.n_variance : problem.n_variance + problem.n_effects]
    factor = np.array([e.categorical for e in problem.effects], dtype=bool)
    return (
        pd.Series(np.exp(x[: problem.p]), index=names),
        pd.Series(np.exp(2 * log_sd[problem.random]), index=np.array(names)[problem.random]),
        pd.Series(residual[problem.residual_columns], index=residual_names),
        pd.Series(np.where(factor, np.exp(beta), beta), index=[e.label for e in problem.effects]),
        pd.Series(np.tanh(x[-1:]) if problem.pair else [], index=_pair_label(problem)),
    )


def _pair_label(problem: _Problem) -> list[str]:
    """The correlation's name, ``"cl,v"``, in a list (empty without a correlated pair)."""
    if problem.pair is None:
        return []
    return [",".join(problem.model.parameters[i] for i in problem.pair)]


def _parameter_index(problem: _Problem) -> pd.MultiIndex:
    names = list(problem.model.parameters)
    return pd.MultiIndex.from_tuples(
        [("typical", n) for n in names]
        + [("omega_sd", n) for n in names]
        + [("residual", n) for n in problem.residual_names]
        + [("effect", e.label) for e in problem.effects]
        + [("correlation", label) for label in _pair_label(problem)],
        names=["kind", "parameter"],
    )


# --- Starting values --------------------------------------------------------------------------


def _pooled_starts(problem: _Problem, study: StudyEvents) -> list[np.ndarray]:
    """Typical log values from naive pooled fits, started from non-compartmental estimates."""
    model = problem.model
    guess, peak_time = _nca_guess(problem, study)
    residuals, jacobian = _pooled_residuals(problem, study)
    absorption = (0.5, 2.0, 8.0) if model.route == "oral" else (None,)
    # Two compartments: peripheral volume and distribution clearance on a grid around V, CL.
    distribution = (
        ((0.3, 1.0), (3.0, 1.0), (1.0, 3.0), (3.0, 10.0)) if model.compartments == 2 else (None,)
    )
    starts = []
    for ka_factor in absorption:
        for shape in distribution:
            if ka_factor is not None:
                guess["ka"] = ka_factor / max(peak_time, 1e-3)
            if shape is not None:
                guess["q"] = shape[0] * guess["cl"]
                guess["vp"] = shape[1] * guess["v"]
            start = np.log([guess[name] for name in model.parameters])
            with np.errstate(all="ignore"):
                result = optimize.least_squares(
                    residuals, start, jac=jacobian, method="trf", loss="soft_l1", f_scale=0.5,
                    max_nfev=100,
                )  # fmt: skip
            # Within a factor 100 of the non-compartmental guess, however the pooled fit
            # went: data with no structure (noise) would otherwise start far out.
            start = np.clip(result.x, start - _TYPICAL_RANGE, start + _TYPICAL_RANGE)
            start = np.clip(start, -_LOG_BOUND + 1, _LOG_BOUND - 1)
            if all(np.abs(start - other).max() > 0.05 for other in starts):
                starts.append(start)
    if model.compartments == 2:
        starts += _spread_distribution(model, starts[0])
    return starts


def _nca_guess(problem: _Problem, study: StudyEvents) -> tuple[dict[str, float], float]:
    """Non-compartmental guesses of CL, V and the lag time, and the median time of the peak."""
    mask = study.obs_mask
    concentration = np.zeros(mask.shape)
    concentration[mask] = problem.concentration
    # Peak and its time within the first dose's interval, before any accumulation.
    later = np.where(study.dose_amount[:, 1:] > 0, study.dose_time[:, 1:], np.inf)
    second_dose = np.min(later, axis=1, initial=np.inf)[:, None]
    first_interval = mask & (study.obs_time < second_dose) & (study.obs_period == 0)
    first_interval[~first_interval.any(axis=1)] = mask[~first_interval.any(axis=1)]
    y = np.where(first_interval, concentration, -np.inf)
    peak = y.max(axis=1)
    volume = np.median(study.dose_amount[:, 0] / np.maximum(peak, 1e-12 * peak.max()))
    # Terminal slope from each patient's last three positive observations.
    positive = mask & (concentration > 0)
    times = np.where(positive, study.obs_time, np.nan)
    order = np.argsort(np.where(positive, study.obs_time, -np.inf), axis=1)[:, -3:]
    t_last = np.take_along_axis(times, order, axis=1)
    log_last = np.log(np.take_along_axis(np.where(positive, concentration, np.nan), order, 1))
    enough = np.isfinite(t_last).all(axis=1)
    centred = t_last[enough] - t_last[enough].mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = (centred * log_last[enough]).sum(axis=1) / (centred**2).sum(axis=1)
    slope = slope[np.isfinite(slope)]
    elimination = float(np.clip(-np.median(slope), 1e-4, 10.0)) if slope.size else 0.1
    peak_time = float(np.median(np.take_along_axis(study.obs_time, y.argmax(axis=1)[:, None], 1)))
    guess = {"cl": elimination * volume, "v": volume, "tlag": max(0.2 * peak_time, 0.05)}
    return guess, peak_time


def _pooled_residuals(problem: _Problem, study: StudyEvents) -> tuple:
    """The residuals of a naive pooled fit and their Jacobian, as functions of the typical log
    values: log-scale residuals of the positive concentrations, for a robust loss, so that one
    patient's gross error (values a thousand times too high) cannot drag the start."""
    model = problem.model
    kept = problem.concentration > 0
    if problem.censored is not None:  # a limit is not a measured value
        kept &= ~problem.censored
    log_observed = np.log(problem.concentration[kept])
    zeros = np.zeros((study.n_patients, problem.p))

    def residuals(log_theta: np.ndarray) -> np.ndarray:
        f, _, _ = _sensitivities(model, problem.dosing, zeros + log_theta, 0)
        return np.log(np.maximum(f[kept], _TINY)) - log_observed

    def jacobian(log_theta: np.ndarray) -> np.ndarray:
        f, g, _ = _sensitivities(model, problem.dosing, zeros + log_theta, 1)
        return g[kept] / np.maximum(f[kept], _TINY)[:, None]

    return residuals, jacobian


def _spread_distribution(model: PkModel, first: np.ndarray) -> list[np.ndarray]:
    """Starts that spread a two-compartment model's Q and Vp a factor 4 either way around
    ``first``: the pooled fits of the distribution parameters tend to one answer, and these let
    the search reach other optima (the OFV of every start is compared before any search runs).
    """
    names = list(model.parameters)
    q, vp = names.index("q"), names.index("vp")
    spread = []
    for shift_q, shift_vp in ((-1, -1), (-1, 1), (1, -1), (1, 1)):
        start = first.copy()
        start[q] += shift_q * np.log(4.0)
        start[vp] += shift_vp * np.log(4.0)
        spread.append(start)
    return spread


# --- The fit ----------------------------------------------------------------------------------


def _expected_curvature(problem: _Problem, evaluation: _Evaluation) -> np.ndarray:
    """A diagonal of the OFV's Hessian in the outer parameters, by expected information.

    Linearized, patient ``i`` estimates its log parameters with precision ``I_i / 2`` (``I_i``
    the first-order information of its data), so ``mu`` has information
    ``2 (Omega + 2 I_i^-1)^-1``, the log SD ``omega_k`` about ``4 (omega_k^2 / total_k)^2``,
    and each residual parameter ``(dV/dpsi)^2 / V^2`` per observation (all in -2 log L units).
    It only scales the search (so that L-BFGS-B's first step is about a Newton step).
    """
    t = evaluation.terms
    p = problem.p
    if problem.pair is None:
        omega = 1 / t["precision"][0, 0]
    else:  # the diagonal of Omega: its variances
        omega = np.exp(2 * evaluation.x[0, p : 2 * p])
    data = t["information"][0] - t["prior"][0]
    # (Omega + 2 I^-1)^-1 = I (Omega I + 2)^-1, which needs no inverse of I.
    ratio = np.linalg.solve(
        (omega[:, None] * data + 2 * problem.identity).swapaxes(-1, -2), data.swapaxes(-1, -2)
    ).swapaxes(-1, -2)
    curvature = np.empty(problem.k)
    per_patient = 2 * np.diagonal(ratio, axis1=-2, axis2=-1)
    curvature[:p] = per_patient.sum(axis=0)
    curvature[problem.n_variance : problem.n_variance + problem.n_effects] = (
        problem.effect_columns(per_patient[None])[0] * problem.design
    ).sum(axis=0)
    if problem.pair is not None:  # Fisher's z of a correlation: variance about 1 / n
        curvature[-1] = 2 * problem.n_patients
    explained = omega * np.diagonal(ratio, axis1=-2, axis2=-1)  # omega^2 / total, per patient
    curvature[p : 2 * p] = (4 * explained**2).sum(axis=0)
    for column, (dv, _) in enumerate(_residual_changes(problem, t)):
        curvature[2 * p + column] = ((dv * t["inverse"]) ** 2).sum()
    return np.sqrt(np.maximum(curvature, 1e-8 * curvature.max()))


def _minimize(problem: _Problem, start: _Evaluation, bounds, max_iterations: int, known=()):
    """L-BFGS-B from an evaluated start, with the exact gradient.

    The search runs in the outer parameters scaled by the square root of their expected
    curvature (``_expected_curvature``). Each evaluation starts the modes from the best
    point's, moved to first order by their sensitivity to the outer parameters (at most 0.5
    on the log scale), so that a few Newton steps find them; a wild trial point of the line
    search cannot drag the next start. A search that comes within ``_SAME_OPTIMUM`` of an
    optimum in ``known`` (earlier runs' best points) stops there: it has joined it.
    """
    start = _modes(problem, start.x, start.eta)
    best = {"x": start.x[0], "ofv": np.inf, "joined": False}
    scale = _expected_curvature(problem, start)

    def keep(evaluation: _Evaluation, total: float) -> None:
        best.update(
            x=evaluation.x[0].copy(),
            ofv=total,
            eta=evaluation.eta[0],
            sensitivity=_mode_sensitivity(problem, evaluation)[0],
        )

    ofv, gradient = _ofv_and_gradient(problem, start)
    keep(start, float(ofv.sum()))
    first = {"z": start.x[0] * scale, "ofv": best["ofv"], "gradient": gradient.sum(axis=(0, 1))}

    def objective(z: np.ndarray) -> tuple[float, np.ndarray]:
        if np.array_equal(z, first["z"]):
            return first["ofv"], first["gradient"] / scale
        x = z / scale
        shift = np.clip(best["sensitivity"] @ (x - best["x"]), -0.5, 0.5)
        evaluation = _modes(problem, x[None], (best["eta"] + shift)[None])
        ofv, gradient = _ofv_and_gradient(problem, evaluation)
        total = float(ofv.sum())
        if not np.isfinite(total):
            return np.inf, np.zeros(x.size)
        if total < best["ofv"]:
            keep(evaluation, total)
        return total, gradient.sum(axis=(0, 1)) / scale

    def joined(intermediate_result: optimize.OptimizeResult) -> None:
        x = intermediate_result.x / scale
        if any(np.abs(x - other).max() < _SAME_OPTIMUM for other in known):
            best["joined"] = True
            raise StopIteration

    result = optimize.minimize(
        objective,
        first["z"],
        jac=True,
        method="L-BFGS-B",
        bounds=[(low * s, high * s) for (low, high), s in zip(bounds, scale, strict=True)],
        options={"maxiter": max_iterations, "ftol": 1e-12, "gtol": 1e-6, "maxcor": 20},
        callback=joined,
    )
    return best, result


def fit_population(
    study: StudyEvents,
    *,
    model: PkModel | None = None,
    error: str | None = None,
    effects: tuple[str, ...] | list[str] | None = None,
    random: tuple[str, ...] | list[str] | None = None,
    correlated: tuple[str, str] | list[str] | None = None,
    max_iterations: int = 300,
    start: PopulationFit | None = None,
) -> PopulationFit:
    """Fit a population PK model to a study's PK endpoint by FOCE-I.

    Parameters
    ----------
    study : StudyEvents
        The study (:func:`synpmx_lite.pmx.study.prepare_study`).
    model : PkModel, optional
        The structural model; default the one in the study's roles.
    error : {"combined", "additive", "proportional"}, optional
        The residual error model; default ``"combined"``, or ``"additive"`` for log
        concentrations (``roles.log_dv``), which is then the only one allowed.
    effects : sequence of str, optional
        Covariate effects on typical values, as formulas ``"cl ~ wt/70"`` (a power of a
        continuous covariate over a reference, default its median) or ``"cl ~ sex"`` (a
        factor for each level of a categorical one but the most common): see
        :mod:`synpmx_lite.pmx.covariates`. Default the roles' ``effects``; ``()`` for none.
    random : sequence of str, optional
        The parameters with between-subject variability (an eta), e.g. ``("cl", "v")``; the
        others are typical values shared by every patient, with no omega in the fit's
        ``omega`` or ``summary()`` and no column in ``eta``. Default the roles' ``random``
        (every parameter of the model unless they name some).
    correlated : pair of str, optional
        Two parameters with an eta whose etas are correlated (a 2 x 2 block of Omega), e.g.
        ``("cl", "v")``; their correlation is estimated as :math:`\\tanh z` and reported in
        ``correlation`` and a ``("correlation", "cl,v")`` row of ``summary()``. Default the
        roles' ``correlated`` (none: a diagonal Omega).
    max_iterations : int, default 300
        Most L-BFGS-B iterations of each run of the outer problem.
    start : PopulationFit, optional
        A fit of the same model to these patients and a few more (a leave-one-out refit's
        full fit): one run searches from its estimates and its patients' random effects, in
        place of the pooled starts and the other runs (the flip-flop mirror is still
        searched). The refit stays in the full fit's basin, as an exact jackknife move wants,
        and finds no other optimum the pooled starts might reach. Where the covariate
        effects read from these patients differ from the start's (another median reference,
        another most common level), the search runs from the pooled starts instead.

    Returns
    -------
    PopulationFit
        Typical values, omega, residual error, empirical Bayes random effects, shrinkage,
        OFV, the covariance step, diagnostics and convergence.

    Raises
    ------
    ValueError
        For an unknown error model, a proportional error on log concentrations, an oral
        model for a study with infusions, fewer than one iteration, concentrations none of
        which is positive, or an effect that does not parse or names a parameter or
        covariate the fit lacks.

    Warns
    -----
    FitWarning
        When the fit must not be trusted (``converged`` False): a parameter at a bound, a
        between-subject SD at its floor or above 2 on the log scale, a mode not found, a
        failed covariance step, a parameter the data do not determine (RSE above 235 %), an
        optimizer stopped away from a stationary point, or (proportional error) a sample
        after a dose predicted as 0.

    Notes
    -----
    The method (FOCE-I) is described in the module docstring. Between-subject SDs are
    bounded to [0.01, 5] on the log scale; typical values to a factor 100 either side of
    their start.
    """
    model, error = _checked_model_and_error(study, model, error)
    if study.roles.log_dv and error != "additive":
        raise ValueError("log concentrations (roles.log_dv) take error='additive'")
    central = study.dose_central if study.dose_central is not None else False
    if model.route == "oral" and np.any((study.dose_duration > 0) & ~central):
        raise ValueError(
            f"model {model} takes no infusions into the depot, and the study's doses include "
            "infusions: use PkModel(route='iv'), or give them into the central compartment "
            "(roles.cmt)"
        )
    max_iterations = check_count(max_iterations, "max_iterations")
    terms = _study_effects(study, model, effects)
    random = _random_parameters(model, study.roles.random if random is None else random)
    pair = _correlated_pair(
        model, random, study.roles.correlated if correlated is None else correlated
    )
    if not study.roles.log_dv and not np.any(study.obs_dv[study.obs_mask] > 0):
        raise ValueError(
            "study has no positive concentration of its PK endpoint: every DV is zero or "
            "negative, and a PK model cannot be fitted"
        )
    # Every matrix here is at most 10 x 10: threads of the BLAS library only add their
    # start-up and synchronization, which on a loaded machine costs more than the fit itself.
    with _thread_pools().limit(limits=1, user_api="blas"):
        if start is not None:
            return _refit(study, start, model, error, max_iterations, terms, random, pair)
        return _fit(study, model, error, max_iterations, terms, random, pair)


def _refit(
    study: StudyEvents,
    start: PopulationFit,
    model: PkModel,
    error: str,
    max_iterations: int,
    effects: tuple,
    random: tuple[str, ...],
    pair: tuple[int, int] | None,
) -> PopulationFit:
    """``_fit`` with one run, from ``start``'s estimates and its patients' random effects."""
    if not isinstance(start, PopulationFit):
        raise TypeError(f"start must be a PopulationFit, got {type(start).__name__}")
    same = (start.model, start.error, tuple(start.random)) == (model, error, random)
    missing = set(study.ids.tolist()) - set(start.eta.index.tolist())
    if same and not missing and tuple(start.effect_terms) != tuple(effects):
        # References or levels read again from these patients (a median, a tied most common
        # level) make other coefficients under the same names: no start from the full fit.
        return _fit(study, model, error, max_iterations, effects, random, pair)
    if (
        not same
        or missing
        or len(start.effect_terms) != len(effects)
        or (len(start.correlation) != int(pair is not None))
    ):
        raise ValueError(
            "start must be a fit of the same model, error, effects and random effects to "
            "these patients and others"
            + (f" (it lacks patients {sorted(missing)[:6]})" if missing else "")
        )
    problem = _Problem(
        study,
        model,
        error,
        ERROR_MODELS[error],
        effects,
        random=np.isin(model.parameters, random),
        pair=pair,
    )
    x0 = _outer_point(start)
    eta = np.zeros((study.n_patients, problem.p))
    eta[:, problem.random] = start.eta.loc[study.ids].to_numpy(dtype=float)
    evaluated = _modes(problem, x0[None], eta[None])
    start_ofv = float(_ofv_and_gradient(problem, evaluated)[0].sum())
    residual_bounds = _residual_bounds(problem)
    bounds = _search_bounds(problem, _outer_point(start), residual_bounds)
    best, result = _minimize(problem, evaluated, bounds, max_iterations)
    mirror = _flip_flop_mirror(problem, study, best, residual_bounds, max_iterations)
    starts = pd.DataFrame(
        np.exp([x0[: problem.p]]), columns=[f"start {name}" for name in model.parameters]
    )
    starts["start_ofv"], starts["ofv"] = start_ofv, best["ofv"]
    starts["iterations"], starts["joined_earlier_run"] = int(result.nit), False
    return _finish(problem, study, best, result, np.array(bounds), starts, mirror)


def _study_effects(study: StudyEvents, model: PkModel, effects: object):
    """The covariate effects of formulas (default the roles'), read against the study."""
    effects = study.roles.effects if effects is None else effects
    return parse_effects(
        effects,
        study.covariates[list(study.roles.covariates)],
        study.roles.categorical,
        tuple(model.parameters),
    )


def _random_parameters(model: PkModel, random: object) -> tuple[str, ...]:
    """The parameters of ``model`` with a random effect, in the model's order: every one for
    ``None``, else those named (each once, at least one; a ``ValueError`` otherwise)."""
    named = _random_names(random, model)
    return tuple(name for name in model.parameters if named is None or name in named)


def _correlated_pair(
    model: PkModel, random: tuple[str, ...], correlated: object
) -> tuple[int, int] | None:
    """The indices (model order) of the two parameters whose etas are correlated, or None."""
    names = _correlated_names(correlated, model, random)
    return None if names is None else tuple(model.parameters.index(n) for n in names)


def _checked_model_and_error(study: object, model: object, error: object) -> tuple[PkModel, str]:
    """``study`` checked, with the model (default the study's own) and the error model
    (default ``"additive"`` for log concentrations, else ``"combined"``) checked."""
    if not isinstance(study, StudyEvents):
        raise TypeError(f"study must be a StudyEvents, got {type(study).__name__}")
    model = study.roles.model if model is None else model
    if not isinstance(model, PkModel):
        raise TypeError(f"model must be a PkModel, got {type(model).__name__}")
    defaulted = error is None
    if defaulted:
        error = "additive" if study.roles.log_dv else "combined"
    if not isinstance(error, str) or error not in ERROR_MODELS:
        raise ValueError(f"error must be one of {sorted(ERROR_MODELS)}, got {error!r}")
    _refuse_censored_combined(study, error, defaulted=defaulted)
    return model, error


def _refuse_censored_combined(study: StudyEvents, error: str, *, defaulted: bool) -> None:
    """Refuse combined error on censored data: its additive part is set by the low
    concentrations that censoring hides, and M3 then can return it far off while reporting
    convergence (``benchmarks/bench_m3.py`` measures how far); ``defaulted`` says the error
    model was the default's, not the caller's."""
    if error != "combined" or study.obs_censored is None:
        return
    chosen = " (the default on a linear scale)" if defaulted else ""
    rows = study.obs_censored & study.obs_mask
    if rows.any():
        patient, slot = np.argwhere(rows)[0]
        raise ValueError(
            f"error='combined'{chosen} cannot be fitted to censored observations (column "
            f"{study.roles.cens!r}, {int(rows.sum())} rows; the first of patient "
            f"{study.ids[patient]!r} at time {study.obs_time[patient, slot]:g}): the additive "
            "part of the error is set by the concentrations near and below the limit, which "
            "M3 sees only as probabilities, so that it is not identified where the limit lies "
            "well above the concentration at which the two parts are equal, and the fit "
            "reports convergence all the same (benchmarks/bench_m3.py: three times the truth); "
            "fit error='proportional' or error='additive'"
        )


def _fit(
    study: StudyEvents,
    model: PkModel,
    error: str,
    max_iterations: int,
    effects: tuple,
    random: tuple[str, ...],
    pair: tuple[int, int] | None = None,
) -> PopulationFit:
    random_mask = np.isin(model.parameters, random)
    problem = _Problem(
        study, model, error, ERROR_MODELS[error], effects, random=random_mask, pair=pair
    )
    p, n = problem.p, study.n_patients
    spread = float(np.median(np.abs(problem.y[problem.y != 0]))) if np.any(problem.y) else 1.0
    residual0 = {"additive": np.log(0.1 * spread), "proportional": np.log(0.1)}
    tail = np.r_[
        np.where(problem.random, np.log(0.3), _NO_ETA_LOG_SD),
        [residual0[name] for name in ERROR_MODELS[error]],
        np.zeros(problem.n_effects),  # no covariate effect
        np.zeros(int(pair is not None)),  # uncorrelated
    ]
    candidates = np.array([np.r_[start, tail] for start in _pooled_starts(problem, study)])
    # Screen every start by its OFV (one batch), and search from the best. Rough modes rank
    # the starts well enough; each search refines its own.
    screen = _modes(
        problem, candidates, np.zeros((len(candidates), n, p)), tolerance=1e-3, iterations=10
    )
    screened = _ofv_and_gradient(problem, screen)[0].sum(axis=-1)
    runs = 3 if model.compartments == 2 else 1
    chosen = np.argsort(np.where(np.isfinite(screened), screened, np.inf))[:runs]
    residual_bounds = _residual_bounds(problem)
    runs = [(candidates[i], _select(screen, i), float(screened[i])) for i in chosen]
    full = _full_model_start(study, model, error, max_iterations, effects, problem)
    if full is not None:
        runs.append(full)
    outcomes = []
    for x0, start, start_ofv in runs:
        bounds = _search_bounds(problem, x0, residual_bounds)
        known = [o[0]["x"] for o in outcomes]
        best, result = _minimize(problem, start, bounds, max_iterations, known)
        outcomes.append((best, result, bounds, start_ofv))
    best, result, bounds, _ = min(outcomes, key=lambda o: o[0]["ofv"])
    starts = pd.DataFrame(
        np.exp([run[0][:p] for run in runs]),
        columns=[f"start {name}" for name in model.parameters],
    )
    starts["start_ofv"] = [o[3] for o in outcomes]
    starts["ofv"] = [o[0]["ofv"] for o in outcomes]
    starts["iterations"] = [int(o[1].nit) for o in outcomes]
    starts["joined_earlier_run"] = [o[0]["joined"] for o in outcomes]
    mirror = _flip_flop_mirror(problem, study, best, residual_bounds, max_iterations)
    return _finish(problem, study, best, result, np.array(bounds), starts, mirror)


def _residual_bounds(problem: _Problem) -> dict:
    """The search range of each residual error: an additive one from 1e-4 to 10 times the
    median absolute observation, a proportional one from 0.1 % to 200 %."""
    y = problem.y
    spread = float(np.median(np.abs(y[y != 0]))) if np.any(y) else 1.0
    return {
        "additive": (np.log(1e-4 * spread), np.log(10 * spread)),
        "proportional": (np.log(1e-3), np.log(2.0)),
    }


def _full_model_start(
    study: StudyEvents,
    model: PkModel,
    error: str,
    max_iterations: int,
    effects: tuple,
    problem: _Problem,
) -> tuple[np.ndarray, _Evaluation, float] | None:
    """For a fit with parameters left without an eta, a start at the full model's optimum
    (an eta on every parameter) with those SDs held near 0, as NONMEM users start a reduced
    model from the full one's estimates; None when every parameter has an eta.

    The pooled starts can all lead the reduced search to one local optimum (nimoData
    without an eta on Q: OFV 128.8 from every pooled start, 116.6 from the full model's
    estimates); the run from here is one more row of the fit's ``starts``.
    """
    if problem.random.all():
        return None
    with warnings.catch_warnings():  # only its estimates are used, not its diagnostics
        warnings.simplefilter("ignore", FitWarning)
        full = _fit(
            study, model, error, max_iterations, effects, tuple(model.parameters), problem.pair
        )
    x0 = _outer_point(full)
    p = problem.p
    x0[p : 2 * p] = np.where(problem.random, x0[p : 2 * p], _NO_ETA_LOG_SD)
    start = _modes(problem, x0[None], np.where(problem.random, full.eta.to_numpy(), 0.0)[None])
    return x0, start, float(_ofv_and_gradient(problem, start)[0].sum())


def _outer_point(fit: PopulationFit) -> np.ndarray:
    """A fit's estimates as the outer point of its problem (log scale; exponents as they
    stand), a parameter without an eta at the held SD."""
    names = list(fit.model.parameters)
    factor = np.array([e.categorical for e in fit.effect_terms], dtype=bool)
    effects = fit.effects.to_numpy(dtype=float)
    log_sd = 0.5 * np.log(fit.omega.reindex(names).to_numpy(dtype=float))
    return np.r_[
        np.log(fit.typical[names].to_numpy(dtype=float)),
        np.where(np.isin(names, fit.random), log_sd, _NO_ETA_LOG_SD),
        np.log(fit.residual[list(ERROR_MODELS[fit.error])].to_numpy(dtype=float)),
        np.where(factor, np.log(np.where(factor, effects, 1.0)), effects),
        np.arctanh(fit.correlation.to_numpy(dtype=float)),
    ]


def _search_bounds(problem: _Problem, x0: np.ndarray, residual_bounds: dict) -> list:
    """The search range: typical values within a factor 100 of the start, SDs, residual
    errors and covariate effects within their bounds."""
    p = problem.p
    bounds = [(m - _TYPICAL_RANGE, m + _TYPICAL_RANGE) for m in x0[:p]]
    held = (_NO_ETA_LOG_SD, _NO_ETA_LOG_SD)
    bounds += [tuple(np.log(_OMEGA_SD_BOUNDS)) if r else held for r in problem.random]
    bounds += [residual_bounds[name] for name in ERROR_MODELS[problem.error]]
    bounds += [_EFFECT_BOUNDS[effect.categorical] for effect in problem.effects]
    return bounds + ([_CORRELATION_Z_BOUNDS] if problem.pair is not None else [])


def _flip_flop_mirror(
    problem: _Problem, study: StudyEvents, best: dict, residual_bounds: dict, max_iterations: int
) -> dict | None:
    """The optimum a search reaches from the flip-flop mirror of a one-compartment oral fit
    whose absorption is slower than its elimination (ka < CL/V), or None for any other fit.

    After oral doses alone the typical curve is the same with ka and CL/V swapped (V becoming
    CL/ka): on the flip-flop side the volume can come out a thirtieth of the drug's. Only the
    random effects tell the two optima apart, and IV doses into the central compartment do.
    """
    model = problem.model
    if model.compartments != 1 or model.route != "oral" or study.dose_central is not None:
        return None
    x = best["x"].copy()
    cl, v, ka = (model.parameters.index(name) for name in ("cl", "v", "ka"))
    if x[ka] >= x[cl] - x[v]:
        return None
    x[v], x[ka] = x[cl] - x[ka], x[cl] - x[v]
    p = problem.p
    if problem.random[v] == problem.random[ka]:  # each SD follows its rate constant
        x[p + v], x[p + ka] = x[p + ka], x[p + v]
    start = _modes(
        problem, x[None], np.zeros((1, study.n_patients, p)), tolerance=1e-3, iterations=10
    )
    bounds = _search_bounds(problem, x, residual_bounds)
    mirror, _ = _minimize(problem, _select(start, 0), bounds, max_iterations)
    return mirror


def _finish(problem, study, best, result, bounds, starts, mirror=None) -> PopulationFit:
    """Covariance step, diagnostics and the fit object at the best point found."""
    x = best["x"]
    final = _modes(problem, x[None], best["eta"][None])
    ofv_terms, gradient_terms = _ofv_and_gradient(problem, final)
    ofv = float(ofv_terms.sum())
    index = _parameter_index(problem)
    free, diagnostics = _bound_diagnostics(problem, x, bounds, final, index)
    covariance, sandwich, jackknife, step_diagnostics = _covariance_step(
        problem, study, x, final, gradient_terms[0], free, index, result
    )
    diagnostics += step_diagnostics
    if not np.isfinite(ofv):
        diagnostics.append("the OFV is not finite at the reported optimum")
    if mirror is not None:
        diagnostics.append(_flip_flop_message(problem.model, x, ofv, mirror))
    n_left_out = 0 if problem.left_out is None else int(problem.left_out.sum())
    unit_variance, n_censored, escaped = _unit_variance_rows(problem, final)
    if escaped:
        diagnostics.append(
            f"{escaped} non-zero observations taken after a dose are predicted as "
            "exactly 0 (before a patient's lag time): under proportional error their variance "
            "is set to 1, so that they add y^2 whatever the fit and the estimates depend on "
            "the units of the observations; fit the combined error model"
        )
    typical, omega, residual, effects, correlation = _unpacked_series(problem, x)
    parameter_names = list(problem.model.parameters)
    eta_table = pd.DataFrame(
        final.eta[0][:, problem.random],
        index=pd.Index(study.ids, name="id"),
        columns=omega.index,
    )
    fit = PopulationFit(
        model=problem.model,
        error=problem.error,
        typical=typical,
        omega=omega,
        residual=residual,
        eta=eta_table,
        shrinkage=1 - eta_table.std(ddof=0) / np.sqrt(omega),
        ofv=ofv,
        converged=not diagnostics,
        iterations=int(result.nit),
        n_observations=problem.n_obs - n_left_out,
        covariance=covariance,
        sandwich=sandwich,
        jackknife=jackknife,
        diagnostics=tuple(diagnostics),
        starts=starts,
        n_left_out=n_left_out,
        n_unit_variance=int(unit_variance.sum()),
        n_censored=n_censored,
        study=study,
        effects=effects,
        effect_terms=problem.effects,
        correlation=correlation,
        covariate_shift=None
        if not problem.effects
        else pd.DataFrame(
            problem.covariate_shift(x[None])[0], index=eta_table.index, columns=parameter_names
        ),
    )
    if diagnostics:
        warnings.warn(
            f"{problem.model} fit ({problem.error} error) is not to be trusted: "
            + "; ".join(diagnostics),
            FitWarning,
            stacklevel=4,
        )
    return fit


def _bound_diagnostics(problem, x, bounds, final, index) -> tuple[np.ndarray, list[str]]:
    """Which parameters are free at ``x`` (neither at a bound nor held), and what is wrong
    there: a between-subject SD at its floor or implausibly wide, an estimate at a bound of
    its search range, modes that did not converge."""
    p, k = problem.p, problem.k
    low, high = bounds.T
    held = np.r_[np.zeros(p, dtype=bool), ~problem.random, np.zeros(k - 2 * p, dtype=bool)]
    at_low, at_high = (x - low < _AT_BOUND) & ~held, (high - x < _AT_BOUND) & ~held
    diagnostics = []
    floor = at_low & (np.arange(k) >= p) & (np.arange(k) < 2 * p)
    for i in np.flatnonzero(floor):
        diagnostics.append(
            f"the between-subject SD of {index[i][1]} collapsed to its floor "
            f"({_OMEGA_SD_BOUNDS[0]}): the data do not identify it (not identified: "
            f"remove the random effect (eta) on {index[i][1]})"
        )
    omega_sd = (np.arange(k) >= p) & (np.arange(k) < 2 * p) & ~held
    for i in np.flatnonzero(omega_sd & (x > np.log(WIDEST_OMEGA_SD))):
        sd, eta = float(np.exp(x[i])), final.eta[0][:, i - p]
        diagnostics.append(_wide_omega_message(index[i][1], sd, eta))
    for i in np.flatnonzero((at_low | at_high) & ~floor):
        kind, name = index[i]
        diagnostics.append(f"{kind} {name} sits at a bound of its search range")
    if not final.converged.all():
        # Rows of ``eta``, not source IDs: the diagnostics are quoted in the privacy checks.
        bad = np.flatnonzero(~final.converged[0])
        diagnostics.append(
            f"the modes of {bad.size} patients did not converge within {_foce._MODE_ITERATIONS} "
            f"Newton steps (first: row {bad[0]} of eta)"
        )
    return ~(at_low | at_high | held), diagnostics


def _covariance_step(problem, study, x, final, gradient_terms, free, index, result) -> tuple:
    """The covariance step over the free parameters: R by central differences of the exact
    gradient, S from each patient's gradient (``gradient_terms``), the infinitesimal jackknife,
    and what they say is wrong (an estimate the data do not determine, an optimizer stopped
    short of a stationary point, a Hessian that is not positive definite).

    Returns ``(covariance, sandwich, jackknife, diagnostics)``, the first three None where the
    step failed.
    """
    k = problem.k
    labels = [
        f"the between-subject SD of {name}" if kind == "omega_sd" else f"{kind} {name}"
        for kind, name in index
    ]
    free_index = np.flatnonzero(free)
    m = free_index.size
    free_gradient = gradient_terms.sum(axis=0)[free_index]
    try:
        if m == 0:
            raise linalg.LinAlgError("every parameter sits at a bound")
        steps = _HESSIAN_STEP * np.eye(k)[free_index]
        points = np.vstack([x + steps, x - steps])
        shifted = _modes(
            problem, points, np.broadcast_to(final.eta[0], (len(points), *final.eta[0].shape))
        )
        shifted_gradient = _ofv_and_gradient(problem, shifted)[1].sum(axis=1)
        r = (shifted_gradient[:m] - shifted_gradient[m:])[:, free_index] / (2 * _HESSIAN_STEP)
        r = (r + r.T) / 2
        if not np.isfinite(r).all():
            raise linalg.LinAlgError("a non-finite R matrix")
        r_inverse = linalg.cho_solve(linalg.cho_factor(r), np.eye(m))
    except linalg.LinAlgError:
        failed = (
            "the covariance step failed: the Hessian of the OFV is not positive definite at "
            "the optimum (a parameter the data do not determine)"
        )
        return None, None, None, [failed]
    s = np.einsum("nk,nl->kl", *(2 * [gradient_terms[:, free_index]]))
    free_names = index[free_index]
    covariance = pd.DataFrame(2 * r_inverse, index=free_names, columns=free_names)
    sandwich = pd.DataFrame(r_inverse @ s @ r_inverse, index=free_names, columns=free_names)
    # Leaving patient i out removes O_i, whose gradient g_i then drives a Newton step
    # R^-1 g_i from the optimum: the infinitesimal jackknife.
    jackknife = pd.DataFrame(
        gradient_terms[:, free_index] @ r_inverse,
        index=pd.Index(study.ids, name="id"),
        columns=free_names,
    )
    diagnostics = []
    log_se = np.sqrt(2 * np.diag(r_inverse))
    for i, se in zip(free_index, log_se, strict=True):
        if se > _UNDETERMINED_LOG_SE:
            residual = tuple(name for kind, name in index if kind == "residual")
            diagnostics.append(_undetermined_message(index[i], labels[i], x[i], se, residual))
    gain = 0.5 * free_gradient @ r_inverse @ free_gradient
    if gain > _NEWTON_GAIN:
        diagnostics.append(
            f"the optimizer did not converge: it stopped ({result.message}) where a "
            "Newton step would still "
            f"lower the OFV by {gain:.3g}: not a stationary point"
        )
    return covariance, sandwich, jackknife, diagnostics


def _unit_variance_rows(problem, final) -> tuple[np.ndarray, int, int]:
    """The observations whose variance is set to 1 (predicted exactly 0 under proportional
    error), the censored rows' count, and how many unit-variance rows follow a dose."""
    unit_variance = final.terms["zero"][0] & (problem.y != 0)
    n_censored = 0
    if problem.censored is not None:  # M3 gives such a row probability 1, not variance 1
        unit_variance &= ~problem.censored
        n_censored = int(problem.censored.sum())
    return unit_variance, n_censored, int((unit_variance & problem.after_dose).sum())


def _flip_flop_message(model: PkModel, x: np.ndarray, ofv: float, mirror: dict) -> str:
    """What is wrong with a flip-flop optimum: a lower optimum elsewhere (a local optimum),
    or a mirror the data barely tell from it (not identified)."""
    names = model.parameters
    v, v_mirror = np.exp(x[names.index("v")]), np.exp(mirror["x"][names.index("v")])
    ka, rate = np.exp(x[names.index("ka")]), np.exp(x[names.index("cl")] - x[names.index("v")])
    side = (
        f"ka ({ka:.3g}) is below the elimination rate CL/V ({rate:.3g}), and V is "
        f"{v:.3g} against {v_mirror:.3g} at the flip-flop mirror (ka and CL/V swapped)"
    )
    if mirror["ofv"] < ofv - _NEWTON_GAIN:
        return (
            f"a local optimum: another start, the flip-flop mirror, reached an OFV lower by "
            f"{ofv - mirror['ofv']:.3g}; {side}"
        )
    return (
        f"not identified: {side}; after oral doses the two have the same typical curve and "
        f"only the random effects separate their OFVs (the mirror's is "
        f"{mirror['ofv'] - ofv:.3g} higher), so a flip-flop fit needs IV doses or prior "
        "knowledge to be trusted"
    )


def importance_sampling_ofv(
    study: StudyEvents, fit: PopulationFit, *, draws: int = 2000, seed: object = 1
) -> tuple[float, float]:
    r"""The OFV at a fit's estimates without the Laplace approximation, by importance sampling.

    Each patient's marginal likelihood :math:`\int p(y_i \mid \eta) p(\eta)\, d\eta` is
    estimated with ``draws`` draws from a multivariate t distribution (5 degrees of freedom)
    centred on the patient's mode, scaled by the inverse of the exact Hessian there, as
    NONMEM's importance-sampling evaluation does. It checks FOCE-I's objective, or decides
    between two candidate optima, free of either's approximation.

    Parameters
    ----------
    study : StudyEvents
        The study the fit was made on.
    fit : PopulationFit
        Its model, error model and estimates (``typical``, ``omega``, ``residual``) are used;
        a copy with other estimates (:func:`dataclasses.replace`) evaluates those.
    draws : int, default 2000
        Draws per patient.
    seed : int or numpy.random.Generator, default 1
        The random draws.

    Returns
    -------
    ofv : float
        -2 log-likelihood less :math:`N_{obs} \log 2\pi`, comparable with ``fit.ofv``.
    standard_error : float
        Its Monte Carlo standard error (delta method over patients).

    Raises
    ------
    ValueError
        For a fit made on other patients, estimates that are not positive, or fewer than
        10 draws.
    """
    if not isinstance(study, StudyEvents):
        raise TypeError(f"study must be a StudyEvents, got {type(study).__name__}")
    if not isinstance(fit, PopulationFit):
        raise TypeError(f"fit must be a PopulationFit, got {type(fit).__name__}")
    if not np.array_equal(fit.eta.index.to_numpy(), study.ids):
        raise ValueError("fit was not made on this study (its patients differ from the study's)")
    estimates = np.r_[fit.typical.to_numpy(float), fit.omega.to_numpy(float), fit.residual]
    if not (np.all(np.isfinite(estimates)) and np.all(estimates > 0)):
        raise ValueError("fit's typical values, omega and residual error must be positive")
    draws = check_count(draws, "draws", minimum=10)
    rng = check_rng(seed, "seed")
    with _thread_pools().limit(limits=1, user_api="blas"):
        pair = _correlated_pair(fit.model, fit.random, fit.correlated)
        problem = _Problem(
            study, fit.model, fit.error, ERROR_MODELS[fit.error], fit.effect_terms, pair=pair
        )
        x = _outer_point(fit)
        p, n = problem.p, problem.n_patients
        mode = _modes(problem, x[None], np.zeros((1, n, p)))
        hessian = mode.terms["hessian"][0]
        definite = np.linalg.eigvalsh(hessian)[:, 0] > 0
        precision = np.where(definite[:, None, None], hessian, mode.terms["information"][0]) / 2
        root = np.linalg.cholesky(np.linalg.inv(precision))  # (n, p, p)
        freedom = 5.0
        normal = rng.standard_normal((draws, n, p))
        chi = rng.chisquare(freedom, size=(draws, n, 1)) / freedom
        z = normal / np.sqrt(chi)
        eta = mode.eta[0] + np.einsum("nkl,mnl->mnk", root, z)
        # log q: the multivariate t density; log p: -L/2 less the normal constants.
        _, log_det_root = np.linalg.slogdet(root)
        log_q = (
            special.gammaln((freedom + p) / 2)
            - special.gammaln(freedom / 2)
            - p / 2 * np.log(freedom * np.pi)
            - log_det_root
            - (freedom + p) / 2 * np.log1p((z**2).sum(axis=-1) / freedom)
        )
        mu, log_sd, residual = problem.unpack(x[None])
        rho = problem.correlation(x[None])
        log_det_omega = 2 * log_sd.sum() + (0.0 if rho is None else np.log1p(-(rho[0] ** 2)))
        log_p = np.empty((draws, n))
        chunk = max(1, 200_000 // problem.n_obs)
        for start in range(0, draws, chunk):
            part = slice(start, start + chunk)
            size = eta[part].shape[0]
            objective = _joint(
                problem,
                np.repeat(mu, size, axis=0),
                np.repeat(log_sd, size, axis=0),
                np.repeat(residual, size, axis=0),
                eta[part],
                0,
                None if rho is None else np.repeat(rho, size),
            )["objective"]
            log_p[part] = -0.5 * (objective + log_det_omega + p * np.log(2 * np.pi))
        log_w = log_p - log_q
        top = log_w.max(axis=0)
        w = np.exp(log_w - top)
        mean = w.mean(axis=0)
        ofv = float(-2 * (np.log(mean) + top).sum())
        relative_se = w.std(axis=0, ddof=1) / (np.sqrt(draws) * mean)
        return ofv, float(2 * np.sqrt((relative_se**2).sum()))


def empirical_bayes_estimates(
    study: StudyEvents,
    typical: pd.DataFrame,
    omega: pd.DataFrame,
    residual: pd.DataFrame,
    *,
    model: PkModel | None = None,
    error: str | None = None,
    effect_terms: tuple[CovariateEffect, ...] = (),
    effects: pd.DataFrame | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Every patient's empirical Bayes random effects under given population estimates.

    The mode :math:`\hat\eta_i` of patient :math:`i`'s joint density under fixed typical
    values, variances and residual error, as the fit finds it (the inner problem of the module
    docstring), without estimating anything else. Each patient's mode depends only on their
    own observations, so someone who holds a released model and a person's concentrations can
    compute that person's random effects under the release. Several sets of estimates (for
    example the releases of many studies) are handled in one batch.

    Parameters
    ----------
    study : StudyEvents
        The patients whose random effects are wanted (:func:`synpmx_lite.pmx.study.prepare_study`).
    typical, omega : pandas.DataFrame
        One row per set of estimates, one column per parameter of ``model``: typical values,
        and between-subject variances of the log parameters (all positive and finite).
    residual : pandas.DataFrame
        One row per set, one column per residual parameter of ``error``
        (:data:`ERROR_MODELS`), positive and finite.
    model : PkModel, optional
        The structural model; default the one in the study's roles.
    error : str, optional
        The residual error model; default ``"combined"`` (``"additive"`` for log
        concentrations).
    effect_terms : tuple of CovariateEffect, default ()
        The covariate effects of the estimates (a fit's ``effect_terms``), read at the
        study's covariates: each patient's mode is then its deviation from its own typical
        values, as the fit's ``eta`` is. Without them a model with effects gives modes that
        carry the effects (a trend on the covariate).
    effects : pandas.DataFrame, optional
        One row per set, one column per label of ``effect_terms``: the exponent, or the
        level's factor, as a fit's ``effects`` holds them. Required with ``effect_terms``.

    Returns
    -------
    eta : numpy.ndarray
        Shape ``(sets, patients, parameters)``: the modes, parameters in ``model`` order.
    converged : numpy.ndarray
        Shape ``(sets, patients)``: whether each mode was found.

    Raises
    ------
    TypeError, ValueError
        ``study`` is not a StudyEvents; the tables lack a parameter, hold a value that is not
        positive and finite, or differ in their number of rows; an unknown error model.
    """
    model, error = _checked_model_and_error(study, model, error)
    columns = {
        "typical": list(model.parameters),
        "omega": list(model.parameters),
        "residual": list(ERROR_MODELS[error]),
    }
    values = {}
    for name, table in (("typical", typical), ("omega", omega), ("residual", residual)):
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"{name} must be a pandas DataFrame, got {type(table).__name__}")
        missing = [c for c in columns[name] if c not in table.columns]
        if missing:
            raise ValueError(f"{name} lacks columns {missing}")
        array = table[columns[name]].to_numpy(dtype=float)
        if not np.all(np.isfinite(array) & (array > 0)):
            raise ValueError(f"{name} must hold positive, finite values")
        values[name] = array
    sets = {array.shape[0] for array in values.values()}
    if len(sets) != 1 or 0 in sets:
        raise ValueError(
            "typical, omega and residual need the same number of rows (at least one), got "
            + ", ".join(str(array.shape[0]) for array in values.values())
        )
    x = np.hstack(
        [
            np.log(values["typical"]),
            0.5 * np.log(values["omega"]),
            np.log(values["residual"]),
            _effect_coordinates(effect_terms, effects, x_rows=values["typical"].shape[0]),
        ]
    )
    with _thread_pools().limit(limits=1, user_api="blas"):
        problem = _Problem(study, model, error, ERROR_MODELS[error], effect_terms)
        evaluation = _modes(problem, x, np.zeros((x.shape[0], study.n_patients, problem.p)))
    return evaluation.eta, evaluation.converged


def _effect_coordinates(
    terms: tuple[CovariateEffect, ...], effects: pd.DataFrame | None, *, x_rows: int
) -> np.ndarray:
    """Covariate effects as the outer point holds them ``(sets, effects)``: exponents as they
    stand, a level's factor as its log; checked against the terms."""
    if not isinstance(terms, tuple) or not all(isinstance(t, CovariateEffect) for t in terms):
        raise TypeError("effect_terms must be a tuple of CovariateEffect (a fit's effect_terms)")
    if not terms:
        if effects is not None and len(effects.columns):
            raise ValueError("effects given without effect_terms saying what they are")
        return np.zeros((x_rows, 0))
    if not isinstance(effects, pd.DataFrame):
        raise TypeError(f"effects must be a pandas DataFrame, got {type(effects).__name__}")
    labels = [t.label for t in terms]
    missing = [label for label in labels if label not in effects.columns]
    if missing:
        raise ValueError(f"effects lacks columns {missing}")
    if len(effects) != x_rows:
        raise ValueError(f"effects needs {x_rows} rows (one per set), got {len(effects)}")
    values = effects[labels].to_numpy(dtype=float)
    factor = np.array([t.categorical for t in terms])
    if not np.all(np.isfinite(values)) or np.any(values[:, factor] <= 0):
        raise ValueError("effects must be finite, and a level's factor positive")
    return np.where(factor, np.log(np.where(factor, values, 1.0)), values)
