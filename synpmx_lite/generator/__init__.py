"""The model generator built on the PMX engine: it fits a study, builds the released
fingerprint under the protections, checks the released file against the source, and draws
synthetic data from the fingerprint alone.

Modules: :mod:`~synpmx_lite.generator.estimate` (fit with influence rounds, build the release),
:mod:`~synpmx_lite.generator.release` (the released artefact and its allowlist),
:mod:`~synpmx_lite.generator.protections` (the rules), :mod:`~synpmx_lite.generator.influence`
(one patient's influence), :mod:`~synpmx_lite.generator.checks` (checks P1-P5 of one release),
:mod:`~synpmx_lite.generator.ledger` (check P6, between releases),
:mod:`~synpmx_lite.generator.differencing` (what two releases bound about the patients added),
:mod:`~synpmx_lite.generator.design` (the study's conduct: dose changes, attended visits),
:mod:`~synpmx_lite.generator.generate` (synthetic data), :mod:`~synpmx_lite.generator.utility`
(what synthetic data keep of the source), :mod:`~synpmx_lite.generator.private_release` (a
differentially private release built with OpenDP), :mod:`~synpmx_lite.generator.frontier`
(usefulness against epsilon, from stored refits) and :mod:`~synpmx_lite.generator.cases`
(constructed warfarin cases). They import :mod:`synpmx_lite.pmx` and the shared helpers.
"""
