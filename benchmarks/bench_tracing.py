"""Time the tracing chapter's three simulations against the seed notebook's method, side by side.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_tracing.py [--repeats 3]

The baseline is the seed notebook's method written as the notebook writes it, one trial at a
time: for each trial it shuffles the population with pandas, draws a random linear projection
of the records onto the predicates (modulo 691), answers the mean queries, draws the reference
people, Alice and Anita with ``DataFrame.sample``, and runs the notebook's Figure-1 or Figure-2
test on each. Its third simulation makes one OpenDP release per trial, through the measurement
the notebook builds (``make_mean`` and ``then_laplace`` at the scale ``binary_search_param``
finds), ported to OpenDP 0.16. Only the notebook's legacy ``np.random`` calls are replaced by a
seeded ``Generator``.

Ours is :func:`synpmx_lite.attacks.tracing.simulate_tracing` with the chapter's settings: the same
sample sizes, predicate counts and trials, but 50 reference people in every trial, both
thresholds (fixed and calibrated), and in the third simulation the unclipped statistic too,
all seeded, the noise drawn by numpy at OpenDP's certified scale. It does more work than the
baseline, not less.

Both run at the seed's trial counts (1,000, 100 and 100 trials per predicate count), once to
warm up and then ``--repeats`` times each, alternating, and the medians are compared. The
chapter's budget sweep, which has no counterpart in the notebook, is timed once for
information. The last line is the ratio of the medians, baseline over ours.
"""

import argparse
import statistics
import time
from functools import cache

import numpy as np
import opendp.prelude as dp
import pandas as pd

from synpmx_lite.attacks.tracing import load_pums, simulate_tracing

dp.enable_features("contrib")

#: The chapter's three simulations at the seed's trial counts (book/tracing_attack.md).
OURS = {
    "figure 1, samples of 5": dict(
        predicates=np.arange(1, 6) * 200,
        sample_size=5,
        reference_size=50,
        trials=1000,
        statistics=["figure 1"],
    ),
    "figure 2, samples of 30": dict(
        predicates=np.arange(1, 21) * 200,
        sample_size=30,
        reference_size=50,
        trials=100,
        statistics=["figure 1", "figure 2"],
    ),
    "figure 1, DP at epsilon 1": dict(
        predicates=np.arange(1, 11) * 400,
        sample_size=5,
        reference_size=50,
        trials=100,
        epsilon=1.0,
        statistics=["figure 1", "figure 1, unclipped"],
    ),
}

#: The chapter's budget sweep.
SWEEP = dict(
    predicates=[25, 50, 100, 200, 400, 800, 1600],
    sample_size=5,
    reference_size=50,
    trials=2000,
    epsilon=[*10 ** (np.arange(25) / 8), np.inf],
    statistics=["figure 1"],
)


def time_ours(name: str, seed: int) -> float:
    start = time.perf_counter()
    simulate_tracing(**OURS[name], rng=seed)
    return time.perf_counter() - start


# --- The seed notebook's method, one trial at a time ---------------------------------------------


def seed_figure_1(individual, answers, reference_samples, delta=0.05):
    """The notebook's test of Dwork et al.'s Figure 1."""
    individual, answers = individual * 2 - 1, answers * 2 - 1
    reference_samples = reference_samples * 2 - 1
    statistic = np.dot(individual, answers) - np.dot(reference_samples[0], answers)
    return statistic > np.sqrt(8 * len(individual) * np.log(1 / delta))


def seed_figure_2(individual, answers, reference_samples, delta=0.05):
    """The notebook's test of Dwork et al.'s Figure 2."""
    individual, answers = individual * 2 - 1, answers * 2 - 1
    reference_samples = reference_samples * 2 - 1
    z, w = reference_samples[0], reference_samples[1:].mean(axis=0)
    m, d = reference_samples[1:].shape
    alpha = np.sqrt(1 / m)
    statistic = np.dot(individual - z, np.clip(answers - w, -2 * alpha, 2 * alpha))
    return statistic > 4 * alpha * np.sqrt(d * np.log(1 / delta))


