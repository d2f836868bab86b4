"""icml26: the ICML 2026 paper list, runnable.

Each paper lives in ``icml26.papers.<slug>`` (its library API) with ``experiment.py`` (its
laptop-scale reproduction); shared building blocks live in ``icml26.core``. Importing ``icml26``
imports no torch.
"""

__version__ = "0.1.0"
