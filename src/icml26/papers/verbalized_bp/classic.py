"""Classic Bayesian persuasion (Kamenica & Gentzkow 2011), solved exactly.

A state ``w`` in ``Omega`` is drawn from the common prior ``mu0``; the sender commits to a
signalling scheme ``pi(s | w)``; the receiver sees ``s``, forms the posterior
``mu_s(w) ∝ mu0(w) pi(s | w)`` and plays ``a*(mu_s) = argmax_a sum_w mu_s(w) u_R(w, a)``, ties
broken in the sender's favour. By the revelation principle the sender-optimal scheme recommends
actions and solves the linear program (Verbalized BP, arXiv 2502.01587, Sec. 2; Dughmi 2017)

    max_pi  sum_w mu0(w) sum_a pi(a | w) u_S(w, a)
    s.t.    sum_w mu0(w) pi(a | w) [u_R(w, a) - u_R(w, a')] >= 0    for all a, a'   (obedience)
            sum_a pi(a | w) = 1,  pi >= 0,

whose value equals the concave envelope of ``v(mu) = E_mu u_S(w, a*(mu))`` at ``mu0``.
Solved with scipy's HiGHS (``linprog``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linprog

TIE_TOL = 1e-9  # posteriors within this of an indifference point count as indifferent


@dataclass(frozen=True)
class BPInstance:
    """A Bayesian-persuasion game with finitely many states and receiver actions.

    Attributes
    ----------
    prior : ndarray, shape (S,) -- the common prior, sums to 1
    u_sender : ndarray, shape (S, A) -- the sender's utility of action ``a`` in state ``w``
    u_receiver : ndarray, shape (S, A) -- the receiver's utility
    state_names, action_names : tuple of str
    name : str
    """

    prior: np.ndarray
    u_sender: np.ndarray
    u_receiver: np.ndarray
    state_names: tuple[str, ...] = ()
    action_names: tuple[str, ...] = ()
    name: str = "bp"

    def __post_init__(self) -> None:
        prior = np.asarray(self.prior, dtype=float)
        us = np.asarray(self.u_sender, dtype=float)
        ur = np.asarray(self.u_receiver, dtype=float)
        if prior.ndim != 1 or prior.size < 1:
            raise ValueError(f"prior must be a 1-d array of state probabilities, got shape {prior.shape}")
        if not np.all(np.isfinite(prior)) or np.any(prior < 0) or abs(prior.sum() - 1.0) > 1e-9:
            raise ValueError(f"prior must be non-negative and sum to 1, got {prior.tolist()} "
                             f"(sum {prior.sum():.6g})")
        for label, u in (("u_sender", us), ("u_receiver", ur)):
            if u.ndim != 2 or u.shape[0] != prior.size or u.shape[1] < 1:
                raise ValueError(f"{label} must have shape (n_states={prior.size}, n_actions), "
                                 f"got {u.shape}")
            if not np.all(np.isfinite(u)):
                raise ValueError(f"{label} must be finite")
        if us.shape != ur.shape:
            raise ValueError(f"u_sender {us.shape} and u_receiver {ur.shape} must have the same shape")
        states = tuple(self.state_names) or tuple(f"w{i}" for i in range(prior.size))
        actions = tuple(self.action_names) or tuple(f"a{j}" for j in range(us.shape[1]))
        if len(states) != prior.size or len(actions) != us.shape[1]:
            raise ValueError("state_names/action_names must match the utility table's shape")
        for name, value in (("prior", prior), ("u_sender", us), ("u_receiver", ur),
                            ("state_names", states), ("action_names", actions)):
            object.__setattr__(self, name, value)

    @property
    def n_states(self) -> int:
        return self.prior.size

    @property
    def n_actions(self) -> int:
        return self.u_sender.shape[1]


@dataclass(frozen=True)
class SignalingScheme:
    """The sender-optimal direct scheme of :func:`solve_persuasion_lp`.

    Attributes
    ----------
    pi : ndarray, shape (S, A) -- ``pi[w, a]`` = P(recommend a | state w); rows sum to 1
    value : float -- the sender's expected utility
    receiver_value : float -- the receiver's expected utility when obeying
    obedience_slack : ndarray, shape (A, A) -- left side of each obedience constraint (>= 0)
    """

    pi: np.ndarray
    value: float
    receiver_value: float
    obedience_slack: np.ndarray = field(repr=False)


def receiver_best_action(inst: BPInstance, posterior: np.ndarray) -> int:
    """``argmax_a sum_w posterior(w) u_R(w, a)``, ties (within ``TIE_TOL``) to the sender's favourite.

    Parameters
    ----------
    posterior : ndarray, shape (S,)
    """
    post = np.asarray(posterior, dtype=float)
    if post.shape != (inst.n_states,):
        raise ValueError(f"posterior must have shape ({inst.n_states},), got {post.shape}")
    eu_r = post @ inst.u_receiver
    best = np.flatnonzero(eu_r >= eu_r.max() - TIE_TOL)
    eu_s = post @ inst.u_sender
    return int(best[np.argmax(eu_s[best])])


def check_scheme(inst: BPInstance, pi: np.ndarray) -> np.ndarray:
    """Validate a signalling scheme ``pi`` of shape (S, K): non-negative rows summing to 1."""
    pi = np.asarray(pi, dtype=float)
    if pi.ndim != 2 or pi.shape[0] != inst.n_states:
        raise ValueError(f"a scheme must have shape (n_states={inst.n_states}, n_signals), got {pi.shape}")
    if not np.all(np.isfinite(pi)) or np.any(pi < -1e-12) or np.any(np.abs(pi.sum(axis=1) - 1) > 1e-9):
        raise ValueError("a scheme's rows must be probability distributions (non-negative, summing to 1)")
    return np.clip(pi, 0.0, None)


def scheme_outcome(inst: BPInstance, pi: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Expected utilities when the receiver best-responds to each signal of a committed scheme.

    Parameters
    ----------
    pi : ndarray, shape (S, K) -- P(signal k | state w)

    Returns
    -------
    sender_value, receiver_value : float
    actions : ndarray, shape (K,) -- the receiver's action per signal (-1 for a signal never sent)
    """
    pi = check_scheme(inst, pi)
    joint = inst.prior[:, None] * pi  # (S, K)
    p_signal = joint.sum(axis=0)
    vs = vr = 0.0
    actions = np.full(pi.shape[1], -1)
    for k in range(pi.shape[1]):
        if p_signal[k] <= 0:
            continue
        a = receiver_best_action(inst, joint[:, k] / p_signal[k])
        actions[k] = a
        vs += float(joint[:, k] @ inst.u_sender[:, a])
        vr += float(joint[:, k] @ inst.u_receiver[:, a])
    return vs, vr, actions


