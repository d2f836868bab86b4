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
    (curves, tables) for plots and the seed's ``tuning`` record (:mod:`~icml26.harness.tuning`).

Results never go backwards: ``latest.json`` is replaced only by a run that completed; a run that
raised writes its own timestamped file and ``latest-error.json``. A run that raised in seed k keeps
seeds 0..k-1 (their metrics, claims judged on them and marked ``partial``), and every completed
seed is checkpointed under ``.seeds/<config hash>/`` so that ``resume=True`` continues from there.
``plot(config, outputs, outdir) -> list[Path]`` (optional)
    PNG files written under ``outdir`` from the per-seed outputs.
``describe() -> str`` (optional)
    extra text for ``icml26 info`` (e.g. a theorem catalogue).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
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
from ..core.progress import progress_sink, timing_scope
from ._json import to_jsonable
from .claims import INCONCLUSIVE, check_claims, judge, measure_gates
from .config import ConfigError, ExperimentConfig, parse_assignments
from .metrics import metric_schema
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
from .seeding import default_torch_device, limit_torch_threads, seed_everything
from .tuning import Tuned, gather_tuning


@dataclass
class SeedOutput:
    """What one seed of an experiment returns: scalar metrics per arm plus JSON-able extras."""

    metrics: dict[str, dict[str, float]]
    extras: dict[str, Any] = field(default_factory=dict)
    tuning: dict[str, Tuned] = field(default_factory=dict)
    timing: dict[str, Any] | None = None  # where the seed's time went (set by the runner)

    def to_json(self) -> dict[str, Any]:
        out = {"metrics": self.metrics, "extras": to_jsonable(self.extras),
               "tuning": {a: t.to_dict() for a, t in self.tuning.items()}}
        if self.timing is not None:
            out["timing"] = self.timing
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SeedOutput:
        tuning = {a: Tuned(chosen=t["chosen"], val_score=t["val_score"], scores=tuple(t["scores"]),
                           grid_size=t["grid_size"], budget=t["budget"])
                  for a, t in data.get("tuning", {}).items()}
        return cls(metrics={a: dict(m) for a, m in data["metrics"].items()},
                   extras=dict(data.get("extras", {})), tuning=tuning, timing=data.get("timing"))


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


class SeedFailure(Exception):
    """A seed raised; ``done`` and ``outputs`` hold the seeds that completed before it."""

    def __init__(self, seed: int, done: list[int], outputs: list[SeedOutput]) -> None:
        super().__init__(f"seed {seed} raised")
        self.seed, self.done, self.outputs = seed, done, outputs


@functools.cache
def code_fingerprint(slug: str) -> str:
    """A hash of the source a paper's seeds run: the package minus the other papers.

    Part of the checkpoint key, so ``--resume`` never mixes seeds computed by different code
    (an edited core, harness or paper starts afresh; another paper's edit does not).
    """
    root = Path(__file__).resolve().parents[1]  # the icml26 package
    papers = root / "papers"
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if path.is_relative_to(papers) and len(rel.parts) > 2 and rel.parts[1] != slug:
            continue
        digest.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _config_key(config: ExperimentConfig, slug: str) -> str:
    """A hash of the config (all but the seeds) and of the code: what a resumed seed must share."""
    d = {k: v for k, v in config.to_dict().items() if k not in ("seeds", "profile")}
    d["__code__"] = code_fingerprint(slug)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def checkpoint_dir(out: str | Path, slug: str, config: ExperimentConfig) -> Path:
    """Where the completed seeds of this paper, configuration and code are checkpointed."""
    return Path(out) / slug / config.profile / ".seeds" / _config_key(config, slug)


def aggregate(outputs: Sequence[SeedOutput]) -> dict[str, dict[str, list[float]]]:
    """``{arm: {metric: [per seed]}}`` from per-seed outputs (which must agree on arms/metrics)."""
    metrics: dict[str, dict[str, list[float]]] = {}
    keys: set[tuple[str, str]] | None = None
    for out in outputs:
        these = {(a, m) for a, ms in out.metrics.items() for m in ms}
        if keys is not None and these != keys:
            missing = sorted(keys ^ these)[:5]
            raise ValueError(f"seeds returned different arms/metrics (first differences: {missing})")
        keys = these
        for arm, per_metric in out.metrics.items():
            for name, value in per_metric.items():
                metrics.setdefault(arm, {}).setdefault(name, []).append(value)
    return metrics


