"""Reproduction of the seed paper's experiments (Patane et al., JMLR 2022, Sec. 7).

``python -m benchmarks.paper [--quick | --tiny] [--out DIR] [--only fig2,fig3,...]``
runs one module per figure; each writes ``figN.png`` and ``figN*.csv`` into
the output folder and prints its tables. See ``docs/paper.rst``.
"""
