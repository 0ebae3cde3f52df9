"""The stored shadow releases: current for the sources that made them, and reproduced by a
recomputation of their first replicates."""

import numpy as np
import pytest

from synpmx_lite.attacks.audit_results import _from_arrays
from synpmx_lite.attacks.shadow_releases import (
    SHADOW_REPLICATES,
    _shadow_arrays,
    shadow_digest,
    shadow_settings,
)
from synpmx_lite.stored import _package_root, read_stored

RECOMPUTED = 3


def shipped(name):
    return read_stored(_package_root() / "data" / f"shadow_{name}.npz")


@pytest.mark.parametrize("name", list(SHADOW_REPLICATES))
def test_shipped_shadow_releases_are_current(name):
    # Fails after a change to the engine, the generator or the scores: rerun
    # `python -m synpmx_lite.attacks.shadow_releases` and commit the files it writes.
    stored = shipped(name)
    settings = shadow_settings(name, replicates=SHADOW_REPLICATES[name])
    assert stored.matches(settings, shadow_digest(name))


def test_stored_shadow_releases_match_a_recomputation():
    stored = shipped("warfarin")
    settings = dict(stored.settings, replicates=RECOMPUTED)
    fresh = _shadow_arrays(settings, lambda done, total: None)
    assert fresh.keys() == stored.arrays.keys()
    for key, values in fresh.items():
        expected = stored.arrays[key]
        expected = expected if key == "influence" else expected[:RECOMPUTED]
        if values.dtype.kind == "U":  # the fits' diagnostics, as text
            np.testing.assert_array_equal(values, expected, err_msg=key)
        else:  # fits: another numpy, scipy or BLAS build moves only their last digits
            np.testing.assert_allclose(values, expected, rtol=1e-6, atol=1e-12, err_msg=key)


def test_null_control_on_the_real_generator_is_a_coin_toss():
    # The bootstrap SEs rerun the calibration, so two of them make an honest band. The stored
    # audits of the shipped shadow releases, which tests/attacks/test_audit_results.py checks
    # against a recomputation.
    stored = read_stored(_package_root() / "data" / "audit_results.npz")
    results = _from_arrays(stored.arrays, stored.settings, stored.made, stored.seconds)
    # Every study's three attacks: nine comparisons, so a band of z = 2.77 (5 % in all,
    # two-sided, Bonferroni) that an honest null passes 95 times in 100.
    z = 2.77
    for study, null in results.nulls.items():
        summary = null.summary
        assert (np.abs(summary["auc"] - 0.5) < z * summary["auc_se"]).all(), study
    real = results.audits["warfarin", "1 figure"].summary
    assert real["auc"].iloc[0] > 0.5 + 10 * real["auc_se"].iloc[0]
