"""Time ``per_example_fil`` for every example of an n x 20 problem, linear and logistic.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_fisher.py

The Hessian is built and factorised once (O(d^2 n)) and each example then costs O(d^3)
independent of n, so the time should double with n: the last column, microseconds per
example, should stay about flat from n = 2,500 to 10,000, and the fitted exponent of n
(the slope of log time on log n) should be near 1. Each time is the median of the
timed repeats after one warm-up call; the logistic time includes the L-BFGS fit.
"""

import functools
import statistics
import time

import numpy as np

from synpmx_lite.fisher import per_example_fil

REPEATS = 5
FEATURES = 20
SIZES = (2_500, 5_000, 10_000)


def problem(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features in the unit ball, a noisy linear signal, its signs and its 0/1 classes."""
    X = rng.normal(size=(n, FEATURES))
    X /= np.linalg.norm(X, axis=1).max()
    margin = X @ rng.normal(size=FEATURES) + 0.1 * rng.normal(size=n)
    return X, np.where(margin > 0, 1.0, -1.0), (margin > 0).astype(float)


def median_seconds(call) -> float:
    call()  # warm-up
    seconds = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main() -> None:
    rng = np.random.default_rng(20210727)
    print(f"per-example FIL, d = {FEATURES}, median of {REPEATS} repeats")
    print(f"{'model':<9} {'n':>6} {'seconds':>9} {'us/example':>11}")
    for model, l2 in (("linear", 0.0), ("logistic", 1e-3)):
        times = []
        for n in SIZES:
            X, signs, classes = problem(n, rng)
            y = signs if model == "linear" else classes
            times.append(median_seconds(functools.partial(per_example_fil, X, y, model, l2)))
            print(f"{model:<9} {n:>6} {times[-1]:>9.4f} {1e6 * times[-1] / n:>11.2f}")
        exponent = np.polyfit(np.log(SIZES), np.log(times), 1)[0]
        print(f"{model}: time grows as n^{exponent:.2f}")


if __name__ == "__main__":
    main()
