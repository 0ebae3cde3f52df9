"""Time the tracing chapter's three simulations at the seed's trial counts.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_tracing.py            # ours only
    .venv/bin/python benchmarks/bench_tracing.py --seed     # and the seed's notebook, ported

The simulations are those of ``book/tracing_attack.md``: Figure 1 on samples of 5 (1,000
trials at 200 to 1,000 predicates), Figure 2 on samples of 30 with 50 reference people (100
trials at 200 to 4,000 predicates), and Figure 1 against the DP query at epsilon = 1 (100
trials at 400 to 4,000 predicates). Each is timed once, after a small warm-up run.

The third simulation draws 2.2 million Laplace values through OpenDP, one release per trial.
OpenDP's exact sampler costs several microseconds per value whatever the calling code, so the
script also times OpenDP alone drawing the same number of values (``opendp_noise_seconds``):
the floor under the third simulation, for ours and the seed's alike.

``--seed`` also runs the seed's notebook with only its OpenDP calls ported to the current API
(and its legacy ``np.random`` calls to a Generator): the same loop over trials, the same pandas
projections. It prints the speed-up. The seed's
notebook took 45 s for the three on this machine's kind (10.6 s, 12.2 s and 22.2 s).

The last line is ``tracing_seconds: X``, the total of our three simulations.
"""

import argparse
import time
from functools import cache

import numpy as np
import opendp.prelude as dp

from synpmx_lite.tracing import dp_mean_query, load_pums, simulate_tracing

SIMULATIONS = {
    "figure 1, samples of 5": dict(
        predicates=np.arange(1, 6) * 200, sample_size=5, reference_size=50, trials=1000
    ),
    "figure 2, samples of 30": dict(
        predicates=np.arange(1, 21) * 200, sample_size=30, reference_size=50, trials=100
    ),
    "figure 1, DP at epsilon 1": dict(
        predicates=np.arange(1, 11) * 400, sample_size=5, reference_size=50, trials=100, epsilon=1.0
    ),
}


def time_ours() -> list[float]:
    simulate_tracing([64], sample_size=5, reference_size=50, trials=10, epsilon=1.0, rng=0)
    seconds = []
    for seed, (name, settings) in enumerate(SIMULATIONS.items()):
        start = time.perf_counter()
        simulate_tracing(**settings, rng=seed)
        seconds.append(time.perf_counter() - start)
        print(f"{name}: {seconds[-1]:.2f} s")
    return seconds


def time_opendp_alone() -> float:
    """OpenDP drawing the third simulation's noise: one release per trial, nothing else."""
    settings = SIMULATIONS["figure 1, DP at epsilon 1"]
    start = time.perf_counter()
    for d in settings["predicates"]:
        query = dp_mean_query(settings["sample_size"], int(d), settings["epsilon"])
        answers = [0.5] * int(d)
        for _ in range(settings["trials"]):
            query.measurement(answers)
    return time.perf_counter() - start


# --- The seed's notebook, with only its OpenDP calls ported to the current API -----------------


def seed_figure_1(individual, answers, reference_samples, delta=0.05):
    individual, answers, reference_samples = (
        individual * 2 - 1,
        answers * 2 - 1,
        reference_samples * 2 - 1,
    )
    statistic = np.dot(individual, answers) - np.dot(reference_samples[0], answers)
    return statistic > np.sqrt(8 * len(individual) * np.log(1 / delta))


def seed_figure_2(individual, answers, reference_samples, delta=0.05):
    individual, answers, reference_samples = (
        individual * 2 - 1,
        answers * 2 - 1,
        reference_samples * 2 - 1,
    )
    z, w = reference_samples[0], reference_samples[1:].mean(axis=0)
    m, d = reference_samples[1:].shape
    alpha = np.sqrt(1 / m)
    statistic = np.dot(individual - z, np.clip(answers - w, -2 * alpha, 2 * alpha))
    return statistic > 4 * alpha * np.sqrt(d * np.log(1 / delta))


def run_seed() -> list[float]:
    rng = np.random.default_rng(123)
    population = load_pums()

    def projection(d_out):
        desc = rng.integers(691, size=(len(population.columns), d_out))
        return lambda data: ((data.values @ desc) % 691 % 2).astype(bool)

    def draw(sample_size):
        indices = np.arange(len(population))
        rng.shuffle(indices)
        return population.iloc[indices[:sample_size]], population.iloc[indices[sample_size:]]

    @cache
    def measurement(size, num_queries):
        mean = dp.t.make_mean(
            dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0)), size=size), dp.symmetric_distance()
        )
        scale = dp.binary_search_param(
            lambda s: mean >> dp.m.then_laplace(s, k=-40), d_in=2, d_out=1.0 / num_queries
        )
        space = (
            dp.vector_domain(dp.atom_domain(T=float, nan=False), size=num_queries),
            dp.l1_distance(T=float),
        )
        return space >> dp.m.then_laplace(scale, k=-40)

    def exact(data):
        return data.mean(axis=0)

    def private(data):
        return np.array(measurement(*data.shape)(data.mean(axis=0).astype(float).tolist()))

    def simulate(query, attack, sample_size, reference_size, num_predicates, num_trials):
        for d in num_predicates:
            for _ in range(num_trials):
                sequestered, rest = draw(sample_size)
                project = projection(d)
                answers = query(project(sequestered))
                references = project(rest.sample(reference_size, random_state=rng))
                attack(project(sequestered.sample(1, random_state=rng))[0], answers, references)
                attack(project(rest.sample(1, random_state=rng))[0], answers, references)

    runs = [
        (exact, seed_figure_1, 5, 1, np.arange(1, 6) * 200, 1000),
        (exact, seed_figure_2, 30, 50, np.arange(1, 21) * 200, 100),
        (private, seed_figure_1, 5, 50, np.arange(1, 11) * 400, 100),
    ]
    seconds = []
    for name, run in zip(SIMULATIONS, runs, strict=True):
        start = time.perf_counter()
        simulate(*run)
        seconds.append(time.perf_counter() - start)
        print(f"seed, {name}: {seconds[-1]:.2f} s")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", action="store_true", help="also time the seed's notebook")
    arguments = parser.parse_args()
    if arguments.seed:
        seed = sum(run_seed())
        print(f"seed_seconds: {seed:.2f}")
    floor = time_opendp_alone()
    print(f"opendp_noise_seconds: {floor:.2f}")
    ours = sum(time_ours())
    if arguments.seed:
        print(f"speed-up over the seed: {seed / ours:.1f}x")
    print(f"speed-up over the seed's 45 s: {45 / ours:.1f}x")
    print(f"tracing_seconds: {ours:.2f}")


if __name__ == "__main__":
    main()
