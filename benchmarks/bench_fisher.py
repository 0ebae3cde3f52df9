"""Time per-example FIL at 10,000 x 20 and measure its peak memory at UCI-Adult size.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_fisher.py

Three ways of computing every example's eta, each after the same fit, side by side:

* ``secular`` is :func:`synpmx_lite.fisher.leakage.per_example_fil`: one change of basis, then the
  largest root of each example's two-by-two secular equation, O(d) per example and step;
* ``paper`` reconstructs the approach of Hannun, Guo and van der Maaten's code: the
  (n, d, d + 1) tensor of Jacobians and the spectral norm of each (a batched SVD, as
  ``torch.linalg.norm(J, ord=2, dim=(1, 2))`` computes it);
* ``gram`` is this package's previous implementation: the same tensor and ``eigvalsh`` of
  each example's d x d Gram matrix.

Each time is the median of the timed repeats after one warm-up call and includes the fit
(exact for the linear model; damped Newton for the logistic one, l2 = 1e-3); the process's
CPU time is printed beside it. The goal is at most 45 ms (linear) and 159 ms (logistic) at
n = 10,000, d = 20, a tenth of the paper's code on the project's machines. Everything is
timed twice: with the BLAS's own thread count, and limited to one thread (threadpoolctl,
which scikit-learn brings). On a machine shared by other work, OpenBLAS's worker threads
spin while they wait and take the CPU from the main thread, so wall-clock medians there
can be several times the CPU time; the load average is printed for that reason.
``per_example_fil`` itself runs on one BLAS thread (scoped to the call), so its two rows
agree; the comparison methods show what the default thread count costs.

Peak memory at n = 30,162, d = 86 (the UCI Adult training set)
is measured with ``tracemalloc`` (numpy reports its array buffers to it), so it counts the
memory allocated during the call, not the interpreter or the data passed in; the tensor the
other two approaches need is given for comparison, computed, not allocated.
"""

import functools
import os
import statistics
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from synpmx_lite.fisher.leakage import per_example_fil, per_example_jacobians

REPEATS = 7
SIZE = (10_000, 20)
ADULT_SIZE = (30_162, 86)
LOGISTIC_L2 = 1e-3
GOALS_MS = {"linear": 45.0, "logistic": 159.0}
MEMORY_GOAL = 2**30


def problem(n: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features in the unit ball, a noisy linear signal, its signs and its 0/1 classes."""
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    margin = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n)
    return X, np.where(margin > 0, 1.0, -1.0), (margin > 0).astype(float)


def median_seconds(call) -> tuple[float, float]:
    """Median wall-clock and CPU seconds of ``call()`` over the repeats, after a warm-up."""
    call()
    wall, cpu = [], []
    for _ in range(REPEATS):
        start, start_cpu = time.perf_counter(), time.process_time()
        call()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def paper(X, y, model, l2):
    jacobians = per_example_jacobians(X, y, model=model, l2=l2)
    return np.linalg.norm(jacobians, ord=2, axis=(1, 2))


def gram(X, y, model, l2):
    jacobians = per_example_jacobians(X, y, model=model, l2=l2)
    return np.sqrt(np.linalg.eigvalsh(jacobians @ np.swapaxes(jacobians, 1, 2))[:, -1])


def secular(X, y, model, l2):
    return per_example_fil(X, y, model, l2)


def compare(X, signs, classes) -> dict[str, float]:
    """Time the three methods on both models, check they agree; the fast path's wall times."""
    header = f"{'wall ms':>8} {'CPU ms':>8} {'speed-up':>9} {'max rel. diff':>14}"
    print(f"{'model':<9} {'method':<8} {header}")
    fast = {}
    for model, l2 in (("linear", 0.0), ("logistic", LOGISTIC_L2)):
        y = signs if model == "linear" else classes
        reference = paper(X, y, model, l2)
        times = {}
        for name, method in (("paper", paper), ("gram", gram), ("secular", secular)):
            call = functools.partial(method, X, y, model, l2)
            times[name] = median_seconds(call)
            difference = np.max(np.abs(call() - reference) / reference)
            wall, cpu = times[name]
            print(
                f"{model:<9} {name:<8} {1e3 * wall:>8.1f} {1e3 * cpu:>8.1f} "
                f"{times['paper'][0] / wall:>8.1f}x {difference:>14.1e}"
            )
        fast[model] = 1e3 * times["secular"][0]
        verdict = "met" if fast[model] <= GOALS_MS[model] else "NOT met"
        print(f"{model}: goal {GOALS_MS[model]:.0f} ms {verdict}")
    return fast


def main() -> None:
    rng = np.random.default_rng(20210727)
    n, d = SIZE
    X, signs, classes = problem(n, d, rng)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"per-example FIL at n = {n:,}, d = {d}: median of {REPEATS} repeats, fit included")
    print("\nBLAS with its own thread count")
    default = compare(X, signs, classes)
    print("\nBLAS limited to one thread")
    with threadpool_limits(limits=1, user_api="blas"):
        single = compare(X, signs, classes)

    n, d = ADULT_SIZE
    X, signs, classes = problem(n, d, rng)
    tensor = n * d * (d + 1) * X.itemsize
    print(f"\nUCI-Adult size n = {n:,}, d = {d}: one call each, peak by tracemalloc")
    print(f"the (n, d, d + 1) Jacobian tensor alone would take {tensor / 2**30:.2f} GiB")
    peaks = {}
    for model, l2 in (("linear", 0.0), ("logistic", LOGISTIC_L2)):
        y = signs if model == "linear" else classes
        tracemalloc.start()
        start = time.perf_counter()
        per_example_fil(X, y, model, l2)
        seconds = time.perf_counter() - start
        peak = peaks[model] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        verdict = "met" if peak <= MEMORY_GOAL else "NOT met"
        print(f"{model:<9} {seconds:>6.2f} s, peak {peak / 2**20:>6.0f} MiB (goal 1 GiB {verdict})")
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(
        "headline: per_example_fil at 10,000 x 20 in "
        f"{default['linear']:.0f} / {default['logistic']:.0f} ms (linear / logistic; "
        f"{single['linear']:.0f} / {single['logistic']:.0f} ms with one BLAS thread), "
        f"peak {max(peaks.values()) / 2**20:.0f} MiB at 30,162 x 86"
    )


if __name__ == "__main__":
    main()
