"""Linear forward operators for image inverse problems ``y = A x + sigma * eps`` on flat images.

The interface follows deepinv's ``physics`` conventions (``A``, ``A_adjoint``, noisy ``measure``)
in pure torch. Every operator also exposes its dense matrix ``H`` (shape ``(m, d)``, built by
applying ``A`` to the identity, so only for small images) and two exact linear solves used by the
solvers:

* ``prox(v, y, mu)  = argmin_x  w/2 ||A x - y||^2 + mu/2 ||x - v||^2``,  ``w = 1 / sigma^2``
  (closed form for masks and average pooling; an eigendecomposition of ``H^T H`` otherwise);
* ``solve_meas(r, a, b) = (a A A^T + b I)^{-1} r`` in measurement space (PiGDM / OT-ODE guidance).

Operators of the brief (``shared/papers/ms_flow.md`` section 5): random-mask and box inpainting,
x2 / x4 super-resolution by average pooling, Gaussian blur with zero padding, and a sparse-view
parallel-beam CT whose matrix is built by rotating each basis image (``scipy.ndimage.rotate``,
bilinear) and summing along columns (scikit-image's ``radon`` is not a dependency; this is the
same discretisation idea without its circle padding).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional as F


def _check_flat(x: Tensor, n: int, name: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if x.dim() != 2 or x.shape[1] != n:
        raise ValueError(f"{name} must have shape (B, {n}), got {tuple(x.shape)}")


class LinearOperator:
    """Base class: subclasses implement ``_A`` and ``_At`` on flat batches.

    Parameters
    ----------
    image_shape : (H, W)
        Image size; inputs are flat ``(B, H*W)``.
    sigma : float
        Standard deviation of the Gaussian measurement noise (>= 0). The data term used by every
        solver is ``||A x - y||^2 / (2 sigma^2)``; ``sigma = 0`` is allowed for noiseless
        measurements but then ``prox`` needs an explicit ``weight``.
    """

    name = "linear"

    def __init__(self, image_shape: tuple[int, int], sigma: float) -> None:
        if len(image_shape) != 2 or min(image_shape) <= 0:
            raise ValueError(f"image_shape must be (H, W) with positive sizes, got {image_shape}")
        sigma = float(sigma)
        if not math.isfinite(sigma) or sigma < 0:
            raise ValueError(f"noise sigma must be a finite number >= 0, got {sigma}")
        self.image_shape = (int(image_shape[0]), int(image_shape[1]))
        self.d = self.image_shape[0] * self.image_shape[1]
        self.sigma = sigma
        self._H: Tensor | None = None
        self._eig_normal: tuple[Tensor, Tensor] | None = None
        self._eig_meas: tuple[Tensor, Tensor] | None = None

    # -- to implement -------------------------------------------------------------------------
    @property
    def m(self) -> int:  # measurement size
        raise NotImplementedError

    def _A(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _At(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    # -- public -------------------------------------------------------------------------------
    def A(self, x: Tensor) -> Tensor:
        """Forward map, ``(B, d) -> (B, m)``."""
        _check_flat(x, self.d, "x")
        return self._A(x)

    def At(self, y: Tensor) -> Tensor:
        """Adjoint map, ``(B, m) -> (B, d)``."""
        self.check_y(y)
        return self._At(y)

    A_adjoint = At

    def check_y(self, y: Tensor) -> None:
        """Raise a clear error unless ``y`` is a finite ``(B, m)`` float tensor."""
        _check_flat(y, self.m, "y (measurements)")
        if not bool(torch.isfinite(y).all()):
            raise ValueError("y (measurements) contains NaN or inf")

    def measure(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """``A x + sigma * eps`` with ``eps ~ N(0, I)``."""
        ax = self.A(x)
        if self.sigma == 0:
            return ax
        return ax + self.sigma * torch.randn(ax.shape, generator=generator, dtype=ax.dtype)

    @property
    def weight(self) -> float:
        """Data weight ``1 / sigma^2`` of ``||A x - y||^2 / 2`` (inf when sigma = 0)."""
        return math.inf if self.sigma == 0 else 1.0 / self.sigma**2

    def data_fidelity(self, x: Tensor, y: Tensor) -> Tensor:
        """``||A x - y||^2 / (2 sigma^2)`` per image, shape (B,)."""
        w = self._w(None)
        return 0.5 * w * ((self.A(x) - y) ** 2).sum(1)

    def grad_data(self, x: Tensor, y: Tensor) -> Tensor:
        """Gradient of :meth:`data_fidelity` with respect to ``x``."""
        return self._w(None) * self._At(self.A(x) - y)

    @property
    def H(self) -> Tensor:
        """The dense matrix ``(m, d)`` (float64), built once by applying ``A`` to the identity."""
        if self._H is None:
            eye = torch.eye(self.d, dtype=torch.float64)
            self._H = self._A(eye).T.contiguous()
        return self._H

    def _w(self, weight: float | None) -> float:
        w = self.weight if weight is None else float(weight)
        if not math.isfinite(w) or w <= 0:
            raise ValueError("the data weight 1/sigma^2 must be finite and > 0: give sigma > 0 "
                             "or an explicit weight")
        return w

    def prox(self, v: Tensor, y: Tensor, mu: float, weight: float | None = None) -> Tensor:
        """``argmin_x  w/2 ||A x - y||^2 + mu/2 ||x - v||^2`` (exact), ``w = 1/sigma^2`` by default.

        Parameters
        ----------
        v : Tensor (B, d)
        y : Tensor (B, m)
        mu : float > 0
        weight : float, optional
            Overrides ``w``.
        """
        _check_flat(v, self.d, "v")
        self.check_y(y)
        if v.shape[0] != y.shape[0]:
            raise ValueError(f"v and y must have the same batch size, got {v.shape[0]} and {y.shape[0]}")
        mu = float(mu)
        if not math.isfinite(mu) or mu <= 0:
            raise ValueError(f"mu must be finite and > 0, got {mu}")
        return self._prox(v, y, mu, self._w(weight))

    def _prox(self, v: Tensor, y: Tensor, mu: float, w: float) -> Tensor:
        if self._eig_normal is None:
            s, V = torch.linalg.eigh(self.H.T @ self.H)
            self._eig_normal = (s.clamp_min(0.0), V)
        s, V = self._eig_normal
        rhs = (w * self._At(y) + mu * v).double()
        x = ((rhs @ V) / (w * s + mu)) @ V.T
        return x.to(v.dtype)

    def solve_meas(self, r: Tensor, a: float, b: float) -> Tensor:
        """``(a A A^T + b I)^{-1} r`` for ``r`` of shape (B, m), ``a >= 0``, ``b > 0``."""
        self.check_y(r)
        if a < 0 or b <= 0:
            raise ValueError(f"need a >= 0 and b > 0, got a={a}, b={b}")
        if self._eig_meas is None:
            s, U = torch.linalg.eigh(self.H @ self.H.T)
            self._eig_meas = (s.clamp_min(0.0), U)
        s, U = self._eig_meas
        return (((r.double() @ U) / (a * s + b)) @ U.T).to(r.dtype)

    def pinv(self, y: Tensor, delta: float = 1e-2) -> Tensor:
        """Regularised pseudo-inverse ``(A^T A + delta I)^{-1} A^T y`` (``delta = 0``: ``A^+ y``).

        The initial image of the solvers (zero-filled for masks, upsampled for pooling); the small
        ``delta`` (ours) keeps it from amplifying noise on ill-conditioned blurs.
        """
        self.check_y(y)
        if delta < 0:
            raise ValueError(f"delta must be >= 0, got {delta}")
        if delta == 0:
            return (y.double() @ torch.linalg.pinv(self.H).T).to(y.dtype)
        return self._prox(torch.zeros(y.shape[0], self.d, dtype=y.dtype), y, float(delta), 1.0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, image={self.image_shape}, m={self.m}, sigma={self.sigma})"


class Inpainting(LinearOperator):
    """Keep the pixels where ``mask`` is True: ``A x = x[:, mask]``.

    ``A A^T = I``, so ``prox`` is elementwise: ``x = (w M A^T y + mu v) / (w M + mu)``.
    """

    name = "inpainting"

    def __init__(self, mask: Tensor, image_shape: tuple[int, int], sigma: float) -> None:
        super().__init__(image_shape, sigma)
        mask = torch.as_tensor(mask, dtype=torch.bool).reshape(-1)
        if mask.numel() != self.d:
            raise ValueError(f"mask must have {self.d} entries, got {mask.numel()}")
        if not bool(mask.any()):
            raise ValueError("mask keeps no pixel")
        self.mask = mask
        self.idx = torch.nonzero(mask).reshape(-1)

    @property
    def m(self) -> int:
        return int(self.idx.numel())

    def _A(self, x: Tensor) -> Tensor:
        return x[:, self.idx]

    def _At(self, y: Tensor) -> Tensor:
        out = torch.zeros(y.shape[0], self.d, dtype=y.dtype)
        out[:, self.idx] = y
        return out

    def _prox(self, v, y, mu, w):
        m = self.mask.to(v.dtype)
        return (w * self._At(y) + mu * v) / (w * m + mu)


class AveragePooling(LinearOperator):
    """Super-resolution operator: ``factor x factor`` average pooling (8x8 -> 4x4 for factor 2).

    ``A A^T = I / factor^2``, so by Woodbury
    ``(w A^T A + mu I)^{-1} = (I - w A^T A / (mu + w / factor^2)) / mu``.
    """

    name = "super_resolution"

    def __init__(self, image_shape: tuple[int, int], factor: int, sigma: float) -> None:
        super().__init__(image_shape, sigma)
        if not isinstance(factor, int) or factor < 1:
            raise ValueError(f"factor must be a positive int, got {factor!r}")
        if self.image_shape[0] % factor or self.image_shape[1] % factor:
            raise ValueError(f"factor {factor} must divide the image size {self.image_shape}")
        self.factor = factor

    @property
    def m(self) -> int:
        return self.d // self.factor**2

    def _A(self, x: Tensor) -> Tensor:
        h, w = self.image_shape
        return F.avg_pool2d(x.reshape(-1, 1, h, w), self.factor).reshape(x.shape[0], -1)

    def _At(self, y: Tensor) -> Tensor:
        h, w = self.image_shape
        f = self.factor
        img = y.reshape(-1, 1, h // f, w // f)
        up = img.repeat_interleave(f, dim=2).repeat_interleave(f, dim=3) / f**2
        return up.reshape(y.shape[0], -1)

    def _prox(self, v, y, mu, w):
        r = w * self._At(y) + mu * v
        return (r - w * self._At(self._A(r)) / (mu + w / self.factor**2)) / mu


class GaussianBlur(LinearOperator):
    """Gaussian blur (``ksize x ksize`` kernel, std ``blur_sigma``) with zero padding."""

    name = "deblur"

    def __init__(self, image_shape: tuple[int, int], sigma: float, *, blur_sigma: float = 1.0,
                 ksize: int = 3) -> None:
        super().__init__(image_shape, sigma)
        if not isinstance(ksize, int) or ksize < 1 or ksize % 2 == 0:
            raise ValueError(f"ksize must be a positive odd int, got {ksize!r}")
        if not blur_sigma > 0:
            raise ValueError(f"blur_sigma must be > 0, got {blur_sigma}")
        r = torch.arange(ksize, dtype=torch.float64) - ksize // 2
        g = torch.exp(-0.5 * (r / blur_sigma) ** 2)
        k = torch.outer(g, g)
        self.kernel = (k / k.sum())[None, None]
        self.ksize, self.blur_sigma = ksize, float(blur_sigma)

    @property
    def m(self) -> int:
        return self.d

    def _A(self, x: Tensor) -> Tensor:
        h, w = self.image_shape
        out = F.conv2d(x.reshape(-1, 1, h, w), self.kernel.to(x.dtype), padding=self.ksize // 2)
        return out.reshape(x.shape[0], -1)

    def _At(self, y: Tensor) -> Tensor:
        h, w = self.image_shape
        out = F.conv_transpose2d(y.reshape(-1, 1, h, w), self.kernel.to(y.dtype), padding=self.ksize // 2)
        return out.reshape(y.shape[0], -1)


@functools.lru_cache(maxsize=8)
def _ct_matrix(image_shape: tuple[int, int], n_views: int) -> Tensor:
    from scipy import ndimage

    h, w = image_shape
    angles = [180.0 * v / n_views for v in range(n_views)]
    cols = []
    for e in np.eye(h * w):
        img = e.reshape(h, w)
        cols.append(np.concatenate([ndimage.rotate(img, a, reshape=False, order=1, mode="constant").sum(axis=0)
                                    for a in angles]))
    return torch.from_numpy(np.stack(cols, axis=1)).contiguous()


class Tomography(LinearOperator):
    """Sparse-view parallel-beam CT: ``n_views`` angles in [0, 180) degrees, one detector bin per
    image column. Row block ``v`` of ``H`` is the column sum of the image rotated by ``theta_v``
    (bilinear interpolation, zero outside). Applied as a dense matrix (small images only)."""

    name = "ct"

    def __init__(self, image_shape: tuple[int, int], sigma: float, n_views: int = 8) -> None:
        super().__init__(image_shape, sigma)
        if not isinstance(n_views, int) or n_views < 1:
            raise ValueError(f"n_views must be a positive int, got {n_views!r}")
        self.n_views = n_views
        self.angles = [180.0 * v / n_views for v in range(n_views)]
        self._H = _ct_matrix(self.image_shape, n_views).clone()  # (n_views * w, d)

    @property
    def m(self) -> int:
        return self.n_views * self.image_shape[1]

    def _A(self, x: Tensor) -> Tensor:
        return (x.double() @ self.H.T).to(x.dtype)

    def _At(self, y: Tensor) -> Tensor:
        return (y.double() @ self.H).to(y.dtype)


def make_ct(image_shape: tuple[int, int] = (8, 8), sigma: float = 0.05, n_views: int = 8) -> Tomography:
    """Sparse-view CT with ``n_views`` angles (brief: 8 views)."""
    return Tomography(image_shape, sigma, n_views)


def make_inpainting(image_shape: tuple[int, int] = (8, 8), sigma: float = 0.05, *, p: float | None = 0.5,
                    box: tuple[int, int, int, int] | None = None, seed: int = 0) -> Inpainting:
    """Random-pixel inpainting (a fraction ``p`` of pixels missing, drawn with ``seed``) or box
    inpainting (``box = (row0, col0, height, width)`` missing). Defaults: the brief's 50% mask;
    the box of the brief is the 4x4 centre, ``box=(2, 2, 4, 4)`` on 8x8."""
    h, w = image_shape
    mask = torch.ones(h, w, dtype=torch.bool)
    if box is not None:
        r0, c0, bh, bw = box
        if r0 < 0 or c0 < 0 or bh <= 0 or bw <= 0 or r0 + bh > h or c0 + bw > w:
            raise ValueError(f"box {box} does not fit in an image of shape {image_shape}")
        mask[r0:r0 + bh, c0:c0 + bw] = False
        op = Inpainting(mask, image_shape, sigma)
        op.name = "inpaint_box"
        return op
    if p is None or not 0.0 <= p < 1.0:
        raise ValueError(f"p (missing fraction) must be in [0, 1), got {p}")
    g = torch.Generator().manual_seed(int(seed))
    n_missing = int(round(p * h * w))
    perm = torch.randperm(h * w, generator=g)
    flat = mask.reshape(-1)
    flat[perm[:n_missing]] = False
    op = Inpainting(flat.reshape(h, w), image_shape, sigma)
    op.name = "inpaint_random"
    return op


def make_downsample(image_shape: tuple[int, int] = (8, 8), factor: int = 2,
                    sigma: float = 0.05) -> AveragePooling:
    """x``factor`` super-resolution by average pooling."""
    op = AveragePooling(image_shape, factor, sigma)
    op.name = f"sr_x{factor}"
    return op


def make_blur(image_shape: tuple[int, int] = (8, 8), sigma: float = 0.05, *, blur_sigma: float = 1.0,
              ksize: int = 3) -> GaussianBlur:
    """Gaussian deblurring (brief: 3x3 kernel, std 1, zero padding)."""
    return GaussianBlur(image_shape, sigma, blur_sigma=blur_sigma, ksize=ksize)


TASKS = ("inpaint_random", "inpaint_box", "sr_x2", "sr_x4", "deblur", "ct")


def make_operator(task: str, sigma: float, image_shape: tuple[int, int] = (8, 8), seed: int = 0) -> LinearOperator:
    """One of :data:`TASKS` by name (box = the centre quarter of the image)."""
    h, w = image_shape
    if task == "inpaint_random":
        return make_inpainting(image_shape, sigma, p=0.5, seed=seed)
    if task == "inpaint_box":
        return make_inpainting(image_shape, sigma, box=(h // 4, w // 4, h // 2, w // 2))
    if task == "sr_x2":
        return make_downsample(image_shape, 2, sigma)
    if task == "sr_x4":
        return make_downsample(image_shape, 4, sigma)
    if task == "deblur":
        return make_blur(image_shape, sigma)
    if task == "ct":
        return make_ct(image_shape, sigma)
    raise ValueError(f"unknown task {task!r}; choose one of {TASKS}")
