"""Time the README's test command, and say where its CPU goes.

Run from the repository's root::

    .venv/bin/python benchmarks/bench_tests.py             # one run of the test command
    .venv/bin/python benchmarks/bench_tests.py --files 15  # and the 15 costliest test files

It runs ``python -m pytest`` (the README's test command, side by side on every CPU) with
``--durations=0`` added, so that each test's setup, call and teardown are printed, and reports:

- the wall time, and the CPU time of the run and its children (the xdist workers, the kernels
  of the scratch books' chapters): on ``n`` CPUs the wall time cannot fall below CPU / ``n``,
  so when the wall time is over its target, the CPU time says whether a better spread of the
  tests could reach it or the tests themselves must cost less;
- the test files by the sum of their tests' durations (with the tests side by side, a
  duration also counts the time a test waits for a CPU).

The wall time of the same commit moves by a tenth or more between runs on a shared machine:
compare runs made one after the other.
"""

import argparse
import collections
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DURATION = re.compile(r"^([\d.]+)s (?:setup|call|teardown)\s+([^:\s]+)::")


def run_tests() -> tuple[float, float, str]:
    """The wall seconds, the CPU seconds (children's user and system) and the output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--durations=0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"the tests failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout


def seconds_by_file(output: str) -> collections.Counter:
    """Each test file's summed durations, from pytest's ``--durations=0`` lines."""
    totals: collections.Counter = collections.Counter()
    for line in output.splitlines():
        if match := DURATION.match(line):
            totals[match.group(2)] += float(match.group(1))
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10, help="test files listed (default 10)")
    arguments = parser.parse_args()
    wall, cpu, output = run_tests()
    cpus = len(os.sched_getaffinity(0))
    summary = output.strip().splitlines()[-1]
    print(f"{summary}")
    totals = seconds_by_file(output)
    print(f"test files by summed durations (all {len(totals)}: {sum(totals.values()):.1f} s):")
    for name, seconds in totals.most_common(arguments.files):
        print(f"  {seconds:6.1f} s  {name}")
    print(f"cpu_seconds: {cpu:.1f} (at least {cpu / cpus:.1f} s of wall time on {cpus} CPUs)")
    print(f"wall_seconds: {wall:.1f}")


if __name__ == "__main__":
    main()
