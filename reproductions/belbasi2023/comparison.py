"""belbasi2023's marks and the computed comparison with the paper (package docstring, 10.): the paper's
significance rule on a (split x model) error matrix, and the comparison section of the report."""

from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np
import pandas as pd

from reproductions.belbasi2023.protocol import CONF, LABEL, MODELS, NOMINAL, PROPOSED, VARIANTS, VariantRun
from reproductions.belbasi2023.published import PUBLISHED
from reproductions.report import fmt_pct, md_table
from reproductions.stats import ALPHA, one_sided_p
from reproductions.verdicts import ClaimTest, family, render

#: the claims of belbasi2023 §6.3 tested over the (data set, variant) rows of each table, ``(A, B)``: "A has a lower
#: test error than B" -- the mixed-feature models against the nominal ones and against ConF (the same ball with the
#: categorical features one-hot encoded as continuous: the paper's point)
CLAIMS = (("MixF k=1", "Nom"), ("MixF k=K", "Nom"), ("r-MixF k=1", "r-Nom"), ("r-MixF k=K", "r-Nom"),
          ("MixF k=1", "ConF k=1"), ("MixF k=K", "ConF k=K"))

# ============================================================================ 10. significance
def better_conf(errors: pd.DataFrame) -> str:
    """The ConF model with the lower mean error (κ = 1 on a tie): the double dagger's reference."""
    means = errors[list(CONF)].mean()
    return min(CONF, key=lambda m: means[m])


def significance_marks(errors: pd.DataFrame, alpha: float = ALPHA) -> Dict[str, str]:
    """belbasi2023 §6.3's marks for a (split x model) error matrix: ``{model: mark}`` for the MixF / r-MixF
    model(s) with the lowest mean error of the row (every model within 1e-12 of it); ``{}`` when the lowest
    mean belongs to Nom, r-Nom or ConF only.

    dagger: the winner is significantly better than Nom and than r-Nom; double dagger: significantly better
    than the better of the two ConF models.  One-sided paired t-test, p < ``alpha``.
    """
    means = errors.mean()
    best = means.min()
    winners = [m for m in errors.columns if abs(means[m] - best) <= 1e-12 and m in PROPOSED]
    reference = better_conf(errors)
    marks = {}
    for w in winners:
        dagger = all(one_sided_p(errors[w], errors[b]) < alpha for b in NOMINAL)
        double = one_sided_p(errors[w], errors[reference]) < alpha
        marks[w] = ("†" if dagger else "") + ("‡" if double else "")
    return marks


def finished(runs: Sequence[VariantRun]) -> List[VariantRun]:
    """The runs that ended with results (no error)."""
    return [r for r in runs if r.errors is not None and not r.error]


def comparison_rows(runs: Sequence[VariantRun], losses: Sequence[str]) -> List[dict]:
    """Per (loss, data set, variant): our and the paper's winner, the best MixF / r-MixF model against Nom
    and against the better ConF (differences in points, our one-sided p-values), and the marks."""
    out = []
    for loss in losses:
        for run in finished(runs):
            matrix = run.matrix(loss)
            if not set(MODELS) <= set(matrix.columns) or matrix.empty:
                continue
            pub = PUBLISHED[(loss, run.name, run.variant)]
            means, pub_means = matrix.mean(), pd.Series(pub.errors)
            best_prop = min(PROPOSED, key=lambda m: means[m])
            pub_best_prop = min(PROPOSED, key=lambda m: pub.errors[m])
            conf, pub_conf = better_conf(matrix), min(CONF, key=lambda m: pub.errors[m])
            ours_marks = significance_marks(matrix)
            out.append({
                "loss": loss, "name": run.name, "variant": run.variant,
                "ours_best": means.idxmin(), "pub_best": pub_means.idxmin(),
                "ours_prop_wins": means[list(PROPOSED)].min() <= means.min() + 1e-12,
                "pub_prop_wins": pub_means[list(PROPOSED)].min() <= pub_means.min() + 1e-12,
                "ours_nom": means["Nom"], "pub_nom": pub.errors["Nom"],
                "ours_best_prop": best_prop, "pub_best_prop": pub_best_prop,
                "ours_vs_nom": means[best_prop] - means["Nom"],
                "pub_vs_nom": pub.errors[pub_best_prop] - pub.errors["Nom"],
                "ours_vs_conf": means[best_prop] - means[conf],
                "pub_vs_conf": pub.errors[pub_best_prop] - pub.errors[pub_conf],
                "p_vs_nom": one_sided_p(matrix[best_prop], matrix["Nom"]),
                "p_nom_better": one_sided_p(matrix["Nom"], matrix[best_prop]),
                "p_vs_conf": one_sided_p(matrix[best_prop], matrix[conf]),
                "p_conf_better": one_sided_p(matrix[conf], matrix[best_prop]),
                "ours_means": means.to_dict(), "pub_means": dict(pub.errors),
                "ours_marks": "".join(sorted(set("".join(ours_marks.values())), key="†‡".index)),
                "pub_marks": "".join(sorted(set("".join(pub.marks.values())), key="†‡".index)),
                "ours_beats": {m: (means[m] < means["Nom"] - 1e-12, means[m] < means[conf] - 1e-12) for m in PROPOSED},
                "pub_beats": {m: (pub.errors[m] < pub.errors["Nom"], pub.errors[m] < pub.errors[pub_conf])
                              for m in PROPOSED}})
    return out


