"""Attacks on released statistics: membership inference against the fingerprint (simplified
models, then the real generator) and the tracing attack on released means.

Modules: :mod:`~synpmx_lite.attacks.membership`, :mod:`~synpmx_lite.attacks.membership_generator`
and :mod:`~synpmx_lite.attacks.tracing`. They import :mod:`synpmx_lite.generator`,
:mod:`synpmx_lite.pmx` and the shared helpers.
"""
