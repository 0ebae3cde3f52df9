"""Fisher information leakage: per-example FIL and IRFIL, attribute inversion, the FIL of a
differentially private mean and the bound for biased adversaries, and the datasets they are
shown on.

Modules: :mod:`~synpmx_lite.fisher.leakage`, :mod:`~synpmx_lite.fisher.inversion`,
:mod:`~synpmx_lite.fisher.bounds` and :mod:`~synpmx_lite.fisher.datasets`. They import only the
shared helpers.
"""
