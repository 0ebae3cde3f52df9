"""The PMX engine: a study's event table, closed-form PK models, the FOCE-I population fit and
the population models of PD endpoints, with no notion of privacy.

Modules: :mod:`~synpmx_lite.pmx.study` (event table and roles), :mod:`~synpmx_lite.pmx.pk`
(PK models), :mod:`~synpmx_lite.pmx.population` (the population fit), :mod:`~synpmx_lite.pmx.pd`
(PD endpoints), and the private FOCE-I kernel ``_foce``. They import only the package's shared
helpers.
"""