def run_seed(experiment: Any, config: ExperimentConfig, seed: int) -> SeedOutput:
    """One seed of one paper, seeded and with torch's threads limited: the unit of every executor."""
    seed_everything(seed)
    with limit_torch_threads(config.torch_threads), default_torch_device(config.torch_device):
        out = _normalise(experiment.run(config, seed), seed)
    schema = metric_schema(experiment)
    if schema is not None:  # an undeclared arm/metric fails the seed, by name (harness.metrics)
        schema.check(out.metrics, where=f"seed {seed}: run()")
    # the form a checkpoint or a Ray worker hands back: plots see the same types on every path
    return seed_from_text(seed_to_text(out))


def run_experiment(
    experiment: Any,
    config: ExperimentConfig,
    *,
    progress: Progress | None = None,
    checkpoint_dir: Path | None = None,
    resume: bool = False,
    compute: Callable[[int], SeedOutput] | None = None,
) -> tuple[dict[str, dict[str, list[float]]], list[SeedOutput], list[int]]:
    """Run every seed of ``config`` and gather ``{arm: {metric: [per seed]}}``.

    With ``checkpoint_dir`` each completed seed's output is written there; with ``resume`` a seed
    whose checkpoint exists is loaded instead of run. A seed that raises raises
    :class:`SeedFailure` (chained to the original error) carrying the completed seeds.
    ``compute(seed)`` replaces the in-process :func:`run_seed` (an executor's gathered output).
    """
    outputs: list[SeedOutput] = []
    done: list[int] = []
    for i, seed in enumerate(config.seeds):
        ckpt = checkpoint_dir / f"seed-{seed}.json" if checkpoint_dir is not None else None
        if resume and ckpt is not None and ckpt.is_file():
            if progress:
                progress(f"seed {seed} (resumed)", i, len(config.seeds))
            out = seed_from_text(ckpt.read_text(encoding="utf-8"))
        else:
            if progress:
                progress(f"seed {seed}", i, len(config.seeds))
            try:
                if compute:
                    out = compute(seed)
                else:
                    with progress_sink(_inner(progress, seed, i, len(config.seeds))), \
                            timing_scope() as timing:
                        out = run_seed(experiment, config, seed)
                    out.timing = {"seed": seed, **timing.to_dict()}
                aggregate([*outputs, out])  # arms/metrics must agree with the earlier seeds
            except Exception as exc:
                if compute is not None and checkpoint_dir is not None:
                    _checkpoint_rest(compute, config.seeds[i + 1:], checkpoint_dir, resume)
                raise SeedFailure(seed, list(done), list(outputs)) from exc
            if ckpt is not None:
                atomic_write_text(ckpt, seed_to_text(out))
        outputs.append(out)
        done.append(seed)
    if progress:
        progress("judging claims and plotting", len(config.seeds), len(config.seeds))
    return aggregate(outputs), outputs, done


def _inner(progress: Progress | None, seed: int, i: int, n: int):
    """Forward the ticks of the loops inside a seed (``core.progress.tick``) to ``progress``."""
    if progress is None:
        return None
    return lambda label, done, total: progress(f"seed {seed} · {label} {done}/{total}", i, n)


def _checkpoint_rest(compute: Callable[[int], SeedOutput], seeds: Sequence[int],
                     checkpoint_dir: Path, resume: bool) -> None:
    """After a failed seed, checkpoint the later seeds an executor ran anyway (they already ran
    in parallel): ``--resume`` then reruns only the failed seed. Their own errors are ignored."""
    for seed in seeds:
        ckpt = checkpoint_dir / f"seed-{seed}.json"
        if resume and ckpt.is_file():
            continue
        try:
            atomic_write_text(ckpt, seed_to_text(compute(seed)))
        except Exception:  # noqa: BLE001 - best effort; the run is already an error
            continue


