"""Flat baselines from sbi (Tejero-Cantero et al. 2020; sbi 0.27): FMPE (Wildberger et al. 2023)
and NPE (MAF), trained on hierarchical data flattened at a fixed number of sites.

Nothing here re-implements them: :class:`FlatSBI` builds sbi's ``FMPE``/``NPE`` with a network
builder of a chosen size, calls ``append_simulations(...).train(...)`` and samples through
``build_posterior().sample_batched``. sbi is an optional dependency (``pip install icml26[sbi]``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from torch import Tensor


def require_sbi():
    """Import sbi or fail with the extra to install."""
    try:
        import sbi  # noqa: F401
        from sbi.inference import FMPE, NPE
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the tfmpe flat baselines need sbi: pip install 'icml26[sbi]' "
                          "(or pip install sbi)") from exc
    return FMPE, NPE


class _NullTracker:
    """sbi's ``Tracker`` protocol, doing nothing: sbi's default tracker writes TensorBoard
    event files into ``./sbi-logs`` of the working directory on every training run."""

    log_dir = None

    def log_metric(self, name, value, step=None) -> None:
        pass

    def log_metrics(self, metrics, step=None) -> None:
        pass

    def log_params(self, params) -> None:
        pass

    def add_figure(self, name, figure, step=None) -> None:
        pass

    def flush(self) -> None:
        pass


def flatten(d: Mapping[str, Tensor], names: Sequence[str]) -> Tensor:
    """Concatenate ``d[name].reshape(B, -1)`` in ``names`` order: shape (B, D)."""
    missing = [n for n in names if n not in d]
    if missing:
        raise ValueError(f"missing variables {missing}")
    return torch.cat([d[n].reshape(d[n].shape[0], -1) for n in names], dim=1)


class FlatSBI:
    """sbi's FMPE or NPE on flattened ``(theta, x)``.

    Parameters
    ----------
    method : {"fmpe", "npe"}
    prior : torch Distribution
        Prior of the flat theta (sbi uses it for support checks and z-scoring).
    hidden, layers : int
        FMPE: ``posterior_flow_nn(model="mlp", hidden_features=hidden, num_layers=layers)``;
        NPE: ``posterior_nn("maf", hidden_features=hidden, num_transforms=layers)``.
    seed : int
    """

    def __init__(self, method: str, prior, *, hidden: int = 64, layers: int = 3, seed: int = 0) -> None:
        if method not in ("fmpe", "npe"):
            raise ValueError(f"method must be 'fmpe' or 'npe', got {method!r}")
        self.method, self.prior, self.hidden, self.layers, self.seed = method, prior, hidden, layers, seed
        self.posterior = None
        self.steps_run = 0

    def fit(self, theta: Tensor, x: Tensor, *, steps: int = 1000, batch_size: int = 200,
            lr: float = 5e-4, val_frac: float = 0.1) -> FlatSBI:
        """Train with sbi's loop; ``max_num_epochs`` is set so that the number of gradient steps
        is at most ``steps`` (sbi's own early stopping, 20 epochs of patience, stays on)."""
        FMPE, NPE = require_sbi()
        from sbi.neural_nets import posterior_flow_nn, posterior_nn

        if theta.dim() != 2 or x.dim() != 2 or theta.shape[0] != x.shape[0]:
            raise ValueError(f"theta and x must be (N, D) with equal N, got {tuple(theta.shape)}, "
                             f"{tuple(x.shape)}")
        torch.manual_seed(self.seed)
        n_train = max(1, int(round((1 - val_frac) * theta.shape[0])))
        bs = min(batch_size, n_train)
        per_epoch = math.ceil(n_train / bs)
        epochs = max(1, steps // per_epoch)
        self.steps_run = epochs * per_epoch
        if self.method == "fmpe":
            builder = posterior_flow_nn(model="mlp", hidden_features=self.hidden,
                                        num_layers=self.layers)
            inf = FMPE(self.prior, vf_estimator=builder, show_progress_bars=False,
                       tracker=_NullTracker())
        else:
            builder = posterior_nn("maf", hidden_features=self.hidden, num_transforms=self.layers)
            inf = NPE(self.prior, density_estimator=builder, show_progress_bars=False,
                      tracker=_NullTracker())
        inf.append_simulations(theta.float(), x.float())
        self.estimator = inf.train(training_batch_size=bs, learning_rate=lr,
                                   max_num_epochs=epochs, validation_fraction=val_frac)
        trained = getattr(inf, "summary", {}).get("epochs_trained", [epochs])
        self.epochs_run = int(trained[-1]) if len(trained) else epochs
        self.posterior = inf.build_posterior()
        return self

    @torch.no_grad()
    def sample_batched(self, n: int, x: Tensor) -> Tensor:
        """``n`` draws for each row of ``x`` (K, Dx): shape (n, K, D)."""
        if self.posterior is None:
            raise RuntimeError("fit first")
        if self.method == "npe":
            return self.posterior.sample_batched((n,), x=x.float(), show_progress_bars=False)
        return self.posterior.sample_batched((n,), x=x.float(), show_progress_bars=False)
