"""Paper reproductions: each paper's experimental protocol run with drokit, written up as a markdown report
next to the published numbers (``docs/results/<paper>``).

Run from the repository root (the package is not part of the drokit wheel)::

    python -m reproductions.sun2025      # sun2025 §5.2: weighted vs unit-weight DRO vs lasso LR under shift
    python -m reproductions.selvi2022    # selvi2022 Table 1: categorical-only UCI data
    python -m reproductions.belbasi2023  # belbasi2023 Tables 2-4: mixed-feature UCI data, three losses

``--help`` lists each one's options; the package docstring of each paper states its protocol, sizes and
departures from the paper.  Every paper is a package: ``protocol`` (data, models, runs; selvi2022 and
belbasi2023 also their configuration) and the modules that write its report.

The machinery the papers share, one module per concern:

* :mod:`reproductions.options`: the run options and the command line;
* :mod:`reproductions.protocol`: splits, the designed classifier, the CV and test sweeps, the selection;
* :mod:`reproductions.stats`: one-sided paired t-tests, standard errors;
* :mod:`reproductions.report`: markdown helpers, report files, the kept discussion, run.json, ``--render-only``;
* :mod:`reproductions.runtime`: progress lines, CPU count, versions, the Dask session.
"""
