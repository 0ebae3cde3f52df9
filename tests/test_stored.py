"""Stored results are returned only for the settings and sources that made them."""

import os

import numpy as np
import pytest

from synpmx_lite import stored


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A scratch package root with a data folder, and a scratch cache folder."""
    root = tmp_path / "package"
    (root / "data").mkdir(parents=True)
    (root / "engine").mkdir()
    (root / "engine" / "fit.py").write_text("VALUE = 1\n")
    (root / "helper.py").write_text("HELP = 1\n")
    monkeypatch.setattr(stored, "_package_root", lambda: root)
    monkeypatch.setenv("SYNPMX_CACHE", str(tmp_path / "cache"))
    return root


def counting_work(calls: list):
    def work(report):
        calls.append(1)
        report(1, 1)
        return {"values": np.arange(3.0) * len(calls)}

    return work


def test_a_digest_follows_contents_and_names(package):
    before = stored.sources_digest(["engine", "helper.py"])
    assert stored.sources_digest(["helper.py", "engine"]) == before
    (package / "engine" / "fit.py").write_text("VALUE = 2\n")
    edited = stored.sources_digest(["engine", "helper.py"])
    (package / "engine" / "new.py").write_text("")
    added = stored.sources_digest(["engine", "helper.py"])
    assert len({before, edited, added}) == 3


def test_a_digest_of_a_missing_path_is_refused(package):
    with pytest.raises(ValueError, match=r"'nothing\.py'"):
        stored.sources_digest(["nothing.py"])


def test_a_result_is_computed_once_then_read_from_the_cache(package, capsys):
    calls = []
    sources = stored.sources_digest(["engine"])
    first = stored.load_or_compute(
        "shadows", settings={"seed": 1}, sources=sources, work=counting_work(calls)
    )
    again = stored.load_or_compute(
        "shadows", settings={"seed": 1}, sources=sources, work=counting_work(calls)
    )
    assert len(calls) == 1
    np.testing.assert_array_equal(again.arrays["values"], first.arrays["values"])
    assert "shadows: 1/1" in capsys.readouterr().err


def test_other_settings_or_sources_are_never_answered_from_a_stored_file(package):
    sources = stored.sources_digest(["engine"])
    shipped = stored.StoredResult({"values": np.zeros(2)}, {"seed": 1}, sources, "2026-12-02", 1.0)
    stored.store(package / "data" / "shadows.npz", shipped)
    calls = []
    same = stored.load_or_compute(
        "shadows", settings={"seed": 1}, sources=sources, work=counting_work(calls)
    )
    assert calls == [] and same.made == "2026-12-02"
    other = {"seed": 2}
    stored.load_or_compute("shadows", settings=other, sources=sources, work=counting_work(calls))
    (package / "engine" / "fit.py").write_text("VALUE = 3\n")
    stored.load_or_compute(
        "shadows",
        settings={"seed": 1},
        sources=stored.sources_digest(["engine"]),
        work=counting_work(calls),
    )
    assert len(calls) == 2


def test_settings_must_be_json_values(package):
    with pytest.raises(TypeError, match="settings"):
        stored.load_or_compute(
            "shadows", settings={"seed": object()}, sources="x", work=counting_work([])
        )


def test_a_stored_file_keeps_infinite_settings(package, tmp_path):
    result = stored.StoredResult({"a": np.ones(1)}, {"epsilon": float("inf")}, "s", "d", 0.5)
    stored.store(tmp_path / "r.npz", result)
    assert stored.read_stored(tmp_path / "r.npz").matches({"epsilon": float("inf")}, "s")


def test_a_cached_file_cut_short_is_computed_afresh(package):
    calls = []
    sources = stored.sources_digest(["engine"])
    first = stored.load_or_compute(
        "shadows", settings={"seed": 1}, sources=sources, work=counting_work(calls)
    )
    (cached,) = (package.parent / "cache").glob("shadows-*.npz")
    cached.write_bytes(cached.read_bytes()[:40])
    again = stored.load_or_compute(
        "shadows", settings={"seed": 1}, sources=sources, work=counting_work(calls)
    )
    assert len(calls) == 2 and again.arrays["values"].shape == first.arrays["values"].shape
    assert stored.read_stored(cached).matches({"seed": 1}, sources)  # written anew, whole


def test_a_result_computed_afresh_reads_as_one_read_back(package):
    """Its settings are the JSON values a stored file gives back, not the caller's objects."""
    sources = stored.sources_digest(["engine"])
    sizes = [10, 20]
    settings = {"sizes": sizes, "pair": (1, 2)}
    fresh = stored.load_or_compute(
        "shadows", settings=settings, sources=sources, work=counting_work([])
    )
    sizes.append(30)
    (cached,) = (package.parent / "cache").glob("shadows-*.npz")
    assert (
        fresh.settings == stored.read_stored(cached).settings == {"sizes": [10, 20], "pair": [1, 2]}
    )


def test_settings_with_keys_json_would_turn_into_strings_are_refused(package):
    with pytest.raises(TypeError, match="string keys"):
        stored.load_or_compute(
            "shadows", settings={"sizes": {1: "a"}}, sources="x", work=counting_work([])
        )


def test_a_digest_of_no_path_or_of_a_path_outside_the_package_is_refused(package):
    with pytest.raises(ValueError, match="at least one"):
        stored.sources_digest([])
    (package.parent / "outside.py").write_text("")
    with pytest.raises(ValueError, match="outside"):
        stored.sources_digest(["../outside.py"])


def test_a_file_is_stored_only_under_its_own_name(tmp_path):
    result = stored.StoredResult({"a": np.ones(1)}, {}, "s", "d", 0.5)
    with pytest.raises(ValueError, match=r"\.npz"):
        stored.store(tmp_path / "r", result)
    mask = os.umask(0o022)
    try:
        stored.store(tmp_path / "r.npz", result)
    finally:
        os.umask(mask)
    assert [path.name for path in tmp_path.iterdir()] == ["r.npz"]  # no scratch file left
    assert (tmp_path / "r.npz").stat().st_mode & 0o777 == 0o644  # as any file, not private
