"""Run (paper, seed) jobs on Ray: a local instance or an existing cluster (``--address``).

One Ray task per (paper, seed), with the CPU/GPU request of the paper's config
(:attr:`ExperimentConfig.resources`). The driver gathers each paper's seeds in order and judges,
plots and writes through :func:`~icml26.harness.runner.run_paper` exactly as the in-process path
does, so the result JSON is the same and the metrics are bit-identical for the same seeds (each
task runs :func:`~icml26.harness.runner.run_seed`, which seeds and limits threads as locally).
Progress: a line per finished task. No scheduling of our own: Ray places the tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from .config import ConfigError, ExperimentConfig
from .registry import get_paper


def _ray():
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray executor needs Ray: pip install 'icml26[ray]'") from None
    return ray


def _seed_job(slug: str, config: ExperimentConfig, seed: int) -> str:
    """Runs on a Ray worker: one seed of one paper, returned as JSON text (NaN-safe)."""
    from .runner import run_seed, seed_to_text

    return seed_to_text(run_seed(get_paper(slug).experiment(), config, seed))


def _gathered(refs: Mapping[int, Any], ray: Any, seed: int):
    from .runner import seed_from_text

    if seed not in refs:
        raise RuntimeError(f"seed {seed} was not submitted (its checkpoint vanished?)")
    return seed_from_text(ray.get(refs[seed]))


def run_many_ray(
    slugs: Sequence[str],
    configs: Mapping[str, ExperimentConfig],
    profile: str,
    *,
    seeds: Sequence[int] | None,
    overrides: Mapping[str, list[str]],
    out: str | Path,
    progress_factory: Callable[[str], Any] | None = None,
    resume: bool = False,
    address: str | None = None,
) -> list[dict[str, Any]]:
    """Submit every (paper, seed) job at once, then gather, judge and write paper by paper."""
    from .runner import _run_isolated, checkpoint_dir, run_experiment

    ray = _ray()
    started = not ray.is_initialized()
    if started:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(_seed_job)
        # ``auto`` asks for a GPU when the cluster has one (the worker resolves the device)
        cluster_gpus = float(ray.cluster_resources().get("GPU", 0.0)) > 0
        refs: dict[str, dict[int, Any]] = {}
        for slug in slugs:
            cfg = configs[slug]
            ckpt = checkpoint_dir(out, slug, cfg)
            resources = cfg.resources_on(gpus_available=cluster_gpus)
            refs[slug] = {seed: task.options(**resources).remote(slug, cfg, seed)
                          for seed in cfg.seeds
                          if not (resume and (ckpt / f"seed-{seed}.json").is_file())}
        results = []
        for slug in slugs:
            execute = partial(run_experiment, compute=partial(_gathered, refs[slug], ray))
            results.append(_run_isolated(slug, profile, seeds, overrides[slug], out,
                                         progress_factory(slug) if progress_factory else None,
                                         resume, seed_executor=execute))
        return results
    finally:
        if started:
            ray.shutdown()
