"""A character-level tokenizer with special tokens (no files, no download)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

DEFAULT_SPECIALS = ("<pad>", "<bos>", "<eos>")


class CharTokenizer:
    """Maps each character of a fixed alphabet, and each special token, to an id.

    Special tokens come first (``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2 by default), so that a
    tokenizer built from the same alphabet and specials is always the same.

    Examples
    --------
    >>> tok = CharTokenizer("ab ", specials=("<pad>", "<bos>", "<eos>", "<think>"))
    >>> tok.encode("ab<think>a")
    [4, 5, 3, 4]
    >>> tok.decode([4, 5, 3, 4])
    'ab<think>a'
    """

    def __init__(self, alphabet: Iterable[str], specials: Sequence[str] = DEFAULT_SPECIALS) -> None:
        chars = sorted(set(alphabet))
        if any(len(c) != 1 for c in chars):
            raise ValueError("alphabet must be single characters")
        if len(set(specials)) != len(specials):
            raise ValueError("special tokens must be distinct")
        self.specials = tuple(specials)
        self.itos = list(self.specials) + chars
        self.stoi = {s: i for i, s in enumerate(self.itos)}
        # longest specials first so that "<think>" is not read as "<" "t" ...
        self._special_order = sorted(self.specials, key=len, reverse=True)

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def token_id(self, token: str) -> int:
        try:
            return self.stoi[token]
        except KeyError:
            raise KeyError(f"unknown token {token!r}") from None

    @property
    def pad_id(self) -> int:
        return self.stoi.get("<pad>", 0)

    @property
    def bos_id(self) -> int:
        return self.token_id("<bos>")

    @property
    def eos_id(self) -> int:
        return self.token_id("<eos>")

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        i = 0
        while i < len(text):
            for sp in self._special_order:
                if text.startswith(sp, i):
                    ids.append(self.stoi[sp])
                    i += len(sp)
                    break
            else:
                ch = text[i]
                if ch not in self.stoi:
                    raise ValueError(f"character {ch!r} at position {i} is not in the alphabet")
                ids.append(self.stoi[ch])
                i += 1
        return ids

    def decode(self, ids: Iterable[int], skip_specials: Sequence[str] = ()) -> str:
        skip = {self.stoi[s] for s in skip_specials}
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.itos):
                raise ValueError(f"token id {i} out of range [0, {len(self.itos)})")
            if i not in skip:
                out.append(self.itos[i])
        return "".join(out)
