"""The stored audits: current for the settings and sources that made them, and reproduced by
a recomputation of their point results and first resamples."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.attacks.audit import (
    AUDIT_ATTACKS,
    AUDIT_SEED,
    RESAMPLES,
    audit_shadows,
    paired_change,
    pk_width,
    release_epsilon_bound,
)
from synpmx_lite.attacks.audit_results import (
    BOUND_RESAMPLES,
    AuditResults,
    _from_arrays,
    audit_digest,
    audit_settings,
)
from synpmx_lite.attacks.shadow_releases import RELEASE_LEVELS, SHADOW_REPLICATES
from synpmx_lite.stored import _package_root, read_stored

RECOMPUTED = 3  # resamples recomputed: the resamples are drawn row by row from one stream
# Columns that do not depend on the number of resamples.
POINT_COLUMNS = ["auc", "auc_se_independent", "tpr_10", "tpr_1", "tpr_0.1", "epsilon"]


@pytest.fixture(scope="module")
def shipped():
    return read_stored(_package_root() / "data" / "audit_results.npz")


@pytest.fixture(scope="module")
def results(shipped) -> AuditResults:
    return _from_arrays(shipped.arrays, shipped.settings, shipped.made, shipped.seconds)


def test_shipped_audits_are_current(shipped):
    # Fails after a change to the audit, the engine, the generator or the scores, or to a
    # setting of the audit: rerun `python -m synpmx_lite.attacks.audit_results` (after the
    # shadow releases, if they are stale too) and commit the file it writes.
    assert shipped.matches(audit_settings(), audit_digest())


def test_the_digest_follows_the_audit_source(monkeypatch, tmp_path):
    import synpmx_lite.stored as stored

    package = tmp_path / "synpmx_lite"
    source = _package_root()
    for path in [p for p in source.rglob("*") if p.suffix in {".py", ".csv"}]:
        target = package / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    monkeypatch.setattr(stored, "_package_root", lambda: package)
    before = audit_digest()
    audit = package / "attacks" / "audit.py"
    audit.write_text(audit.read_text() + "\n# an edit\n")
    assert audit_digest() != before


@pytest.mark.parametrize("kind", ["audit", "null", "lenient"])
def test_stored_audits_match_a_recomputation(results, kind):
    # The shipped shadow releases, read as they are (their own test says whether current).
    name = "warfarin"
    arrays = read_stored(_package_root() / "data" / f"shadow_{name}.npz").arrays
    stored = {"audit": results.audits[name, "1 figure"], "null": results.nulls[name],
              "lenient": results.lenient[name]}[kind]  # fmt: skip
    fresh = audit_shadows(
        arrays, "1 figure", pk_width=pk_width(name), seed=AUDIT_SEED, resamples=RECOMPUTED,
        null_control=kind == "null", keep_residual_faults=kind == "lenient",
    )  # fmt: skip
    assert fresh.excluded == stored.excluded and fresh.replicates == stored.replicates
    np.testing.assert_array_equal(fresh.member, stored.member)
    np.testing.assert_array_equal(fresh.resample_index, stored.resample_index[:RECOMPUTED])
    pd.testing.assert_frame_equal(
        fresh.summary[["attack", *POINT_COLUMNS]],
        stored.summary[["attack", *POINT_COLUMNS]],
        rtol=1e-12,
    )
    for attack in AUDIT_ATTACKS:
        np.testing.assert_allclose(
            fresh.resampled[attack], stored.resampled[attack][:RECOMPUTED], rtol=1e-12
        )
        if stored.scores:
            # Scores near 0 differ by rounding between machines (1e-15 seen): atol too.
            np.testing.assert_allclose(
                fresh.scores[attack], stored.scores[attack], rtol=1e-12, atol=1e-12
            )


def test_every_page_finds_its_audits(results):
    assert set(results.audits) == {(n, lv) for n in SHADOW_REPLICATES for lv in RELEASE_LEVELS}
    assert (
        set(results.nulls) == set(results.lenient) == set(results.reruns) == set(SHADOW_REPLICATES)
    )
    for name in SHADOW_REPLICATES:
        assert set(results.audits[name, "1 figure"].scores) == set(AUDIT_ATTACKS)
        assert list(results.reruns[name].index) == list(AUDIT_ATTACKS)
    assert len(results.shuffles) == len(AUDIT_ATTACKS) * results.settings["shuffles"]
    # Audits of one study at every rounding share their first resamples, so they pair; the
    # audit as released has more, for its epsilon bound's tails.
    index = {lv: results.audits["warfarin", lv].resample_index for lv in RELEASE_LEVELS}
    assert len(index["1 figure"]) == BOUND_RESAMPLES and len(index["unrounded"]) == RESAMPLES
    assert all(np.array_equal(index["unrounded"], other[:RESAMPLES]) for other in index.values())


def test_a_paired_change_uses_the_resamples_in_common(results):
    before, after = results.audits["warfarin", "unrounded"], results.audits["warfarin", "1 figure"]
    shortened = dataclasses.replace(
        after, resampled={a: v[:RESAMPLES] for a, v in after.resampled.items()},
        resample_index=after.resample_index[:RESAMPLES],
    )  # fmt: skip
    assert paired_change(before, after, "LiRA online") == paired_change(
        before, shortened, "LiRA online"
    )


def test_the_release_bound_varies_little_across_independent_resamples(results):
    # The bound reads its resamples' 1/120 tails: two disjoint halves of them (independent
    # bootstraps, each with half the resamples beyond a tail) must agree with the whole.
    audit = results.audits["warfarin", "1 figure"]
    whole = release_epsilon_bound(audit)["epsilon"]
    half = BOUND_RESAMPLES // 2
    halves = [
        release_epsilon_bound(
            dataclasses.replace(audit, resampled={a: v[part] for a, v in audit.resampled.items()})
        )["epsilon"]
        for part in (slice(None, half), slice(half, None))
    ]
    assert whole > 0.5
    # A half's tail rests on about 8 resamples beyond it: halves have differed from the whole
    # by up to 5.3 % of it (the store with the residual readings: 0.92 and 0.86 against 0.87).
    assert max(abs(h - whole) for h in halves) < 0.075 * whole, (whole, halves)


def test_audit_settings_refuse_bad_counts():
    with pytest.raises(ValueError, match="resamples"):
        audit_settings(resamples=1)
    with pytest.raises(ValueError, match="bound_resamples"):
        audit_settings(bound_resamples=1)
