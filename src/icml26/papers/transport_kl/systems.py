r"""Benchmark systems of arXiv:2602.02250: a double integrator and a cart-pole.

The cart-pole re-implements gymnasium's ``CartPole-v1`` equations (Barto, Sutton & Anderson 1983,
as coded in gymnasium) with a *continuous* force, explicit Euler steps and optional additive
Gaussian process noise; the paper's own cart-pole constants are not available to us, so
gymnasium's are used.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from icml26.core.validation import as_matrix, as_psd, check_positive

__all__ = ["CartPole", "double_integrator"]


def double_integrator(dims: int = 2, dt: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    r"""Discrete double integrator, ``dims`` independent axes.

    Per axis :math:`A_1=\begin{bmatrix}1&\Delta t\\0&1\end{bmatrix}`,
    :math:`B_1=\begin{bmatrix}0\\\Delta t\end{bmatrix}`; the full system is
    :math:`A=I_{dims}\otimes A_1`, :math:`B=I_{dims}\otimes B_1` with state order
    ``(p_1, v_1, p_2, v_2, ...)``. ``dims=2, dt=1`` is the setting of the third-party script quoted
    in the brief (paper values unconfirmed).

    Returns
    -------
    A : ndarray, shape (2 dims, 2 dims)
    B : ndarray, shape (2 dims, dims)
    """
    if isinstance(dims, bool) or not isinstance(dims, int | np.integer) or dims < 1:
        raise ValueError(f"dims must be a positive integer, got {dims!r}")
    dt = check_positive(dt, "dt")
    A1 = np.array([[1.0, dt], [0.0, 1.0]])
    B1 = np.array([[0.0], [dt]])
    eye = np.eye(int(dims))
    return np.kron(eye, A1), np.kron(eye, B1)


@dataclass(frozen=True)
class CartPole:
    r"""Cart-pole with gymnasium ``CartPole-v1`` constants and a continuous force.

    State ``x = (position, velocity, angle, angular velocity)``; angle 0 is upright.

    .. math::
        \text{temp} = \frac{F + m_p l\dot\theta^2\sin\theta}{M},\quad
        \ddot\theta = \frac{g\sin\theta-\cos\theta\,\text{temp}}{l(4/3-m_p\cos^2\theta/M)},\quad
        \ddot x = \text{temp}-\frac{m_p l\ddot\theta\cos\theta}{M},

    :math:`M=m_c+m_p`, :math:`l` the half-length; explicit Euler with step ``tau``.
    """

    gravity: float = 9.8
    masscart: float = 1.0
    masspole: float = 0.1
    length: float = 0.5  # half the pole's length
    tau: float = 0.02
    x_threshold: float = 2.4
    theta_threshold: float = 12 * 2 * math.pi / 360

    @property
    def total_mass(self) -> float:
        return self.masscart + self.masspole

    def derivatives(self, x: np.ndarray, force: np.ndarray) -> np.ndarray:
        """Continuous-time state derivative; ``x`` shape (..., 4), ``force`` shape (...)."""
        x = np.asarray(x, dtype=float)
        force = np.asarray(force, dtype=float)
        _, v, th, om = np.moveaxis(x, -1, 0)
        M, mp, l = self.total_mass, self.masspole, self.length
        s, c = np.sin(th), np.cos(th)
        temp = (force + mp * l * om**2 * s) / M
        th_acc = (self.gravity * s - c * temp) / (l * (4.0 / 3.0 - mp * c**2 / M))
        x_acc = temp - mp * l * th_acc * c / M
        return np.stack([v, x_acc, om, th_acc], axis=-1)

    def step(self, x, force, noise=None) -> np.ndarray:
        """One Euler step ``x + tau f(x, F) (+ noise)``; batched over leading axes."""
        x = np.asarray(x, dtype=float)
        if x.shape[-1] != 4:
            raise ValueError(f"cart-pole state must have 4 entries, got shape {x.shape}")
        out = x + self.tau * self.derivatives(x, force)
        return out if noise is None else out + noise

    def terminated(self, x) -> np.ndarray:
        """gymnasium's termination: ``|position| > 2.4`` or ``|angle| > 12 deg``."""
        x = np.asarray(x, dtype=float)
        return (np.abs(x[..., 0]) > self.x_threshold) | (np.abs(x[..., 2]) > self.theta_threshold)

    def linearize(self) -> tuple[np.ndarray, np.ndarray]:
        r"""Euler discretisation of the linearisation at the upright equilibrium.

        Returns
        -------
        A : ndarray, shape (4, 4)
            :math:`I + \tau A_c`.
        B : ndarray, shape (4, 1)
            :math:`\tau B_c`.
        """
        M, mp, l, g = self.total_mass, self.masspole, self.length, self.gravity
        den = l * (4.0 / 3.0 - mp / M)
        Ac = np.zeros((4, 4))
        Bc = np.zeros((4, 1))
        Ac[0, 1] = 1.0
        Ac[2, 3] = 1.0
        Ac[3, 2] = g / den
        Ac[1, 2] = -mp * l * g / (M * den)
        Bc[3, 0] = -1.0 / (M * den)
        Bc[1, 0] = 1.0 / M + mp * l / (M * M * den)
        return np.eye(4) + self.tau * Ac, self.tau * Bc

    def simulate(self, K, x0, T: int, Sigma_w, rng: np.random.Generator,
                 Q=None) -> dict[str, np.ndarray]:
        r"""Closed-loop nonlinear rollouts with ``F = -K x`` and process noise :math:`\mathcal N(0,\Sigma_w)`.

        At gymnasium's termination a rollout freezes at its failure state, which keeps adding its
        cost until ``T`` (so failing early is penalised, not rewarded).

        Parameters
        ----------
        K : array_like, shape (1, 4)
        x0 : array_like, shape (N, 4)
        T : int
            Horizon (500 = gymnasium's ``CartPole-v1`` limit).
        Sigma_w : array_like, shape (4, 4)
        rng : numpy.random.Generator
        Q : array_like, shape (4, 4), optional
            Weight of the reported quadratic cost (default identity).

        Returns
        -------
        dict
            ``survival`` (N,) steps before termination, ``state_cost`` (N,) mean of
            :math:`x_t^\top Qx_t` over the ``T`` steps, ``energy`` (N,) mean :math:`F_t^2`.
        """
        if isinstance(T, bool) or not isinstance(T, numbers.Integral) or T < 1:
            raise ValueError(f"T must be a positive integer (number of steps), got {T!r}")
        T = int(T)
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator")
        K = as_matrix(np.reshape(np.asarray(K), (1, -1)) if np.ndim(K) == 1 else K, "K", shape=(1, 4))
        x = as_matrix(x0, "x0", shape=(None, 4)).copy()
        Sigma_w = as_psd(Sigma_w, "Sigma_w", 4)
        Q = np.eye(4) if Q is None else as_psd(Q, "Q", 4)
        w, U = np.linalg.eigh(Sigma_w)
        L = U * np.sqrt(np.clip(w, 0.0, None))
        N = x.shape[0]
        alive = np.ones(N, dtype=bool)
        survival = np.zeros(N)
        cost = np.zeros(N)
        energy = np.zeros(N)
        for _ in range(T):
            force = np.where(alive, -(x @ K.T)[:, 0], 0.0)
            cost += np.einsum("ij,jk,ik->i", x, Q, x)
            energy += force**2
            x_next = self.step(x, force, rng.standard_normal((N, 4)) @ L.T)
            x = np.where(alive[:, None], x_next, x)  # a failed rollout stays at its failure state
            survival += alive
            alive &= ~(self.terminated(x) | ~np.all(np.isfinite(x), axis=1))
        steps = float(T)
        return {"survival": survival, "state_cost": cost / steps, "energy": energy / steps}
