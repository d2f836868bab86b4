"""Input checks shared by every core and paper: clear errors instead of silent wrong answers.

One home for the scalar checks (real, positive, integer, probability, discount), the array checks
(a finite real array of a given rank or shape, samples ``(n, d)``, a pair of samples, square and
symmetric and positive semi-definite matrices, a Gram matrix). Each returns the validated value
converted to its canonical type, and raises ``TypeError`` for a wrong kind of value and
``ValueError`` for a wrong value (shape, range, NaN/inf, emptiness), naming the argument.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

_SYM_RTOL = 1e-8

# ------------------------------------------------------------------------------------ scalars


def check_real(value: Any, name: str) -> float:
    """``value`` as a float; ``TypeError`` unless it is a real number (bools are not), ``ValueError`` on NaN."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{name} must not be NaN")
    return v


def check_positive(value: Any, name: str, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """``value`` as a float; ``ValueError`` unless it is > 0 (``allow_zero``: >= 0) and finite
    (``allow_inf``: +inf allowed)."""
    v = check_real(value, name)
    if v < 0 or (v == 0 and not allow_zero) or (math.isinf(v) and not allow_inf):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return v


def check_nonnegative(value: Any, name: str) -> float:
    """``value`` as a float; ``ValueError`` unless it is finite and >= 0."""
    return check_positive(value, name, allow_zero=True)


def check_positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    """``value`` as an int; ``TypeError`` unless an integer, ``ValueError`` unless >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_probability(value: Any, name: str = "alpha", *, low_open: bool = True,
                      high_open: bool = True) -> float:
    """``value`` as a float in (0, 1) (each bound open or closed as asked)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    lo_ok = v > 0 if low_open else v >= 0
    hi_ok = v < 1 if high_open else v <= 1
    if not (math.isfinite(v) and lo_ok and hi_ok):
        lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
        raise ValueError(f"{name} must lie in {lo}0, 1{hi}, got {v}")
    return v


def check_gamma(gamma: Any, name: str = "gamma") -> float:
    """A discount factor in (0, 1]."""
    return check_probability(gamma, name, low_open=True, high_open=False)


# ------------------------------------------------------------------------------------ arrays


def as_real_array(x: Any, name: str) -> np.ndarray:
    """``x`` as a float64 array; ``TypeError`` for strings, None, objects, complex or non-numbers."""
    if isinstance(x, str | bytes) or x is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    raw = np.asarray(x)
    if np.iscomplexobj(raw):
        raise TypeError(f"{name} must be real-valued, got dtype {raw.dtype}")
    if raw.dtype == object or raw.dtype.kind in "USV":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {raw.dtype}")
    try:
        return raw.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers") from None


def _require_finite(arr: np.ndarray, name: str) -> np.ndarray:
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def as_finite_array(value: Any, name: str, *, ndim: int | None = None, nonempty: bool = True) -> np.ndarray:
    """A finite float64 array (of rank ``ndim`` if given; non-empty unless ``nonempty=False``)."""
    arr = as_real_array(value, name)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if nonempty and arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    return _require_finite(arr, name)


def as_matrix(x: Any, name: str, *, shape: tuple[int | None, int | None] = (None, None)) -> np.ndarray:
    """A finite float64 2-D array of the given shape (None = any); a scalar is (1, 1) if asked."""
    arr = as_real_array(x, name)
    if arr.ndim == 0 and shape == (1, 1):
        arr = arr.reshape(1, 1)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {arr.shape}")
    for axis, want in enumerate(shape):
        if want is not None and arr.shape[axis] != want:
            raise ValueError(f"{name} has shape {arr.shape}, expected {shape} (None = any)")
    return _require_finite(arr, name)


def as_vector(x: Any, name: str, n: int | None = None) -> np.ndarray:
    """A finite float64 1-D array (of length ``n`` if given); a scalar is a length-1 vector."""
    arr = as_real_array(x, name)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]}, expected {n}")
    return _require_finite(arr, name)


