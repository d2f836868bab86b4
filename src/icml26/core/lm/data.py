"""Text data that needs no network: a corpus file shipped in the package, a Markov corpus of
known entropy, and (legacy) text read from the interpreter's standard library.

* :func:`corpus_text` (the default text source): ``tales.txt``, 400,000 characters of
  self-generated English-like prose that ships inside the package (generator:
  :func:`icml26.core.lm.tales.generate_tales`), identical on every machine; its SHA-256 is
  :data:`TALES_SHA256` (checked on read; record :func:`corpus_sha256` in results).

* :class:`MarkovCorpus`: an order-``k`` Markov chain over a small alphabet with Dirichlet
  transition rows; its entropy rate (nats/char) is exact, so a language model's loss has a known
  floor (tests, sanity checks).
* :func:`stdlib_text`: text read from disk: the docstrings (or the source) of the CPython
  standard library of the running interpreter. Never a download, but the text differs between
  Python builds, so results that depend on it differ between machines: prefer :func:`corpus_text`.
* :func:`char_corpus` / :class:`TokenSplit` and :func:`get_batch`: char-level encoding, a
  contiguous train/validation split and seeded random windows ``(x, y)`` for next-token training.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import math
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .tokenizer import CharTokenizer

TALES_FILE = Path(__file__).with_name("tales.txt")
TALES_SHA256 = "e501e063602e3beb4cd832ef9006caaf0849bb68b27dd6edaedf7bbb6629825d"
"""SHA-256 of the UTF-8 bytes of ``tales.txt`` (= ``generate_tales(400_000, seed=2026)``)."""


def corpus_text(max_chars: int | None = None, source: str = "tales") -> str:
    """The packaged text corpus (default source of LM experiments), optionally truncated.

    Parameters
    ----------
    max_chars : int, optional
        Return the first ``max_chars`` characters (at most the 400,000 of the file).
    source : {"tales", "stdlib"}
        ``"tales"``: the shipped file (verified against :data:`TALES_SHA256`); ``"stdlib"``:
        :func:`stdlib_text` docstrings (machine-dependent).
    """
    if max_chars is not None and max_chars < 1:
        raise ValueError("max_chars must be positive")
    if source == "stdlib":
        return stdlib_text(max_chars or 1_000_000)
    if source != "tales":
        raise ValueError(f"source must be 'tales' or 'stdlib', got {source!r}")
    raw = TALES_FILE.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != TALES_SHA256:
        raise RuntimeError(f"{TALES_FILE} is corrupted: sha256 {digest} != {TALES_SHA256}")
    text = raw.decode("utf-8")
    return text if max_chars is None else text[:max_chars]


def corpus_sha256(text: str) -> str:
    """SHA-256 of the UTF-8 bytes of ``text`` (record it next to a result)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MarkovCorpus:
    """An order-``k`` Markov chain over ``alphabet`` with random transition probabilities.

    Parameters
    ----------
    alphabet : str
        Distinct characters (``V`` of them).
    order : int
        Context length ``k`` (the next char depends on the previous ``k``).
    concentration : float
        Dirichlet concentration of each transition row: small = peaked (low entropy).
    seed : int
        Seed of the transition table.

    Attributes
    ----------
    transition : ndarray, shape (V**k, V)
        Row ``c`` is ``P(next | context c)`` with context ``c`` written in base V, oldest first.
    """

    def __init__(self, alphabet: str = "abcdefgh", order: int = 1, concentration: float = 0.5,
                 seed: int = 0) -> None:
        if len(set(alphabet)) != len(alphabet) or len(alphabet) < 2:
            raise ValueError("alphabet must hold at least two distinct characters")
        if not isinstance(order, int) or order < 1:
            raise ValueError(f"order must be a positive int, got {order!r}")
        if len(alphabet) ** order > 1_000_000:
            raise ValueError("V**order is too large for an explicit transition table")
        if not concentration > 0:
            raise ValueError(f"concentration must be positive, got {concentration!r}")
        self.alphabet, self.order = alphabet, order
        rng = np.random.default_rng(seed)
        V = len(alphabet)
        self.transition = rng.dirichlet(np.full(V, concentration), size=V**order)

    @property
    def n_states(self) -> int:
        return self.transition.shape[0]

    def _state_chain(self) -> np.ndarray:
        """Transition matrix between contexts, shape (V**k, V**k)."""
        V, S = len(self.alphabet), self.n_states
        P = np.zeros((S, S))
        for c in range(S):
            nxt = (c * V) % S  # drop the oldest char, append the new one
            P[c, nxt:nxt + V] = self.transition[c]
        return P

    def stationary(self) -> np.ndarray:
        """Stationary distribution over contexts (power iteration from uniform), shape (V**k,)."""
        P = self._state_chain()
        pi = np.full(self.n_states, 1.0 / self.n_states)
        for _ in range(10_000):
            new = pi @ P
            if np.abs(new - pi).sum() < 1e-13:
                pi = new
                break
            pi = new
        return pi / pi.sum()

    def entropy_rate(self) -> float:
        """Entropy rate in nats per char: ``sum_c pi(c) H(P(. | c))``."""
        T = self.transition
        h = -(T * np.log(np.where(T > 0, T, 1.0))).sum(axis=1)
        return float(self.stationary() @ h)

    def sample(self, n_chars: int, seed: int = 0) -> str:
        """Generate ``n_chars`` characters (the first ``k`` drawn uniformly), deterministic in ``seed``."""
        if n_chars < 1:
            raise ValueError("n_chars must be positive")
        rng = np.random.default_rng(seed)
        V, S, k = len(self.alphabet), self.n_states, self.order
        cdf = np.cumsum(self.transition, axis=1)
        out = np.empty(n_chars, dtype=np.int64)
        out[:k] = rng.integers(V, size=min(k, n_chars))
        state = 0
        for i in range(min(k, n_chars)):
            state = (state * V + int(out[i])) % S
        u = rng.random(n_chars)
        for i in range(k, n_chars):
            nxt = min(int(np.searchsorted(cdf[state], u[i], side="right")), V - 1)
            out[i] = nxt
            state = (state * V + nxt) % S
        return "".join(self.alphabet[j] for j in out)