def claim_tests(runs: Sequence[VariantRun], loss: str) -> List[ClaimTest]:
    """:data:`CLAIMS` on our per-split errors of one loss, the (data set, variant) rows as the data sets, Holm over
    the table (:mod:`reproductions.verdicts`)."""
    errors, published = {}, {}
    for run in finished(runs):
        matrix = run.matrix(loss)
        if matrix.empty:
            continue
        key = f"{run.name} ({run.variant})"
        errors[key] = {LABEL[m]: matrix[m].to_numpy() for m in matrix.columns}
        published[key] = PUBLISHED.get((loss, run.name, run.variant))
    tests = []
    for a, b in CLAIMS:
        gaps = {k: (None if p is None else p.errors[a] - p.errors[b]) for k, p in published.items()}
        tests.append(ClaimTest.of(f"{LABEL[a]} < {LABEL[b]}", LABEL[a], LABEL[b], errors, gaps))
    return family(tests)


def verdict_section(runs: Sequence[VariantRun], losses: Sequence[str]) -> str:
    """Per loss (table), the claims' verdicts from statistics (:func:`reproductions.verdicts.render`)."""
    blocks = []
    for loss in losses:
        tests = claim_tests(runs, loss)
        if tests and tests[0].datasets:
            blocks += [f"### {loss.replace('_', ' ')} loss", "", render(tests), ""]
    return "\n".join(blocks) if blocks else "No data set finished."


def _rank(values: Dict[str, float]) -> Dict[str, int]:
    """1 for the lowest value, 2 for the next, ... (ties share the lower rank)."""
    return {k: 1 + sum(v < values[k] - 1e-12 for v in values.values()) for k in values}


def _sign(value: float) -> int:
    return int(np.sign(round(value, 10)))


