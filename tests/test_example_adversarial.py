"""The adversarial + auxiliary-data example runs end to end in its reduced mode (--quick: one split of SPECT,
N = 16, N_aux = 32, 2-fold CV, tiny grids) and prints its error table and the Inter-ARO* bracket."""

import importlib.util
import pathlib
import sys

import numpy as np

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "adversarial_auxiliary.py"
MODELS = ("ERM", "ARO", "ARO+Aux", "DRO+ARO", "DRO+ARO+Aux")


def _load():
    spec = importlib.util.spec_from_file_location("adversarial_auxiliary_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_adversarial_example_quick(capsys):
    module = _load()
    results = module.main(["--quick", "--seed", "0"])
    out = capsys.readouterr().out
    assert "Out-of-sample error (%) under worst-case l2 attacks" in out
    assert "thesis Table 27/30" in out and "drokit (this run)" in out
    assert "Inter-ARO* bracket" in out
    assert len(results) == 2                                   # one split x alpha in {0.05, 0.2}
    for r in results:
        assert set(r["errors"]) == set(MODELS)
        assert all(0.0 <= e <= 100.0 for e in r["errors"].values())
        inter = r["inter"]
        assert inter["bound"] == "upper"
        assert np.isfinite(inter["lower"]) and inter["lower"] <= inter["upper"] + 1e-6
        assert inter["eps"] + inter["eps_aux"] >= inter["W"] * (1 - 1e-9)   # a non-empty intersection
    # a stronger attack cannot lower ERM's error: the same model, a smaller margin everywhere
    by_alpha = {r["alpha"]: r["errors"]["ERM"] for r in results}
    assert by_alpha[0.2] >= by_alpha[0.05]


def test_gaussian_copula_keeps_discrete_marginals():
    module = _load()
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 400)
    b = np.where(rng.random(400) < 0.8, a, 1 - a)            # strongly tied to a
    c = rng.normal(size=400) + 2 * a
    syn = module.GaussianCopula([True, True, False], seed=1).fit(np.column_stack([a, b, c]))
    S = syn.sample(4000)
    assert set(np.unique(S[:, 0])) <= {0.0, 1.0} and set(np.unique(S[:, 1])) <= {0.0, 1.0}
    assert abs(S[:, 0].mean() - a.mean()) < 0.04
    assert S[:, 2].min() >= c.min() and S[:, 2].max() <= c.max()
    assert np.corrcoef(S[:, 0], S[:, 1])[0, 1] > 0.3                  # the dependence survives
