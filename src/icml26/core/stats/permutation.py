"""Permutation two-sample machinery on a pooled Gram matrix (no kernel recomputation).

For each permutation of the pooled sample ``Z = [X; Y]`` (sizes n_x, n_y), :func:`permuted_block_sums`
returns the block sums every quadratic kernel statistic needs, vectorized over permutations with
one matrix product. A statistic is then a vectorized function of these sums, so MMD^2, NAMMD and
friends share one permutation loop (Liu et al. 2020's permutation test, DK-for-TST ``TST_MMD_u``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.core.validation import check_positive_int, check_square_gram

__all__ = ["BlockSums", "permutation_indices", "permutation_pvalue", "permuted_block_sums"]


@dataclass(frozen=True)
class BlockSums:
    """Block sums of a pooled Gram matrix for B assignments (each field has shape (B,)).

    ``sxx = sum_{i,j in X} k``, ``syy``, ``sxy = sum_{i in X, j in Y} k``, traces ``tx = sum_{i in X}
    k(z_i, z_i)``, ``ty``, and (equal sizes only) ``pair = sum_i k(x_i, y_i)`` for the i-th X
    point paired with the i-th Y point; ``n_x``, ``n_y`` the sizes.
    """

    sxx: np.ndarray
    syy: np.ndarray
    sxy: np.ndarray
    tx: np.ndarray
    ty: np.ndarray
    pair: np.ndarray | None
    n_x: int
    n_y: int


def permutation_indices(n: int, n_permutations: int, rng: np.random.Generator, *, include_identity=True):
    """``(B, n)`` integer array of permutations; row 0 is the identity when ``include_identity``."""
    n = check_positive_int(n, "n", minimum=2)
    B = check_positive_int(n_permutations, "n_permutations")
    perms = rng.permuted(np.tile(np.arange(n), (B, 1)), axis=1)
    if include_identity:
        perms = np.vstack([np.arange(n)[None, :], perms])
    return perms


def permuted_block_sums(Kzz: np.ndarray, n_x: int, perms: np.ndarray) -> BlockSums:
    """Block sums of ``Kzz`` for every row of ``perms`` (first ``n_x`` entries -> X).

    Parameters
    ----------
    Kzz : (N, N) pooled Gram matrix.
    n_x : size of X (the rest is Y).
    perms : (B, N) integer permutations of range(N).
    """
    Kzz = check_square_gram(Kzz, "Kzz")
    N = Kzz.shape[0]
    perms = np.asarray(perms)
    if perms.ndim != 2 or perms.shape[1] != N:
        raise ValueError(f"perms must have shape (B, {N}), got {perms.shape}")
    if not 0 < n_x < N:
        raise ValueError(f"n_x must lie in (0, {N}), got {n_x}")
    n_y = N - n_x
    B = perms.shape[0]
    W = np.zeros((B, N))
    np.put_along_axis(W, perms[:, :n_x], 1.0, axis=1)  # W[b, z] = 1 if z is assigned to X
    KW = Kzz @ W.T  # (N, B)
    total = Kzz.sum()
    sxx = np.einsum("bn,nb->b", W, KW)
    row_all = Kzz.sum(axis=1)
    sx_all = W @ row_all  # sum_{i in X, j all}
    sxy = sx_all - sxx
    syy = total - sxx - 2.0 * sxy
    diag = np.diag(Kzz)
    tx = W @ diag
    ty = diag.sum() - tx
    pair = None
    if n_x == n_y:
        pair = Kzz[perms[:, :n_x], perms[:, n_x:]].sum(axis=1)
    return BlockSums(sxx, syy, sxy, tx, ty, pair, n_x, n_y)


def permutation_pvalue(observed: float, null: np.ndarray) -> float:
    """``(1 + #{null >= observed}) / (1 + B)``: a valid p-value for a greater-is-extreme statistic.

    ``null`` holds the B permuted statistics (the identity excluded).
    """
    null = np.asarray(null, dtype=np.float64)
    # tolerance: identical-up-to-rounding values count as ties (>=)
    ge = np.sum(null >= observed - 1e-12 * max(1.0, abs(observed)))
    return float((1 + ge) / (1 + null.size))
