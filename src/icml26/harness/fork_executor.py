"""Run a paper's seeds in forked worker processes on this machine (``--seed-jobs N``).

The seeds of a quick profile are independent and the models are tiny: one torch thread per seed
is about as fast as two, so two seeds at once on two cores take about half the wall time of the
serial loop. Each seed runs in its own forked process through
:func:`~icml26.harness.runner.run_seed` (seeded, torch limited to the config's threads, one by
default; numpy's BLAS on one thread too) inside the same progress sink and timing scope as in
process, and comes back as the text of a checkpoint (:func:`~icml26.harness.runner.seed_to_text`).
The driver gathers the seeds *in seed order* through :func:`~icml26.harness.runner.run_experiment`'s ``compute`` hook,
so checkpoints, ``--resume``, judging, plots and the result file are those of the serial path.

- Progress: the ticks of the loops inside a worker reach the driver's progress callback (every
  5 s per worker, as in process), labelled with their seed.
- Errors: a seed that raises (or whose worker dies) raises in the driver when its turn comes, so
  ``run_experiment`` raises the same :class:`~icml26.harness.runner.SeedFailure` (seed, the
  completed seeds before it). Seeds already running finish and are checkpointed; seeds not yet
  started are not started (``--resume`` runs them).
- LLM usage counted in a worker is added to the driver's trackers (``result["llm_usage"]``).
- A seed worker marks itself (:mod:`icml26.harness.parallel`): a paper's own :func:`fork_map`
  inside it runs serially, so seed workers and stage workers never multiply.

Serial (:func:`resolve_seed_jobs` returns 1) where ``fork`` is unavailable, for one seed, on a
GPU (CUDA does not survive a fork), inside a worker, or for ``N = 1``.
"""

from __future__ import annotations

import contextlib
import pickle
import queue as queue_mod
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from .config import ConfigError, ExperimentConfig
from .parallel import (
    fork_available,
    in_worker,
    limit_blas_threads,
    mark_worker,
    set_torch_threads,
    usable_cpus,
)

AUTO = "auto"
AUTO_PER_SLOT = 4  # ``auto`` runs up to this many seed workers per free core (see resolve_seed_jobs)


def parse_seed_jobs(value: int | str | None) -> int | str:
    """``auto`` (or None) or an int >= 1; a :class:`ConfigError` otherwise."""
    if value is None or (isinstance(value, str) and value.strip().lower() == AUTO):
        return AUTO
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"--seed-jobs must be an int >= 1 or auto, got {value!r}") from None
    if n < 1 or isinstance(value, bool):
        raise ConfigError(f"--seed-jobs must be an int >= 1 or auto, got {value!r}")
    return n


def resolve_seed_jobs(seed_jobs: int | str | None, config: ExperimentConfig, *,
                      paper_jobs: int = 1) -> int:
    """How many seed workers a run of ``config`` uses (1: the serial, in-process loop).

    ``auto``: serial for the smoke profile (pins are written from the serial one-thread run) and
    when ``paper_jobs`` > 1 papers already run in parallel processes, or with one free core
    (``slots = usable CPUs // torch threads``); otherwise every seed at once, up to
    ``4 * slots`` workers. More workers than cores on purpose: with 3 seeds on 2 cores, 2 workers
    leave a core idle while the third seed runs (wall = 2 seed times), 3 time-shared workers keep
    both busy (wall ~= 1.5 seed times; eco quick measured 89.5 s -> 71.4 s on 2 cores, numbers
    identical: each worker still computes with one thread). An explicit ``N`` is capped at the
    number of seeds. Always serial where ``fork`` is unavailable, on a non-CPU device, or inside
    a worker.
    """
    jobs = parse_seed_jobs(seed_jobs)
    n_seeds = len(config.seeds)
    if (not fork_available() or in_worker() or config.torch_device != "cpu"
            or n_seeds <= 1):
        return 1
    if jobs == AUTO:
        if config.profile == "smoke" or paper_jobs > 1:
            return 1
        slots = usable_cpus() // (config.torch_threads or 1)
        return 1 if slots <= 1 else min(n_seeds, AUTO_PER_SLOT * slots)
    return min(int(jobs), n_seeds)


def forked_seed_executor(jobs: int) -> Callable[..., Any]:
    """A ``seed_executor`` for :func:`~icml26.harness.runner.run_paper`: the seeds in up to
    ``jobs`` forked workers, gathered in seed order by ``run_experiment``."""
    return partial(run_experiment_forked, jobs=jobs)


def run_experiment_forked(experiment: Any, config: ExperimentConfig, *, jobs: int,
                          progress: Callable[[str, int, int], None] | None = None,
                          checkpoint_dir: Path | None = None, resume: bool = False):
    """:func:`~icml26.harness.runner.run_experiment` with each seed computed in a forked worker."""
    from .runner import run_experiment

    todo = [s for s in config.seeds
            if not (resume and checkpoint_dir is not None
                    and (checkpoint_dir / f"seed-{s}.json").is_file())]
    if jobs <= 1 or len(todo) <= 1 or not fork_available():
        return run_experiment(experiment, config, progress=progress,
                              checkpoint_dir=checkpoint_dir, resume=resume)
    with _SeedWorkers(experiment, config, todo, jobs, progress) as workers:
        return run_experiment(experiment, config, progress=progress, checkpoint_dir=checkpoint_dir,
                              resume=resume, compute=workers.gather)


class _WorkerDied(RuntimeError):
    pass


class _RemoteTraceback(Exception):
    """The worker's traceback text, chained as the cause of the error re-raised in the driver."""

    def __str__(self) -> str:
        return "\n\n" + str(self.args[0]) if self.args else ""


