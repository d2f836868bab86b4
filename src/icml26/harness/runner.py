"""Run a paper's experiment over seeds, judge its claims and write the result file.

The experiment protocol (``icml26.papers.<slug>.experiment``):

``Config``
    an :class:`~icml26.harness.config.ExperimentConfig` subclass with ``smoke/quick/full``.
``CLAIMS``
    a sequence of :class:`~icml26.harness.claims.Claim`, declared at import time, i.e. before
    any number is measured.
``run(config, seed) -> SeedOutput | dict``
    one seed, all arms (method, baselines, negative controls) on the same data:
    ``{arm: {metric: float}}``; a :class:`SeedOutput` may also carry JSON-able ``extras``
    (curves, tables) for plots.
``plot(config, outputs, outdir) -> list[Path]`` (optional)
    PNG files written under ``outdir`` from the per-seed outputs.
``describe() -> str`` (optional)
    extra text for ``icml26 info`` (e.g. a theorem catalogue).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core.llm.usage import track_usage
from ._json import to_jsonable
from .claims import judge
from .config import ExperimentConfig
from .registry import get_paper
from .result import (
    SCHEMA_VERSION,
    atomic_write_json,
    atomic_write_text,
    git_revision,
    library_versions,
    platform_info,
    validate_result,
)
from .seeding import limit_torch_threads, seed_everything


@dataclass
class SeedOutput:
    """What one seed of an experiment returns: scalar metrics per arm plus JSON-able extras."""

    metrics: dict[str, dict[str, float]]
    extras: dict[str, Any] = field(default_factory=dict)


Progress = Callable[[str, int, int], None]


def _normalise(output: SeedOutput | Mapping[str, Mapping[str, float]], seed: int) -> SeedOutput:
    if not isinstance(output, SeedOutput):
        output = SeedOutput(metrics={a: dict(m) for a, m in output.items()})
    for arm, per_metric in output.metrics.items():
        for name, value in per_metric.items():
            try:
                per_metric[name] = float(value)
            except (TypeError, ValueError):
                raise TypeError(f"seed {seed}: metric {arm}/{name} is not a number: {value!r}") from None
    return output


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def run_experiment(
    experiment: Any,
    config: ExperimentConfig,
    *,
    progress: Progress | None = None,
) -> tuple[dict[str, dict[str, list[float]]], list[SeedOutput], list[int]]:
    """Run every seed of ``config`` and gather ``{arm: {metric: [per seed]}}``."""
    metrics: dict[str, dict[str, list[float]]] = {}
    outputs: list[SeedOutput] = []
    done: list[int] = []
    keys: set[tuple[str, str]] | None = None
    for i, seed in enumerate(config.seeds):
        if progress:
            progress(f"seed {seed}", i, len(config.seeds))
        seed_everything(seed)
        with limit_torch_threads(config.torch_threads):
            out = _normalise(experiment.run(config, seed), seed)
        these = {(a, m) for a, ms in out.metrics.items() for m in ms}
        if keys is not None and these != keys:
            raise ValueError(f"seed {seed} returned different arms/metrics than the first seed")
        keys = these
        for arm, per_metric in out.metrics.items():
            for name, value in per_metric.items():
                metrics.setdefault(arm, {}).setdefault(name, []).append(value)
        outputs.append(out)
        done.append(seed)
    if progress:
        progress("done", len(config.seeds), len(config.seeds))
    return metrics, outputs, done


def build_config(experiment: Any, profile: str, overrides: Sequence[str] | Mapping[str, str] | None,
                 seeds: Sequence[int] | None) -> ExperimentConfig:
    config = experiment.Config.from_profile(profile)
    if overrides:
        config = config.with_overrides(dict(overrides) if isinstance(overrides, Mapping)
                                       else list(overrides))
    if seeds is not None:
        if not seeds:
            raise ValueError("--seeds needs at least one seed")
        config = dataclasses.replace(config, seeds=tuple(int(s) for s in seeds))
    return config


def _timestamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S_%fZ")


def run_paper(
    slug: str,
    profile: str = "quick",
    *,
    seeds: Sequence[int] | None = None,
    overrides: Sequence[str] | Mapping[str, str] | None = None,
    out: str | Path = "results",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run one paper and write its result file; return the result dict.

    Usage errors (unknown slug, not implemented, bad profile or override) raise before anything
    runs. Anything that raises *during* the run is recorded as ``status: "error"`` with its
    traceback and written like any result, so that a batch of papers goes on.
    """
    info = get_paper(slug)
    experiment = info.experiment()
    config = build_config(experiment, profile, overrides, seeds)
    outdir = Path(out) / slug / config.profile
    result = _new_result(slug, config.profile, list(config.seeds), config.to_dict())
    result.update({"title": info.title, "arxiv": info.arxiv, "budget_s": config.budget_s,
                   "over_budget": False, "platform": platform_info()})
    start = time.perf_counter()
    done: list[int] = []
    try:
        with track_usage() as llm_usage:  # every core.llm chat-model call of the run
            metrics, outputs, done = run_experiment(experiment, config, progress=progress)
        result["llm_usage"] = llm_usage.to_dict()  # {"backend:model": tokens, calls, latency}
        result["metrics"] = {a: {m: [_finite_or_none(v) for v in vs] for m, vs in ms.items()}
                             for a, ms in metrics.items()}
        result["extras"] = [o.extras for o in outputs]
        result["claims"] = [judge(c, metrics, config) for c in experiment.CLAIMS]
        if hasattr(experiment, "plot"):
            try:
                paths = experiment.plot(config, outputs, outdir / "plots")
                result["plots"] = [str(Path(p).relative_to(outdir)) for p in paths or []]
            except Exception:  # a broken plot must not lose the measured result
                result["warnings"].append("plot failed:\n" + traceback.format_exc())
    except Exception:
        result["status"] = "error"
        result["error"] = traceback.format_exc()
        result["seeds"] = list(done)
        result["metrics"] = {}
        result["claims"] = []
    result["runtime_s"] = round(time.perf_counter() - start, 3)
    result["over_budget"] = result["runtime_s"] > config.budget_s
    if result["over_budget"]:
        msg = (f"{slug} [{config.profile}] took {result['runtime_s']:.1f} s, over its "
               f"{config.budget_s:.0f} s budget")
        result["warnings"].append(msg)
        print(f"warning: {msg}", file=sys.stderr)
    result["extras"] = to_jsonable(result["extras"])
    validate_result(result)
    write_result(result, outdir)
    return result


