"""Data for the reproduction: Gaussian pairs with exact ground truth, Blob, HDGM, noisy digits.

Blob and HDGM follow the *descriptions* of the DK-for-TST benchmarks (Liu et al. 2020,
arXiv 2002.09116, Sec. 6); constants marked "our choice" are not taken from the paper's code.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from .statistic import nammd_population_gaussian

__all__ = ["blob", "boundary_shift", "digits_noise_split", "gaussian_pair", "hdgm", "matched_test_shift"]


def gaussian_pair(rng: np.random.Generator, m: int, var_p: float, var_q: float, shift: float,
                  dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``X ~ N(0, var_p I_d)``, ``Y ~ N(shift e_1, var_q I_d)``, m samples each."""
    X = rng.standard_normal((m, dim)) * np.sqrt(var_p)
    Y = rng.standard_normal((m, dim)) * np.sqrt(var_q)
    Y[:, 0] += shift
    return X, Y


def matched_test_shift(var_t: float, target_mmd2: float, dim: int, bandwidth: float) -> float:
    """Shift ``delta`` with ``MMD^2(N(0, var_t I), N(delta e_1, var_t I)) = target_mmd2`` (exact)."""
    def f(delta):
        return nammd_population_gaussian(np.zeros(dim), var_t, np.eye(dim)[0] * delta, var_t,
                                         bandwidth)["mmd2"] - target_mmd2
    hi = 1.0
    while f(hi) < 0:
        hi *= 2
        if hi > 1e6:
            raise ValueError("target MMD^2 is not reachable for this variance")
    return float(brentq(f, 0.0, hi, xtol=1e-12))


def boundary_shift(var: float, target_nammd: float, dim: int, bandwidth: float) -> float:
    """Shift ``delta`` with ``NAMMD(N(0, var I), N(delta e_1, var I)) = target_nammd`` exactly.

    The closed-form analogue of the official code's distribution construction, which moves two
    samples by gradient descent until their NAMMD equals epsilon (to 1e-7). Raises if the target is
    not reachable (NAMMD of this family is below ``n / (2 - n)``, ``n = ||mu||^2``).
    """
    def f(delta):
        return nammd_population_gaussian(np.zeros(dim), var, np.eye(dim)[0] * delta, var,
                                         bandwidth)["nammd"] - target_nammd
    if not 0.0 < target_nammd < 1.0:
        raise ValueError(f"target NAMMD must lie in (0, 1), got {target_nammd}")
    hi = 1.0
    while f(hi) < 0:
        hi *= 2
        if hi > 1e6:
            raise ValueError(f"NAMMD = {target_nammd} is not reachable with variance {var} (dim {dim}, "
                             f"bandwidth {bandwidth})")
    return float(brentq(f, 0.0, hi, xtol=1e-13))


def blob(rng: np.random.Generator, m: int, *, null: bool = False, var: float = 0.03,
         spacing: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Blob: 3x3 grid of 2-D Gaussians; Q's components are correlated with varying correlation.

    P: equal mixture of ``N(c, var I)`` over centres ``c in {0, s, 2s}^2``. Q: same centres,
    covariance ``var [[1, rho_k], [rho_k, 1]]`` with ``rho_k`` from -0.9 to 0.9 over the 9 components
    (component 5, the centre, uncorrelated). Our choice, following the DK-for-TST description
    (small isotropic blobs for P, rotated elongated blobs for Q). ``null=True``: Q = P.
    """
    centres = np.array([(i, j) for i in range(3) for j in range(3)], dtype=float) * spacing
    rhos = np.linspace(-0.9, 0.9, 9)

    def sample(correlated: bool) -> np.ndarray:
        comp = rng.integers(0, 9, size=m)
        e = rng.standard_normal((m, 2))
        if correlated:
            rho = rhos[comp]
            e[:, 1] = rho * e[:, 0] + np.sqrt(1 - rho**2) * e[:, 1]
        return centres[comp] + np.sqrt(var) * e

    return sample(False), sample(not null)


def hdgm(rng: np.random.Generator, m: int, *, dim: int = 10, null: bool = False,
         corr: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """HDGM: mixture of 2 Gaussians in ``dim`` dimensions (Liu et al. 2020 description).

    P: ``0.5 N(0, I) + 0.5 N(0.5 * 1, I)``; Q: same means, covariance with correlation ``+corr``
    (component 1) / ``-corr`` (component 2) between the first two coordinates. ``null=True``: Q = P.
    """
    means = np.stack([np.zeros(dim), 0.5 * np.ones(dim)])

    def sample(correlated: bool) -> np.ndarray:
        comp = rng.integers(0, 2, size=m)
        e = rng.standard_normal((m, dim))
        if correlated:
            rho = np.where(comp == 0, corr, -corr)
            e[:, 1] = rho * e[:, 0] + np.sqrt(1 - rho**2) * e[:, 1]
        return means[comp] + e

    return sample(False), sample(not null)


def digits_noise_split(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """sklearn digits (1797 x 64, pixels 0..16) shuffled and cut into 4 disjoint quarters A, B, C, D.

    A, B build the reference pair (epsilon), C, D the test pairs, so epsilon's sample is
    independent of the tested samples.
    """
    from sklearn.datasets import load_digits

    data = load_digits().data.astype(np.float64)
    data = data[rng.permutation(data.shape[0])]
    q = data.shape[0] // 4
    return tuple(data[i * q:(i + 1) * q] for i in range(4))


def add_pixel_noise(rng: np.random.Generator, images: np.ndarray, std: float) -> np.ndarray:
    """Add Gaussian pixel noise (std in pixel units, 0..16 scale), clip to [0, 16], scale to [0, 1]."""
    noisy = images + std * rng.standard_normal(images.shape) if std > 0 else images.copy()
    return np.clip(noisy, 0.0, 16.0) / 16.0
