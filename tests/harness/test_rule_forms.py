"""Rule forms over every registered paper (CLAIMS.md rule 8): no tolerance that grows with the
noise. A non-inferiority leg is ``mean - 2 s.e. > -margin`` (``harness.noninferior``); the form
``max(margin, 2 * se)`` lets a loss of two standard errors pass *because* the noise is large."""

from __future__ import annotations

import ast
from pathlib import Path

import icml26

PAPERS_DIR = Path(icml26.__file__).parent / "papers"


def _mentions_se(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        name = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) \
            else sub.value if isinstance(sub, ast.Constant) and isinstance(sub.value, str) else None
        if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant):
            name = sub.slice.value if isinstance(sub.slice.value, str) else None
        if isinstance(name, str) and (name in ("se", "sem", "stderr") or name.endswith("_se")):
            return True
    return False


def growing_tolerances(source: str) -> list[int]:
    """Lines of ``max(...)`` / ``np.maximum(...)`` calls one of whose arguments reads an s.e."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if fname in ("max", "maximum", "fmax") and len(node.args) >= 2 and \
                any(_mentions_se(a) for a in node.args):
            lines.append(node.lineno)
    return lines


def test_the_detector_finds_the_widening_form():
    assert growing_tolerances("tol = max(margin, 2 * se)") == [1]
    assert growing_tolerances("x = np.maximum(m, 2 * ev['gap_se'])") == [1]
    assert growing_tolerances("tol = max(margin, 2 * gap_se)") == [1]
    assert growing_tolerances("lo = mean - 2 * se > -margin\nk = max(a, b)") == []


def test_no_paper_widens_a_tolerance_with_the_noise():
    offenders = []
    for path in sorted(PAPERS_DIR.rglob("*.py")):
        for line in growing_tolerances(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(PAPERS_DIR)}:{line}")
    assert not offenders, ("tolerances that grow with the s.e. (use harness.noninferior): "
                           + ", ".join(offenders))