def _seed_worker(experiment: Any, config: ExperimentConfig, seed: int, index: int, n: int,
                 q: Any) -> None:
    """Runs in the forked child: one seed as in process, its output (or error) sent as text."""
    from ..core.llm.usage import track_usage
    from ..core.progress import progress_sink, timing_scope
    from .runner import run_seed, seed_to_text

    mark_worker("seed")
    set_torch_threads(config.torch_threads or 1)  # a seed worker never runs torch on 2 threads,
    limit_blas_threads(1)                         # nor numpy's BLAS: the workers share the cores

    def sink(label: str, done: int, total: int) -> None:
        with contextlib.suppress(Exception):
            q.put(("tick", seed, index, n, label, done, total))

    try:
        with track_usage() as usage, progress_sink(sink), timing_scope() as timing:
            out = run_seed(experiment, config, seed)
        out.timing = {"seed": seed, **timing.to_dict()}
        usage_rows = {k: asdict(v) for k, v in usage.by_model().items()}
        q.put(("done", seed, seed_to_text(out), usage_rows))
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the driver
        tb = traceback.format_exc()
        try:
            payload = pickle.dumps(exc)
            pickle.loads(payload)
        except Exception:  # noqa: BLE001 - an exception that does not pickle: keep its text
            payload = pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
        q.put(("error", seed, payload, tb))


class _SeedWorkers:
    """Up to ``jobs`` forked seed workers, started in seed order as slots free up; ``gather(seed)``
    waits for one seed while forwarding every worker's progress ticks."""

    POLL_S = 0.5

    def __init__(self, experiment: Any, config: ExperimentConfig, seeds: Sequence[int], jobs: int,
                 progress: Callable[[str, int, int], None] | None) -> None:
        import multiprocessing as mp

        self.ctx = mp.get_context("fork")
        self.experiment, self.config, self.jobs, self.progress = experiment, config, jobs, progress
        self.index = {s: i for i, s in enumerate(config.seeds)}
        self.pending = list(seeds)           # not started yet, in seed order
        self.running: dict[int, Any] = {}    # seed -> Process
        self.results: dict[int, tuple[str, Any, Any]] = {}
        self.failed = False                  # after a failure no new seed starts
        self.queue = None

    def __enter__(self) -> _SeedWorkers:
        self.queue = self.ctx.Queue()
        self._start_more()
        return self

    def __exit__(self, *exc: Any) -> None:
        for proc in self.running.values():
            if proc.is_alive():
                proc.terminate()
        for proc in self.running.values():
            proc.join(timeout=10)
        self.running.clear()
        if self.queue is not None:
            self.queue.close()
            self.queue.cancel_join_thread()

    def _start_more(self) -> None:
        while self.pending and len(self.running) < self.jobs and not self.failed:
            seed = self.pending.pop(0)
            proc = self.ctx.Process(
                target=_seed_worker, name=f"icml26-seed-{seed}",
                args=(self.experiment, self.config, seed, self.index[seed], len(self.config.seeds),
                      self.queue))
            proc.start()
            self.running[seed] = proc

    def _handle(self, msg: tuple) -> None:
        kind, seed = msg[0], msg[1]
        if kind == "tick":
            _, _, i, n, label, done, total = msg
            if self.progress is not None:
                self.progress(f"seed {seed} · {label} {done}/{total}", i, n)
            return
        self.results[seed] = msg
        proc = self.running.pop(seed, None)
        if proc is not None:
            proc.join(timeout=30)
        if kind == "error":
            self.failed = True
        self._start_more()

    def _drain(self, timeout: float) -> bool:
        """Handle the messages that arrive within ``timeout`` s (at least one wait); True if any."""
        try:
            msg = self.queue.get(timeout=timeout)
        except queue_mod.Empty:
            return False
        self._handle(msg)
        while True:
            try:
                msg = self.queue.get_nowait()
            except queue_mod.Empty:
                return True
            self._handle(msg)

    def _reap_dead(self) -> None:
        """A worker that exited without sending its seed (killed, out of memory) fails its seed."""
        for seed, proc in list(self.running.items()):
            if proc.is_alive():
                continue
            if self._drain(2.0) and seed in self.results:  # its last message was still in flight
                continue
            if seed in self.results or seed not in self.running:
                continue
            del self.running[seed]
            self.failed = True
            err = _WorkerDied(f"the worker of seed {seed} exited with code {proc.exitcode} "
                              "without a result (killed? out of memory?)")
            self.results[seed] = ("error", seed, pickle.dumps(err), "")
            self._start_more()

    def gather(self, seed: int):
        """The output of ``seed`` (a :class:`SeedOutput`); raises the seed's own error."""
        from ..core.llm.usage import record_usage
        from .runner import seed_from_text

        while seed not in self.results:
            if seed not in self.running and (self.failed or seed not in self.pending):
                why = "an earlier seed failed" if self.failed else "it was not submitted"
                raise RuntimeError(f"seed {seed} was not run: {why}")
            if not self._drain(self.POLL_S):
                self._reap_dead()
        kind, _, payload, extra = self.results.pop(seed)
        if kind == "error":
            exc = pickle.loads(payload)
            if extra:
                exc.__cause__ = _RemoteTraceback(extra)
            raise exc
        for name, counts in (extra or {}).items():
            record_usage(name, **counts)
        return seed_from_text(payload)


__all__ = ["AUTO", "forked_seed_executor", "parse_seed_jobs", "resolve_seed_jobs",
           "run_experiment_forked"]