def check_symmetric(S: np.ndarray, name: str) -> np.ndarray:
    """Raise unless ``S`` is square and symmetric (relative tolerance 1e-8); return ``(S+S^T)/2``."""
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"{name} must be square, got shape {S.shape}")
    scale = float(np.max(np.abs(S))) if S.size else 0.0  # relative tolerance, no floor
    if not np.allclose(S, S.T, rtol=0.0, atol=_SYM_RTOL * scale):
        raise ValueError(f"{name} is not symmetric (max |S - S^T| = {np.max(np.abs(S - S.T)):.3g})")
    return 0.5 * (S + S.T)


def as_psd(x: Any, name: str, n: int | None = None, *, strict: bool = False) -> np.ndarray:
    """A symmetric positive semi-definite (``strict``: definite) float64 matrix.

    Raises ``ValueError`` naming the problem: shape, NaN, asymmetry, a negative eigenvalue or
    (``strict``) a zero eigenvalue.
    """
    S = check_symmetric(as_matrix(x, name, shape=(n, n) if n is not None else (None, None)), name)
    w = np.linalg.eigvalsh(S)
    scale = max(float(np.max(np.abs(w))), 1e-300)
    if w[0] < -1e-12 * scale:
        raise ValueError(f"{name} is not positive semi-definite (smallest eigenvalue {w[0]:.3g})")
    if strict and w[0] <= 1e-14 * scale:
        raise ValueError(f"{name} is not positive definite (smallest eigenvalue {w[0]:.3g})")
    return S


def is_singular(S: np.ndarray) -> bool:
    """True when the PSD matrix ``S`` has an eigenvalue <= 1e-14 x its largest (or is zero)."""
    w = np.linalg.eigvalsh(S)
    return bool(w[-1] <= 0.0 or w[0] <= 1e-14 * w[-1])


def as_samples(X: Any, name: str = "X", *, min_samples: int = 2) -> np.ndarray:
    """A finite float64 sample matrix (n, d) with n >= ``min_samples``; (n,) is n 1-D samples.

    Booleans are accepted as 0/1 (indicator features).
    """
    arr = np.asarray(X)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real-valued, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (n, d), got shape {arr.shape}")
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name} needs at least {min_samples} samples, got {arr.shape[0]}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one feature, got shape {arr.shape}")
    return _require_finite(arr, name)


def as_sample_pair(X: Any, Y: Any, *, min_samples: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Two sample matrices with the same number of features."""
    X = as_samples(X, "X", min_samples=min_samples)
    Y = as_samples(Y, "Y", min_samples=min_samples)
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X and Y must have the same number of features, got {X.shape[1]} and {Y.shape[1]}")
    return X, Y


def check_square_gram(K: Any, name: str = "K") -> np.ndarray:
    """A square, finite Gram matrix as float64."""
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {K.shape}")
    return _require_finite(K, name)


# ------------------------------------------------------------------------------------ tensors
# (torch is imported lazily: importing this module must not import torch)


def check_tensor(x: Any, name: str, *, min_dim: int = 1) -> None:
    """A floating-point ``torch.Tensor`` with at least ``min_dim`` dimensions (batch first)."""
    import torch

    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimensions (batch first), got "
                         f"shape {tuple(x.shape)}")


def check_finite(x: Any, name: str) -> None:
    """A tensor without NaN or inf."""
    if not tensor_all_finite(x):
        raise ValueError(f"{name} contains NaN or inf")


def tensor_all_finite(x: Any) -> bool:
    """``bool(torch.isfinite(x).all())``; a dense float CPU tensor is looked at through numpy
    (the same answer, several times faster on this CPU build: a check per solver call and per
    training step adds up)."""
    import torch

    if (isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.layout == torch.strided
            and x.dtype in (torch.float32, torch.float64, torch.float16)):
        try:
            return bool(np.isfinite(x.detach().numpy()).all())
        except (RuntimeError, TypeError):  # a tensor numpy cannot view (functorch wrappers, ...)
            pass
    return bool(torch.isfinite(x).all())


def check_time(t: Any, batch: int) -> None:
    """Flow times: a finite (batch,) tensor in [0, 1]."""
    import torch

    if not isinstance(t, torch.Tensor):
        raise TypeError(f"t must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 1 or t.shape[0] != batch:
        raise ValueError(f"t must have shape ({batch},), got {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError("t contains NaN or inf")
    if bool((t < 0).any()) or bool((t > 1).any()):
        raise ValueError(f"t must lie in [0, 1], got range [{float(t.min()):.4g}, "
                         f"{float(t.max()):.4g}]")