def solve_persuasion_lp(inst: BPInstance) -> SignalingScheme:
    """The sender-optimal signalling scheme: the obedience-constrained LP (module docstring).

    Variables ``pi[w, a]`` (row-major); ``A (A - 1)`` obedience constraints and ``S`` simplex
    constraints; scipy ``linprog(method="highs")``.

    Examples
    --------
    >>> sol = solve_persuasion_lp(recommendation_letter())
    >>> round(sol.value, 6), round(sol.pi[1, 0], 6)   # hire the weak candidate half the time
    (0.666667, 0.5)
    """
    S, A = inst.n_states, inst.n_actions
    c = -(inst.prior[:, None] * inst.u_sender).ravel()
    a_ub, b_ub = [], []
    for a in range(A):
        for a2 in range(A):
            if a2 == a:
                continue
            row = np.zeros((S, A))
            row[:, a] = -(inst.prior * (inst.u_receiver[:, a] - inst.u_receiver[:, a2]))
            a_ub.append(row.ravel())
            b_ub.append(0.0)
    a_eq = np.zeros((S, S * A))
    for w in range(S):
        a_eq[w, w * A:(w + 1) * A] = 1.0
    res = linprog(c, A_ub=np.array(a_ub) if a_ub else None, b_ub=np.array(b_ub) if b_ub else None,
                  A_eq=a_eq, b_eq=np.ones(S), bounds=(0, 1), method="highs")
    if res.status != 0:
        raise RuntimeError(f"persuasion LP failed: {res.message}")
    pi = np.clip(res.x.reshape(S, A), 0.0, 1.0)
    pi /= pi.sum(axis=1, keepdims=True)
    slack = np.zeros((A, A))
    for a in range(A):
        for a2 in range(A):
            slack[a, a2] = float(np.sum(inst.prior * pi[:, a] * (inst.u_receiver[:, a] - inst.u_receiver[:, a2])))
    value = float(np.sum(inst.prior[:, None] * pi * inst.u_sender))
    rv = float(np.sum(inst.prior[:, None] * pi * inst.u_receiver))
    return SignalingScheme(pi=pi, value=value, receiver_value=rv, obedience_slack=slack)


