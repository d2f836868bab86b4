"""Costume arithmetic: simple and complex problems, each in a concise and a verbose phrasing.

Laptop-scale stand-in for the paper's math benchmarks (the paper's data is not public). Arithmetic
is modulo 10 so that a tiny LM can learn every one-step fact; true complexity is the number of
operations:

- **simple**: one operation ``a o b`` (a, b in 0..9, o in ``+ - *``), answer ``(a o b) mod 10``;
- **complex**: 3-4 chained operations evaluated left to right, e.g. ``3+5*7-2`` = ((3+5)*7-2) mod 10.
  Direct answering needs the whole composition at once; the think chain writes each step
  (``3+5=8;8*7=6;6-2=4``), and every step is a simple fact.

Phrasings ("costumes", paper abstract): **concise** = the bare expression; **verbose** = the same
expression wrapped in filler words, the question coming last as in "please note that ... what is
3+5?" (no extra numbers, so the true complexity is unchanged). A filler word is two tokens
(two "pieces", letters of :data:`FILLER_ALPHABET`, each rendered as a word of :data:`FILLER_WORDS`),
so a verbose prompt has 20-40 filler tokens as in the brief. Evaluation costumes are held out
(issue 22): 30 % of the 1600 filler words and the structure "wrap" (filler on both sides of the
expression) never occur in training prompts, which use the other words and the structures "prefix"
and "suffix". Held-out words are new combinations of seen pieces, as a new word is a new
combination of known sub-word tokens for an LLM; a piece itself is never unseen (an unseen token
of a model trained from scratch has no meaning at all). Verbose simple and verbose complex prompts have the *same* length
distribution (total length drawn from one range), so prompt length is no cue to complexity there,
while in natural data (concise simple vs. often verbose complex) long prompts are harder.

Mode format (Thinkless arXiv:2505.13379 / AdaptThink arXiv:2505.13417 conventions; the paper's own
tokens are not public): the first generated token chooses the mode,
``<think> steps </think> answer <eos>`` or ``<nothink> answer <eos>``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from icml26.core.lm.tokenizer import CharTokenizer

OPS = "+-*"
#: filler words of the verbose costume; each is rendered by one letter token
FILLER_WORDS = (
    "please", "note", "that", "consider", "carefully", "it", "is", "known", "the", "value",
    "first", "of", "all", "kindly", "compute", "what", "we", "get", "when", "taking",
    "together", "with", "result", "remember", "this", "question", "asks", "for", "simply",
    "then", "report", "number", "here", "now", "quite", "indeed", "also", "friend", "so", "well",
)
FILLER_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
assert len(FILLER_ALPHABET) == len(FILLER_WORDS)
CELLS = ("simple-concise", "simple-verbose", "complex-concise", "complex-verbose")
#: a filler word is an ordered pair of pieces; this fraction of the words is held out for evaluation
HELDOUT_WORD_FRACTION = 0.3
#: where the filler goes: before the expression, after it, or split around it ("wrap")
STRUCTURES = ("prefix", "suffix", "wrap")
TRAIN_STRUCTURES = ("prefix", "suffix")
HELDOUT_STRUCTURES = ("wrap",)


@dataclass(frozen=True)
class ModeFormat:
    """Mode tokens and parsing of completions.

    Parameters
    ----------
    think, end_think, no_think : str
        The three mode tokens (Thinkless/AdaptThink conventions; not given by the paper).
    """

    think: str = "<think>"
    end_think: str = "</think>"
    no_think: str = "<nothink>"

    def target(self, answer: int, steps: list[str] | None) -> str:
        """The SFT completion text (the tokenizer's ``<eos>`` is appended by the caller)."""
        if steps is None:
            return f"{self.no_think}{answer}"
        return f"{self.think}{';'.join(steps)}{self.end_think}{answer}"

    def mode(self, completion: str) -> str:
        """``"think"``, ``"no_think"`` or ``"invalid"`` from the first token of a completion."""
        if completion.startswith(self.think):
            return "think"
        if completion.startswith(self.no_think):
            return "no_think"
        return "invalid"

    def answer(self, completion: str) -> str | None:
        """The final answer text, or None if the completion is malformed."""
        mode = self.mode(completion)
        if mode == "think":
            body = completion[len(self.think):]
            if body.count(self.end_think) != 1:
                return None
            return body.split(self.end_think, 1)[1].strip()
        if mode == "no_think":
            rest = completion[len(self.no_think):]
            return None if self.think in rest or self.end_think in rest else rest.strip()
        return None

    def is_correct(self, completion: str, answer: int | str) -> bool:
        return self.answer(completion) == str(answer)


def make_tokenizer(fmt: ModeFormat | None = None) -> CharTokenizer:
    """The task's tokenizer: digits, ``+-*=;?``, filler letters and the specials."""
    fmt = fmt or ModeFormat()
    return CharTokenizer("0123456789" + OPS + "=;?" + FILLER_ALPHABET,
                         specials=("<pad>", "<bos>", "<eos>", fmt.think, fmt.end_think, fmt.no_think))


def evaluate_chain(operands: tuple[int, ...], ops: tuple[str, ...]) -> tuple[int, list[str]]:
    """Left-to-right evaluation mod 10; returns the answer and the step strings."""
    if len(operands) != len(ops) + 1 or not ops:
        raise ValueError("need len(operands) == len(ops) + 1 >= 2")
    acc, steps = operands[0], []
    for o, b in zip(ops, operands[1:], strict=True):
        if o == "+":
            new = (acc + b) % 10
        elif o == "-":
            new = (acc - b) % 10
        elif o == "*":
            new = (acc * b) % 10
        else:
            raise ValueError(f"unknown operation {o!r}")
        steps.append(f"{acc}{o}{b}={new}")
        acc = new
    return acc, steps


def render(prompt: str) -> str:
    """Human-readable prompt: filler letters shown as their words."""
    out = []
    for ch in prompt:
        i = FILLER_ALPHABET.find(ch)
        out.append(f" {FILLER_WORDS[i]} " if i >= 0 else ch)
    return " ".join("".join(out).split())


class CostumeArithmetic:
    """Seeded generator of costume-arithmetic problems and datasets.

    Parameters
    ----------
    complex_ops : (int, int)
        Range of the number of operations of a complex problem (brief: 3-4).
    verbose_length : (int, int)
        Inclusive range of the total length (tokens, expression included) of a verbose prompt;
        shared by simple and complex so that verbose lengths match (brief: 20-40 filler tokens).
    test_fraction : float
        Fraction of complex operand/operation tuples held out for the test split.
    heldout_costumes : bool, defaults to True
        Test-split verbose prompts use only held-out filler words (``filler_words["test"]``) and
        the held-out structure ``"wrap"`` (filler on both sides of the expression); training
        prompts use the other words and the structures ``"prefix"``/``"suffix"`` (issue 22: a
        costume seen in training is no test of robustness to costumes). False: both splits use
        the training costumes.
    seed : int
        Seed of the split and of every dataset drawn from this object (each call takes a
        ``seed`` too, so datasets are reproducible and independent of call order).

    Examples
    --------
    >>> task = CostumeArithmetic(seed=0)
    >>> rows = task.sft_dataset(8, augment_verbose=True, seed=1)
    >>> sorted(rows[0])
    ['answer', 'completion', 'complexity', 'phrasing', 'prompt']
    """

    def __init__(self, complex_ops: tuple[int, int] = (3, 4), verbose_length: tuple[int, int] = (24, 40),
                 test_fraction: float = 0.3, seed: int = 0, fmt: ModeFormat | None = None,
                 heldout_costumes: bool = True) -> None:
        lo, hi = complex_ops
        if not 2 <= lo <= hi <= 6:
            raise ValueError(f"complex_ops must satisfy 2 <= lo <= hi <= 6, got {complex_ops}")
        vlo, vhi = verbose_length
        if not 2 * hi + 4 <= vlo <= vhi:
            raise ValueError(f"verbose_length {verbose_length} must leave room for filler around "
                             f"a {hi}-operation expression")
        if not 0 < test_fraction < 1:
            raise ValueError("test_fraction must be in (0, 1)")
        self.complex_ops = (lo, hi)
        self.heldout_costumes = bool(heldout_costumes)
        self.verbose_length = (vlo, vhi)
        self.seed = seed
        self.fmt = fmt or ModeFormat()
        rng = np.random.default_rng([seed, 7])
        # complex problems are split by their operands and operations: test tuples are unseen
        self._complex_pool: dict[str, list[tuple]] = {"train": [], "test": []}
        for k in range(lo, hi + 1):
            n_test = 0
            keys = []
            for _ in range(4000):
                operands = tuple(int(x) for x in rng.integers(0, 10, size=k + 1))
                ops = tuple(OPS[int(i)] for i in rng.integers(0, 3, size=k))
                keys.append((operands, ops))
            keys = list(dict.fromkeys(keys))
            n_test = int(round(test_fraction * len(keys)))
            self._complex_pool["test"] += keys[:n_test]
            self._complex_pool["train"] += keys[n_test:]
        words = [a + b for a in FILLER_ALPHABET for b in FILLER_ALPHABET]
        perm = rng.permutation(len(words))
        n_held = int(round(HELDOUT_WORD_FRACTION * len(words)))
        self.filler_words = {"test": [words[int(i)] for i in perm[:n_held]],
                             "train": [words[int(i)] for i in perm[n_held:]]}
        # simple problems: all 300 facts appear in both splits (a fact cannot be inferred from the
        # others at mod-10 scale); their test *prompts* differ (fresh filler), see README.
        self._simple_pool = [((a, b), (o,)) for a, b, o in itertools.product(range(10), range(10), OPS)]

    # ------------------------------------------------------------------------------------------
    def costumes(self, split: str) -> tuple[list[str], tuple[str, ...]]:
        """(filler words, structures) of the verbose costume in ``split``."""
        if split == "test" and self.heldout_costumes:
            return self.filler_words["test"], HELDOUT_STRUCTURES
        return self.filler_words["train"], TRAIN_STRUCTURES

    def _phrase(self, expr: str, phrasing: str, rng: np.random.Generator, split: str = "train") -> str:
        if phrasing == "concise":
            return expr + "?"
        vocab, structures = self.costumes(split)
        total = int(rng.integers(self.verbose_length[0], self.verbose_length[1] + 1))
        n_words = (total - len(expr) - 1) // 2  # two tokens per word
        words = [vocab[int(i)] for i in rng.integers(0, len(vocab), size=n_words)]
        structure = structures[int(rng.integers(0, len(structures)))]
        if structure == "prefix":
            return "".join(words) + expr + "?"
        if structure == "suffix":
            return expr + "".join(words) + "?"
        cut = int(rng.integers(1, n_words))  # wrap: filler words on both sides
        return "".join(words[:cut]) + expr + "".join(words[cut:]) + "?"

    def problem(self, complexity: str, phrasing: str, split: str, rng: np.random.Generator,
                with_think: bool | None = None) -> dict:
        """One problem as a dict: prompt, completion (SFT target), answer, complexity, phrasing."""
        if complexity not in ("simple", "complex") or phrasing not in ("concise", "verbose"):
            raise ValueError(f"bad cell {complexity}-{phrasing}")
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        pool = self._simple_pool if complexity == "simple" else self._complex_pool[split]
        operands, ops = pool[int(rng.integers(0, len(pool)))]
        expr = str(operands[0]) + "".join(o + str(b) for o, b in zip(ops, operands[1:], strict=True))
        answer, steps = evaluate_chain(operands, ops)
        think = (complexity == "complex") if with_think is None else with_think
        return {
            "prompt": self._phrase(expr, phrasing, rng, split),
            "completion": self.fmt.target(answer, steps if think else None),
            "answer": str(answer),
            "complexity": complexity,
            "phrasing": phrasing,
        }

    def sft_dataset(self, n: int, *, augment_verbose: bool = True, complex_verbose_frac: float = 0.5,
                    simple_think_frac: float = 0.15, complex_direct_frac: float = 0.15,
                    simple_verbose_frac: float = 0.0, seed: int = 0) -> list[dict]:
        """Stage-1 SFT data (brief Sec. 2 "Stage 1").

        Half the examples are simple, half complex. With ``augment_verbose`` (the paper's
        augmentation) each simple problem appears twice, concise and verbose, with the same
        no-think target; without it (baseline B0) a simple problem is verbose with probability
        ``simple_verbose_frac`` (default 0: concise only), with the same target as a concise one,
        i.e. natural data in which verbosity is rarer on simple problems but not absent (issue 50).
        Complex problems are verbose with probability ``complex_verbose_frac`` and get think targets.
        A fraction ``simple_think_frac`` of simple problems gets a think target instead
        (Thinkless-style warm-up so that both modes stay explorable and thinking on simple
        problems is accurate; our choice). Symmetrically, a fraction ``complex_direct_frac`` of
        complex problems gets a direct (no-think) target, so that the never-think baseline answers
        in the right format and its accuracy shows how much thinking is needed (issue 22; our
        choice).
        """
        if n < 2:
            raise ValueError("n must be >= 2")
        if not (0 <= complex_verbose_frac <= 1 and 0 <= simple_think_frac < 1 and 0 <= complex_direct_frac < 1
                and 0 <= simple_verbose_frac <= 1):
            raise ValueError("complex_verbose_frac and simple_verbose_frac must be in [0, 1], "
                             "simple_think_frac and complex_direct_frac in [0, 1)")
        if augment_verbose and simple_verbose_frac:
            raise ValueError("simple_verbose_frac is for non-augmented data (augmentation puts every "
                             "simple problem in both costumes)")
        rng = np.random.default_rng([self.seed, seed, 11])
        rows: list[dict] = []
        n_simple = n // 2
        while len(rows) < n_simple:
            think = bool(rng.random() < simple_think_frac)
            state = rng.bit_generator.state
            phrasing = "verbose" if simple_verbose_frac and rng.random() < simple_verbose_frac else "concise"
            rows.append(self.problem("simple", phrasing, "train", rng, with_think=think))
            if augment_verbose and len(rows) < n_simple:
                rng.bit_generator.state = state  # same problem, verbose costume
                rows.append(self.problem("simple", "verbose", "train", rng, with_think=think))
        while len(rows) < n:
            phrasing = "verbose" if rng.random() < complex_verbose_frac else "concise"
            think = not bool(rng.random() < complex_direct_frac)
            rows.append(self.problem("complex", phrasing, "train", rng, with_think=think))
        order = rng.permutation(len(rows))
        return [rows[int(i)] for i in order]

    def rl_prompts(self, n: int, *, cells: tuple[str, ...] = ("simple-concise", "complex-concise",
                                                               "complex-verbose"),
                   seed: int = 0) -> list[dict]:
        """Stage-2 prompts (train split), equally many per cell; the default mix is the natural one
        (no verbose-simple prompts), shared by the baseline and the method."""
        for c in cells:
            if c not in CELLS:
                raise ValueError(f"unknown cell {c!r}; choose from {CELLS}")
        rng = np.random.default_rng([self.seed, seed, 13])
        rows = []
        for i in range(n):
            complexity, phrasing = cells[i % len(cells)].split("-")
            row = self.problem(complexity, phrasing, "train", rng)
            row.pop("completion")
            rows.append(row)
        order = rng.permutation(len(rows))
        return [rows[int(i)] for i in order]

    def test_grid(self, n: int, *, seed: int = 0) -> list[dict]:
        """``n`` test problems per cell ({simple, complex} x {concise, verbose}), test split."""
        if n < 1:
            raise ValueError("n must be >= 1")
        rng = np.random.default_rng([self.seed, seed, 17])
        rows = []
        for cell in CELLS:
            complexity, phrasing = cell.split("-")
            rows += [self.problem(complexity, phrasing, "test", rng) for _ in range(n)]
        return rows

    @property
    def max_prompt_length(self) -> int:
        """Longest prompt in tokens (without ``<bos>``)."""
        return max(self.verbose_length[1], 2 * self.complex_ops[1] + 2)

    @property
    def max_completion_length(self) -> int:
        """Longest completion in tokens, ``<eos>`` included."""
        k = self.complex_ops[1]
        return 1 + (k * 5 + (k - 1)) + 1 + 1 + 1