def seed_to_text(out: SeedOutput) -> str:
    """One seed's output as NaN-safe JSON text: a checkpoint's or a Ray worker's form."""
    return json.dumps(_finite_json(out.to_json()), allow_nan=False)


def seed_from_text(text: str) -> SeedOutput:
    """The inverse of :func:`seed_to_text`."""
    return SeedOutput.from_json(_unfinite(json.loads(text)))


def _finite_json(data: Any) -> Any:
    """JSON-able copy with non-finite floats written as strings (checkpoints keep NaN metrics)."""
    if isinstance(data, float) and not math.isfinite(data):
        return {"__float__": repr(data)}
    if isinstance(data, Mapping):
        return {k: _finite_json(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_finite_json(v) for v in data]
    return data


def _unfinite(data: Any) -> Any:
    if isinstance(data, Mapping):
        if set(data) == {"__float__"}:
            return float(data["__float__"])
        return {k: _unfinite(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_unfinite(v) for v in data]
    return data


def build_config(experiment: Any, profile: str, overrides: Sequence[str] | Mapping[str, str] | None,
                 seeds: Sequence[int] | None) -> ExperimentConfig:
    config = experiment.Config.from_profile(profile)
    if overrides:
        config = config.with_overrides(dict(overrides) if isinstance(overrides, Mapping)
                                       else list(overrides))
    if seeds is not None:
        if not seeds:
            raise ConfigError("--seeds needs at least one seed")
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
    resume: bool = False,
    seed_executor: Callable[..., tuple[dict, list[SeedOutput], list[int]]] | None = None,
    stability: bool | None = None,
    seed_jobs: int | str | None = "auto",
) -> dict[str, Any]:
    """Run one paper and write its result file; return the result dict.

    ``stability`` (default: on for the ``full`` profile) re-judges every claim at each setting of
    the paper's ``PROTOCOL_KNOBS`` (:func:`sweep_knobs`).

    ``seed_executor`` (default :func:`run_experiment`, in process) runs the seeds; the Ray
    executor passes one that gathers remote seed jobs. Judging and writing are the same for both.
    Without one, ``seed_jobs`` (``auto`` or N) runs the seeds in up to N forked workers on this
    machine (:mod:`icml26.harness.fork_executor`; ``auto``: serial for smoke, else every seed at once), the
    stability sweep's seeds too; ``result["seed_jobs"]`` records how many were used.

    Usage errors (unknown slug, not implemented, bad profile, bad or out-of-range override)
    raise before anything runs. Anything that raises *during* the run is recorded as
    ``status: "error"`` with its traceback, the seeds that completed before it and their claims
    (marked ``partial``), and written without replacing ``latest.json``.
    """
    info = get_paper(slug)
    experiment = info.experiment()
    config = build_config(experiment, profile, overrides, seeds)
    check_claims(experiment.CLAIMS)
    jobs, forked = 1, None  # an executor passed in (Ray's) gathers the run's own seeds only
    if seed_executor is None:
        from .fork_executor import forked_seed_executor, resolve_seed_jobs

        jobs = resolve_seed_jobs(seed_jobs, config)
        forked = seed_executor = forked_seed_executor(jobs) if jobs > 1 else None
    outdir = Path(out) / slug / config.profile
    ckpt_dir = checkpoint_dir(out, slug, config)
    result = _new_result(slug, config.profile, list(config.seeds), config.to_dict())
    result.update({"title": info.title, "arxiv": info.arxiv, "budget_s": config.budget_s,
                   "over_budget": False, "platform": platform_info(), "seed_jobs": jobs})
    start = time.perf_counter()
    outputs: list[SeedOutput] = []
    try:
        try:
            execute = seed_executor or run_experiment
            with track_usage() as llm_usage:  # every core.llm chat-model call of the run
                metrics, outputs, done = execute(experiment, config, progress=progress,
                                                 checkpoint_dir=ckpt_dir, resume=resume)
        except SeedFailure as failure:
            # keep what completed: the partial result is judged on those seeds and marked so
            outputs, done = failure.outputs, failure.done
            result["status"] = "error"
            result["error"] = "".join(traceback.format_exception(failure.__cause__))
            result["failed_seed"] = failure.seed
            result["seeds"] = list(done)
            result["partial"] = True
            metrics = aggregate(outputs)
        result["llm_usage"] = llm_usage.to_dict()  # {"backend:model": tokens, calls, latency}
        _fill_measurements(result, experiment, config, metrics, outputs, outdir,
                           stability=(config.profile == "full") if stability is None else stability,
                           progress=progress, execute=forked)
    except Exception:
        # judging or plotting raised: keep the measured metrics of the completed seeds
        result["status"] = "error"
        result["error"] = (result.get("error", "") + traceback.format_exc()).strip() + "\n"
        result["claims"] = []
        if not result.get("metrics"):
            result["seeds"], result["metrics"] = [], {}
        result["partial"] = bool(result.get("partial"))
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
    if progress:
        progress("done", len(config.seeds), len(config.seeds))
    return result


def judge_all(experiment: Any, metrics: Mapping[str, Mapping[str, list[float]]],
              config: ExperimentConfig, result: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Measure the paper's substrate gates (``SUBSTRATE``) and judge every claim with them; the
    gates go to ``result["substrate"]`` when a result is given. Rules and gates read the metrics
    through the paper's declared ``METRICS`` (an undeclared name is refused, harness.metrics)."""
    schema = metric_schema(experiment)
    if schema is not None:
        metrics = schema.guard(metrics)
    gates = measure_gates(getattr(experiment, "SUBSTRATE", ()), metrics, config)
    if result is not None:
        result["substrate"] = gates
    return [judge(c, metrics, config, gates) for c in experiment.CLAIMS]


def protocol_knobs(experiment: Any, config: ExperimentConfig) -> dict[str, tuple[Any, ...]]:
    """The paper's ``PROTOCOL_KNOBS`` (``{config field: settings}``), checked against its Config:
    the protocol settings its verdicts could depend on (CLAIMS.md rule 9)."""
    knobs = dict(getattr(experiment, "PROTOCOL_KNOBS", {}) or {})
    for name, settings in knobs.items():
        if not type(config).declares(name):
            raise ConfigError(f"PROTOCOL_KNOBS names {name!r}, which {type(config).__name__} lacks")
        if isinstance(settings, str) or len(tuple(settings)) < 2:
            raise ConfigError(f"PROTOCOL_KNOBS[{name!r}] needs >= 2 settings, got {settings!r}")
    return {k: tuple(v) for k, v in knobs.items()}


def sweep_knobs(experiment: Any, config: ExperimentConfig, result: dict[str, Any], *,
                progress: Progress | None = None,
                execute: Callable[..., tuple[dict, list[SeedOutput], list[int]]] | None = None,
                ) -> None:
    """Verdict stability (CLAIMS.md rule 9): re-run every seed at each other setting of each
    protocol knob (every arm at the same setting), re-judge every claim and record
    ``stability: [{knob, setting, verdict}]`` per claim (the run's own setting included) and
    ``unstable: [knob, ...]`` where the verdict changes. ``execute`` runs the seeds (default
    :func:`run_experiment`, in process; no checkpoints)."""
    execute = execute or run_experiment
    knobs = protocol_knobs(experiment, config)
    by_id = {c["id"]: c for c in result["claims"]}
    for c in by_id.values():
        c["stability"], c["unstable"] = [], []
    for knob, settings in knobs.items():
        here = getattr(config, knob)
        for c in by_id.values():
            c["stability"].append({"knob": knob, "setting": to_jsonable(here),
                                   "verdict": c["verdict"], "own": True})
        for setting in settings:
            if setting == here:
                continue
            varied = dataclasses.replace(config, **{knob: setting})
            if progress:
                progress(f"stability: {knob}={setting}", 0, len(config.seeds))
            metrics, _, _ = execute(experiment, varied)
            for entry in judge_all(experiment, metrics, varied):
                c = by_id[entry["id"]]
                c["stability"].append({"knob": knob, "setting": to_jsonable(setting),
                                       "verdict": entry["verdict"], "own": False})
        for c in by_id.values():
            verdicts = {s["verdict"] for s in c["stability"] if s["knob"] == knob}
            if len(verdicts) > 1:
                c["unstable"].append(knob)
    result["knobs"] = {k: [to_jsonable(v) for v in vs] for k, vs in knobs.items()}


def _fill_measurements(result: dict[str, Any], experiment: Any, config: ExperimentConfig,
                       metrics: Mapping[str, Mapping[str, list[float]]],
                       outputs: Sequence[SeedOutput], outdir: Path, *,
                       stability: bool = False, progress: Progress | None = None,
                       execute: Callable[..., Any] | None = None) -> None:
    """Metrics, extras, tuning, judged claims and plots of the completed seeds into ``result``."""
    result["metrics"] = {a: {m: [_finite_or_none(v) for v in vs] for m, vs in ms.items()}
                         for a, ms in metrics.items()}
    result["extras"] = [o.extras for o in outputs]
    result["tuning"] = gather_tuning([o.tuning for o in outputs])
    if not outputs:
        return
    check_claims(experiment.CLAIMS, set(metrics))
    t0 = time.perf_counter()
    result["claims"] = judge_all(experiment, metrics, config, result)
    timing = {"seeds": [o.timing for o in outputs if o.timing is not None],
              "judge_s": round(time.perf_counter() - t0, 3)}
    result["timing"] = timing
    if stability and not result.get("partial"):
        t0 = time.perf_counter()
        sweep_knobs(experiment, config, result, progress=progress, execute=execute)
        timing["stability_s"] = round(time.perf_counter() - t0, 3)
    if result.get("partial"):
        # a crashed run is not evidence: its seeds are judged and shown, never called reproduced
        for c in result["claims"]:
            c["partial"] = True
            c["verdict_on_completed_seeds"] = c["verdict"]
            c["verdict"] = INCONCLUSIVE
            c["ours"] = (f"[partial: seeds {result['seeds']} only, {c['verdict_on_completed_seeds']} "
                         f"on those] {c['ours']}")
    if hasattr(experiment, "plot"):
        try:
            t0 = time.perf_counter()
            paths = experiment.plot(config, list(outputs), outdir / "plots")
            timing["plot_s"] = round(time.perf_counter() - t0, 3)
            result["plots"] = [str(Path(p).relative_to(outdir)) for p in paths or []]
        except Exception:  # a broken plot must not lose the measured result
            result["warnings"].append("plot failed:\n" + traceback.format_exc())


def write_result(result: Mapping[str, Any], outdir: Path) -> Path:
    """Write ``<timestamp>.json`` and, by status, ``latest.json`` + ``latest.md`` (a completed
    run) or ``latest-error.json`` (a run that raised), atomically under ``outdir``.

    ``latest.json`` only ever moves forward to a completed run: an error never replaces a good
    result.
    """
    from .report import result_markdown

    path = Path(outdir) / f"{_timestamp()}.json"
    atomic_write_json(path, result)
    if result["status"] == "ok":
        atomic_write_json(Path(outdir) / "latest.json", result)
        atomic_write_text(Path(outdir) / "latest.md", result_markdown(result))
    else:
        atomic_write_json(Path(outdir) / "latest-error.json", result)
    return path


def route_overrides(slugs: Sequence[str], overrides: Sequence[str] | None) -> dict[str, list[str]]:
    """Which ``key=value`` overrides go to which paper.

    ``slug.key=value`` targets one paper; a plain ``key=value`` goes to every selected paper whose
    ``Config`` declares ``key``. A key that no selected paper declares, or a ``slug.`` prefix
    naming a paper that is not selected, is a :class:`ConfigError` (raised before anything runs).
    """
    routed: dict[str, list[str]] = {s: [] for s in slugs}
    if not overrides:
        return routed
    configs = {s: get_paper(s).experiment().Config for s in slugs}
    items = parse_assignments(list(overrides))
    # plain keys first, then slug.key, so a targeted override always wins over a plain one
    for key, value in sorted(items.items(), key=lambda kv: "." in kv[0]):
        if "." in key:
            slug, name = key.split(".", 1)
            if slug not in routed:
                raise ConfigError(f"--set {key}: paper {slug!r} is not among the selected papers "
                                  f"({', '.join(slugs)})")
            if not configs[slug].declares(name):
                raise ConfigError(f"--set {key}: unknown config key {name!r} for {slug}")
            routed[slug].append(f"{name}={value}")
            continue
        targets = [s for s in slugs if configs[s].declares(key)]
        if not targets:
            raise ConfigError(f"--set {key}: unknown config key {key!r}; no selected paper "
                              f"({', '.join(slugs)}) declares it (use --set SLUG.KEY=VALUE)")
        for slug in targets:
            routed[slug].append(f"{key}={value}")
    return routed


def run_many(
    slugs: Iterable[str],
    profile: str = "quick",
    *,
    seeds: Sequence[int] | None = None,
    overrides: Sequence[str] | None = None,
    out: str | Path = "results",
    jobs: int = 1,
    progress_factory: Callable[[str], Progress | None] | None = None,
    resume: bool = False,
    executor: str = "local",
    address: str | None = None,
    stability: bool | None = None,
    seed_jobs: int | str | None = "auto",
) -> list[dict[str, Any]]:
    """Run several papers; one failing paper never loses the others' results.

    ``stability`` (default: on for ``full``) sweeps each paper's ``PROTOCOL_KNOBS``.

    Overrides are routed by :func:`route_overrides`, and every paper's config is built (and so
    validated) before the first paper runs: a usage error raises before any work.
    ``executor="local"``: in process, or ``jobs > 1`` papers in a process pool (one paper per
    process). ``executor="ray"``: one Ray task per (paper, seed) on a local or existing cluster
    (``address``), gathered and judged here exactly as the local path does
    (:mod:`icml26.harness.ray_executor`).
    ``seed_jobs`` (local executor): each paper's seeds in up to N forked workers
    (:mod:`icml26.harness.fork_executor`); ``auto`` is serial when ``jobs > 1`` papers already
    share the cores.
    """
    from .fork_executor import AUTO, parse_seed_jobs

    seed_jobs = parse_seed_jobs(seed_jobs)
    if jobs > 1 and seed_jobs == AUTO:
        seed_jobs = 1
    slugs = list(slugs)
    routed = route_overrides(slugs, overrides)
    configs = {slug: build_config(get_paper(slug).experiment(), profile, routed[slug], seeds)
               for slug in slugs}
    if executor == "ray":
        from .ray_executor import run_many_ray

        return run_many_ray(slugs, configs, profile, seeds=seeds, overrides=routed, out=out,
                            progress_factory=progress_factory, resume=resume, address=address)
    if executor != "local":
        raise ConfigError(f"unknown executor {executor!r}; choose local or ray")
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_run_isolated, s, profile, seeds, routed[s], out, None, resume,
                                   None, stability, seed_jobs)
                       for s in slugs]
            return [f.result() for f in futures]
    return [_run_isolated(s, profile, seeds, routed[s], out,
                          progress_factory(s) if progress_factory else None, resume,
                          stability=stability, seed_jobs=seed_jobs)
            for s in slugs]


def _run_isolated(slug: str, profile: str, seeds: Sequence[int] | None,
                  overrides: Sequence[str] | None, out: str | Path,
                  progress: Progress | None, resume: bool = False,
                  seed_executor: Callable[..., Any] | None = None,
                  stability: bool | None = None,
                  seed_jobs: int | str | None = "auto") -> dict[str, Any]:
    try:
        return run_paper(slug, profile, seeds=seeds, overrides=overrides, out=out,
                         progress=progress, resume=resume, seed_executor=seed_executor,
                         stability=stability, seed_jobs=seed_jobs)
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