def concavify_binary(inst: BPInstance, grid: int = 2001) -> float:
    """The concave envelope of ``v(mu)`` at the prior, for a binary state (``mu`` = P(state 0)).

    ``v`` is evaluated on a grid of ``grid`` posteriors plus the receiver's indifference points;
    the envelope at ``mu0`` is the best split of ``mu0`` between two grid points (KG 2011, Cor. 2).
    """
    if inst.n_states != 2:
        raise ValueError("concavify_binary needs a binary state")
    if grid < 3:
        raise ValueError("grid must be >= 3")
    mus = set(np.linspace(0.0, 1.0, grid).tolist())
    d = inst.u_receiver[0] - inst.u_receiver[1]  # EU_R(a) = u_R[1, a] + mu * d[a]
    for a in range(inst.n_actions):
        for b in range(a + 1, inst.n_actions):
            if d[a] != d[b]:
                m = (inst.u_receiver[1, b] - inst.u_receiver[1, a]) / (d[a] - d[b])
                if 0.0 <= m <= 1.0:
                    mus.add(float(m))
    mus_arr = np.array(sorted(mus))
    v = np.array([inst.u_sender[:, receiver_best_action(inst, np.array([m, 1 - m]))] @ np.array([m, 1 - m])
                  for m in mus_arr])
    mu0 = float(inst.prior[0])
    lo = np.flatnonzero(mus_arr <= mu0)
    hi = np.flatnonzero(mus_arr >= mu0)
    left, right = mus_arr[lo][:, None], mus_arr[hi][None, :]
    width = right - left
    t = np.divide(mu0 - left, width, out=np.zeros_like(width), where=width > 0)
    vals = (1 - t) * v[lo][:, None] + t * v[hi][None, :]  # the chord between two posteriors at mu0
    return float(vals.max())


def full_disclosure_value(inst: BPInstance) -> float:
    """The sender's value when the state is revealed: ``sum_w mu0(w) u_S(w, a*(delta_w))``."""
    return scheme_outcome(inst, np.eye(inst.n_states))[0]


def no_information_value(inst: BPInstance) -> float:
    """The sender's value when nothing is revealed: ``u_S`` at ``a*(mu0)``."""
    return scheme_outcome(inst, np.ones((inst.n_states, 1)))[0]


