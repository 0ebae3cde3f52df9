"""The stored copy of the tracing chapter's sweep, against the chapter and a fresh simulation."""

import importlib.metadata
import math
from importlib import resources
from pathlib import Path

import jupytext
import numpy as np
import pandas as pd
import pytest

from synpmx_lite.attacks.tracing import simulate_tracing
from synpmx_lite.attacks.tracing_sweep import SWEEP_SOURCES, TRACING_SWEEP, _keys, sweep_rates
from synpmx_lite.stored import read_stored, sources_digest

CHAPTER = Path(__file__).resolve().parents[2] / "book" / "tracing_attack.md"


def chapter_parameters():
    """The tracing chapter's parameter cell, run on its own (constants and one seed)."""
    (cell,) = [c.source for c in jupytext.read(CHAPTER).cells if "SWEEP_TRIALS =" in c.source]
    names = {"np": np, "math": math}
    exec(cell, names)
    return names


def test_the_stored_sweep_has_the_tracing_chapters_settings():
    # The membership chapter reads this copy for the tracing chapter's sweep: a setting
    # changed on one side only would put another sweep on its epsilon axis.
    p = chapter_parameters()
    assert TRACING_SWEEP == {
        "predicates": p["SWEEP_PREDICATES"],
        "sample_size": p["SMALL"],
        "reference_size": p["REFERENCES"],
        "trials": p["SWEEP_TRIALS"],
        "epsilon": p["SWEEP_EPSILONS"],
        "statistics": ["figure 1"],
        "seed": p["SEED"],
        "streams": len(p["streams"]),
        "stream": 6,
    }
    assert "rng=streams[6],\n)" in CHAPTER.read_text().split("sweep = simulate_tracing(")[1]


def test_shipped_sweep_is_current():
    # Fails after a change to the tracing simulation: rerun
    # `python -m synpmx_lite.attacks.tracing_sweep` and commit the file it writes.
    stored = read_stored(resources.files("synpmx_lite") / "data" / "tracing_sweep.npz")
    assert stored.matches(_keys(TRACING_SWEEP), sources_digest(SWEEP_SOURCES))
    assert stored.settings["opendp"] == importlib.metadata.version("opendp")


def test_a_budget_differing_in_its_last_bit_is_the_same_sweep():
    # numpy's power gave these two for 10 ** (20 / 8) on two machines.
    one = _keys({**TRACING_SWEEP, "epsilon": [316.22776601683796, math.inf]})
    other = _keys({**TRACING_SWEEP, "epsilon": [316.2277660168379, math.inf]})
    assert one == other and one["epsilon"] == ["316.227766017", "inf"]
    assert _keys({**TRACING_SWEEP, "epsilon": [316.2278]}) != one


def test_sweep_rates_are_the_simulations_rates(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNPMX_CACHE", str(tmp_path))
    small = {**TRACING_SWEEP, "predicates": [25, 50], "trials": 20, "epsilon": [1.0, math.inf]}
    rates = sweep_rates(small)
    options = {k: v for k, v in small.items() if k not in ("seed", "streams", "stream")}
    fresh = simulate_tracing(**options, rng=np.random.default_rng(small["seed"]).spawn(8)[6])
    pd.testing.assert_frame_equal(rates, fresh.rates.reset_index(drop=True), check_dtype=False)
    assert list(tmp_path.glob("tracing_sweep-*.npz"))  # kept for the next reader
    pd.testing.assert_frame_equal(sweep_rates(small), rates)  # and read back the same


def test_sweep_rates_refuses_settings_with_other_keys():
    with pytest.raises(ValueError, match="settings must have exactly the keys"):
        sweep_rates({**TRACING_SWEEP, "delta": 0.1})
    with pytest.raises(ValueError, match="settings"):
        sweep_rates({k: v for k, v in TRACING_SWEEP.items() if k != "seed"})
