"""The TFMPE estimator with an sbi-like workflow (arXiv:2604.20723; sbi's ``FMPE``):

>>> est = TFMPE(prior, local=("l", "y"))                      # doctest: +SKIP
>>> est.append_simulations(theta, x).train(steps=2000)        # doctest: +SKIP
>>> samples = est.sample(1000, x_o)    # {"g": (1000, D), "l": (1000, M, D)}   # doctest: +SKIP
>>> est.log_prob(theta_eval, x_o)      # (B,)                 # doctest: +SKIP

``theta`` and ``x`` are dicts of tensors (global ``(B, *event)``, local ``(B, M, *event)``).
Simulations with different numbers of sites can be appended; they are padded to a common
number of sites and the padding is masked in attention and in the loss (the CFM loss is averaged
over present target tokens only, as the official ``cfm_loss``).

Training uses the flow core: the CondOT path with ``sigma_min`` (FMPE, Wildberger et al. 2023,
arXiv:2305.17161, Eq. 8), ``cfm_loss`` with the padding mask, ``train_flow`` (AdamW, cosine decay,
EMA), the time prior ``p(t) ∝ t^alpha`` via ``sample_t("power")``. Sampling integrates the
ODE with a fixed-step solver (``integrate``; the official code uses diffrax Dopri5 at
rtol=atol=1e-5, also available here as ``method="dopri5"``); densities use the core's
``log_prob`` (instantaneous change of variables; exact trace by default, Hutchinson optional).
Each variable is z-scored by one scalar mean and std over all its present elements (so the
standardisation is the same for every site and keeps site-permutation equivariance).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import torch
from torch import Tensor

from icml26.core.flows import CondOTPath, cfm_loss, integrate, log_prob, sample_t, train_flow

from .model import FastVelocity, TokenTransformerVelocity
from .tokens import Labeller, Tokens, pad_sites, tokenize

Prior = Callable[[int, int], Mapping[str, Tensor]]


class ExtrapolationWarning(UserWarning):
    """A posterior is queried with more sites than any training set had (issue 48: the posterior
    of the hierarchical Gaussian task's g was 1.4x too wide at 1.6x the training range and 1.8-2.6x
    at 3-6x, with no warning)."""


@dataclass
class _Sim:
    theta: dict[str, Tensor]
    x: dict[str, Tensor]
    masks: dict[str, Tensor]
    func: dict[str, Tensor]
    n_sites: int


def _as_dict(d, name: str) -> dict[str, Tensor]:
    if not isinstance(d, Mapping) or not d:
        raise TypeError(f"{name} must be a non-empty dict of tensors, got {type(d).__name__}")
    return dict(d)


class TFMPE:
    """Tokenised flow-matching posterior estimation.

    Parameters
    ----------
    prior : callable, optional
        ``prior(n, n_sites) -> {name: tensor}`` draws parameters; used to check that appended
        ``theta`` has the prior's variables and event shapes (and by :func:`~.hierarchical.lf_train`).
    local : iterable of str
        Names of local variables (site axis at dim 1), parameters and observations alike.
    labeller : Labeller, optional
        Fixes the variable labels (built from the first appended simulations otherwise).
    model_kwargs : dict, optional
        Passed to :class:`~.model.TokenTransformerVelocity`.
    sigma_min : float, default 1e-4
        Path width at t = 1 (FMPE, Wildberger et al. 2023, use 1e-4).
    time_alpha : float, default 0.0
        Time prior ``p(t) ∝ t^alpha`` (FMPE's Eq. 9 family); 0 = uniform.
    seed : int
        Seeds the network initialisation and training.
    """

    def __init__(self, prior: Prior | None = None, *, local: Iterable[str] = (),
                 labeller: Labeller | None = None, model_kwargs: dict | None = None,
                 sigma_min: float = 1e-4, time_alpha: float = 0.0, seed: int = 0) -> None:
        self.prior = prior
        self.local = frozenset(local)
        self.labeller = labeller
        self.model_kwargs = dict(model_kwargs or {})
        self.path = CondOTPath(sigma_min)
        self.time_alpha = float(time_alpha)
        self.seed = int(seed)
        self._sims: list[_Sim] = []
        self.model: TokenTransformerVelocity | None = None
        self.losses: list[float] = []
        self._theta_names: list[str] | None = None
        self._x_names: list[str] | None = None
        self._events: dict[str, tuple[int, ...]] = {}
        self._stats: dict[str, tuple[float, float]] = {}
        self.max_sites: int | None = None

    # ------------------------------------------------------------------ data
    def _check_shapes(self, d: Mapping[str, Tensor], names: list[str], what: str) -> int:
        if sorted(d) != sorted(names):
            raise ValueError(f"{what} has variables {sorted(d)}, expected {sorted(names)}")
        sites = set()
        for k, v in d.items():
            ev = tuple(v.shape[2:] if k in self.local else v.shape[1:])
            if k in self._events and self._events[k] != ev:
                raise ValueError(f"{what}[{k!r}] has event shape {ev}, expected {self._events[k]}")
            if k in self.local:
                sites.add(int(v.shape[1]))
        if len(sites) > 1:
            raise ValueError(f"{what}: local variables have different numbers of sites {sorted(sites)}"
                             "; pad them and pass masks")
        return sites.pop() if sites else 0

    def append_simulations(self, theta: Mapping[str, Tensor], x: Mapping[str, Tensor], *,
                           masks: Mapping[str, Tensor] | None = None,
                           func_inputs: Mapping[str, Tensor] | None = None) -> TFMPE:
        """Store simulated pairs (``theta[k][i]``, ``x[k][i]``); returns ``self`` (sbi style).

        Raises on non-float or NaN/inf values, unequal batch sizes, ragged sites without masks,
        shapes that disagree with the prior or with earlier appended simulations.
        """
        theta, x = _as_dict(theta, "theta"), _as_dict(x, "x")
        overlap = set(theta) & set(x)
        if overlap:
            raise ValueError(f"names {sorted(overlap)} appear in both theta and x")
        # validate values through the tokeniser (dtype, NaN, batch sizes, ragged sites)
        tokenize({**x, **theta}, list(x), local=self.local & (set(theta) | set(x)), masks=masks,
                 func_inputs=func_inputs)
        if self._theta_names is None:
            self._theta_names, self._x_names = list(theta), list(x)
            if self.prior is not None:
                draw = self.prior(2, 1)
                if sorted(draw) != sorted(theta):
                    raise ValueError(f"theta has variables {sorted(theta)} but the prior draws "
                                     f"{sorted(draw)}")
                for k, v in draw.items():
                    want = tuple(v.shape[2:] if k in self.local else v.shape[1:])
                    got = tuple(theta[k].shape[2:] if k in self.local else theta[k].shape[1:])
                    if want != got:
                        raise ValueError(f"theta[{k!r}] has event shape {got} but the prior's is "
                                         f"{want}")
            if self.labeller is None:
                self.labeller = Labeller([*x, *theta])
        m = self._check_shapes(theta, self._theta_names, "theta")
        m2 = self._check_shapes(x, self._x_names, "x")
        if m and m2 and m != m2:
            raise ValueError(f"theta has {m} sites but x has {m2}")
        for k, v in {**theta, **x}.items():
            self._events.setdefault(k, tuple(v.shape[2:] if k in self.local else v.shape[1:]))
        n = {v.shape[0] for v in (*theta.values(), *x.values())}
        if len(n) != 1:
            raise ValueError(f"theta and x have different batch sizes {sorted(n)}")
        allm = dict(masks or {})
        self._sims.append(_Sim({k: v.detach() for k, v in theta.items()},
                               {k: v.detach() for k, v in x.items()},
                               allm, dict(func_inputs or {}), max(m, m2)))
        return self

    @property
    def n_simulations(self) -> int:
        return sum(next(iter(s.theta.values())).shape[0] for s in self._sims)

    def _fit_stats(self) -> None:
        for name in [*self._x_names, *self._theta_names]:
            vals = []
            for s in self._sims:
                v = (s.theta | s.x)[name]
                mk = s.masks.get(name)
                vals.append(v[mk] if mk is not None else v.reshape(-1))
            allv = torch.cat(vals).double()
            mean = float(allv.mean())
            std = float(allv.std()) if allv.numel() > 1 else 1.0
            self._stats[name] = (mean, std if math.isfinite(std) and std > 1e-8 else 1.0)
        # functional inputs (e.g. observation times) are z-scored the same way, so that the
        # Gaussian-Fourier features see them on a unit scale whatever their units
        self._func_stats = {}
        for name in {k for s in self._sims for k in s.func}:
            vals = []
            for s in self._sims:
                if name in s.func:
                    mk = s.masks.get(name)
                    f = s.func[name]
                    vals.append(f[mk] if mk is not None else f.reshape(-1))
            allf = torch.cat(vals).double()
            std = float(allf.std()) if allf.numel() > 1 else 1.0
            self._func_stats[name] = (float(allf.mean()),
                                      std if math.isfinite(std) and std > 1e-8 else 1.0)

    def _z(self, d: Mapping[str, Tensor]) -> dict[str, Tensor]:
        return {k: (v - self._stats[k][0]) / self._stats[k][1] for k, v in d.items()}

    def _unz(self, d: Mapping[str, Tensor]) -> dict[str, Tensor]:
        return {k: v * self._stats[k][1] + self._stats[k][0] for k, v in d.items()}

    def _tokens(self, theta, x, masks, func, n_sites) -> tuple[Tokens, object]:
        both = {**x, **theta}
        local = self.local & set(both)
        fstats = getattr(self, "_func_stats", {})
        func = {k: (f - fstats[k][0]) / fstats[k][1] if k in fstats else f
                for k, f in func.items()}
        both, mk, fi = pad_sites(both, local, n_sites, masks, func)
        both = {k: torch.where(mk[k], v, torch.zeros((), dtype=v.dtype)) for k, v in
                self._z(both).items()}
        return tokenize(both, list(x), local=local, masks=mk, func_inputs=fi or None,
                        labeller=self.labeller)

    # ------------------------------------------------------------------ training
    def train(self, steps: int = 2000, batch_size: int = 256, lr: float = 1e-3, ema: float = 0.999,
              weight_decay: float = 0.0) -> TFMPE:
        """Train the velocity field with the CFM loss (flow core ``train_flow``) for ``steps``
        AdamW steps with cosine decay and an EMA copy (used for sampling)."""
        if not self._sims:
            raise RuntimeError("append_simulations first")
        self._fit_stats()
        n_sites = max(s.n_sites for s in self._sims)
        parts = [self._tokens(s.theta, s.x, s.masks, s.func, n_sites)[0] for s in self._sims]
        self._train_sites = n_sites
        self.max_sites = n_sites  # the training range of M (largest number of sites seen)
        data = _concat(parts)
        torch.manual_seed(self.seed)
        self.model = TokenTransformerVelocity(len(self.labeller), **self.model_kwargs)
        n = data.batch_size
        alpha = self.time_alpha

        def sampler(bs: int, gen: torch.Generator):
            idx = torch.randint(0, n, (min(bs, n),), generator=gen)
            b = data.select(idx)
            return b.targets, b

        def loss_fn(model, x1, cond, generator=None):
            t = sample_t(x1.shape[0], "power", alpha=alpha, generator=generator, dtype=x1.dtype)
            return cfm_loss(model, x1, cond, path=self.path, t=t, generator=generator,
                            mask=cond.target_present)

        res = train_flow(self.model, sampler, steps=steps, batch_size=batch_size, lr=lr,
                         loss_fn=loss_fn, ema=ema, weight_decay=weight_decay, seed=self.seed)
        self.model = res.ema_model
        self.losses = res.losses
        return self

    # ------------------------------------------------------------------ inference
    def _obs_batch(self, x_o: Mapping[str, Tensor]) -> tuple[dict[str, Tensor], int]:
        if self.model is None:
            raise RuntimeError("train() first")
        x_o = _as_dict(x_o, "x_o")
        if sorted(x_o) != sorted(self._x_names):
            raise ValueError(f"x_o has variables {sorted(x_o)}, expected {sorted(self._x_names)}")
        out = {}
        for k, v in x_o.items():
            if not isinstance(v, Tensor) or not torch.is_floating_point(v):
                raise TypeError(f"x_o[{k!r}] must be a floating-point tensor")
            ev = self._events[k]
            base = len(ev) + (1 if k in self.local else 0)
            if v.dim() == base:
                v = v[None]
            elif v.dim() != base + 1:
                raise ValueError(f"x_o[{k!r}] has shape {tuple(v.shape)}; expected "
                                 f"{'(M, ' if k in self.local else '('}{ev}) with an optional batch axis")
            if tuple(v.shape[-len(ev):] if ev else ()) != ev:
                raise ValueError(f"x_o[{k!r}] has event shape {tuple(v.shape)}, expected {ev}")
            if k in self.local and v.shape[1] == 0:
                raise ValueError(f"x_o[{k!r}] has zero sites; a hierarchical observation needs "
                                 "at least one site")
            if not bool(torch.isfinite(v).all()):
                raise ValueError(f"x_o[{k!r}] contains NaN or inf values")
            out[k] = v
        bs = {v.shape[0] for v in out.values()}
        if len(bs) != 1:
            raise ValueError(f"x_o variables have different batch sizes {sorted(bs)}")
        return out, bs.pop()

    def _template(self, k: int, n_sites: int) -> dict[str, Tensor]:
        return {name: torch.zeros((k, n_sites, *self._events[name]) if name in self.local
                                  else (k, *self._events[name])) for name in self._theta_names}

    def prepare(self, x_o, masks=None, func_inputs=None):
        """Tokenise and encode a batch of observations: ``(Prepared, decoder, target_present, K)``."""
        x_o, k = self._obs_batch(x_o)
        sites = {int(v.shape[1]) for n, v in x_o.items() if n in self.local}
        n_sites = sites.pop() if sites else 0
        if self.max_sites is not None and n_sites > self.max_sites:
            warnings.warn(f"the observation has {n_sites} sites but the posterior was trained on "
                          f"at most max_sites={self.max_sites}: outside the training range its "
                          "calibration is not checked (extrapolation)", ExtrapolationWarning,
                          stacklevel=3)
        if masks is not None:
            masks = {n: (m[None] if m.dim() == x_o[n].dim() - 1 else m) for n, m in masks.items()}
        if func_inputs is not None:
            func_inputs = {n: (f[None] if f.dim() == x_o[n].dim() - 1 else f)
                           for n, f in func_inputs.items()}
        # target masks: a site is absent when all of its observation elements are absent
        tmasks = dict(masks or {})
        site_present = None
        for n in x_o:
            if n in self.local and masks is not None and n in masks:
                mk = masks[n].reshape(k, n_sites, -1).any(-1)
                site_present = mk if site_present is None else site_present | mk
        theta0 = self._template(k, n_sites)
        if site_present is not None:
            for n, v in theta0.items():
                if n in self.local:
                    tmasks[n] = site_present.reshape(k, n_sites, *([1] * (v.dim() - 2))).expand(v.shape)
        tokens, dec = self._tokens(theta0, x_o, tmasks, func_inputs or {}, n_sites)
        with torch.no_grad():
            prep = self.model.prepare(tokens)
        return prep, dec, tokens.target_present, k

    @torch.inference_mode()
    def sample_batched(self, n: int, x: Mapping[str, Tensor], *, masks=None, func_inputs=None,
                       steps: int = 20, method: str = "midpoint",
                       generator: torch.Generator | None = None, fast: bool = True
                       ) -> dict[str, Tensor]:
        """``n`` posterior draws for each of ``K`` observations: ``{name: (n, K, ...)}``.

        One batched ODE solve for all draws. ``fast=True`` evaluates the velocity with
        :class:`~.model.FastVelocity` (the same function as the network's ``forward``, rewritten
        for inference: folded LayerNorm affines and cross-attention, chunks that stay in cache;
        draws equal ``fast=False``'s to float rounding for the same noise)."""
        if not isinstance(n, int) or n <= 0:
            raise ValueError(f"n must be a positive int, got {n!r}")
        prep, dec, present, k = self.prepare(x, masks, func_inputs)
        rep = prep.repeat(n)
        z = torch.randn(k * n, present.shape[1], generator=generator) * \
            present.repeat_interleave(n, 0).to(torch.float32)
        if fast and not self.model.training:
            out = integrate(FastVelocity(self.model, rep), z, steps=steps, method=method)
        else:
            out = integrate(self.model, z, steps=steps, method=method, cond=rep)
        d = self._unz(dec(out))
        return {name: v.reshape(k, n, *v.shape[1:]).transpose(0, 1) for name, v in d.items()}

    def sample(self, n: int, x_o: Mapping[str, Tensor], **kwargs) -> dict[str, Tensor]:
        """``n`` posterior draws given one observation: ``{name: (n, ...)}`` (sbi's
        ``posterior.sample((n,), x=x_o)``)."""
        _, k = self._obs_batch(x_o)
        if k != 1:
            raise ValueError(f"sample takes one observation, got a batch of {k}; use sample_batched")
        return {name: v[:, 0] for name, v in self.sample_batched(n, x_o, **kwargs).items()}

    def log_prob(self, theta: Mapping[str, Tensor], x_o: Mapping[str, Tensor], *, steps: int = 50,
                 method: str = "rk4", hutchinson: int | None = None,
                 generator: torch.Generator | None = None) -> Tensor:
        """Posterior log-density ``log q(theta | x_o)`` for a batch of ``theta`` (B, ...), shape (B,).

        Integrates the CNF backwards with the exact divergence (``hutchinson=None``) or a
        Hutchinson estimate, then adds the Jacobian of the standardisation. No padding allowed.
        """
        theta = _as_dict(theta, "theta")
        if sorted(theta) != sorted(self._theta_names):
            raise ValueError(f"theta has variables {sorted(theta)}, expected {sorted(self._theta_names)}")
        prep, dec, present, k = self.prepare(x_o)
        b = {v.shape[0] for v in theta.values()}
        if len(b) != 1:
            raise ValueError(f"theta variables have different batch sizes {sorted(b)}")
        b = b.pop()
        if k not in (1, b):
            raise ValueError(f"x_o has batch {k}; expected 1 or theta's batch {b}")
        sites = {int(v.shape[1]) for n, v in theta.items() if n in self.local}
        x_sites = int(present.shape[1])
        theta = {n: theta[n] for n in self._theta_names}
        tok, _ = tokenize(self._z(theta), [], local=self.local & set(theta), labeller=self.labeller)
        if tok.n_tokens != x_sites:
            raise ValueError(f"theta has {tok.n_tokens} scalar elements but x_o implies {x_sites} "
                             f"(sites {sorted(sites)})")
        prep = prep.repeat(b) if k == 1 else prep
        lp = log_prob(self.model, tok.data.to(torch.float32), cond=prep, steps=steps, method=method,
                      hutchinson=hutchinson, generator=generator)
        jac = 0.0
        for name, v in theta.items():
            jac += math.log(self._stats[name][1]) * v[0].numel()
        return lp - jac


def _concat(parts: list[Tokens]) -> Tokens:
    first = parts[0]
    for p in parts[1:]:
        if not (torch.equal(p.labels, first.labels) and torch.equal(p.site, first.site)
                and p.n_cond == first.n_cond):
            raise ValueError("cannot combine token batches with different structures")
    has_f = any(p.func is not None for p in parts)

    def cat(attr, fill):
        if not has_f:
            return None
        return torch.cat([getattr(p, attr) if getattr(p, attr) is not None else
                          torch.full_like(p.present, fill, dtype=torch.bool if attr == "func_present"
                                          else p.data.dtype) for p in parts])

    return Tokens(data=torch.cat([p.data for p in parts]), labels=first.labels,
                  position=first.position, site=first.site,
                  present=torch.cat([p.present for p in parts]), n_cond=first.n_cond,
                  func=cat("func", 0), func_present=cat("func_present", False))
