r"""The tracing chapter's sweep over budgets, its rates stored for a page that only reads them.

The tracing chapter simulates the attack at every budget of a grid and every predicate count
(:data:`TRACING_SWEEP`) to find where the calibrated test comes back; the membership chapter
puts the same budgets on its epsilon axis. Rather than simulate the sweep a second time, that
page reads its rates (a few hundred rows) from ``synpmx_lite/data/tracing_sweep.npz``, keyed by
the sweep's settings, OpenDP's version (which certifies the noise scale) and a SHA-256 digest of
the sources and data that simulate it (:data:`SWEEP_SOURCES`); :func:`sweep_rates` simulates it
afresh when either differs. The tracing chapter itself runs the simulation, as its subject.
Regenerate the shipped file with::

    python -m synpmx_lite.attacks.tracing_sweep
"""

from __future__ import annotations

import importlib.metadata
import math
import sys
import time
from importlib import resources

import numpy as np
import pandas as pd

from ..stored import compute, load_or_compute, sources_digest, store
from .tracing import simulate_tracing

__all__ = ["SWEEP_SOURCES", "TRACING_SWEEP", "sweep_rates"]

#: The package sources and data the sweep depends on.
SWEEP_SOURCES = (
    "_validation.py",
    "attacks/membership.py",
    "attacks/tracing.py",
    "attacks/tracing_sweep.py",
    "data/FultonPUMS5sample100.csv",
)

#: The tracing chapter's sweep: samples of 5 against 50 reference people, 2,000 trials at each
#: predicate count and budget (eight to a decade from 1, and exact answers), Figure 1's test,
#: from stream 6 of the chapter's seed spawned eight ways.
TRACING_SWEEP = {
    "predicates": [25, 50, 100, 200, 400, 800, 1600],
    "sample_size": 5,
    "reference_size": 50,
    "trials": 2000,
    "epsilon": [*(10 ** (np.arange(25) / 8)).tolist(), math.inf],
    "statistics": ["figure 1"],
    "seed": 20261003,
    "streams": 8,
    "stream": 6,
}
_TEXT = ("statistic", "threshold", "candidate")
_NAME = "tracing_sweep"


def sweep_rates(settings: dict | None = None) -> pd.DataFrame:
    """The sweep's rates: stored if the settings and sources match, else simulated afresh.

    Parameters
    ----------
    settings : dict, optional
        The keys of :data:`TRACING_SWEEP`, all of them (its values by default): the keyword
        arguments of :func:`~synpmx_lite.attacks.tracing.simulate_tracing`, and the stream
        ``stream`` of ``numpy.random.default_rng(seed).spawn(streams)`` it draws from.

    Returns
    -------
    pandas.DataFrame
        The ``rates`` of that simulation's
        :class:`~synpmx_lite.attacks.tracing.TracingSimulation`.

    Raises
    ------
    ValueError
        If ``settings`` names other keys than :data:`TRACING_SWEEP`'s, or lacks one.
    """
    settings = dict(TRACING_SWEEP if settings is None else settings)
    if settings.keys() != TRACING_SWEEP.keys():
        raise ValueError(
            f"settings must have exactly the keys {sorted(TRACING_SWEEP)}, got {sorted(settings)}"
        )
    stored = load_or_compute(
        _NAME,
        settings=_keys(settings),
        sources=sources_digest(SWEEP_SOURCES),
        work=lambda report: _rate_arrays(settings, report),
    )
    return pd.DataFrame(
        {
            name: values.astype(str) if name in _TEXT else values
            for name, values in stored.arrays.items()
        }
    )


def _keys(settings: dict) -> dict:
    """The stored sweep's keys: its settings and OpenDP's version, whose noise it draws.

    The budgets are keyed as text at 12 significant figures: numpy's power is vectorised
    differently by CPU, and ``10 ** (np.arange(25) / 8)`` differs in its last bit between
    machines (316.22776601683796 on one, 316.2277660168379 on another), which is not another
    sweep."""
    budgets = [f"{epsilon:.12g}" for epsilon in settings["epsilon"]]
    return {**settings, "epsilon": budgets, "opendp": importlib.metadata.version("opendp")}


def _rate_arrays(settings: dict, report) -> dict[str, np.ndarray]:
    """Simulate the sweep once (one progress step) and keep its rates, text as numpy strings."""
    options = {k: v for k, v in settings.items() if k not in ("seed", "streams", "stream")}
    rng = np.random.default_rng(settings["seed"]).spawn(settings["streams"])[settings["stream"]]
    rates = simulate_tracing(**options, rng=rng).rates
    report(1, 1)
    return {
        name: rates[name].to_numpy(str) if name in _TEXT else rates[name].to_numpy()
        for name in rates.columns
    }


def main() -> None:
    """Simulate and store the shipped sweep (:data:`TRACING_SWEEP`)."""
    started = time.perf_counter()
    result = compute(
        _NAME,
        _keys(TRACING_SWEEP),
        sources_digest(SWEEP_SOURCES),
        lambda report: _rate_arrays(TRACING_SWEEP, report),
    )
    store(resources.files("synpmx_lite") / "data" / f"{_NAME}.npz", result)
    print(f"tracing sweep in {time.perf_counter() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
