"""Forked workers on one machine: one ``fork_map`` for the papers, and the worker flag.

Two levels of parallelism share the cores of a laptop: the harness may run a paper's seeds in
forked processes (:mod:`icml26.harness.fork_executor`, ``--seed-jobs``), and a paper may fork
its own independent stages inside a seed (magic's arms, adaptive_reasoning's stages) through
:func:`fork_map`. They must not multiply: a process that is already a worker (a seed worker or
a :func:`fork_map` worker) runs every :func:`fork_map` serially, in process. The flag is an
environment variable, so it also reaches a process started from a worker.

A task's numbers are the same in a worker as in process as long as it draws only from its own
seeded generators and runs at the same torch thread count (each worker starts at the parent's).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

WORKER_ENV = "ICML26_WORKER"  # set (to "seed" or "task") in every forked worker of the harness


def fork_available() -> bool:
    """Whether this platform can fork workers (not on Windows)."""
    return "fork" in mp.get_all_start_methods()


def in_worker() -> bool:
    """Whether this process is already a forked worker of the harness (then nothing forks)."""
    return bool(os.environ.get(WORKER_ENV))


def mark_worker(kind: str) -> None:
    """Mark this process (and the processes it starts) as a worker: :func:`fork_map` goes serial."""
    os.environ[WORKER_ENV] = kind


def set_torch_threads(n: int | None) -> None:
    """``torch.set_num_threads(n)`` when torch is already imported (a worker is disposable: no
    restore). ``None`` leaves it alone."""
    torch = sys.modules.get("torch")
    if n is not None and torch is not None:
        torch.set_num_threads(int(n))


def limit_blas_threads(n: int = 1) -> None:
    """Limit the BLAS/OpenMP pools numpy and scipy use (threadpoolctl, where installed) for the
    rest of this process: a seed worker beside another must not run two BLAS threads."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn installs it
        return
    threadpool_limits(limits=int(n), user_api="blas")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_TASKS: Sequence[Callable[[], Any]] = ()


def _init_task_worker(threads: int | None) -> None:
    mark_worker("task")
    set_torch_threads(threads)


def _call_task(i: int) -> Any:
    return _TASKS[i]()


def fork_map(tasks: Sequence[Callable[[], Any]], workers: int,
             pack: Callable[[Any], Any] | None = None) -> list[Any]:
    """``[t() for t in tasks]`` in up to ``workers`` forked processes, results in task order.

    Parameters
    ----------
    tasks : sequence of zero-argument callables
        Independent jobs. They are inherited by the forked workers (nothing is pickled but the
        results), so closures over live objects are fine.
    workers : int
        The most processes at once; each starts at the caller's torch thread count.
    pack : callable, optional
        Applied to a result *in the worker* before it is sent back: no live tensors may cross the
        process boundary (torch would send shared-memory handles that die with the worker).

    Serial, in process and *unpacked*, when ``workers`` <= 1, there is one task, ``fork`` is
    unavailable, or this process is already a worker (a seed worker of ``--seed-jobs`` or a
    :func:`fork_map` worker): parallel levels never nest. A task that raises raises here.
    """
    tasks = list(tasks)
    if workers <= 1 or len(tasks) <= 1 or not fork_available() or in_worker():
        return [t() for t in tasks]
    global _TASKS
    _TASKS = [t if pack is None else (lambda t=t: pack(t())) for t in tasks]
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    try:
        with mp.get_context("fork").Pool(min(workers, len(tasks)), initializer=_init_task_worker,
                                         initargs=(threads,), maxtasksperchild=1) as pool:
            return pool.map(_call_task, range(len(tasks)), chunksize=1)
    finally:
        _TASKS = ()
