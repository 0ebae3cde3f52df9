"""What the whole suite shares: Hypothesis's settings, and the fits many tests read.

**Hypothesis runs the same examples on every run.** Its examples are derived from each test
function (``derandomize``), no example database is read or written (a failure found once
would otherwise be replayed on this machine only), and neither a deadline nor the too-slow
health check applies: both time the examples, and on a machine shared with other work (or
with tests running side by side under pytest-xdist) a timing is not a result.
Each test's own ``@settings`` (its number of examples) still applies on top. Another profile
can be chosen on the command line with ``--hypothesis-profile``.

**Fits many tests read are made once per run**: by the first xdist worker that asks for one,
which leaves it pickled in the run's temporary folder for the others (:func:`_made_once`). A
:class:`~synpmx_lite.generator.estimate.ModelFit` is a frozen dataclass: the tests read it,
or copy it with :func:`dataclasses.replace`, and never edit it in place. Its fields (arrays,
data frames, dicts) can still be edited, so each test that reads it checks it is as made
after the test: a test that edits it fails, rather than the tests run after it on that worker.
"""

import fcntl
import hashlib
import pickle
import sys
from collections.abc import Callable

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


def _made_once(tmp_path_factory, worker_id: str, name: str, make: Callable):
    """``make()`` and its digest, made by the first worker of the run to ask for ``name`` and
    read from its pickle by the others (pytest-xdist's pattern for a session fixture made once:
    the run's temporary folder is shared by its workers, a lock file orders them)."""
    if worker_id == "master":  # one process (-n 0)
        value = make()
        return value, _digest(value)
    folder = tmp_path_factory.getbasetemp().parent
    stored = folder / f"{name}.pickle"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stored.exists():
            stored.write_bytes(pickle.dumps(make()))
    value = pickle.loads(stored.read_bytes())
    return value, _digest(value)


def _estimate(source: Callable) -> Callable:
    """The builder's fit, at its defaults, of the data and roles ``source()`` returns, made
    when called (imported then: the xdist controller process, which runs no test, loads this
    file too)."""

    def make():
        from synpmx_lite.generator.estimate import synpmx_model_estimate

        return synpmx_model_estimate(*source())

    return make


def _warfarin():
    from synpmx_lite.pmx.study import load_dataset

    return load_dataset("warfarin")


def _misdosed():
    from synpmx_lite.generator.cases import constructed_warfarin_cases

    cases = constructed_warfarin_cases()
    return cases.misdosed, cases.roles


@pytest.fixture(scope="session")
def _warfarin_fit(tmp_path_factory, worker_id):
    return _made_once(tmp_path_factory, worker_id, "warfarin_fit", _estimate(_warfarin))


@pytest.fixture(scope="session")
def _misdosed_fit(tmp_path_factory, worker_id):
    return _made_once(tmp_path_factory, worker_id, "misdosed_fit", _estimate(_misdosed))


def _unedited(shared):
    fit, made = shared
    yield fit
    assert _digest(fit) == made, "the test edited a shared fit in place"


@pytest.fixture
def warfarin_fit(_warfarin_fit):
    """The builder's fit of the public warfarin study at its defaults (seed 1), made once per
    run, and checked unedited after each test that reads it."""
    yield from _unedited(_warfarin_fit)


@pytest.fixture
def misdosed_fit(_misdosed_fit):
    """The builder's fit of the constructed misdosed warfarin case
    (:func:`~synpmx_lite.generator.cases.constructed_warfarin_cases`) at its defaults, made
    once per run, and checked unedited after each test that reads it."""
    yield from _unedited(_misdosed_fit)


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
