"""Time ``membership_tables()`` at the book's draws (1,500 per attendance row, 2,000 per
population row).

Run from the repository's root::

    .venv/bin/python benchmarks/bench_membership.py

The last line, ``membership_tables_seconds: X``, is the median of the timed repeats after one
warm-up call. The seed's R implementation takes 8.0 s for both tables on this machine's kind.
"""

import statistics
import time

from synpmx_lite import membership_tables

REPEATS = 7
R_SECONDS = 8.0


def main() -> None:
    membership_tables()  # warm-up: imports, first-touch memory
    seconds = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        membership_tables()
        seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    print(f"repeats: {REPEATS}, fastest {min(seconds):.3f} s, slowest {max(seconds):.3f} s")
    print(f"speed-up over the R implementation ({R_SECONDS} s): {R_SECONDS / median:.0f}x")
    print(f"membership_tables_seconds: {median:.3f}")


if __name__ == "__main__":
    main()
