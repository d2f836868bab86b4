"""Offline data for flow experiments: Gaussian mixtures with their exact marginal velocity, 2-D toys,
and scikit-learn's 8x8 digits (shipped with scikit-learn, no download)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


@dataclass(frozen=True)
class GaussianMixture:
    """Isotropic Gaussian mixture ``sum_k pi_k N(mu_k, s_k^2 I)`` and its exact CondOT flow.

    For the straight path ``x_t = (1 - t) x0 + t x1`` with ``x0 ~ N(0, I)`` (sigma_min = 0),
    given component k, ``x_t ~ N(t mu_k, sigma_t^2 I)`` with ``sigma_t^2 = (1-t)^2 + t^2 s_k^2`` and

        E[x1 - x0 | x_t, k] = mu_k + (t s_k^2 - (1 - t)) / sigma_t^2 (x_t - t mu_k),

    so the marginal (MSE-optimal) velocity is the posterior-weighted average of these
    (Lipman et al. 2023, arXiv:2210.02747, Thm. 1 applied to a mixture).

    Parameters
    ----------
    means : Tensor, shape (K, D)
    stds : Tensor, shape (K,)
        Positive component standard deviations.
    weights : Tensor, shape (K,)
        Mixture weights (normalised here).
    """

    means: Tensor
    stds: Tensor
    weights: Tensor

    def __post_init__(self) -> None:
        if self.means.dim() != 2:
            raise ValueError("means must have shape (K, D)")
        k = self.means.shape[0]
        if self.stds.shape != (k,) or self.weights.shape != (k,):
            raise ValueError("stds and weights must have shape (K,)")
        if bool((self.stds <= 0).any()) or bool((self.weights < 0).any()) or float(self.weights.sum()) <= 0:
            raise ValueError("stds must be > 0 and weights >= 0 with a positive sum")
        object.__setattr__(self, "weights", self.weights / self.weights.sum())

    @classmethod
    def random(cls, dim: int, k: int = 8, *, mean_scale: float = 1.0, std: float = 0.3,
               seed: int = 0, dtype: torch.dtype = torch.float64) -> GaussianMixture:
        """K equally weighted components with means ``~ N(0, mean_scale^2 I_D)`` and a common std.

        The per-coordinate variance of the data is ``mean_scale^2 + std^2`` whatever ``dim`` is
        (like per-pixel normalised images), so dimensions can be compared.
        """
        if dim <= 0 or k <= 0:
            raise ValueError("dim and k must be positive")
        g = torch.Generator().manual_seed(int(seed))
        means = mean_scale * torch.randn(k, dim, generator=g, dtype=dtype)
        return cls(means, torch.full((k,), float(std), dtype=dtype), torch.ones(k, dtype=dtype))

    @property
    def dim(self) -> int:
        return int(self.means.shape[1])

    def sample(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        """``n`` draws, shape (n, D)."""
        comp = torch.multinomial(self.weights, n, replacement=True, generator=generator)
        eps = torch.randn(n, self.dim, generator=generator, dtype=self.means.dtype)
        return self.means[comp] + self.stds[comp, None] * eps

    def log_prob(self, x: Tensor) -> Tensor:
        """Exact log-density, shape (n,)."""
        return torch.logsumexp(self._log_comp(x, torch.ones(x.shape[0], dtype=x.dtype)), dim=1)

    def _log_comp(self, x: Tensor, t: Tensor) -> Tensor:
        # log pi_k + log N(x; t mu_k, sigma_t^2 I) for each k: shape (n, K). The squared distance
        # ||x - t mu_k||^2 = ||x||^2 - 2 t x.mu_k + t^2 ||mu_k||^2 is formed with one matmul
        # (no (n, K, D) tensor).
        tt = t[:, None]
        var = (1 - tt) ** 2 + tt**2 * self.stds[None, :] ** 2
        sq = ((x * x).sum(1, keepdim=True) - 2 * tt * (x @ self.means.T)
              + tt**2 * (self.means * self.means).sum(1)[None, :]).clamp_min(0.0)
        return (torch.log(self.weights)[None] - 0.5 * sq / var
                - 0.5 * self.dim * torch.log(2 * math.pi * var))

    def marginal_velocity(self, x: Tensor, t: Tensor) -> Tensor:
        """Exact ``v*(x, t) = E[x1 - x0 | x_t = x]``.

        Parameters
        ----------
        x : Tensor, shape (n, D)
        t : Tensor, shape (n,)
            Times in [0, 1].

        Returns
        -------
        Tensor, shape (n, D)
        """
        if x.dim() != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must have shape (n, {self.dim}), got {tuple(x.shape)}")
        if t.shape != (x.shape[0],):
            raise ValueError(f"t must have shape ({x.shape[0]},)")
        if not torch.is_floating_point(x) or not torch.is_floating_point(t):
            raise TypeError("x and t must be floating-point tensors")
        if not bool(torch.isfinite(t).all()):
            raise ValueError("t contains NaN or inf")
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x contains NaN or inf")
        if bool((t < 0).any()) or bool((t > 1).any()):
            raise ValueError("t must lie in [0, 1]")
        dtype = x.dtype
        x64, t64 = x.to(self.means.dtype), t.to(self.means.dtype)
        post = torch.softmax(self._log_comp(x64, t64), dim=1)  # (n, K)
        tt = t64[:, None]
        var = (1 - tt) ** 2 + tt**2 * self.stds[None, :] ** 2  # (n, K)
        coef = (tt * self.stds[None, :] ** 2 - (1 - tt)) / var  # (n, K)
        # sum_k post_k [mu_k + coef_k (x - t mu_k)] = (post (1 - t coef)) @ mu + (sum_k post_k coef_k) x
        pc = post * coef
        return ((post - tt * pc) @ self.means + pc.sum(1, keepdim=True) * x64).to(dtype)

    def velocity_field(self):
        """The exact field as a callable ``(x, t, cond=None) -> v`` (the net protocol)."""

        def field(x: Tensor, t: Tensor, cond: Tensor | None = None) -> Tensor:
            return self.marginal_velocity(x, t)

        return field


def toy2d(name: str, n: int, seed: int = 0) -> Tensor:
    """2-D toy data: ``"8gaussians"``, ``"moons"`` (sklearn ``make_moons``) or ``"checkerboard"``.

    Returns
    -------
    Tensor, shape (n, 2), float32, roughly unit scale.
    """
    rng = np.random.default_rng(seed)
    if name == "8gaussians":
        ang = 2 * np.pi * rng.integers(0, 8, n) / 8
        x = 2.0 * np.stack([np.cos(ang), np.sin(ang)], 1) + 0.2 * rng.standard_normal((n, 2))
    elif name == "moons":
        from sklearn.datasets import make_moons

        x, _ = make_moons(n, noise=0.05, random_state=seed)
        x = (x - np.array([0.5, 0.25])) * 1.5
    elif name == "checkerboard":
        x1 = rng.uniform(-2, 2, n)
        x2 = rng.uniform(0, 1, n) + rng.integers(0, 2, n) * 2 - 2 + (np.floor(x1) % 2)
        x = np.stack([x1, x2], 1)
    else:
        raise ValueError(f"unknown toy {name!r}; use 8gaussians, moons or checkerboard")
    return torch.as_tensor(x, dtype=torch.float32)


def digits(*, seed: int = 0, val: int = 300, test: int = 300) -> dict[str, Tensor]:
    """scikit-learn's 1797 8x8 digits, scaled to [-1, 1], split train / val / test.

    Parameters
    ----------
    seed : int
        Seed of the split's permutation.
    val, test : int
        Sizes of the held-out splits.

    Returns
    -------
    dict with ``"train"``, ``"val"``, ``"test"`` (float32, shape (n, 64)) and
    ``"train_y"``, ``"val_y"``, ``"test_y"`` (int64 labels).
    """
    from sklearn.datasets import load_digits

    ds = load_digits()
    x = ds.data.astype(np.float32) / 16.0 * 2.0 - 1.0
    y = ds.target.astype(np.int64)
    if val < 0 or test < 0 or val + test >= len(x):
        raise ValueError("val + test must be smaller than 1797")
    perm = np.random.default_rng(seed).permutation(len(x))
    parts = {"test": perm[:test], "val": perm[test:test + val], "train": perm[test + val:]}
    out: dict[str, Tensor] = {}
    for name, idx in parts.items():
        out[name] = torch.from_numpy(x[idx])
        out[f"{name}_y"] = torch.from_numpy(y[idx])
    return out
