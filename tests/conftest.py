"""What the whole suite shares: Hypothesis's settings, and the fits many tests read.

**Hypothesis runs the same examples on every run.** Its examples are derived from each test
function (``derandomize``), no example database is read or written (a failure found once
would otherwise be replayed on this machine only), and neither a deadline nor the too-slow
health check applies: both time the examples, and on a machine shared with other work (or
with tests running side by side under pytest-xdist) a timing is not a result.
Each test's own ``@settings`` (its number of examples) still applies on top. Another profile
can be chosen on the command line with ``--hypothesis-profile``.

**Fits many tests read are made once per session** (once per xdist worker). A
:class:`~synpmx_lite.generator.estimate.ModelFit` is a frozen dataclass: the tests read it,
or copy it with :func:`dataclasses.replace`, and never edit it in place. Its fields (arrays,
data frames, dicts) can still be edited, so each test that reads it checks it is as made
after the test: a test that edits it fails, rather than the tests run after it on that worker.
"""

import hashlib
import pickle
import sys

import pytest
from hypothesis import HealthCheck, settings

# jsonschema (imported by nbformat, for the book's tests) compiles 38 Lark parsers on import
# if rfc3987_syntax is installed: 2 CPU-seconds in every pytest process. No test checks a
# schema's formats, so this process goes without it, as the scratch books' builds do
# (tests/book/scratch.py, NO_RFC3987_SYNTAX): a module set to None fails to import.
sys.modules.setdefault("rfc3987_syntax", None)

settings.register_profile(
    "deterministic",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("deterministic")


def _digest(value) -> str:
    return hashlib.sha256(pickle.dumps(value)).hexdigest()


@pytest.fixture(scope="session")
def _warfarin_fit():
    # Imported here, not at the top: the xdist controller process, which runs no test, loads
    # this file too.
    from synpmx_lite.generator.estimate import synpmx_model_estimate
    from synpmx_lite.pmx.study import load_dataset

    fit = synpmx_model_estimate(*load_dataset("warfarin"))
    return fit, _digest(fit)


@pytest.fixture
def warfarin_fit(_warfarin_fit):
    """The builder's fit of the public warfarin study at its defaults (seed 1), made once per
    session, and checked unedited after each test that reads it."""
    fit, made = _warfarin_fit
    yield fit
    assert _digest(fit) == made, "the test edited the shared warfarin fit in place"


@pytest.fixture(autouse=True)
def _releases_kept_per_patching_test(request):
    """A test that uses ``monkeypatch`` (whatever it patches) starts with no release kept and
    leaves none: the builder keeps each fit's release (``estimate._RELEASES``), so a release
    built before a patch would stand in for the patched builder's, and one built under the
    patch would outlive it."""
    if "monkeypatch" not in request.fixturenames:
        yield
        return
    from synpmx_lite.generator import estimate

    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setattr(estimate, "_RELEASES", {})
    yield


# The files that take longest, first, so that under pytest-xdist (``--dist loadfile``, which
# hands files out in the order collected, two to each worker to start) no worker starts one
# when the others are nearly done: the scratch-book builds, which mostly wait for kernels and
# sleeps, in turn with the files of most CPU (``pytest --durations``), so that a worker
# computes while another waits. Any other file follows, in the order collected.
SLOWEST_FIRST = (
    "tests/book/test_side_by_side.py",
    "tests/generator/test_attack_suite.py",
    "tests/book/test_interrupts.py",
    "tests/pmx/test_population.py",
    "tests/book/test_workflows.py",
    "tests/generator/test_estimate.py",
    "tests/book/test_pages.py",
    "tests/attacks/test_membership_generator.py",
    "tests/book/test_failing_chapters.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the files of :data:`SLOWEST_FIRST` first, in its order (a stable sort: the tests of
    a file keep theirs, and every process collecting the suite orders it the same)."""
    rank = {path: place for place, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
