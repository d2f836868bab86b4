"""The NPPR estimator: fit a GMM perturbation distribution that minimises PR, then evaluate it.

NPPR (arXiv 2511.17380) is the most pessimistic probabilistic robustness over an admissible family
of perturbation distributions supported in the budget ball,

    NPPR = inf_{P in family} E_{(x, y)} P_{delta ~ P(. | .)}[f(x + delta) = y],

and the family is set by the dependency structure (none / label / input / joint). The estimator
trains one member of the family, a latent GMM decoded to input space (:mod:`.gmm`), end-to-end
through the frozen classifier with the softplus (CW-style) margin loss

    L = mean_{s, i} softplus(z_{y_i}(x_i + delta_{s,i}) - max_{j != y_i} z_j(x_i + delta_{s,i}) + kappa),

and reports the Monte-Carlo PR under it with exact (hard) mixture samples on held-out inputs. The
result is the PR of one feasible distribution, hence an upper bound on the family's NPPR, never a
certified bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator
from torch import nn

from .gmm import (
    CONDITIONS,
    GMMPerturbation,
    _check_eps,
    _check_norm,
    make_decoder,
    project_to_ball,
)
from .robustness import (
    RobustnessResult,
    _check_clip,
    _check_n,
    as_inputs,
    check_classifier,
    check_in_range,
    monte_carlo_pr,
    select_inputs,
    summarise,
)


def softplus_margin_loss(logits: torch.Tensor, y: torch.Tensor, kappa: float = 1.0) -> torch.Tensor:
    """The NPPR training loss (authors' ``pr_loss``, ``loss_variant="cw"``).

    Parameters
    ----------
    logits : Tensor, shape (S, B, C)
        Logits of the perturbed inputs (S samples per input).
    y : LongTensor, shape (B,)
    kappa : float
        Margin (authors' config: 1.0).

    Returns
    -------
    Scalar tensor ``mean softplus(z_y - max_{j != y} z_j + kappa)`` (logits max-shifted first).
    """
    if isinstance(kappa, bool) or not isinstance(kappa, int | float) or not math.isfinite(kappa):
        raise ValueError(f"kappa must be a finite number, got {kappa!r}")
    logits = logits - logits.max(dim=-1, keepdim=True).values
    yy = y.unsqueeze(0).expand(logits.shape[0], -1)
    zy = logits.gather(-1, yy.unsqueeze(-1)).squeeze(-1)
    other = logits.masked_fill(F.one_hot(yy, logits.shape[-1]).bool(), float("-inf")).amax(-1)
    return F.softplus(zy - other + kappa).mean()


def _linear(start: float, end: float, frac: float) -> float:
    return start + (end - start) * min(max(frac, 0.0), 1.0)


class NPPREstimator(BaseEstimator):
    """Non-parametric probabilistic robustness with a learned GMM perturbation distribution.

    scikit-learn conventions: ``__init__`` only stores hyperparameters; ``fit`` learns the
    distribution on training inputs and returns ``self``; fitted attributes end in ``_``.

    Parameters
    ----------
    classifier : nn.Module
        Frozen model mapping inputs (B, *input_shape) to logits (B, C). It is put in eval mode;
        its parameters are not updated.
    feature_extractor : callable, optional
        Maps inputs to features (B, F) for ``cond`` in {"x", "xy"} (the paper uses the
        classifier's own backbone, frozen). Called without gradient.
    eps : float
        Budget radius (paper main setting L-inf 8/255 on CIFAR; our digits default 0.1).
    norm : {"linf", "l2"}
    n_components : int
        ``K`` (authors' default 3).
    latent_dim : int
        ``D`` (authors' default 128).
    cond : {"none", "y", "x", "xy"}
        Dependency structure (authors' default "xy").
    kappa : float
        Margin of the softplus loss (authors' default 1.0).
    n_train_samples : int
        Relaxed samples per input per step (authors' default 32).
    epochs : int
        Training epochs (authors' default 50). ``0`` keeps the initial (untrained) GMM.
    lr : float
        Adam learning rate (authors' default 5e-4, weight decay 0).
    batch_size : int
        Authors' default 256; at least 2 (the trunk's BatchNorm needs two rows per batch, so a
        batch of one would leave the GMM untrained).
    gumbel_tau : (float, float)
        Gumbel-softmax temperature, annealed linearly over the epochs (authors': 1.0 -> 0.1).
    anneal_temperatures : bool
        Anneal T_pi 3->1, T_mu 3->1, T_sigma 1.5->1, T_shared 1.5->1 linearly over
        ``warmup_epochs`` (authors' schedule; their warm-up is 50 epochs = all epochs).
    warmup_epochs : int, optional
        Default: ``epochs``.
    grad_clip : float
        Gradient-norm clip (authors' default 5.0).
    hidden_dim : int
        Trunk width (authors' default 512).
    y_emb_dim : int
        Label-embedding size (authors' default 128).
    clip_range : (float, float) or None
        Data range: ``X`` must lie in it (0-255 images with the default raise a ValueError) and
        perturbed inputs are clipped to it (authors clip in the baseline generator only; we clip
        for every method, so all arms see the same valid inputs).
    seed : int
        Seeds the GMM initialisation, the batch order and all sampling.

    Attributes
    ----------
    gmm_ : GMMPerturbation
    decoder_ : nn.Module
    num_classes_ : int
    input_shape_ : tuple
    loss_history_ : list of float
        Mean training loss per epoch.
    n_fit_inputs_ : int
        Correctly classified training inputs used.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> clf = nn.Sequential(nn.Flatten(), nn.Linear(4, 2))
    >>> X, y = torch.rand(32, 4), torch.randint(0, 2, (32,))
    >>> est = NPPREstimator(clf, eps=0.1, cond="none", latent_dim=4, epochs=1).fit(X, y)
    >>> bool(est.perturbations(X[:3], y[:3], n=5).abs().max() <= 0.1)
    True
    """

    def __init__(self, classifier: nn.Module, feature_extractor: Callable | None = None,
                 eps: float = 8 / 255, norm: str = "linf", n_components: int = 3,
                 latent_dim: int = 128, cond: str = "xy", kappa: float = 1.0,
                 n_train_samples: int = 32, epochs: int = 50, lr: float = 5e-4,
                 batch_size: int = 256, gumbel_tau: tuple[float, float] = (1.0, 0.1),
                 anneal_temperatures: bool = True, warmup_epochs: int | None = None,
                 grad_clip: float = 5.0, hidden_dim: int = 512, y_emb_dim: int = 128,
                 clip_range: tuple[float, float] | None = (0.0, 1.0), seed: int = 0):
        self.classifier = classifier
        self.feature_extractor = feature_extractor
        self.eps = eps
        self.norm = norm
        self.n_components = n_components
        self.latent_dim = latent_dim
        self.cond = cond
        self.kappa = kappa
        self.n_train_samples = n_train_samples
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.gumbel_tau = gumbel_tau
        self.anneal_temperatures = anneal_temperatures
        self.warmup_epochs = warmup_epochs
        self.grad_clip = grad_clip
        self.hidden_dim = hidden_dim
        self.y_emb_dim = y_emb_dim
        self.clip_range = clip_range
        self.seed = seed

    # -------------------------------------------------------------------------------- helpers
    def _validate(self) -> None:
        _check_eps(self.eps)
        _check_norm(self.norm)
        cond = "none" if self.cond is None else self.cond
        if cond not in CONDITIONS:
            raise ValueError(f"cond must be one of {CONDITIONS}, got {self.cond!r}")
        if cond in ("x", "xy") and not callable(self.feature_extractor):
            raise ValueError(f"cond={cond!r} needs a feature_extractor")
        if isinstance(self.epochs, bool) or not isinstance(self.epochs, int) or self.epochs < 0:
            raise ValueError(f"epochs must be an int >= 0, got {self.epochs!r}")
        _check_n(self.n_train_samples, "n_train_samples")
        _check_n(self.batch_size, "batch_size")
        if self.batch_size < 2:
            raise ValueError("batch_size must be >= 2: the trunk's BatchNorm needs two rows, and "
                             f"batches of one are skipped (the GMM would stay untrained), got "
                             f"{self.batch_size}")
        if isinstance(self.kappa, bool) or not isinstance(self.kappa, int | float) or \
                not math.isfinite(self.kappa):
            raise ValueError(f"kappa must be a finite number, got {self.kappa!r}")
        if not (isinstance(self.grad_clip, int | float) and self.grad_clip > 0
                and math.isfinite(self.grad_clip)):
            raise ValueError(f"grad_clip must be a finite number > 0, got {self.grad_clip!r}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if len(self.gumbel_tau) != 2 or min(self.gumbel_tau) <= 0:
            raise ValueError(f"gumbel_tau must be (start, end) > 0, got {self.gumbel_tau}")
        _check_clip(self.clip_range)

    def _features(self, X: torch.Tensor) -> torch.Tensor | None:
        if self.feature_extractor is None or self._cond not in ("x", "xy"):
            return None
        with torch.no_grad():
            f = self.feature_extractor(X)
        if not isinstance(f, torch.Tensor) or f.shape[0] != X.shape[0]:
            raise ValueError("feature_extractor must return a tensor with one row per input")
        return f.reshape(X.shape[0], -1).float()

    def _check_fitted(self) -> None:
        if not hasattr(self, "gmm_"):
            raise RuntimeError("this NPPREstimator is not fitted yet; call fit(X, y) first")

    def _check_X(self, X, y) -> tuple[torch.Tensor, torch.Tensor]:
        X, y = as_inputs(X, y)
        check_in_range(X, self.clip_range)
        if tuple(X.shape[1:]) != self.input_shape_:
            raise ValueError(f"inputs must have shape (n, {self.input_shape_}), got {tuple(X.shape)}")
        if y.numel() and int(y.max()) >= self.num_classes_:
            raise ValueError(f"labels out of range: max {int(y.max())} with {self.num_classes_} classes")
        return X, y

    def _decode(self, z: torch.Tensor, eps: float | None = None) -> torch.Tensor:
        u = self.decoder_(z)
        return project_to_ball(u, self.eps if eps is None else eps, self.norm,
                               event_ndim=len(self.input_shape_))

    # ------------------------------------------------------------------------------------ fit
    def fit(self, X, y) -> NPPREstimator:
        """Learn the perturbation distribution on (training) inputs.

        Only correctly classified inputs are used (authors' pseudocode).

        Parameters
        ----------
        X : Tensor or ndarray, shape (N, *input_shape)
        y : array-like of int, shape (N,)

        Returns
        -------
        self
        """
        self._validate()
        self._cond = "none" if self.cond is None else self.cond
        X, y = as_inputs(X, y)
        check_in_range(X, self.clip_range)
        clf = self.classifier
        if isinstance(clf, nn.Module):
            clf.eval()
        C = check_classifier(clf, X, y)
        self.num_classes_ = C
        self.input_shape_ = tuple(X.shape[1:])
        idx = select_inputs(clf, X, y, only_correct=True)
        if idx.size < 2:
            raise ValueError("fewer than 2 correctly classified training inputs: nothing to fit")
        X, y = X[idx], y[idx]
        self.n_fit_inputs_ = int(idx.size)
        feats = self._features(X)
        feat_dim = int(feats.shape[1]) if feats is not None else 0
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(self.seed))
            self.gmm_ = GMMPerturbation(C, feat_dim, self.latent_dim, self.n_components,
                                        self._cond, self.hidden_dim, self.y_emb_dim)
            self.decoder_ = make_decoder(self.latent_dim, self.input_shape_)
        gen = torch.Generator().manual_seed(int(self.seed) + 1)
        params = list(self.gmm_.parameters()) + list(self.decoder_.parameters())
        self.loss_history_ = []
        if self.epochs > 0:
            self._train(clf, X, y, feats, params, gen)
        self.gmm_.set_temperatures()
        self.gmm_.eval()
        return self

    def _train(self, clf, X, y, feats, params, gen) -> None:
        frozen = []
        if isinstance(clf, nn.Module):
            frozen = [p for p in clf.parameters() if p.requires_grad]
            for p in frozen:
                p.requires_grad_(False)
        opt = torch.optim.Adam(params, lr=self.lr, weight_decay=0.0)
        E = self.epochs
        W = self.warmup_epochs if self.warmup_epochs is not None else E
        t0, t1 = self.gumbel_tau
        clip = self.clip_range
        try:
            self.gmm_.train()
            for e in range(E):
                tau = _linear(t0, t1, e / max(E - 1, 1))
                if self.anneal_temperatures:
                    f = e / max(W - 1, 1)
                    self.gmm_.set_temperatures(_linear(3.0, 1.0, f), _linear(3.0, 1.0, f),
                                               _linear(1.5, 1.0, f), _linear(1.5, 1.0, f))
                perm = torch.randperm(X.shape[0], generator=gen)
                total, count = 0.0, 0
                for i in range(0, X.shape[0], self.batch_size):
                    b = perm[i:i + self.batch_size]
                    if b.numel() < 2:  # BatchNorm needs two rows
                        continue
                    xb, yb = X[b], y[b]
                    p = self.gmm_(None if feats is None else feats[b], yb, batch_size=b.numel())
                    z = GMMPerturbation.rsample(p, self.n_train_samples, tau, gen)
                    xp = xb.unsqueeze(0) + self._decode(z)
                    if clip is not None:
                        xp = xp.clamp(*clip)
                    logits = clf(xp.flatten(0, 1)).view(self.n_train_samples, b.numel(), -1)
                    loss = softplus_margin_loss(logits, yb, self.kappa)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(params, self.grad_clip)
                    opt.step()
                    total += float(loss.detach()) * b.numel()
                    count += b.numel()
                self.loss_history_.append(total / max(count, 1))
        finally:
            for p in frozen:
                p.requires_grad_(True)

    # ------------------------------------------------------------------------------ sampling
    @torch.no_grad()
    def _sampler(self, generator: torch.Generator, eps: float | None = None):
        def sample(xb: torch.Tensor, yb: torch.Tensor, n: int) -> torch.Tensor:
            p = self.gmm_(self._features(xb), yb, batch_size=xb.shape[0])
            return self._decode(GMMPerturbation.sample(p, n, generator), eps)

        return sample

    @torch.no_grad()
    def perturbations(self, X, y, n: int = 100, seed: int | None = None) -> torch.Tensor:
        """Draw perturbations from the learned distribution (exact mixture sampling).

        Parameters
        ----------
        X : Tensor, shape (B, *input_shape)
        y : array-like of int, shape (B,)
        n : int
            Draws per input.
        seed : int, optional
            Default: the estimator's seed + 2.

        Returns
        -------
        Tensor, shape (n, B, *input_shape): effective perturbations ``clip(x + delta) - x``,
        inside the ball and keeping ``x + delta`` in ``clip_range``.
        """
        self._check_fitted()
        n = _check_n(n)
        X, y = self._check_X(X, y)
        gen = torch.Generator().manual_seed(int(self.seed if seed is None else seed) + 2)
        delta = self._sampler(gen)(X, y, n)
        if self.clip_range is not None:
            delta = (X.unsqueeze(0) + delta).clamp(*self.clip_range) - X.unsqueeze(0)
        return delta

    def evaluate(self, X, y, n: int = 100, only_correct: bool = True, seed: int | None = None,
                 eps: float | None = None) -> RobustnessResult:
        """NPPR estimate: Monte-Carlo PR under the learned distribution with hard samples.

        ``NPPR_hat = (1/|T|) sum_{(x,y) in T} (1/n) sum_s 1[f(clip(x + delta_s)) = y]``, with
        ``T`` the correctly classified inputs (``only_correct=True``, our default, as in the
        brief's pseudocode and PRBench) or every input (``only_correct=False``, as the authors'
        evaluator does: a misclassified input then counts with PR 0).

        Parameters
        ----------
        X, y : test inputs and labels
        n : int
            Draws per input (brief: 100; paper runs 32).
        only_correct : bool
            Restrict ``T`` to correctly classified inputs (default) or use every input.
        seed : int, optional
            Sampling seed (default: the estimator's seed + 3); a different seed gives a fresh
            re-estimate.
        eps : float, optional
            Evaluate the learned distribution rescaled to another budget (authors'
            ``--gmm_epsilon``); default: the training ``eps``.

        Returns
        -------
        RobustnessResult (``method`` = "nppr_<cond>").
        """
        self._check_fitted()
        n = _check_n(n)
        eps_eval = self.eps if eps is None else _check_eps(eps)
        X, y = self._check_X(X, y)
        if isinstance(self.classifier, nn.Module):
            self.classifier.eval()
        idx = select_inputs(self.classifier, X, y, only_correct)
        gen = torch.Generator().manual_seed(int(self.seed if seed is None else seed) + 3)
        per = monte_carlo_pr(self.classifier, X[idx], y[idx], self._sampler(gen, eps_eval), n,
                             self.clip_range)
        return summarise(per, n, np.asarray(idx), f"nppr_{self._cond}", eps_eval, self.norm)

    @torch.no_grad()
    def mixture_weights(self, X, y) -> np.ndarray:
        """The learned mixture weights ``pi`` per input, shape (B, K) (rows sum to 1).

        A diagnostic of the estimator: a row with one weight near 1 means the learned
        distribution has collapsed to one Gaussian component for that input.
        """
        self._check_fitted()
        X, y = self._check_X(X, y)
        p = self.gmm_(self._features(X), y, batch_size=X.shape[0])
        return torch.softmax(p.pi_logits, dim=-1).numpy()
