"""Laptop-scale data and classifiers for the NPPR reproduction (not the paper's CIFAR/ResNets).

- scikit-learn digits (1797 x 8x8 grey, /16 to [0, 1]), stratified split;
- two moons (``sklearn.datasets.make_moons``), 2-D, where AR can be found by dense search;
- ``DigitsCNN`` (Conv16-Conv32-MaxPool-FC64-FC10), ``MLPClassifier``; each exposes ``features``
  (the penultimate layer, used frozen by the GMM heads as in the paper);
- ``train_classifier`` with optional PGD adversarial training (Madry et al.).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .robustness import pgd_attack


def load_digits_split(seed: int = 0, n_train: int = 1200):
    """Digits as tensors ``(X_train (n,1,8,8), y_train, X_test, y_test)`` in [0, 1]."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    X = (d.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    Xtr, Xte, ytr, yte = train_test_split(X, d.target, train_size=n_train, stratify=d.target,
                                          random_state=seed)
    return (torch.from_numpy(Xtr), torch.from_numpy(ytr).long(), torch.from_numpy(Xte),
            torch.from_numpy(yte).long())


def load_moons_split(seed: int = 0, n_train: int = 600, n_test: int = 200, noise: float = 0.15):
    """Two moons ``(X_train (n,2), y_train, X_test, y_test)`` (generated, float32)."""
    from sklearn.datasets import make_moons

    X, y = make_moons(n_train + n_test, noise=noise, random_state=seed)
    X = torch.from_numpy(X.astype(np.float32))
    y = torch.from_numpy(y).long()
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


class DigitsCNN(nn.Module):
    """Conv(1->16,3,p1)-ReLU-Conv(16->32,3,p1)-ReLU-MaxPool2-Flatten-Linear(512->64)-ReLU-Linear(64->10)."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(512, 64), nn.ReLU())
        self.head = nn.Linear(64, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features (B, 64)."""
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class MLPClassifier(nn.Module):
    """Flatten -> [Linear -> ReLU] * len(hidden) -> Linear(num_classes)."""

    def __init__(self, in_dim: int, hidden: tuple[int, ...] = (128,), num_classes: int = 10):
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        d = in_dim
        for h in hidden:
            layers += [nn.Linear(d, h), nn.ReLU()]
            d = h
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(d, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def train_classifier(model: nn.Module, X: torch.Tensor, y: torch.Tensor, epochs: int = 30,
                     lr: float = 1e-3, batch_size: int = 64, seed: int = 0, adv_eps: float = 0.0,
                     adv_steps: int = 7, clip_range=(0.0, 1.0), noise_eps: float = 0.0) -> nn.Module:
    """Train ``model`` in place with Adam on cross-entropy; return it in eval mode.

    With ``adv_eps > 0`` each batch is replaced by its PGD-``adv_steps`` L-inf adversarial
    examples (step ``2.5 * adv_eps / adv_steps``, random start): PGD adversarial training.
    With ``noise_eps > 0`` each batch gets uniform noise U[-noise_eps, noise_eps] instead
    (clipped to the range): random-noise augmentation, robustness training without an attack.
    Initialise the model under the same seed for a reproducible run.
    """
    if adv_eps > 0 and noise_eps > 0:
        raise ValueError("choose adversarial training (adv_eps) or noise augmentation (noise_eps)")
    gen = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        perm = torch.randperm(X.shape[0], generator=gen)
        for i in range(0, X.shape[0], batch_size):
            b = perm[i:i + batch_size]
            xb, yb = X[b], y[b]
            if adv_eps > 0:
                model.eval()
                xb = pgd_attack(model, xb, yb, adv_eps, steps=adv_steps,
                                alpha=2.5 * adv_eps / adv_steps,
                                seed=int(seed) * 100003 + epoch * 1009 + i, clip_range=clip_range,
                                backend="internal")
            elif noise_eps > 0:
                xb = xb + (torch.rand(xb.shape, generator=gen) * 2 - 1) * noise_eps
                if clip_range is not None:
                    xb = xb.clamp(*clip_range)
            model.train()
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xb), yb).backward()
            opt.step()
    return model.eval()


def make_model(kind: str, seed: int, input_shape=(1, 8, 8), num_classes: int = 10) -> nn.Module:
    """A freshly initialised ``cnn`` / ``mlp`` (digits) or ``moons_mlp`` under ``seed``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        if kind == "cnn":
            return DigitsCNN(num_classes)
        if kind == "mlp":
            return MLPClassifier(int(np.prod(input_shape)), (128,), num_classes)
        if kind == "moons_mlp":
            return MLPClassifier(2, (64, 64), 2)
    raise ValueError(f"unknown model kind {kind!r}")
