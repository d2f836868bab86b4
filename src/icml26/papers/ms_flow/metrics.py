"""Image-quality metrics for flat images in [-1, 1] (data range 2), per image.

PSNR follows ``skimage.metrics.peak_signal_noise_ratio``; SSIM follows
``skimage.metrics.structural_similarity`` (uniform window, sample covariance, K1 = 0.01,
K2 = 0.03) with a 5x5 window instead of 7x7 because the images are 8x8 (ours). scikit-image
is not a dependency, so both are written in torch and checked against their definitions.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F


def _pair(x: Tensor, ref: Tensor) -> None:
    if x.shape != ref.shape or x.dim() != 2:
        raise ValueError(f"x and ref must have the same shape (B, d), got {tuple(x.shape)}, {tuple(ref.shape)}")


def psnr(x: Tensor, ref: Tensor, data_range: float = 2.0) -> Tensor:
    """``10 log10(data_range^2 / MSE)`` per image, shape (B,)."""
    _pair(x, ref)
    mse = ((x.double() - ref.double()) ** 2).mean(1).clamp_min(1e-20)
    return 10.0 * torch.log10(data_range**2 / mse)


def ssim(x: Tensor, ref: Tensor, image_shape: tuple[int, int] = (8, 8), data_range: float = 2.0,
         win: int = 5) -> Tensor:
    """Mean structural similarity per image, shape (B,) (uniform ``win x win`` window, valid
    positions only, sample covariances, as scikit-image's defaults)."""
    _pair(x, ref)
    h, w = image_shape
    if h * w != x.shape[1] or win > min(h, w) or win < 2:
        raise ValueError("image_shape must match x and 2 <= win <= the image size")
    a = x.double().reshape(-1, 1, h, w)
    b = ref.double().reshape(-1, 1, h, w)
    k = torch.ones(1, 1, win, win, dtype=torch.float64) / win**2
    n = win * win
    cov_norm = n / (n - 1)

    def filt(z):
        return F.conv2d(z, k)

    ux, uy = filt(a), filt(b)
    vx = cov_norm * (filt(a * a) - ux * ux)
    vy = cov_norm * (filt(b * b) - uy * uy)
    vxy = cov_norm * (filt(a * b) - ux * uy)
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux**2 + uy**2 + c1) * (vx + vy + c2))
    return s.mean(dim=(1, 2, 3))
