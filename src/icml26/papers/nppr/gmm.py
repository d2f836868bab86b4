"""The GMM perturbation model of NPPR (arXiv 2511.17380, Sec. "NPPR estimator").

A K-component Gaussian mixture lives in a latent space of dimension ``D``; its parameters are
free (independent perturbations), or come from heads on the label, on frozen classifier features
of the input, or on both. A latent sample is decoded to input space (bicubic up-sampling for
images) and squashed into the budget ball: ``delta = eps * tanh(u)`` for L-inf and
``delta = eps * u / ||u||_2`` for L2.

Defaults follow the authors' code (squarewang2077/nppr, ``src/gmm4pr.py`` and
``configs/train_gmm_cfg.py``) as summarised in the project brief; each is cited where it is set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

CONDITIONS = ("none", "y", "x", "xy")
NORMS = ("linf", "l2")


def _check_norm(norm: str) -> str:
    if not isinstance(norm, str) or norm.lower() not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    return norm.lower()


def _check_eps(eps: float) -> float:
    if isinstance(eps, bool) or not isinstance(eps, int | float):
        raise TypeError(f"eps must be a positive float, got {type(eps).__name__}")
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be a finite number > 0, got {eps!r}")
    return float(eps)


def project_to_ball(u: torch.Tensor, eps: float, norm: str = "linf",
                    event_ndim: int | None = None) -> torch.Tensor:
    """Map an unconstrained tensor into the budget ball, differentiably.

    L-inf: ``delta = eps * tanh(u)`` (inside the open ball); L2: ``delta = eps * u / ||u||_2``
    (on the sphere), the two projections of the authors' ``GMM4PR._project_to_budget``.

    Parameters
    ----------
    u : Tensor, shape (..., *event_shape)
        Decoded perturbation directions.
    eps : float
        Budget radius (> 0).
    norm : {"linf", "l2"}
        Which ball.
    event_ndim : int, optional
        How many trailing dimensions form one perturbation (for the L2 norm); default: all
        but the first.

    Returns
    -------
    Tensor, same shape as ``u``, with ``||delta||_p <= eps`` per perturbation.

    Examples
    --------
    >>> import torch
    >>> d = project_to_ball(torch.randn(4, 3) * 10, 0.1)
    >>> bool(d.abs().max() <= 0.1)
    True
    """
    eps = _check_eps(eps)
    norm = _check_norm(norm)
    if norm == "linf":
        return eps * torch.tanh(u)
    k = u.ndim - 1 if event_ndim is None else int(event_ndim)
    if not 1 <= k <= u.ndim:
        raise ValueError(f"event_ndim must be in [1, {u.ndim}], got {event_ndim}")
    dims = tuple(range(u.ndim - k, u.ndim))
    n = u.norm(p=2, dim=dims, keepdim=True).clamp_min(1e-12)
    return eps * u / n


class BicubicDecoder(nn.Module):
    """Latent vector -> image-shaped perturbation by bicubic up-sampling.

    ``Linear(D -> C*s*s)`` (trainable variant) -> reshape ``(C, s, s)`` -> bicubic interpolation
    to ``(H, W)``; ``s = 4`` for images up to 32 px and 7 up to 64 px (authors'
    ``build_decoder_from_flag``, "bicubic_trainable"). The parameter-free variant needs
    ``D == C*s*s``.

    Parameters
    ----------
    latent_dim : int
        Latent dimension ``D``.
    out_shape : tuple of int
        ``(C, H, W)``.
    trainable : bool
        With the Linear layer (default, as in the paper's default decoder).
    base_size : int, optional
        ``s``; default by image size as above.
    """

    def __init__(self, latent_dim: int, out_shape: tuple[int, int, int], trainable: bool = True,
                 base_size: int | None = None):
        super().__init__()
        if len(out_shape) != 3:
            raise ValueError(f"BicubicDecoder needs out_shape (C, H, W), got {out_shape}")
        c, h, w = (int(v) for v in out_shape)
        s = base_size if base_size is not None else (4 if max(h, w) <= 32 else 7)
        self.out_shape = (c, h, w)
        self.base = (c, s, s)
        if trainable:
            self.linear: nn.Module = nn.Linear(latent_dim, c * s * s)
        else:
            if latent_dim != c * s * s:
                raise ValueError(f"parameter-free bicubic decoder needs latent_dim == {c * s * s}")
            self.linear = nn.Identity()

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """``z`` (..., D) -> (..., C, H, W)."""
        lead = z.shape[:-1]
        v = self.linear(z.reshape(-1, z.shape[-1])).view(-1, *self.base)
        v = F.interpolate(v, size=self.out_shape[1:], mode="bicubic", align_corners=False)
        return v.view(*lead, *self.out_shape)


class LinearDecoder(nn.Module):
    """Latent vector -> flat perturbation (for non-image inputs such as 2-D points).

    Not in the paper (its inputs are images); our choice for the two-moons sanity set.
    """

    def __init__(self, latent_dim: int, out_shape: tuple[int, ...]):
        super().__init__()
        self.out_shape = tuple(int(v) for v in out_shape)
        self.linear = nn.Linear(latent_dim, math.prod(self.out_shape))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.linear(z).view(*z.shape[:-1], *self.out_shape)


def make_decoder(latent_dim: int, input_shape: tuple[int, ...]) -> nn.Module:
    """The default decoder for an input shape: bicubic for ``(C, H, W)``, linear otherwise."""
    if len(input_shape) == 3:
        return BicubicDecoder(latent_dim, input_shape)  # type: ignore[arg-type]
    return LinearDecoder(latent_dim, input_shape)


@dataclass
class MixtureParams:
    """Per-input mixture parameters: ``pi_logits`` (B, K), ``mu`` (B, K, D), ``log_std`` (B, K, D)."""

    pi_logits: torch.Tensor
    mu: torch.Tensor
    log_std: torch.Tensor


class GMMPerturbation(nn.Module):
    """Latent GMM whose parameters depend on nothing, the label, the input or both.

    Conditioning (paper: four dependency structures; authors' ``GMM4PR.set_condition``):

    - ``"none"``: free ``pi`` (K), ``mu`` (K, D), ``log_std`` (K, D): one distribution for all
      inputs (independent perturbations).
    - ``"y"``: ``pi`` from a label head, ``mu`` and ``log_std`` free.
    - ``"x"``: ``pi``, ``mu``, ``log_std`` from heads on a shared trunk over input features.
    - ``"xy"``: ``pi`` from the label embedding, ``mu``/``log_std`` from the trunk (joint).

    Trunk: ``Linear(feat_dim, hidden_dim) -> BatchNorm1d -> ReLU``; heads are single Linear
    layers; label embedding ``nn.Embedding(C, y_emb_dim)``, L2-normalised. ``log_std`` is
    clamped to ``logstd_bounds`` (authors: (-3, 1)). Temperatures (attributes ``T_pi``,
    ``T_mu``, ``T_sigma``, ``T_shared``) multiply the pi-logits, the means, sigma and the trunk
    output; they are annealed during fitting and are 1 at evaluation.

    Parameters
    ----------
    num_classes : int
        Number of classes ``C`` (for ``y``/``xy``).
    feat_dim : int
        Feature dimension of the frozen extractor (for ``x``/``xy``; ignored otherwise).
    latent_dim : int
        ``D`` (authors' default 128).
    n_components : int
        ``K`` (authors' default 3).
    cond : {"none", "y", "x", "xy"}
        Dependency structure (authors' default "xy").
    hidden_dim : int
        Trunk width (authors' default 512).
    y_emb_dim : int
        Label-embedding size (authors' default 128).
    logstd_bounds : (float, float)
        Clamp of the log standard deviation (authors' (-3, 1)).
    """

    def __init__(self, num_classes: int, feat_dim: int = 0, latent_dim: int = 128,
                 n_components: int = 3, cond: str = "xy", hidden_dim: int = 512,
                 y_emb_dim: int = 128, logstd_bounds: tuple[float, float] = (-3.0, 1.0)):
        super().__init__()
        cond = "none" if cond is None else cond
        if cond not in CONDITIONS:
            raise ValueError(f"cond must be one of {CONDITIONS}, got {cond!r}")
        for name, v in (("n_components", n_components), ("latent_dim", latent_dim)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if cond in ("x", "xy") and (not isinstance(feat_dim, int) or feat_dim < 1):
            raise ValueError(f"cond={cond!r} needs feat_dim >= 1, got {feat_dim!r}")
        if cond in ("y", "xy") and (not isinstance(num_classes, int) or num_classes < 2):
            raise ValueError(f"cond={cond!r} needs num_classes >= 2, got {num_classes!r}")
        lo, hi = logstd_bounds
        if not lo < hi:
            raise ValueError(f"logstd_bounds must be (low, high) with low < high, got {logstd_bounds}")
        self.cond = cond
        self.K = n_components
        self.D = latent_dim
        self.num_classes = num_classes
        self.logstd_bounds = (float(lo), float(hi))
        self.T_pi = self.T_mu = self.T_sigma = self.T_shared = 1.0
        K, D = n_components, latent_dim
        if cond in ("x", "xy"):
            self.trunk = nn.Sequential(nn.Linear(feat_dim, hidden_dim), nn.BatchNorm1d(hidden_dim),
                                       nn.ReLU())
            self.mu_head = nn.Linear(hidden_dim, K * D)
            self.logstd_head = nn.Linear(hidden_dim, K * D)
        else:
            # Free means. Brief (configs/train_gmm_cfg.py): uniform in [-1, 1]; the stored
            # gmm4pr.py starts at zero, which leaves the K components symmetric, so we follow
            # the config.
            self.mu = nn.Parameter(torch.rand(K, D) * 2.0 - 1.0)
            self.log_std = nn.Parameter(torch.zeros(K, D))
        if cond in ("y", "xy"):
            self.y_emb = nn.Embedding(num_classes, y_emb_dim)
            self.pi_head = nn.Linear(y_emb_dim, K)
        elif cond == "x":
            self.pi_head = nn.Linear(hidden_dim, K)
        else:
            self.pi = nn.Parameter(torch.randn(K) * 0.01)

    def set_temperatures(self, T_pi: float = 1.0, T_mu: float = 1.0, T_sigma: float = 1.0,
                         T_shared: float = 1.0) -> None:
        """Set the four temperatures (all 1 = the plain model)."""
        self.T_pi, self.T_mu, self.T_sigma, self.T_shared = T_pi, T_mu, T_sigma, T_shared

    def forward(self, feats: torch.Tensor | None = None, y: torch.Tensor | None = None,
                batch_size: int | None = None) -> MixtureParams:
        """Mixture parameters for a batch.

        Parameters
        ----------
        feats : Tensor, shape (B, feat_dim), optional
            Frozen input features (needed for ``x``/``xy``).
        y : LongTensor, shape (B,), optional
            Labels (needed for ``y``/``xy``).
        batch_size : int, optional
            ``B`` when neither ``feats`` nor ``y`` is given.

        Returns
        -------
        MixtureParams with ``pi_logits`` (B, K), ``mu`` (B, K, D), ``log_std`` (B, K, D).
        """
        B = next((t.shape[0] for t in (feats, y) if t is not None), batch_size)
        if B is None:
            raise ValueError("give feats, y or batch_size")
        K, D = self.K, self.D
        if self.cond in ("x", "xy"):
            if feats is None:
                raise ValueError(f"cond={self.cond!r} needs input features")
            h = self.trunk(feats.reshape(B, -1)) * self.T_shared
            mu = self.mu_head(h).view(B, K, D)
            log_std = self.logstd_head(h).view(B, K, D)
        else:
            mu = self.mu.unsqueeze(0).expand(B, K, D)
            log_std = self.log_std.unsqueeze(0).expand(B, K, D)
        if self.cond in ("y", "xy"):
            if y is None:
                raise ValueError(f"cond={self.cond!r} needs labels y")
            pi_logits = self.pi_head(F.normalize(self.y_emb(y), dim=-1))
        elif self.cond == "x":
            pi_logits = self.pi_head(h)
        else:
            pi_logits = self.pi.unsqueeze(0).expand(B, K)
        lo, hi = self.logstd_bounds
        log_std = log_std.clamp(lo, hi) + math.log(self.T_sigma)
        return MixtureParams(pi_logits * self.T_pi, mu * self.T_mu, log_std)

    @staticmethod
    def rsample(params: MixtureParams, n: int, tau: float = 1.0,
                generator: torch.Generator | None = None) -> torch.Tensor:
        """Relaxed reparameterised mixture samples (training).

        ``w = softmax((log pi + g) / tau)`` with ``g ~ Gumbel(0, 1)^K`` and
        ``z = sum_k w_k (mu_k + sigma_k * xi_k)``, ``xi_k ~ N(0, I)``.

        Returns
        -------
        Tensor, shape (n, B, D).
        """
        B, K, D = params.mu.shape
        dev, dt = params.mu.device, params.mu.dtype
        u = torch.rand(n, B, K, generator=generator, device=dev, dtype=dt)
        g = -torch.log((-torch.log(u.clamp_min(1e-20))).clamp_min(1e-20))
        w = torch.softmax((F.log_softmax(params.pi_logits, -1).unsqueeze(0) + g) / tau, dim=-1)
        xi = torch.randn(n, B, K, D, generator=generator, device=dev, dtype=dt)
        comp = params.mu.unsqueeze(0) + params.log_std.exp().unsqueeze(0) * xi
        return (w.unsqueeze(-1) * comp).sum(dim=2)

    @staticmethod
    def sample(params: MixtureParams, n: int,
               generator: torch.Generator | None = None) -> torch.Tensor:
        """Exact (hard) mixture samples: a categorical component, then its Gaussian.

        Returns
        -------
        Tensor, shape (n, B, D).
        """
        B, K, D = params.mu.shape
        dev, dt = params.mu.device, params.mu.dtype
        probs = torch.softmax(params.pi_logits.detach(), dim=-1)  # (B, K)
        k = torch.multinomial(probs, n, replacement=True, generator=generator).T  # (n, B)
        idx = k.unsqueeze(-1).unsqueeze(-1).expand(n, B, 1, D)
        mu = params.mu.detach().unsqueeze(0).expand(n, B, K, D).gather(2, idx).squeeze(2)
        sd = params.log_std.detach().exp().unsqueeze(0).expand(n, B, K, D).gather(2, idx).squeeze(2)
        return mu + sd * torch.randn(n, B, D, generator=generator, device=dev, dtype=dt)
