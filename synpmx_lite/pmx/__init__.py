"""The PMX engine: a study's event table, closed-form PK models, the FOCE-I population fit and
the population models of PD endpoints, with no notion of privacy.

Modules: :mod:`~synpmx_lite.pmx.study` (event table and roles), :mod:`~synpmx_lite.pmx.pk`
(PK models), :mod:`~synpmx_lite.pmx.covariates` (covariate effects),
:mod:`~synpmx_lite.pmx.population` (the population fit), :mod:`~synpmx_lite.pmx.blq`
(observations below the limit of quantification, Beal's M3), :mod:`~synpmx_lite.pmx.diagnostics`
(residuals, shrinkage, visual predictive checks), :mod:`~synpmx_lite.pmx.pd` (PD endpoints),
:mod:`~synpmx_lite.pmx.simulated_designs` (the seed's four simulated studies), and the private
FOCE-I kernel ``_foce`` and censored likelihood ``_censored``. They import only the package's
shared helpers.
"""
