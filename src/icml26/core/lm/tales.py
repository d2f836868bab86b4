"""A self-generated English-like corpus ("tales"): the generator of the text file that ships
with the package (``tales.txt``), so that language-model experiments read the same bytes on every
machine and interpreter.

The text is drawn from a small hand-written probabilistic grammar (our own; no third-party text):
short narrative paragraphs of sentences built from a few hundred words with Zipf-like
frequencies, clauses joined by conjunctions, prepositional phrases, occasional dialogue in
quotes. Only ``random.Random(seed).random()`` is used (Mersenne Twister, stable across Python
versions), so ``generate_tales()`` reproduces ``tales.txt`` byte for byte (a test checks it).
"""

from __future__ import annotations

import random

_NOUNS = (
    "miller river lantern village road child garden winter harbour ship sailor baker window door "
    "mountain forest bridge letter king queen soldier horse field storm candle market teacher book "
    "friend stranger sister brother mother father fisherman shepherd wolf fox bird tower castle bell "
    "island valley farmer song clock kettle table stone wall gate orchard meadow cart wheel rope "
    "painter doctor widow captain clerk lamp coat basket apple bread cloud morning evening"
).split()
_ADJS = (
    "old young quiet bright dark cold warm small great narrow wide green grey golden silent tired "
    "clever patient strange gentle heavy broken empty distant early late careful wild red blue "
    "white black honest hungry proud lonely"
).split()
_VERBS_T = (
    "carried found watched opened closed followed remembered painted mended lifted counted "
    "answered greeted crossed climbed visited wrote read sold bought lost kept needed pulled "
    "pushed noticed heard"
).split()
_VERBS_I = (
    "waited laughed slept listened wandered returned smiled rested worked sang walked hurried "
    "stopped spoke"
).split()
_PREPS = "across under over near behind beside through along towards past beyond inside".split()
_ADVS = "slowly quietly soon again never always carefully suddenly often gladly".split()
_NAMES = "Anna Tomas Greta Elias Mira Jonah Lena Oskar Ruth Felix Ida Hugo".split()
_TIMES = ("that night", "in the morning", "after a while", "before the rain", "by noon",
          "at last", "the next day", "long ago", "in the spring", "when the bell rang")
_SPEECH = ("said", "asked", "whispered", "called", "replied")
_CONJ = ("and", "but", "so", "while", "because", "until")


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def u(self) -> float:
        return self.rng.random()

    def pick(self, words, zipf: float = 1.0):
        """A word with probability proportional to 1 / (rank + 1)^zipf."""
        w = [1.0 / (i + 1) ** zipf for i in range(len(words))]
        r = self.u() * sum(w)
        for word, wi in zip(words, w, strict=True):
            r -= wi
            if r <= 0:
                return word
        return words[-1]

    def noun_phrase(self) -> str:
        if self.u() < 0.15:
            return self.pick(_NAMES)
        det = "the" if self.u() < 0.7 else "a"
        adj = self.pick(_ADJS) + " " if self.u() < 0.45 else ""
        noun = self.pick(_NOUNS, 0.8)
        if det == "a" and (adj or noun)[0] in "aeiou":
            det = "an"
        np_ = f"{det} {adj}{noun}"
        if self.u() < 0.08:
            np_ += f" of the {self.pick(_NOUNS, 0.8)}"
        return np_

    def clause(self) -> str:
        subj = self.noun_phrase()
        adv = self.pick(_ADVS) + " " if self.u() < 0.2 else ""
        if self.u() < 0.6:
            core = f"{subj} {adv}{self.pick(_VERBS_T)} {self.noun_phrase()}"
        else:
            core = f"{subj} {adv}{self.pick(_VERBS_I)}"
        if self.u() < 0.45:
            core += f" {self.pick(_PREPS)} {self.noun_phrase()}"
        return core

    def sentence(self) -> str:
        if self.u() < 0.12:
            who = self.pick(_NAMES)
            words = self.clause()
            return f'"{words[0].upper()}{words[1:]}," {who} {self.pick(_SPEECH)}.'
        s = self.clause()
        if self.u() < 0.35:
            s += f", {self.pick(_CONJ)} {self.clause()}"
        if self.u() < 0.2:
            s = f"{self.pick(_TIMES)}, {s}"
        end = "?" if self.u() < 0.04 else "."
        return s[0].upper() + s[1:] + end

    def paragraph(self) -> str:
        n = 2 + int(self.u() * 6)
        return " ".join(self.sentence() for _ in range(n))


def generate_tales(n_chars: int = 400_000, seed: int = 2026) -> str:
    """The first ``n_chars`` characters of the tales corpus (paragraphs separated by blank lines)."""
    if n_chars < 1:
        raise ValueError("n_chars must be positive")
    g = _Gen(seed)
    parts: list[str] = []
    total = 0
    while total < n_chars:
        p = g.paragraph() + "\n\n"
        parts.append(p)
        total += len(p)
    return "".join(parts)[:n_chars]
