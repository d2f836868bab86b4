"""Invertible affine transforms ``T(x) = x A + b`` with LU / QR parameterisations, and Hadamards.

LATMiX (arXiv 2602.17681) learns full invertible affine maps placed in front of the linear layers
of a transformer and folds their inverses into the weights. The abstract names "LU or QR"
decompositions, which keep ``A`` invertible by construction; the exact parameterisation is not
public (no official code found), so ours is stated here:

* ``param="lu"`` (Glow-style LU, Kingma & Dhariwal 2018, around the start): ``A = A0 L (U + diag(exp(s)))``
  with a fixed invertible ``A0``, unit lower-triangular ``L``, strictly upper ``U`` and learnable
  log-scales ``s``; ``log|det A| = log|det A0| + sum(s)``; ``A^-1 = (U + diag e^s)^-1 L^-1 A0^-1`` by
  two triangular solves. (Glow factors ``A0`` itself, ``A0 = P L U``; for a Hadamard ``A0`` those
  factors have entries of size ~sqrt(dim) and a few Adam steps made ``A`` ill-conditioned
  (condition number ~400 after 30 steps in our first quick run), so the factors start at I.)
* ``param="qr"``: ``A = Q0 C(S) R`` with a fixed orthogonal ``Q0``, the Cayley map
  ``C(S) = (I - K)^-1 (I + K)``, ``K = S - S^T`` (exactly orthogonal), and ``R`` upper triangular
  with ``diag(R) = exp(r)``; ``log|det A| = sum(r)``; ``A^-1 = R^-1 C^T Q0^T``.
* ``param="rotation"``: the QR form with ``R = I`` (a learned rotation, SpinQuant-style Cayley
  parameterisation; SpinQuant uses Cayley SGD on the Stiefel manifold, here Adam on ``S``).
* ``param="fixed"``: a constant matrix (identity, Hadamard, block Hadamard): no parameters.

Every parameterisation starts at ``A = A0`` (default: a randomised Hadamard, so a learned arm
starts from the QuaRot-style baseline; our choice, the brief's proposal) and ``b = 0``.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

Param = Literal["lu", "qr", "rotation", "fixed"]


def hadamard_matrix(n: int, *, randomized: bool = True, seed: int = 0,
                    dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Orthonormal Sylvester Hadamard matrix ``H / sqrt(n)`` of size ``n`` (a power of two).

    ``randomized``: multiply by a random ±1 diagonal on the left (``diag(s) H``), as QuaRot's
    random Hadamard; still orthogonal.
    """
    if not isinstance(n, int) or n < 1 or n & (n - 1):
        raise ValueError(f"Hadamard size must be a power of two, got {n!r}")
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    h = h / math.sqrt(n)
    if randomized:
        g = torch.Generator().manual_seed(seed)
        s = torch.randint(0, 2, (n,), generator=g).to(torch.float64) * 2 - 1
        h = s[:, None] * h
    return h.to(dtype)