class SeedNotebook:
    """The notebook's simulation loop, its projection, draws and queries."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.population = load_pums()

    def projection(self, predicates):
        described = self.rng.integers(691, size=(len(self.population.columns), predicates))
        return lambda data: ((data.values @ described) % 691 % 2).astype(bool)

    def draw(self, sample_size):
        indices = np.arange(len(self.population))
        self.rng.shuffle(indices)
        return (
            self.population.iloc[indices[:sample_size]],
            self.population.iloc[indices[sample_size:]],
        )

    @staticmethod
    def exact(data):
        return data.mean(axis=0)

    @staticmethod
    @cache
    def measurement(size, num_queries, epsilon=1.0):
        """The notebook's OpenDP query, in the current API."""
        mean = dp.t.make_mean(
            dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0), nan=False), size=size),
            dp.symmetric_distance(),
        )
        scale = dp.binary_search_param(
            lambda s: mean >> dp.m.then_laplace(s, k=-40), d_in=2, d_out=epsilon / num_queries
        )
        space = (
            dp.vector_domain(dp.atom_domain(T=float, nan=False), size=num_queries),
            dp.l1_distance(T=float),
        )
        return space >> dp.m.then_laplace(scale, k=-40)

    def private(self, data):
        release = self.measurement(*data.shape)
        return np.array(release(data.mean(axis=0).astype(float).tolist()))

    def simulate(self, query, attack, sample_size, reference_size, num_predicates, num_trials):
        rates = []
        for d in num_predicates:
            false_positives = true_positives = 0
            for _ in range(num_trials):
                sequestered, rest = self.draw(sample_size)
                project = self.projection(d)
                answers = np.asarray(query(project(sequestered)))
                references = project(rest.sample(reference_size, random_state=self.rng))
                alice = project(sequestered.sample(1, random_state=self.rng))[0]
                true_positives += attack(alice, answers, references)
                anita = project(rest.sample(1, random_state=self.rng))[0]
                false_positives += attack(anita, answers, references)
            rates.append((false_positives / num_trials, true_positives / num_trials))
        return rates


SEED_RUNS = {
    "figure 1, samples of 5": ("exact", seed_figure_1, 5, 1, np.arange(1, 6) * 200, 1000),
    "figure 2, samples of 30": ("exact", seed_figure_2, 30, 50, np.arange(1, 21) * 200, 100),
    "figure 1, DP at epsilon 1": ("private", seed_figure_1, 5, 50, np.arange(1, 11) * 400, 100),
}


def time_seed(name: str, seed: int) -> float:
    notebook = SeedNotebook(seed)
    query, *settings = SEED_RUNS[name]
    start = time.perf_counter()
    notebook.simulate(getattr(notebook, query), *settings)
    return time.perf_counter() - start


def warm_up() -> None:
    """Import, cache and compile what both sides use once, outside the timings."""
    simulate_tracing([64], sample_size=5, reference_size=50, trials=10, epsilon=1.0, rng=0)
    notebook = SeedNotebook(0)
    notebook.simulate(notebook.private, seed_figure_1, 5, 50, [400], 2)
    pd.DataFrame({"x": [1]}).sample(1, random_state=notebook.rng)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each (default 3)")
    repeats = parser.parse_args().repeats
    warm_up()
    seed_times = {name: [] for name in OURS}
    our_times = {name: [] for name in OURS}
    for repeat in range(repeats):
        for name in OURS:
            seed_times[name].append(time_seed(name, repeat))
            our_times[name].append(time_ours(name, repeat))
    print(f"medians of {repeats} runs each, seconds (seed notebook's method | ours):")
    for name in OURS:
        seed, ours = statistics.median(seed_times[name]), statistics.median(our_times[name])
        print(f"  {name}: {seed:.2f} | {ours:.2f}  ({seed / ours:.1f}x)")
    seed_total = statistics.median(map(sum, zip(*seed_times.values(), strict=True)))
    our_total = statistics.median(map(sum, zip(*our_times.values(), strict=True)))
    print(f"  all three: {seed_total:.2f} | {our_total:.2f}")
    start = time.perf_counter()
    simulate_tracing(**SWEEP, rng=0)
    print(f"the chapter's budget sweep (ours only): {time.perf_counter() - start:.2f} s")
    print(f"speed-up over the seed notebook's method: {seed_total / our_total:.1f}x")


if __name__ == "__main__":
    main()
