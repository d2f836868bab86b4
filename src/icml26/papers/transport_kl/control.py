r"""KL-regularised (and transport-KL-regularised) discounted LQ control of LTI systems.

Stein, Datar & Ay, arXiv:2602.02250. Dynamics :math:`x_{t+1} = Ax_t + Bu_t + w_t`,
:math:`w_t\sim\mathcal N(0,\Sigma_w)`; controlled transition :math:`P_u(\cdot|x)=\mathcal N(Ax+Bu,\Sigma_w)`,
passive transition :math:`P_0(\cdot|x)=\mathcal N(Ax,\Sigma_w)`; objective

.. math::
    J(\pi) = \mathbb E\sum_t \gamma^t\big[x_t^\top Q x_t + \lambda\, D(P_{u_t}(\cdot|x_t)\,\|\,P_0(\cdot|x_t))\big].

Both transitions share the covariance :math:`\Sigma_w`, so each divergence is a quadratic control
penalty :math:`u^\top R_D u`, :math:`R_D = \tfrac{\lambda}{2} M_D` with

=========  ===============================================  ==============================
``kl``      :math:`B^\top\Sigma_w^{-1}B`                     singular as :math:`\Sigma_w\to0`
``wkl``     :math:`B^\top B`                                 noise independent
``kwkl``    :math:`B^\top(\Sigma_w+\varepsilon I)^{-1}B`     saturates at :math:`B^\top B/\varepsilon`
=========  ===============================================  ==============================

and the optimal policy is the linear feedback :math:`u=-Kx` of a discounted DARE (noise only adds
a constant to the value: certainty equivalence).

Conventions follow python-control's ``dlqr``: functions return ``(K, S, E)`` with ``u = -K x``,
``S`` the Riccati solution and ``E`` the closed-loop eigenvalues of :math:`A-BK`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import LinAlgError, solve_discrete_are, solve_discrete_lyapunov

from icml26.core.validation import (
    as_matrix,
    as_psd,
    as_vector,
    check_gamma,
    check_positive,
    is_singular,
)

__all__ = [
    "DIVERGENCES",
    "check_controllable",
    "closed_loop_cost",
    "control_penalty",
    "discounted_dlqr",
    "kl_regularized_lqr",
    "simulate_linear",
    "spectral_radius",
    "stationary_cost",
]

DIVERGENCES = ("kl", "wkl", "kwkl")


def _check_AB(A, B) -> tuple[np.ndarray, np.ndarray]:
    A = as_matrix(A, "A")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    B = as_matrix(B, "B")
    if B.shape[0] != A.shape[0]:
        raise ValueError(f"B must have {A.shape[0]} rows like A, got shape {B.shape}")
    return A, B


def check_controllable(A, B, *, tol: float = 1e-9) -> None:
    r"""Raise ``ValueError`` unless :math:`(A,B)` is controllable (PBH rank test).

    For every eigenvalue :math:`\mu` of :math:`A`, :math:`[\mu I - A,\ B]` must have full row rank.
    """
    A, B = _check_AB(A, B)
    n = A.shape[0]
    for mu in np.linalg.eigvals(A):
        mat = np.hstack([mu * np.eye(n) - A, B.astype(complex)])
        sv = np.linalg.svd(mat, compute_uv=False)
        if np.sum(sv > tol * max(1.0, sv[0])) < n:
            raise ValueError(f"(A, B) is not controllable: the mode with eigenvalue {mu:.4g} "
                             "cannot be influenced by the input")


def control_penalty(B, Sigma_w, divergence: str = "wkl", *, lam: float = 1.0, eps: float = 1.0,
                    half: bool = True) -> np.ndarray:
    r"""Quadratic control penalty :math:`R_D` induced by :math:`\lambda D(P_u\|P_0)`.

    For :math:`P_u=\mathcal N(Ax+Bu,\Sigma_w)`, :math:`P_0=\mathcal N(Ax,\Sigma_w)` (equal
    covariances, mean shift :math:`Bu`): KL :math:`=\tfrac12 u^\top B^\top\Sigma_w^{-1}Bu`,
    WKL :math:`=\tfrac12\|Bu\|^2` (any :math:`\Sigma_w`, including 0), KWKL\ :sub:`ε`
    :math:`=\tfrac12u^\top B^\top(\Sigma_w+\varepsilon I)^{-1}Bu` (see
    :mod:`~icml26.papers.transport_kl.divergences`).

    Parameters
    ----------
    B : array_like, shape (n, m)
    Sigma_w : array_like, shape (n, n)
        Process-noise covariance (PSD; must be positive definite for ``"kl"``).
    divergence : {"kl", "wkl", "kwkl"}
    lam : float, default 1.0
        Regularisation weight λ > 0.
    eps : float, default 1.0
        KW regulariser ε > 0 (used by ``"kwkl"`` only). Default from the third-party double
        integrator script quoted in the brief; the paper's value is not known to us.
    half : bool, default True
        ``True``: :math:`R=\tfrac\lambda2 M_D` (the divergence's exact value). ``False``:
        :math:`R=\lambda M_D` (the convention of the third-party script; equals ``half=True``
        with ``2 * lam``).

    Returns
    -------
    ndarray, shape (m, m)
        Symmetric ``R``.
    """
    B = as_matrix(B, "B")
    n = B.shape[0]
    Sigma_w = as_psd(Sigma_w, "Sigma_w", n)
    lam = check_positive(lam, "lam")
    if divergence not in DIVERGENCES:
        raise ValueError(f"divergence must be one of {DIVERGENCES}, got {divergence!r}")
    if divergence == "kl":
        if is_singular(Sigma_w):
            raise ValueError("the KL control penalty is infinite: Sigma_w is singular "
                             "(use divergence='wkl' or 'kwkl', which stay finite)")
        M = B.T @ np.linalg.solve(Sigma_w, B)
    elif divergence == "wkl":
        M = B.T @ B
    else:
        eps = check_positive(eps, "eps")
        M = B.T @ np.linalg.solve(Sigma_w + eps * np.eye(n), B)
    R = (0.5 if half else 1.0) * lam * M
    return 0.5 * (R + R.T)


def discounted_dlqr(A, B, Q, R, gamma: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Discounted discrete-time LQR, :math:`\min\ \mathbb E\sum_t\gamma^t(x_t^\top Qx_t+u_t^\top Ru_t)`.

    Riccati equation

    .. math::
        S = Q + \gamma A^\top SA - \gamma^2A^\top SB(R+\gamma B^\top SB)^{-1}B^\top SA,\qquad
        K = \gamma(R+\gamma B^\top SB)^{-1}B^\top SA,

    solved as ``scipy.linalg.solve_discrete_are(sqrt(gamma) A, B, Q, R / gamma)``. With
    ``gamma=1`` this is python-control's ``dlqr(A, B, Q, R)``.

    Parameters
    ----------
    A : array_like, shape (n, n)
    B : array_like, shape (n, m)
    Q : array_like, shape (n, n)
        Symmetric PSD state weight.
    R : array_like, shape (m, m)
        Symmetric positive definite control weight.
    gamma : float in (0, 1], default 1.0

    Returns
    -------
    K : ndarray, shape (m, n)
        Feedback gain, ``u = -K x``.
    S : ndarray, shape (n, n)
        Riccati solution (discounted value matrix).
    E : ndarray, shape (n,)
        Eigenvalues of the undiscounted closed loop ``A - B K``.
    """
    A, B = _check_AB(A, B)
    n, m = B.shape
    Q = as_psd(Q, "Q", n)
    R = as_psd(R, "R", m, strict=True)
    gamma = check_gamma(gamma)
    sg = math.sqrt(gamma)
    Ad = sg * A
    # stabilisability of (sqrt(gamma) A, B): every mode with |mu| >= 1 must be controllable
    for mu in np.linalg.eigvals(Ad):
        if abs(mu) >= 1.0 - 1e-12:
            mat = np.hstack([mu * np.eye(n) - Ad, B.astype(complex)])
            sv = np.linalg.svd(mat, compute_uv=False)
            if np.sum(sv > 1e-9 * max(1.0, sv[0])) < n:
                raise ValueError(f"(A, B) is not stabilisable at gamma={gamma}: the mode with "
                                 f"eigenvalue {mu / sg:.4g} is uncontrollable")
    try:
        S = solve_discrete_are(Ad, B, Q, R / gamma)
    except (LinAlgError, ValueError) as exc:
        raise ValueError(f"the discounted Riccati equation has no stabilising solution: {exc}") from None
    S = 0.5 * (S + S.T)
    K = gamma * np.linalg.solve(R + gamma * B.T @ S @ B, B.T @ S @ A)
    E = np.linalg.eigvals(A - B @ K)
    return K, S, E


def kl_regularized_lqr(A, B, Q, Sigma_w, *, divergence: str = "wkl", lam: float = 1.0,
                       gamma: float = 0.9, eps: float = 1.0, half: bool = True
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Optimal feedback of the divergence-regularised LQ problem (arXiv:2602.02250, LTI setting).

    Minimises :math:`\mathbb E\sum_t\gamma^t[x_t^\top Qx_t + \lambda D(P_{u_t}\|P_0)]` for
    :math:`x_{t+1}=Ax_t+Bu_t+w_t`, :math:`w_t\sim\mathcal N(0,\Sigma_w)`: builds
    :func:`control_penalty` and calls :func:`discounted_dlqr`.

    Parameters
    ----------
    A : array_like, shape (n, n)
    B : array_like, shape (n, m)
        ``(A, B)`` must be controllable.
    Q : array_like, shape (n, n)
        Symmetric PSD state weight.
    Sigma_w : array_like, shape (n, n)
        Process-noise covariance.
    divergence : {"kl", "wkl", "kwkl"}, default "wkl"
    lam : float, default 1.0
        λ; the third-party double-integrator script uses 1 with ``half=False``.
    gamma : float in (0, 1], default 0.9
        Discount (0.9 in the third-party double-integrator script; not confirmed in the paper).
    eps : float, default 1.0
        KW regulariser for ``"kwkl"``.
    half : bool, default True
        See :func:`control_penalty`.

    Returns
    -------
    K : ndarray, shape (m, n)
        ``u = -K x``.
    S : ndarray, shape (n, n)
    E : ndarray, shape (n,)
        Eigenvalues of ``A - B K``.

    Examples
    --------
    >>> import numpy as np
    >>> from icml26.papers.transport_kl import double_integrator
    >>> A, B = double_integrator(dims=2)
    >>> Sw = np.diag([1e-5, 1e-5, 10.0, 10.0])
    >>> K, S, E = kl_regularized_lqr(A, B, np.eye(4), Sw, divergence="wkl", lam=2.0, gamma=0.9)
    >>> K.shape
    (2, 4)
    """
    A, B = _check_AB(A, B)
    check_controllable(A, B)
    R = control_penalty(B, Sigma_w, divergence, lam=lam, eps=eps, half=half)
    return discounted_dlqr(A, B, Q, R, gamma)


def spectral_radius(M) -> float:
    """Largest absolute eigenvalue of a square matrix."""
    M = as_matrix(M, "M")
    return float(np.max(np.abs(np.linalg.eigvals(M))))


def closed_loop_cost(A, B, K, Q, R, Sigma_w, *, gamma: float, Sigma0=None, m0=None) -> float:
    r"""Exact discounted cost :math:`\mathbb E\sum_{t\ge0}\gamma^t(x_t^\top Qx_t + u_t^\top Ru_t)` of ``u=-Kx``.

    With :math:`F=A-BK` and :math:`\bar Q = Q+K^\top RK`, :math:`P` solves the Lyapunov equation
    :math:`P=\bar Q+\gamma F^\top PF` (``scipy.linalg.solve_discrete_lyapunov``) and

    .. math::
        J = \mathrm{tr}(P\Sigma_0) + m_0^\top Pm_0 + \frac{\gamma}{1-\gamma}\mathrm{tr}(P\Sigma_w).

    Pass ``R = 0`` for the state cost alone, ``Q = 0, R = I`` for the control energy.

    Parameters
    ----------
    A, B, K : array_like, shapes (n, n), (n, m), (m, n)
    Q : array_like, shape (n, n)
    R : array_like, shape (m, m)
        PSD evaluation weights (need not be the design weights).
    Sigma_w : array_like, shape (n, n)
    gamma : float in (0, 1)
    Sigma0 : array_like, shape (n, n), optional
        Covariance of :math:`x_0` (default identity).
    m0 : array_like, shape (n,), optional
        Mean of :math:`x_0` (default 0).

    Returns
    -------
    float
        ``inf`` when :math:`\sqrt\gamma F` is not stable.
    """
    A, B = _check_AB(A, B)
    n, m = B.shape
    K = as_matrix(K, "K", shape=(m, n))
    Q = as_psd(Q, "Q", n)
    R = as_psd(R, "R", m)
    Sigma_w = as_psd(Sigma_w, "Sigma_w", n)
    gamma = check_gamma(gamma)
    if gamma >= 1.0:
        raise ValueError("closed_loop_cost needs gamma < 1 (use stationary_cost for the average cost)")
    Sigma0 = np.eye(n) if Sigma0 is None else as_psd(Sigma0, "Sigma0", n)
    m0 = np.zeros(n) if m0 is None else as_vector(m0, "m0", n)
    F = A - B @ K
    if spectral_radius(math.sqrt(gamma) * F) >= 1.0:
        return math.inf
    Qbar = Q + K.T @ R @ K
    P = solve_discrete_lyapunov(math.sqrt(gamma) * F.T, Qbar)
    return float(np.trace(P @ Sigma0) + m0 @ P @ m0 + gamma / (1.0 - gamma) * np.trace(P @ Sigma_w))


def stationary_cost(A, B, K, Q, R, Sigma_w) -> float:
    r"""Long-run average cost :math:`\lim_T\frac1T\mathbb E\sum_t(x_t^\top Qx_t+u_t^\top Ru_t)`.

    :math:`=\mathrm{tr}((Q+K^\top RK)\Sigma_\infty)` with :math:`\Sigma_\infty=F\Sigma_\infty F^\top+\Sigma_w`;
    ``inf`` if :math:`F=A-BK` is not stable (and the noise excites the unstable mode).
    """
    A, B = _check_AB(A, B)
    n, m = B.shape
    K = as_matrix(K, "K", shape=(m, n))
    Q = as_psd(Q, "Q", n)
    R = as_psd(R, "R", m)
    Sigma_w = as_psd(Sigma_w, "Sigma_w", n)
    F = A - B @ K
    if spectral_radius(F) >= 1.0:
        return math.inf
    Sinf = solve_discrete_lyapunov(F, Sigma_w)
    return float(np.trace((Q + K.T @ R @ K) @ Sinf))


def simulate_linear(A, B, K, Sigma_w, x0, T: int, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray]:
    r"""Roll out :math:`x_{t+1}=(A-BK)x_t+w_t`, :math:`u_t=-Kx_t`, :math:`w_t\sim\mathcal N(0,\Sigma_w)`.

    Parameters
    ----------
    A, B, K : array_like, shapes (n, n), (n, m), (m, n)
    Sigma_w : array_like, shape (n, n)
        PSD (a singular covariance is allowed).
    x0 : array_like, shape (n,) or (N, n)
        Initial state(s); ``N`` independent rollouts.
    T : int
        Number of steps.
    rng : numpy.random.Generator

    Returns
    -------
    xs : ndarray, shape (N, T + 1, n)
    us : ndarray, shape (N, T, m)
    """
    A, B = _check_AB(A, B)
    n, m = B.shape
    K = as_matrix(K, "K", shape=(m, n))
    Sigma_w = as_psd(Sigma_w, "Sigma_w", n)
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    if isinstance(T, bool) or not isinstance(T, int | np.integer) or T < 1:
        raise ValueError(f"T must be a positive integer, got {T!r}")
    x0 = np.asarray(x0, dtype=float)
    x0 = x0[None, :] if x0.ndim == 1 else x0
    if x0.ndim != 2 or x0.shape[1] != n or not np.all(np.isfinite(x0)):
        raise ValueError(f"x0 must be finite with shape (n,) or (N, n), n={n}; got {x0.shape}")
    w, U = np.linalg.eigh(Sigma_w)
    L = U * np.sqrt(np.clip(w, 0.0, None))
    N = x0.shape[0]
    xs = np.empty((N, T + 1, n))
    us = np.empty((N, T, m))
    xs[:, 0] = x0
    for t in range(T):
        u = -xs[:, t] @ K.T
        us[:, t] = u
        xs[:, t + 1] = xs[:, t] @ A.T + u @ B.T + rng.standard_normal((N, n)) @ L.T
    return xs, us