def block_hadamard_matrix(n: int, block: int = 32, *, randomized: bool = True, seed: int = 0,
                          dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Block-diagonal Hadamard: ``n / block`` copies of a ``block``-sized Hadamard (MR-GPTQ style).

    With ``block`` equal to the MX block size, every MX block of ``x A`` mixes only the 32 entries
    of its own block, so an outlier cannot raise the scale of other blocks.
    """
    if block < 1 or n % block:
        raise ValueError(f"size {n} is not a multiple of the Hadamard block {block}")
    blocks = [hadamard_matrix(block, randomized=randomized, seed=seed + i, dtype=torch.float64)
              for i in range(n // block)]
    return torch.block_diag(*blocks).to(dtype)


def _check_square(a0: torch.Tensor) -> torch.Tensor:
    if not isinstance(a0, torch.Tensor) or a0.dim() != 2 or a0.shape[0] != a0.shape[1]:
        raise ValueError(f"A0 must be a square matrix, got {getattr(a0, 'shape', type(a0))}")
    if not bool(torch.isfinite(a0).all()):
        raise ValueError("A0 contains NaN or infinite values")
    a64 = a0.to(torch.float64)
    sv = torch.linalg.svdvals(a64)
    if float(sv.min()) <= 1e-7 * max(float(sv.max()), 1e-300):
        raise ValueError(f"A0 is singular or numerically singular (condition number "
                         f"{float(sv.max()) / max(float(sv.min()), 1e-300):.3g}); an invertible "
                         "transform needs an invertible initial matrix")
    return a64


class InvertibleAffine(nn.Module):
    """``T(x) = x A + b`` with ``A`` invertible by construction.

    Parameters
    ----------
    dim : int
        Feature dimension ``K``.
    param : {"lu", "qr", "rotation", "fixed"}
        Parameterisation (module docstring).
    a0 : Tensor (dim, dim), optional
        Initial matrix (default identity). Must be invertible; for ``"rotation"`` and ``"qr"`` it
        must be orthogonal (it is ``Q0``).
    bias : bool
        Learn a bias ``b`` (zero init). LATMiX uses an affine map; rotations have none.

    Shapes: ``forward`` maps (..., dim) -> (..., dim).
    """

    def __init__(self, dim: int, param: Param = "lu", a0: torch.Tensor | None = None,
                 bias: bool = True) -> None:
        super().__init__()
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive int, got {dim!r}")
        if param not in ("lu", "qr", "rotation", "fixed"):
            raise ValueError(f"param must be lu|qr|rotation|fixed, got {param!r}")
        a0 = torch.eye(dim) if a0 is None else a0
        if tuple(a0.shape) != (dim, dim):
            raise ValueError(f"A0 has shape {tuple(a0.shape)}, expected ({dim}, {dim})")
        a64 = _check_square(a0)
        self.dim, self.param = dim, param
        eye = torch.eye(dim, dtype=torch.float64)
        if param in ("qr", "rotation"):
            if float((a64 @ a64.T - eye).abs().max()) > 1e-5:
                raise ValueError(f"param={param!r} needs an orthogonal A0 (it is Q0)")
            self.register_buffer("q0", a64.float())
            self.skew = nn.Parameter(torch.zeros(dim, dim))
            if param == "qr":
                self.r_upper = nn.Parameter(torch.zeros(dim, dim))
                self.log_r = nn.Parameter(torch.zeros(dim))
        elif param == "lu":
            # A = A0 L U with L = I, U = I at init: the learned factor starts at the identity, so
            # the first steps cannot make A ill-conditioned (the LU factors of a Hadamard itself
            # have entries of size sqrt(dim) and are a poor coordinate system)
            self.register_buffer("a0", a64.float())
            self.l_lower = nn.Parameter(torch.zeros(dim, dim))
            self.u_upper = nn.Parameter(torch.zeros(dim, dim))
            self.log_s = nn.Parameter(torch.zeros(dim))
            self.register_buffer("_a0_inv", torch.linalg.inv(a64).float())
            self.register_buffer("_a0_logdet", torch.linalg.slogdet(a64)[1].float())
        else:
            self.register_buffer("a_fixed", a64.float())
        self.register_buffer("_ltri", torch.tril(torch.ones(dim, dim), -1))
        self.register_buffer("_utri", torch.triu(torch.ones(dim, dim), 1))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    # -- factors ---------------------------------------------------------------------------
    def _cayley(self) -> torch.Tensor:
        k = self.skew - self.skew.T
        eye = torch.eye(self.dim, dtype=k.dtype, device=k.device)
        return torch.linalg.solve(eye - k, eye + k)

    def _r(self) -> torch.Tensor:
        return self.r_upper * self._utri + torch.diag(self.log_r.exp())

    def _lu(self) -> tuple[torch.Tensor, torch.Tensor]:
        eye = torch.eye(self.dim, dtype=self.l_lower.dtype, device=self.l_lower.device)
        L = self.l_lower * self._ltri + eye
        U = self.u_upper * self._utri + torch.diag(self.log_s.exp())
        return L, U

    def cache(self, on: bool = True) -> None:
        """Compute ``A`` and ``A^-1`` once and reuse them until ``cache(False)`` (a training step
        reads a shared transform at several sites; the graph is kept, so gradients still flow)."""
        self._cached = None
        if on:
            self._cached = (self.matrix(), self.inverse_matrix())

    def matrix(self) -> torch.Tensor:
        """``A``, shape (dim, dim) (differentiable in the parameters)."""
        if getattr(self, "_cached", None) is not None:
            return self._cached[0]
        if self.param == "fixed":
            return self.a_fixed
        if self.param == "lu":
            L, U = self._lu()
            return self.a0 @ (L @ U)
        A = self.q0 @ self._cayley()
        return A @ self._r() if self.param == "qr" else A

    def inverse_matrix(self) -> torch.Tensor:
        """``A^-1`` from the factors (triangular solves / transposes; no general inverse)."""
        if getattr(self, "_cached", None) is not None:
            return self._cached[1]
        if self.param == "fixed":
            return torch.linalg.inv(self.a_fixed)
        if self.param == "lu":
            L, U = self._lu()
            linv = torch.linalg.solve_triangular(L, self._a0_inv, upper=False, unitriangular=True)
            return torch.linalg.solve_triangular(U, linv, upper=True)
        qinv = (self.q0 @ self._cayley()).T
        if self.param == "rotation":
            return qinv
        return torch.linalg.solve_triangular(self._r(), qinv, upper=True)

    def logabsdet(self) -> torch.Tensor:
        """``log|det A|`` from the parameters (0 for rotations)."""
        if self.param == "lu":
            return self.log_s.sum() + self._a0_logdet
        if self.param == "qr":
            return self.log_r.sum()
        if self.param == "rotation":
            return self.skew.new_zeros(())
        return torch.linalg.slogdet(self.a_fixed)[1]

    def bias_vector(self) -> torch.Tensor:
        """``b`` (zeros when the transform has no bias)."""
        return self.bias if self.bias is not None else self._ltri.new_zeros(self.dim)

    # -- maps ------------------------------------------------------------------------------
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x @ self.matrix()
        return y + self.bias if self.bias is not None else y

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """``T^-1(y) = (y - b) A^-1``."""
        if self.bias is not None:
            y = y - self.bias
        return y @ self.inverse_matrix()

    def fold_weight(self, weight: torch.Tensor, bias: torch.Tensor | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Weights of a consumer ``y = x W^T + c`` that reads ``x' = T(x)`` instead of ``x``.

        ``W' = W A^-T`` and ``c' = c - W' b``, so ``x' W'^T + c' = x W^T + c`` exactly.

        Parameters
        ----------
        weight : Tensor (out, dim)
        bias : Tensor (out,), optional

        Returns
        -------
        (W', c') with shapes (out, dim) and (out,).
        """
        if weight.dim() != 2 or weight.shape[1] != self.dim:
            raise ValueError(f"weight must be (out, {self.dim}), got {tuple(weight.shape)}")
        w_new = weight @ self.inverse_matrix().T
        c = bias if bias is not None else weight.new_zeros(weight.shape[0])
        return w_new, c - w_new @ self.bias_vector()

    @torch.no_grad()
    def condition_number(self) -> float:
        """``sigma_max(A) / sigma_min(A)`` (float64 SVD)."""
        sv = torch.linalg.svdvals(self.matrix().double())
        return float(sv.max() / sv.min())

    def extra_repr(self) -> str:
        return f"dim={self.dim}, param={self.param!r}, bias={self.bias is not None}"


__all__ = ["InvertibleAffine", "Param", "block_hadamard_matrix", "hadamard_matrix"]
