"""What the whole suite shares: Hypothesis's settings.

**Hypothesis runs the same examples on every run.** Its examples are derived from each test
function (``derandomize``), no example database is read or written (a failure found once
would otherwise be replayed on this machine only), and neither a deadline nor the too-slow
health check applies: both time the examples, and on a machine shared with other work (or
with tests running side by side under pytest-xdist) a timing is not a result.
Each test's own ``@settings`` (its number of examples) still applies on top. Another profile
can be chosen on the command line with ``--hypothesis-profile``.
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "deterministic",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("deterministic")

