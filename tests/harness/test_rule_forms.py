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


def _mde_calls(tree: ast.AST) -> set[int]:
    """ids of calls whose value is assigned to a name containing ``mde``: a paired rule's minimum
    detectable effect *is* ``max(margin, 2 s.e.)`` by definition; it is not a tolerance."""
    out = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign) else []
        if any(isinstance(t, ast.Name) and "mde" in t.id for t in targets) and node.value is not None:
            out |= {id(sub) for sub in ast.walk(node.value) if isinstance(sub, ast.Call)}
        if isinstance(node, ast.keyword) and node.arg == "mde":
            out |= {id(sub) for sub in ast.walk(node.value) if isinstance(sub, ast.Call)}
    return out


def growing_tolerances(source: str) -> list[int]:
    """Lines of ``max(...)`` / ``np.maximum(...)`` calls one of whose arguments reads an s.e.
    (outside an mde computation)."""
    lines = []
    tree = ast.parse(source)
    exempt = _mde_calls(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or id(node) in exempt:
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
    # the paired rule's mde is max(margin, 2 s.e.) by definition: not a tolerance
    assert growing_tolerances("mde = max(min_gap, 2 * se)") == []
    assert growing_tolerances("d = Decision(v, mde=max(m, 2 * se))") == []


def test_no_paper_widens_a_tolerance_with_the_noise():
    offenders = []
    for path in sorted(PAPERS_DIR.rglob("*.py")):
        for line in growing_tolerances(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(PAPERS_DIR)}:{line}")
    assert not offenders, ("tolerances that grow with the s.e. (use harness.noninferior): "
                           + ", ".join(offenders))
