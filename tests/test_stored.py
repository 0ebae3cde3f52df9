"""Stored results are returned only for the settings and sources that made them."""

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