def comparison_section(runs: Sequence[VariantRun], losses: Sequence[str]) -> str:
    """A factual, computed comparison with the paper (the hand-written discussion is separate)."""
    rows = comparison_rows(runs, losses)
    if not rows:
        return "No data set finished."
    table = md_table(
        ["loss", "data set", "reduced?", "best ours", "best paper", "Nom ours / paper",
         "best MixF − Nom ours / paper (points)", "p ours", "best MixF − better ConF ours / paper (points)",
         "p ours", "marks ours / paper"],
        [[r["loss"], r["name"], r["variant"], LABEL[r["ours_best"]], LABEL[r["pub_best"]],
          f"{fmt_pct(r['ours_nom'])} / {fmt_pct(r['pub_nom'])}",
          f"{100 * r['ours_vs_nom']:+.2f} / {100 * r['pub_vs_nom']:+.2f}", f"{r['p_vs_nom']:.3f}",
          f"{100 * r['ours_vs_conf']:+.2f} / {100 * r['pub_vs_conf']:+.2f}", f"{r['p_vs_conf']:.3f}",
          f"{r['ours_marks'] or '–'} / {r['pub_marks'] or '–'}"] for r in rows], "lllllrrrrrl")
    n = len(rows)

    def count(key):
        return sum(bool(r[key]) for r in rows)

    def agree(key_ours, key_pub):
        return sum(_sign(r[key_ours]) == _sign(r[key_pub]) for r in rows)

    lines = [table, "",
             "*best MixF*: the MixF / r-MixF model (of four) with the lowest mean error in that row, ours and the "
             "paper's separately; *better ConF*: the ConF model with the lower mean; *p ours*: one-sided paired "
             "t-test that the best MixF model is better (over our splits).", "",
             f"Over the {n} rows (loss × data set × variant) of this run:", "",
             f"- A MixF / r-MixF model has the lowest mean error (ties included) in {count('ours_prop_wins')} of {n} "
             f"rows here, in {count('pub_prop_wins')} of the same {n} in the paper.",
             f"- The best MixF / r-MixF model is below Nom in {sum(r['ours_vs_nom'] < -1e-12 for r in rows)} of {n} "
             f"rows here ({sum(r['pub_vs_nom'] < 0 for r in rows)} in the paper); significantly (p < {ALPHA}) in "
             f"{sum(r['p_vs_nom'] < ALPHA for r in rows)}, while Nom is significantly better in "
             f"{sum(r['p_nom_better'] < ALPHA for r in rows)}. The sign of (best MixF − Nom) agrees with the "
             f"paper's in {agree('ours_vs_nom', 'pub_vs_nom')} of {n} rows (zero counts as its own sign).",
             f"- The best MixF / r-MixF model is below the better ConF in "
             f"{sum(r['ours_vs_conf'] < -1e-12 for r in rows)} of {n} rows here "
             f"({sum(r['pub_vs_conf'] < 0 for r in rows)} in the paper); significantly in "
             f"{sum(r['p_vs_conf'] < ALPHA for r in rows)}, ConF significantly better in "
             f"{sum(r['p_conf_better'] < ALPHA for r in rows)}. Sign agreement with the paper: "
             f"{agree('ours_vs_conf', 'pub_vs_conf')} of {n}.",
             f"- Marks: a dagger in {sum('†' in r['ours_marks'] for r in rows)} rows here vs "
             f"{sum('†' in r['pub_marks'] for r in rows)} in the paper, a double dagger in "
             f"{sum('‡' in r['ours_marks'] for r in rows)} vs {sum('‡' in r['pub_marks'] for r in rows)}; both "
             f"have a mark in {sum(bool(r['ours_marks']) and bool(r['pub_marks']) for r in rows)} rows.",
             f"- Nom (the same model in both) differs from the paper's Nom by "
             f"{100 * np.mean([abs(r['ours_nom'] - r['pub_nom']) for r in rows]):.2f} points on average "
             f"(data, splits and sizes differ; see the protocol).",
             "- Best-of-four after the fact favours the MixF family; the per-model counts below do not.", ""]
    ours_mean = {m: np.mean([r["ours_means"][m] for r in rows]) for m in MODELS}
    pub_mean = {m: np.mean([r["pub_means"][m] for r in rows]) for m in MODELS}
    lines += [f"Each model's mean error averaged over the {n} rows (no best-of selection), ours / paper, and its rank "
              "(1 = lowest):", "",
              md_table(["model", "mean over rows (ours / paper)", "rank (ours / paper)"],
                       [[LABEL[m], f"{fmt_pct(ours_mean[m])} / {fmt_pct(pub_mean[m])}",
                         f"{_rank(ours_mean)[m]} / {_rank(pub_mean)[m]}"] for m in MODELS]), ""]
    per_model = []
    for m in PROPOSED:
        per_model.append([LABEL[m],
                          f"{sum(r['ours_beats'][m][0] for r in rows)} / {sum(r['pub_beats'][m][0] for r in rows)}",
                          f"{sum(r['ours_beats'][m][1] for r in rows)} / {sum(r['pub_beats'][m][1] for r in rows)}"])
    lines += [f"Rows (of {n}) in which each model's mean error is strictly below Nom's / the better ConF's, "
              "ours / paper:", "",
              md_table(["model", "below Nom (ours / paper)", "below better ConF (ours / paper)"], per_model), ""]
    by_variant = []
    for variant in VARIANTS:
        part = [r for r in rows if r["variant"] == variant]
        if part:
            by_variant.append([variant, len(part),
                               f"{100 * np.mean([r['ours_vs_nom'] for r in part]):+.2f} / "
                               f"{100 * np.mean([r['pub_vs_nom'] for r in part]):+.2f}",
                               f"{100 * np.mean([r['ours_vs_conf'] for r in part]):+.2f} / "
                               f"{100 * np.mean([r['pub_vs_conf'] for r in part]):+.2f}"])
    lines += ["Mean difference (points) of the best MixF / r-MixF model, full vs half data (the paper: robust "
              "models help more on the parsimonious variants):", "",
              md_table(["variant", "rows", "best MixF − Nom ours / paper", "best MixF − better ConF ours / paper"],
                       by_variant)]
    return "\n".join(lines)
