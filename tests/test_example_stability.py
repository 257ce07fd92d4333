"""The stability example runs end to end on the shipped German credit data and prints its three parts."""

import importlib.util
import pathlib
import sys

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "stability_adult_like.py"


def test_stability_example_runs(monkeypatch, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    spec = importlib.util.spec_from_file_location("stability_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out_png = tmp_path / "stability.png"
    monkeypatch.setattr(sys, "argv", ["stability_adult_like.py", "--plot", str(out_png)])
    module.main()
    out = capsys.readouterr().out
    assert "1. Stability R at log-loss" in out
    assert "2. Most fragile features" in out
    assert "3. R(r)" in out
    assert out_png.exists() and out_png.stat().st_size > 10_000
    # each model's table row carries a certificate: the primal-dual gap is printed and tiny
    gaps = [float(line.split()[-1]) for line in out.splitlines()
            if line.startswith(("logistic regression", "DRO logistic", "MLP")) and "%" in line]
    assert len(gaps) == 3 and all(abs(g) < 1e-8 for g in gaps)
