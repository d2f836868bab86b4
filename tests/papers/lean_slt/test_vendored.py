"""The catalogue against the vendored Lean statement text (YuanheZ/lean-stat-learning-theory @ d0f506f0).

These tests catch transcription errors that no numerical check can: a row whose Lean name is not
declared in its file, or whose Python constant is not the one in the Lean conclusion. Constants are
compared by *evaluating the vendored Lean expression* (a mechanical translation to Python, below)
against the shipped function on a few inputs.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import icml26.papers.lean_slt as L
from icml26.papers.lean_slt.lean import lean_statements

DECLS = lean_statements()["declarations"]


def _conclusion(text: str) -> str:
    """The part of a declaration header after its hypotheses (the last top-level `:` line break)."""
    return text.rsplit(":\n", 1)[-1]


def test_vendored_file_carries_source_commit_and_license():
    meta = lean_statements()
    assert meta["repository"] == L.LEAN_REPO
    assert meta["commit"] == L.LEAN_COMMIT and len(meta["commit"]) == 40
    assert meta["license"].startswith("Apache-2.0") and "Yuanhe Zhang" in meta["attribution"]
    from importlib import resources

    lic = resources.files("icml26.papers.lean_slt.lean").joinpath("LICENSE-APACHE-2.0.txt").read_text()
    assert "Apache License" in lic and "Version 2.0" in lic
    for decl in DECLS.values():  # statements only: no proof text
        assert ":= by" not in decl["text"] and "sorry" not in decl["text"]


@pytest.mark.parametrize("key", list(L.THEOREMS))
def test_row_is_declared_in_its_file_with_its_terms(key):
    spec = L.THEOREMS[key]
    assert spec.lean_name in DECLS, f"{key}: {spec.lean_name} not vendored"
    decl = DECLS[spec.lean_name]
    assert decl["file"] == spec.lean_file, f"{key}: declared in {decl['file']}, catalogue says {spec.lean_file}"
    assert decl["kind"] in {"theorem", "lemma"}
    assert re.match(rf"^(theorem|lemma) {re.escape(spec.lean_name)}(\s|$)", decl["text"])
    where = _conclusion(decl["text"]) + "\n" + "\n".join(DECLS[d]["text"] for d in spec.lean_defs)
    assert spec.lean_terms, f"{key}: no Lean term recorded"
    for term in spec.lean_terms:
        assert term in where, f"{key}: {term!r} is not in the vendored conclusion of {spec.lean_name}"
    for d in spec.lean_defs:
        assert DECLS[d]["file"] == spec.lean_file and DECLS[d]["kind"] == "def"


def test_every_vendored_theorem_is_a_row():
    rows = {s.lean_name for s in L.THEOREMS.values()}
    theorems = {k for k, v in DECLS.items() if v["kind"] in {"theorem", "lemma"}}
    assert theorems == rows
    assert len(rows) >= 24


# ------------------------------------------------------------------ Lean expression -> Python value

_REWRITES = [
    (r" : ℝ\)", ")"),  # type ascriptions `(e : ℝ)`
    (r"Real\.exp 1", "exp(1)"),
    (r"Real\.sqrt (\w+)", r"sqrt(\1)"),
    (r"Metric\.diam \(T : Set A\)", "diam"),
    (r"log T\.card", "log(card)"),
    (r"Fintype\.card ι", "d"),
    (r"⌈(.*?)⌉₊", r"ceil(\1)"),
    (r"entropyIntegral s D", "J"),
    (r"entropyIntegral$", "J"),
    (r"localOsc X T δ", "local"),
    (r"\(⨆ u ∈ U, \|X u - X u₀\|\)", "net"),
    (r"\(designMatrixRank M\.x\)", "r"),
    (r"\(linear_δ_star M\.σ d n\)", "dstar"),
    (r"M\.σ", "σ"),
    (r"\^", "**"),
]


def lean_eval(term: str, **env) -> float:
    expr = term
    for pat, rep in _REWRITES:
        expr = re.sub(pat, rep, expr)
    expr = expr.replace("exp (", "exp(").replace("sqrt (", "sqrt(")
    names = {"exp": math.exp, "sqrt": math.sqrt, "log": math.log, "ceil": math.ceil, **env}
    return float(eval(expr, {"__builtins__": {}}, names))  # noqa: S307 - our own vendored, fixed text


def _def_value(name: str, **env) -> float:
    text = DECLS[name]["text"]
    return lean_eval(text.split(":=", 1)[1].strip().replace("linear_C1", str(lean_eval(
        DECLS["linear_C1"]["text"].split(":=", 1)[1].strip()))), **env)


def _term(key: str, i: int = 0) -> str:
    return L.THEOREMS[key].lean_terms[i]


@pytest.mark.parametrize("eps,N", [(0.1, 1), (0.3, 7), (0.05, 20)])
def test_small_ball_constant(eps, N):
    assert lean_eval(_term("T01"), ε=eps, N=N) == pytest.approx(L.small_ball_bound(eps, N), rel=1e-12)


@pytest.mark.parametrize("R,eps,d", [(1.0, 0.3, 3), (2.0, 0.7, 5), (0.5, 0.05, 1)])
def test_covering_constants(R, eps, d):
    assert lean_eval(_term("T04"), R=R, eps=eps, d=d) == pytest.approx(L.euclidean_ball_covering_bound(R, eps, d))
    for key in ("T05", "T23"):
        val = lean_eval(_term(key), R=R, eps=eps, ε=eps, d=d)
        assert val == pytest.approx(L.l1_ball_covering_bound(R, eps, d), rel=1e-12)


def test_finite_max_dudley_and_complexity_constants():
    assert lean_eval(_term("T06"), σ=1.3, diam=2.1, card=17) == pytest.approx(L.finite_max_bound(1.3, 2.1, 17))
    assert lean_eval(_term("T07"), σ=0.7, J=3.2) == pytest.approx(L.dudley_bound(0.7, 3.2), rel=1e-14)
    assert lean_eval(_term("T18"), n=50, J=1.7) == pytest.approx(L.local_complexity_dudley_bound(1.7, 50), rel=1e-14)
    assert lean_eval("12 * Real.sqrt 2") == pytest.approx(L.DUDLEY_CONSTANT, rel=1e-15)


def test_concentration_constants():
    for t, Lc in ((0.5, 1.0), (2.0, 0.3)):
        assert lean_eval(_term("T15"), t=t, L=Lc) == pytest.approx(L.gaussian_lipschitz_cgf_bound(t, Lc))
        assert lean_eval(_term("T16"), t=t, L=Lc) == pytest.approx(L.gaussian_lipschitz_tail_bound(t, Lc))
    assert lean_eval(_term("T17"), local=0.4, net=1.1) == pytest.approx(L.one_step_discretization_rhs(0.4, 1.1))


def test_least_squares_constants():
    n, sigma, t, dstar = 120, 1.4, 0.9, 0.5
    res = L.master_error_bound(t, dstar, n, sigma)
    assert lean_eval(_term("T21", 0), t=t, δ_star=dstar) == pytest.approx(res.radius_sq)
    assert lean_eval(_term("T21", 1), t=t, δ_star=dstar, n=n, σ=sigma) == pytest.approx(res.probability)
    u = 0.3
    assert lean_eval(DECLS["bad_event_probability_bound"]["text"].rsplit("≤ ", 1)[1], n=n, u=u, σ=sigma) == \
        pytest.approx(L.bad_event_probability_bound(u, n, sigma))
    # explicit full-rank rate: δ* = linear_δ_star, C₁, C₂
    d = 7
    dstar_lean = _def_value("linear_δ_star", σ=sigma, d=d, n=n)
    assert dstar_lean == pytest.approx(L.formal_linear_critical_radius(sigma, d, n), rel=1e-14)
    assert lean_eval(_term("T22", 0), dstar=dstar_lean) == pytest.approx(
        L.master_error_bound(dstar_lean, dstar_lean, n, sigma).radius_sq)
    assert _def_value("linear_C₁") == pytest.approx(L.FORMAL_LINEAR_C1, rel=1e-14) == 1179648.0
    assert _def_value("linear_C₂") == pytest.approx(L.FORMAL_LINEAR_C2, rel=1e-14) == 36864.0
    # rank version
    r = 3
    c1, c2 = _def_value("linear_C₁_rank"), _def_value("linear_C₂_rank")
    rank = L.linear_minimax_rank_bound(sigma, r, n)
    assert lean_eval(_term("T25", 0).replace("C₁", str(c1)), σ=sigma, r=r, n=n) == pytest.approx(rank.radius_sq)
    assert lean_eval(_term("T25", 1).replace("C₂", str(c2)), r=r) == pytest.approx(rank.probability, rel=1e-14)
    assert rank.log_failure == pytest.approx(-c2 * r)
    assert _def_value("linear_δ_star_rank", σ=sigma, r=r, n=n) == pytest.approx(
        L.formal_linear_critical_radius(sigma, r, n))


def test_functional_inequality_constants():
    # T13: ½ E[gradientNormSq], gradientNormSq = Σ_j (h − h∘flip_j)²
    assert "(1/2) *" in _term("T13") and "(h ε - h (flipCoord j ε))^2" in DECLS["gradientNormSq"]["text"]
    h = np.random.default_rng(0).standard_normal(2**4)
    cube = L.hypercube(4)
    idx = {tuple(x): i for i, x in enumerate(cube)}
    grad = np.mean([sum((h[i] - h[idx[tuple(np.where(np.arange(4) == j, -x, x))]]) ** 2 for j in range(4))
                    for i, x in enumerate(cube)])
    assert L.bernoulli_lsi_rhs(h) == pytest.approx(0.5 * grad, rel=1e-12)
    # T14: 2 E gradNormSq, T10: twoPointEntropyCoord, T08/T09/T12 have coefficient 1
    assert _term("T14").startswith("2 * ∫ x, gradNormSq")
    assert "(a * log a + b * log b) / 2 - (a + b) / 2 * log ((a + b) / 2)" in DECLS["twoPointEntropyCoord"]["text"]
    a2, b2 = 0.3**2, 1.7**2
    two_point = (a2 * math.log(a2) + b2 * math.log(b2)) / 2 - (a2 + b2) / 2 * math.log((a2 + b2) / 2)
    assert L.han_rhs(np.array([0.3, 1.7])) == pytest.approx(two_point, rel=1e-12)
