"""Attacks on released statistics: membership inference against the fingerprint (simplified
models, then the real generator) and the tracing attack on released means.

Modules: :mod:`~synpmx_lite.attacks.membership` (the simplified models' attacks),
:mod:`~synpmx_lite.attacks.walkthrough` (the R walkthrough's worked example),
:mod:`~synpmx_lite.attacks.membership_generator` (attacks on the real generator),
:mod:`~synpmx_lite.attacks.shadow_releases` (stored shadow releases),
:mod:`~synpmx_lite.attacks.audit` and :mod:`~synpmx_lite.attacks.audit_results` (the calibrated
audit and its stored results), :mod:`~synpmx_lite.attacks.public_releases` (what each public
study releases), :mod:`~synpmx_lite.attacks.tracing` and :mod:`~synpmx_lite.attacks.tracing_sweep`
(the tracing attack and its stored sweep). They import :mod:`synpmx_lite.generator`,
:mod:`synpmx_lite.pmx` and the shared helpers.
"""
