"""The result file: a JSON contract other tools rely on, written atomically.

``DIR/<slug>/<profile>/<timestamp>.json`` plus a copy at ``DIR/<slug>/<profile>/latest.json``
and a Markdown summary ``latest.md``. Required keys: see :data:`REQUIRED_KEYS`.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from .claims import VERDICTS

SCHEMA_VERSION = 1
STATUSES = ("ok", "error")
REQUIRED_KEYS = (
    "schema_version", "paper", "profile", "seeds", "status", "runtime_s", "versions", "git",
    "config", "metrics", "claims",
)


class SchemaError(ValueError):
    """A result dict does not follow the result-file contract."""


def validate_result(result: Mapping[str, Any]) -> None:
    """Raise :class:`SchemaError` unless ``result`` follows the contract."""
    missing = [k for k in REQUIRED_KEYS if k not in result]
    if missing:
        raise SchemaError(f"result misses keys {missing}")
    if result["status"] not in STATUSES:
        raise SchemaError(f"status must be one of {STATUSES}, got {result['status']!r}")
    if result["status"] == "error" and not result.get("error"):
        raise SchemaError("an error result must carry its traceback under 'error'")
    metrics = result["metrics"]
    if not isinstance(metrics, Mapping):
        raise SchemaError("metrics must map arm -> metric -> list of per-seed values")
    for arm, per_metric in metrics.items():
        if not isinstance(per_metric, Mapping):
            raise SchemaError(f"metrics[{arm!r}] must map metric -> per-seed list")
        for name, values in per_metric.items():
            if not isinstance(values, list) or len(values) != len(result["seeds"]):
                raise SchemaError(f"metrics[{arm!r}][{name!r}] must have one value per seed")
    for claim in result["claims"]:
        for key in ("id", "statement", "paper_value", "metric", "rule", "verdict", "evidence",
                    "negative_control"):
            if key not in claim:
                raise SchemaError(f"claim {claim.get('id')!r} misses {key!r}")
        if claim["verdict"] not in VERDICTS:
            raise SchemaError(f"claim {claim['id']!r}: verdict {claim['verdict']!r} not in {VERDICTS}")
        control = claim["negative_control"]
        if "description" not in control or control.get("verdict") not in VERDICTS:
            raise SchemaError(f"claim {claim['id']!r}: negative_control needs description and verdict")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file in the same folder, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make results unreadable to others
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, data: Mapping[str, Any]) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n")


def load_result(path: Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    validate_result(data)
    return data


def library_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("icml26", "numpy", "scipy", "scikit-learn", "torch", "matplotlib", "pot",
                 "ml_dtypes"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def git_revision() -> dict[str, Any] | None:
    """The git commit of the source tree this package runs from (None outside a checkout)."""
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": rev, "dirty": bool(dirty)}


def platform_info() -> dict[str, Any]:
    return {"machine": platform.machine(), "system": platform.system(), "cpus": os.cpu_count(),
            "argv": sys.argv[1:]}