def _stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py"))
    files += sorted(p for p in itertools.chain(root.glob("email/*.py"), root.glob("json/*.py"),
                                               root.glob("collections/*.py"), root.glob("logging/*.py"),
                                               root.glob("unittest/*.py"), root.glob("asyncio/*.py")))
    return files


def stdlib_text(max_chars: int = 1_000_000, kind: str = "docstrings", ascii_only: bool = True) -> str:
    """Real text from the CPython standard library on disk (no download).

    Parameters
    ----------
    max_chars : int
        Stop after this many characters.
    kind : {"docstrings", "source"}
        Module/class/function docstrings (English prose, separated by blank lines) or the raw
        ``.py`` source.
    ascii_only : bool
        Drop non-ASCII characters (keeps the char vocabulary small, ~95 symbols).

    Returns
    -------
    str, deterministic for a given interpreter.
    """
    if kind not in ("docstrings", "source"):
        raise ValueError(f"kind must be 'docstrings' or 'source', got {kind!r}")
    if max_chars < 1:
        raise ValueError("max_chars must be positive")
    parts: list[str] = []
    total = 0
    for path in _stdlib_files():
        try:
            src = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if kind == "source":
            chunks = [src]
        else:
            try:
                tree = ast.parse(src)
            except SyntaxError:
                continue
            chunks = []
            for node in ast.walk(tree):
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    doc = ast.get_docstring(node)
                    if doc and len(doc) > 40:
                        chunks.append(doc.strip() + "\n\n")
        for c in chunks:
            if ascii_only:
                c = "".join(ch for ch in c if ch == "\n" or 32 <= ord(ch) < 127)
            parts.append(c)
            total += len(c)
            if total >= max_chars:
                return "".join(parts)[:max_chars]
    if not parts:
        raise RuntimeError("no standard-library text found on disk")
    return "".join(parts)[:max_chars]


@dataclass(frozen=True)
class TokenSplit:
    """Char-level corpus: tokenizer + contiguous train / validation token streams (int64, 1-D)."""

    tokenizer: CharTokenizer
    train: torch.Tensor
    val: torch.Tensor

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size


def char_corpus(text: str, val_fraction: float = 0.1) -> TokenSplit:
    """Encode ``text`` char by char; the last ``val_fraction`` of it is the validation stream."""
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must lie in (0, 1), got {val_fraction!r}")
    if len(text) < 20:
        raise ValueError("text is too short to split")
    tok = CharTokenizer(set(text), specials=())
    ids = torch.tensor([tok.stoi[c] for c in text], dtype=torch.long)
    n_val = max(2, int(math.floor(len(ids) * val_fraction)))
    return TokenSplit(tok, ids[:-n_val], ids[-n_val:])


def get_batch(tokens: torch.Tensor, batch_size: int, block_size: int,
              generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of a token stream: ``x`` (B, T) and next-token targets ``y`` (B, T)."""
    if tokens.dim() != 1 or tokens.dtype != torch.long:
        raise ValueError("tokens must be a 1-D int64 tensor")
    if len(tokens) <= block_size + 1:
        raise ValueError(f"token stream of length {len(tokens)} is shorter than block_size + 2")
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    starts = torch.randint(0, len(tokens) - block_size - 1, (batch_size,), generator=generator)
    offs = torch.arange(block_size)
    x = tokens[starts[:, None] + offs]
    y = tokens[starts[:, None] + offs + 1]
    return x, y


def eval_windows(tokens: torch.Tensor, block_size: int, max_windows: int | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-overlapping windows covering a stream (deterministic): ``x``, ``y`` of shape (N, T)."""
    n = (len(tokens) - 1) // block_size
    if n < 1:
        raise ValueError("token stream shorter than one window")
    if max_windows is not None:
        n = min(n, max_windows)
    idx = torch.arange(n)[:, None] * block_size + torch.arange(block_size)
    return tokens[idx], tokens[idx + 1]
