"""How much perturbation breaks a model, and which features are fragile (blanchet2024 on German credit).

The OT-with-moment stability criterion ``R(beta, r)`` is the least cost of a perturbation of the
evaluation data -- moving samples (data corruption, price ``theta1``) and reweighting them (sub-population
shift, price ``theta2`` times a KL divergence) -- under which the model's risk reaches ``r``.  Larger ``R``
means a more stable model.  As in the paper's Section 4, this script compares three models fitted on the
same data:

* plain logistic regression (scikit-learn),
* drokit's mixed-feature Wasserstein DRO logistic regression,
* a one-hidden-layer MLP with 16 units (scikit-learn),

first by ``R`` at a log-loss threshold over the paper's budget split ``1/theta1 + 1/theta2 = 5`` (how the
excess risk splits between moving and reweighting samples), then per feature, with the 0/1 loss at a 40 %
error threshold, ``theta1 = 1``, ``theta2 = 0.25`` (the paper's Section 4.2 setting): the smallest ``R_j``
are the features whose perturbation alone breaks the model most cheaply.  Categorical features move as
features (to any other level at cost 1), not as one-hot columns; numerical features are standardized and
move at squared-Euclidean cost.

Data: Statlog German credit (1,000 applicants, 7 numerical + 13 categorical features), shipped with
drokit; no network, no licence.  Evaluation on a held-out half, as the paper.

Run:  python examples/stability_adult_like.py [--plot stability.png]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

import drokit as dk
from drokit.datasets.german import NUMERICAL
from drokit.schema import FeatureSchema

LOG_LOSS_RISK = 1.0          # log-loss threshold of the model comparison
ERROR_RISK = 0.40            # error-rate threshold of the feature criterion (paper: 40 %)
SHARES = (0.2, 0.5, 0.8)     # share of the budget C = 5 given to corruption: 1/theta1 = 5 * share
TOP = 5


def load():
    X, y = dk.datasets.load_german_credit()
    X_fit, X_eval, y_fit, y_eval = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
    mean, std = X_fit[NUMERICAL].mean(), X_fit[NUMERICAL].std()
    X_fit, X_eval = X_fit.copy(), X_eval.copy()
    X_fit[NUMERICAL] = (X_fit[NUMERICAL] - mean) / std
    X_eval[NUMERICAL] = (X_eval[NUMERICAL] - mean) / std
    return X_fit, X_eval, y_fit, y_eval


def fit_models(X_fit, y_fit):
    schema = FeatureSchema.infer(X_fit)            # drokit's design: [numerical, reference-level dummies]
    design = schema.design(schema.transform(X_fit)).toarray()
    lr = LogisticRegression(C=1.0, max_iter=2000).fit(design, y_fit)
    dro = dk.DROClassifier(loss="logistic", ambiguity=dk.Wasserstein(radius=0.05), verbose=False).fit(X_fit, y_fit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp = MLPClassifier(hidden_layer_sizes=(16,), alpha=3.0, max_iter=2000, random_state=0).fit(design, y_fit)
    return schema, {"logistic regression": lr, "DRO logistic (drokit)": dro, "MLP (16 units)": mlp}


def accuracy(model, schema, X, y) -> float:
    if isinstance(model, dk.DROClassifier):
        return float(np.mean(model.predict(X) == y))
    return float(np.mean(model.predict(schema.design(schema.transform(X)).toarray()) == y))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plot", help="save the feature-stability bars and the R(r) curves to this file")
    args = parser.parse_args()
    t_start = time.perf_counter()
    X_fit, X_eval, y_fit, y_eval = load()
    schema, models = fit_models(X_fit, y_fit)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2), categorical=dk.MismatchCost(weights=1.0))

    def kwargs(model):
        return {} if isinstance(model, dk.DROClassifier) else {"schema": schema}

    print(f"German credit: {len(X_fit)} rows to fit, {len(X_eval)} to evaluate "
          f"({len(NUMERICAL)} numerical + {X_fit.shape[1] - len(NUMERICAL)} categorical features)\n")
    # ---------------------------------------------------------------- 1. model stability
    rows = []
    for name, model in models.items():
        row = {"model": name, "accuracy": accuracy(model, schema, X_eval, y_eval), "log-loss": np.nan}
        extra = {}
        for share in SHARES:
            amb = dk.OTMoment.from_budget_split(C=5.0, corruption_share=share, metric=metric)
            res = dk.stability(model, X_eval, y_eval, risk=LOG_LOSS_RISK, ambiguity=amb, **kwargs(model))
            corruption, reweighting = res.excess_risk
            row["log-loss"] = res.nominal_risk
            row[f"R (theta1={amb.theta1:.2g}, theta2={amb.theta2:.2g})"] = res.value
            if share == 0.5:
                extra["excess risk: moving / reweighting (0.4, 0.4)"] = (
                    f"{corruption / (corruption + reweighting):.0%} / {reweighting / (corruption + reweighting):.0%}")
                extra["primal-dual gap"] = res.gap
        rows.append({**row, **extra})
    table = pd.DataFrame(rows).set_index("model")
    print(f"1. Stability R at log-loss r = {LOG_LOSS_RISK} (larger = more stable), KL, 1/theta1 + 1/theta2 = 5")
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
        print(table.to_string())
    # ---------------------------------------------------------------- 2. feature stability
    amb = dk.OTMoment(metric=metric, theta1=1.0, theta2=0.25)
    print(f"\n2. Most fragile features: R_j with only feature j perturbed, 0/1 loss, error rate r = "
          f"{ERROR_RISK:.0%}, theta1 = 1, theta2 = 0.25 (smaller = more fragile)")
    rankings = {}
    for name, model in models.items():
        loss = "logistic" if isinstance(model, MLPClassifier) else "zero_one"
        risk = ERROR_RISK if loss == "zero_one" else LOG_LOSS_RISK
        t0 = time.perf_counter()
        fs = dk.feature_stability(model, X_eval, y_eval, risk=risk, ambiguity=amb, loss=loss, **kwargs(model))
        rankings[name] = fs
        top = fs.table.head(TOP)
        what = "error rate 40 %" if loss == "zero_one" else f"log-loss {LOG_LOSS_RISK} (the MLP has no exact 0/1 flip distance)"
        print(f"\n  {name} ({what}; all features R = {fs.full.value:.4g}; {time.perf_counter() - t0:.2f} s):")
        for _, r in top.iterrows():
            print(f"    {r['feature']:<26} {r['kind']:<12} R_j = {r['value']:.4g}")
    # ---------------------------------------------------------------- 3. curves
    print(f"\n3. R(r) of the three models over log-loss thresholds (theta1 = theta2 = 0.4):")
    risks = np.linspace(0.4, 1.6, 7)
    curves = {}
    for name, model in models.items():
        curve = dk.stability_curve(model, X_eval, y_eval, risks=risks,
                                   ambiguity=dk.OTMoment.from_budget_split(5.0, 0.5, metric=metric), **kwargs(model))
        curves[name] = curve
        print(f"  {name:<24} " + "  ".join(f"{v:.3g}" for v in curve.values))
    print(f"  {'r':<24} " + "  ".join(f"{r:.3g}" for r in risks))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(models) + 1, figsize=(5 * (len(models) + 1), 4))
        for ax, (name, fs) in zip(axes, rankings.items()):
            fs.plot(top=8, ax=ax)
            ax.set_title(name)
        for name, curve in curves.items():
            curve.plot(ax=axes[-1], label=name)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"\nplots written to {args.plot}")
    print(f"\ntotal {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
