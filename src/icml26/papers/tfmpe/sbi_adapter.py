"""sbi's posterior interface on a trained :class:`~.estimator.TFMPE`, so that sbi's own
diagnostics (``sbi.diagnostics.run_sbc`` / ``check_sbc``, expected coverage, ...) run on ours.

sbi works on flat vectors: ``theta`` (B, D_theta) and ``x`` (B, D_x) at a fixed number of sites.
:class:`SBIPosterior` flattens in the order of :func:`~.baselines.flatten`: global variables
first, then local ones, each ``reshape(B, -1)`` (for the Gaussian task ``[g, l_1, ..., l_M]``
and ``[y_1, ..., y_M]``), so a FlatSBI posterior and ours see the same vectors.

>>> post = SBIPosterior(est, n_sites=5)                               # doctest: +SKIP
>>> ranks, dap = run_sbc(thetas, xs, post, num_posterior_samples=100)  # doctest: +SKIP

Methods follow sbi 0.27's ``NeuralPosterior``: ``sample(sample_shape, x=None)`` (n, D),
``sample_batched(sample_shape, x)`` (n, B, D), ``log_prob(theta, x=None)`` (B,),
``set_default_x(x)``. Sampling is the estimator's batched ODE solve; ``log_prob`` its CNF density.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from .estimator import TFMPE


def _n(sample_shape) -> int:
    if isinstance(sample_shape, int):
        return int(sample_shape)
    shape = tuple(sample_shape)
    return int(math.prod(shape)) if shape else 1


class SBIPosterior:
    """A trained TFMPE seen as an sbi posterior over flat vectors at ``n_sites`` sites.

    Parameters
    ----------
    estimator : TFMPE
        Trained (``train()`` called).
    n_sites : int
        Number of sites of every ``x`` and ``theta`` passed in (flat vectors have a fixed size).
    steps, method : sampler settings passed to :meth:`TFMPE.sample_batched`.
    log_prob_steps : int
        ODE steps of :meth:`TFMPE.log_prob`.
    """

    def __init__(self, estimator: TFMPE, n_sites: int, *, steps: int = 20, method: str = "midpoint",
                 log_prob_steps: int = 50) -> None:
        if not isinstance(estimator, TFMPE):
            raise TypeError(f"estimator must be a TFMPE, got {type(estimator).__name__}")
        if estimator.model is None:
            raise RuntimeError("train() the estimator before wrapping it")
        if not isinstance(n_sites, int) or n_sites < 1:
            raise ValueError(f"n_sites must be an int >= 1, got {n_sites!r}")
        self.estimator, self.n_sites = estimator, n_sites
        self.steps, self.method, self.log_prob_steps = steps, method, log_prob_steps
        loc = estimator.local
        th = list(estimator._theta_names)
        xs = list(estimator._x_names)
        self.theta_names = [n for n in th if n not in loc] + [n for n in th if n in loc]
        self.x_names = [n for n in xs if n not in loc] + [n for n in xs if n in loc]
        self._default_x: Tensor | None = None

    # ------------------------------------------------------------ flat <-> dict
    def _shape(self, name: str) -> tuple[int, ...]:
        ev = self.estimator._events[name]
        return (self.n_sites, *ev) if name in self.estimator.local else tuple(ev)

    def _split(self, flat: Tensor, names: Sequence[str], what: str) -> dict[str, Tensor]:
        if not isinstance(flat, Tensor) or not torch.is_floating_point(flat):
            raise TypeError(f"{what} must be a floating-point tensor")
        if flat.dim() == 1:
            flat = flat[None]
        sizes = [math.prod(self._shape(n)) for n in names]
        if flat.dim() != 2 or flat.shape[1] != sum(sizes):
            raise ValueError(f"{what} must have shape (B, {sum(sizes)}) at n_sites={self.n_sites}, "
                             f"got {tuple(flat.shape)}")
        out, i = {}, 0
        for n, k in zip(names, sizes, strict=True):
            out[n] = flat[:, i:i + k].reshape(flat.shape[0], *self._shape(n)).to(torch.float32)
            i += k
        return out

    def _flat(self, d: dict[str, Tensor], lead: int) -> Tensor:
        return torch.cat([d[n].reshape(*d[n].shape[:lead], -1) for n in self.theta_names], dim=-1)

    def _x(self, x: Tensor | None) -> Tensor:
        if x is None:
            if self._default_x is None:
                raise ValueError("no x given and no default x set (set_default_x)")
            return self._default_x
        return x

    # ------------------------------------------------------------ sbi interface
    def set_default_x(self, x: Tensor) -> SBIPosterior:
        self._split(x, self.x_names, "x")  # validates the shape
        self._default_x = x
        return self

    @property
    def default_x(self) -> Tensor | None:
        return self._default_x

    def sample_batched(self, sample_shape, x: Tensor, show_progress_bars: bool = False,
                       **_: object) -> Tensor:
        """``(n, B, D_theta)`` draws for each of the ``B`` rows of ``x``."""
        xd = self._split(x, self.x_names, "x")
        draws = self.estimator.sample_batched(_n(sample_shape), xd, steps=self.steps,
                                              method=self.method)
        return self._flat(draws, 2)

    def sample(self, sample_shape=(1,), x: Tensor | None = None, show_progress_bars: bool = False,
               **_: object) -> Tensor:
        """``(n, D_theta)`` draws given one observation."""
        x = self._x(x)
        if x.dim() == 2 and x.shape[0] != 1:
            raise ValueError(f"sample takes one observation, got a batch of {x.shape[0]}; use "
                             "sample_batched")
        return self.sample_batched(sample_shape, x)[:, 0]

    def log_prob(self, theta: Tensor, x: Tensor | None = None, **_: object) -> Tensor:
        """``log q(theta | x)``, shape (B,); ``x`` one observation or one per ``theta`` row."""
        x = self._x(x)
        td = self._split(theta, self.theta_names, "theta")
        xd = self._split(x, self.x_names, "x")
        return self.estimator.log_prob(td, xd, steps=self.log_prob_steps)


__all__ = ["SBIPosterior"]