def write_result(result: Mapping[str, Any], outdir: Path) -> Path:
    """Write ``<timestamp>.json``, ``latest.json`` and ``latest.md`` atomically under ``outdir``."""
    from .report import result_markdown

    path = Path(outdir) / f"{_timestamp()}.json"
    atomic_write_json(path, result)
    atomic_write_json(Path(outdir) / "latest.json", result)
    atomic_write_text(Path(outdir) / "latest.md", result_markdown(result))
    return path


def run_many(
    slugs: Iterable[str],
    profile: str = "quick",
    *,
    seeds: Sequence[int] | None = None,
    overrides: Sequence[str] | None = None,
    out: str | Path = "results",
    jobs: int = 1,
    progress_factory: Callable[[str], Progress | None] | None = None,
) -> list[dict[str, Any]]:
    """Run several papers; one failing paper never loses the others' results.

    ``jobs > 1`` runs papers in a process pool (one paper per process).
    """
    slugs = list(slugs)
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_run_isolated, s, profile, seeds, overrides, out, None)
                       for s in slugs]
            return [f.result() for f in futures]
    return [_run_isolated(s, profile, seeds, overrides, out,
                          progress_factory(s) if progress_factory else None) for s in slugs]


def _run_isolated(slug: str, profile: str, seeds: Sequence[int] | None,
                  overrides: Sequence[str] | None, out: str | Path,
                  progress: Progress | None) -> dict[str, Any]:
    try:
        return run_paper(slug, profile, seeds=seeds, overrides=overrides, out=out,
                         progress=progress)
    except Exception:
        result = _new_result(slug, profile, [], {})
        result.update(status="error", error=traceback.format_exc())
        write_result(result, Path(out) / slug / profile)
        return result


def _new_result(slug: str, profile: str, seeds: list[int], config: dict[str, Any]) -> dict[str, Any]:
    """The keys every result file carries, before anything is measured."""
    return {
        "schema_version": SCHEMA_VERSION, "paper": slug, "profile": profile, "seeds": seeds,
        "status": "ok", "runtime_s": 0.0, "started_at": datetime.now(UTC).isoformat(),
        "versions": library_versions(), "git": git_revision(), "config": config,
        "metrics": {}, "claims": [], "extras": [], "plots": [], "warnings": [],
    }