def binary_threshold_optimum(prior_good: float, threshold: float) -> tuple[float, float]:
    """Closed form of the binary template: the receiver takes the sender's action iff
    P(good) >= ``threshold``; the sender gets 1 for that action.

    Returns ``(value, lie_rate)``: ``value = min(1, mu0 / mu*)`` and
    ``lie_rate = pi(recommend | bad) = min(1, mu0 (1 - mu*) / ((1 - mu0) mu*))`` (KG 2011).
    """
    if not 0 < prior_good < 1 or not 0 < threshold <= 1:
        raise ValueError("need 0 < prior_good < 1 and 0 < threshold <= 1")
    if prior_good >= threshold:
        return 1.0, 1.0
    lie = prior_good * (1 - threshold) / ((1 - prior_good) * threshold)
    return min(1.0, prior_good / threshold), min(1.0, lie)


def binary_instance(prior_good: float, u_receiver: np.ndarray, *, states: tuple[str, str],
                    actions: tuple[str, str], name: str) -> BPInstance:
    """A binary template: states (good, bad), actions (target, other); the sender gets 1 for target."""
    return BPInstance(prior=np.array([prior_good, 1 - prior_good]),
                      u_sender=np.array([[1.0, 0.0], [1.0, 0.0]]), u_receiver=np.asarray(u_receiver, float),
                      state_names=states, action_names=actions, name=name)


def recommendation_letter(prior_strong: float = 1 / 3) -> BPInstance:
    """Professor (sender) and HR (receiver); hire iff P(strong) >= 1/2 (Dughmi 2017's example).

    u_R: +1 for hiring a strong candidate, -1 for a weak one, 0 for no hire; V* = 2/3 and
    pi(hire | weak) = 1/2 at prior 1/3.
    """
    return binary_instance(prior_strong, [[1.0, 0.0], [-1.0, 0.0]], states=("strong", "weak"),
                           actions=("hire", "reject"), name="letter")


def courtroom(prior_guilty: float = 0.3) -> BPInstance:
    """Prosecutor and judge (KG 2011): convict iff P(guilty) >= 1/2; u_R = 1 for a correct verdict.

    V* = 0.6 and pi(convict | innocent) = 3/7 at prior 0.3.
    """
    return binary_instance(prior_guilty, [[1.0, 0.0], [0.0, 1.0]], states=("guilty", "innocent"),
                           actions=("convict", "acquit"), name="courtroom")


def law_enforcement(n_locations: int = 10, n_patrolled: int = 2, p_star: float = 0.4) -> BPInstance:
    """Police and drivers (Lazear 2006; Hernandez & Neeman): a driver at a location obeys the limit
    iff P(patrolled) >= ``p_star`` = gain / fine.

    u_R with fine 1 and gain ``p_star``: obey 0; speed ``-(1 - p_star)`` if patrolled, ``p_star``
    if not. The sender gets 1 per deterred driver: V* = min(1, mu0 / p_star) with mu0 = k / N.
    Defaults N = 10, k = 2, p* = 0.4 (not given by the paper: the brief's choice), V* = 0.5.
    """
    if not 0 < n_patrolled < n_locations:
        raise ValueError("need 0 < n_patrolled < n_locations")
    if not 0 < p_star < 1:
        raise ValueError("need 0 < p_star < 1")
    mu0 = n_patrolled / n_locations
    return binary_instance(mu0, [[0.0, -(1 - p_star)], [0.0, p_star]], states=("patrolled", "unpatrolled"),
                           actions=("obey", "speed"), name="law")


def binary_threshold(inst: BPInstance, target: int = 0) -> float:
    """The receiver's indifference point mu* = P(state 0) above which it takes action ``target``
    (binary state and two actions)."""
    if inst.n_states != 2 or inst.n_actions != 2:
        raise ValueError("binary_threshold needs 2 states and 2 actions")
    other = 1 - target
    d = (inst.u_receiver[0] - inst.u_receiver[1])  # EU_R(a) = u_R[1, a] + mu d[a]
    if d[target] == d[other]:
        raise ValueError("the receiver is never indifferent: no threshold")
    return float((inst.u_receiver[1, other] - inst.u_receiver[1, target]) / (d[target] - d[other]))
