"""Tokenisation of dicts of parameters and observations (TFMPE, arXiv:2604.20723, Sec. 3).

Every scalar element of every variable becomes one token (as ``Tokens.from_pytree`` in the
official JAX code, github.com/mrc-ide/tfmpe, ``tfmpe/preprocessing``). A token carries its value,
the integer label of its variable, its position (the index of the element inside the variable's
per-site event), its site (``-1`` for global variables, ``m`` for site ``m`` of a local variable),
an optional functional input (e.g. the observation time of that element) and a padding flag.
Condition tokens (observations) come first, target tokens (parameters) after; ``n_cond``
separates them.

Difference from the official code, on purpose: the official position is the flat index of the
element within the whole variable (so it includes the site index). Here it is the index within
one site's event, and the site enters only through attention masks (see
:func:`site_attention_mask`), which makes the velocity field equivariant to permutations of sites.
The official code expresses the same site structure with ``cross_local`` independence masks.

Variables are given as ``{name: tensor}``. A *global* variable has shape ``(B, *event)``; a
*local* one (named in ``local``) has shape ``(B, M, *event)`` with the site axis second. Ragged
numbers of sites (or of elements, for function-valued observations) are expressed by padding the
tensors and passing boolean ``masks`` of the same shape (True = present).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import torch
from torch import Tensor


class Labeller:
    """Fixed mapping from variable names to integer labels (shared by every estimator that
    must read the same tokens, e.g. a likelihood surrogate and a posterior)."""

    def __init__(self, names: Iterable[str]) -> None:
        names = list(dict.fromkeys(names))
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"Labeller needs non-empty string names, got {names}")
        self.names = tuple(names)
        self._ids = {n: i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def __call__(self, name: str) -> int:
        if name not in self._ids:
            raise KeyError(f"variable {name!r} is unknown to the labeller (knows {list(self.names)})")
        return self._ids[name]

    def __repr__(self) -> str:
        return f"Labeller({list(self.names)})"


@dataclass
class Tokens:
    """A batch of token sequences.

    Attributes
    ----------
    data : Tensor, shape (B, T)
        Token values (one scalar per token).
    labels, position, site : LongTensor, shape (T,)
        Variable label, index within the per-site event, site (-1 = global).
    present : BoolTensor, shape (B, T)
        False for padding tokens.
    func : Tensor, shape (B, T) or None
        Functional input per token (e.g. observation time); ``func_present`` marks tokens that
        have one.
    func_present : BoolTensor, shape (B, T) or None
    n_cond : int
        The first ``n_cond`` tokens are conditions, the rest targets.
    """

    data: Tensor
    labels: Tensor
    position: Tensor
    site: Tensor
    present: Tensor
    n_cond: int
    func: Tensor | None = None
    func_present: Tensor | None = None

    @property
    def batch_size(self) -> int:
        return int(self.data.shape[0])

    @property
    def n_tokens(self) -> int:
        return int(self.data.shape[1])

    @property
    def n_target(self) -> int:
        return self.n_tokens - self.n_cond

    @property
    def targets(self) -> Tensor:
        """Target values, shape (B, T - n_cond)."""
        return self.data[:, self.n_cond:]

    @property
    def target_present(self) -> Tensor:
        return self.present[:, self.n_cond:]

    def to(self, device) -> Tokens:
        def mv(x):
            return None if x is None else x.to(device)
        return replace(self, data=mv(self.data), labels=mv(self.labels), position=mv(self.position),
                       site=mv(self.site), present=mv(self.present), func=mv(self.func),
                       func_present=mv(self.func_present))

    def select(self, idx: Tensor) -> Tokens:
        """The sub-batch ``idx`` (indices into the batch axis)."""
        return replace(self, data=self.data[idx], present=self.present[idx],
                       func=None if self.func is None else self.func[idx],
                       func_present=None if self.func_present is None else self.func_present[idx])

    def with_targets(self, values: Tensor) -> Tokens:
        """A copy whose target values are ``values`` (B, T - n_cond)."""
        if values.shape != (self.batch_size, self.n_target):
            raise ValueError(f"targets must have shape {(self.batch_size, self.n_target)}, "
                             f"got {tuple(values.shape)}")
        data = torch.cat([self.data[:, :self.n_cond], values.to(self.data.dtype)], dim=1)
        return replace(self, data=data)


@dataclass(frozen=True)
class _VarSpec:
    name: str
    local: bool
    n_sites: int  # 0 for global variables
    event: tuple[int, ...]
    offset: int
    size: int  # tokens of this variable


@dataclass
class Decoder:
    """Inverse of :func:`tokenize`: token values back to the dict of tensors (exact)."""

    specs: list[_VarSpec] = field(default_factory=list)
    n_cond: int = 0

    def __call__(self, values: Tensor, which: str = "targets") -> dict[str, Tensor]:
        """Decode values of shape ``(B, T_targets)`` (``which="targets"``) or ``(B, T)``
        (``which="all"``) into ``{name: tensor}`` with the original shapes."""
        if which not in ("targets", "all"):
            raise ValueError(f"which must be 'targets' or 'all', got {which!r}")
        specs = [s for s in self.specs if which == "all" or s.offset >= self.n_cond]
        start = 0 if which == "all" else self.n_cond
        total = sum(s.size for s in specs)
        if values.dim() != 2 or values.shape[1] != total:
            raise ValueError(f"expected values of shape (B, {total}), got {tuple(values.shape)}")
        out = {}
        for s in specs:
            chunk = values[:, s.offset - start:s.offset - start + s.size]
            shape = ((s.n_sites,) if s.local else ()) + s.event
            out[s.name] = chunk.reshape(values.shape[0], *shape)
        return out

    @property
    def target_names(self) -> list[str]:
        return [s.name for s in self.specs if s.offset >= self.n_cond]


def _check_var(name: str, x, local: bool) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"variable {name!r} must be a torch.Tensor, got {type(x).__name__}")
    if not torch.is_floating_point(x):
        raise TypeError(f"variable {name!r} must be floating point, got dtype {x.dtype}")
    need = 2 if local else 1
    if x.dim() < need:
        raise ValueError(f"{'local' if local else 'global'} variable {name!r} needs shape "
                         f"{'(B, M, *event)' if local else '(B, *event)'}, got {tuple(x.shape)}")


def tokenize(batch: Mapping[str, Tensor], condition: Sequence[str], *, local: Iterable[str] = (),
             masks: Mapping[str, Tensor] | None = None,
             func_inputs: Mapping[str, Tensor] | None = None,
             labeller: Labeller | None = None) -> tuple[Tokens, Decoder]:
    """Flatten a dict of variables into one token per scalar element.

    Parameters
    ----------
    batch : dict of str -> Tensor
        Global variables ``(B, *event)``, local ones ``(B, M, *event)``.
    condition : sequence of str
        The names that are conditions (observations); they come first, in this order. The others
        are targets, in ``batch``'s order.
    local : iterable of str
        Names with a site axis at dim 1.
    masks : dict of str -> BoolTensor, optional
        Same shape as the variable; True = present. Padding values must still be finite.
    func_inputs : dict of str -> Tensor, optional
        Same shape as the variable: a scalar functional input per element (e.g. observation time).
    labeller : Labeller, optional
        Name -> label; built from ``batch``'s names when omitted.

    Returns
    -------
    (Tokens, Decoder)

    Raises
    ------
    ValueError
        Unknown condition names, unequal batch sizes, local variables with different numbers of
        sites (ragged sites without padding), masks or functional inputs of the wrong shape,
        NaN/inf values.
    """
    if not isinstance(batch, Mapping) or not batch:
        raise ValueError("batch must be a non-empty dict of tensors")
    local = set(local)
    condition = list(condition)
    unknown = [c for c in (*condition, *local) if c not in batch]
    if unknown:
        raise ValueError(f"names {unknown} are not in the batch (has {list(batch)})")
    masks = dict(masks or {})
    func_inputs = dict(func_inputs or {})
    for extra, what in ((masks, "masks"), (func_inputs, "func_inputs")):
        bad = [k for k in extra if k not in batch]
        if bad:
            raise ValueError(f"{what} name variables {bad} that are not in the batch")
    labeller = labeller or Labeller(batch)
    order = condition + [k for k in batch if k not in condition]
    bsz = None
    n_sites = None
    specs: list[_VarSpec] = []
    vals, labs, poss, sites, pres, funcs, fpres = [], [], [], [], [], [], []
    offset = 0
    for name in order:
        x = batch[name]
        is_local = name in local
        _check_var(name, x, is_local)
        if bsz is None:
            bsz = x.shape[0]
        elif x.shape[0] != bsz:
            raise ValueError(f"variable {name!r} has batch size {x.shape[0]}, expected {bsz}")
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"variable {name!r} contains NaN or inf (mark missing entries "
                             "with masks and fill them with a finite value)")
        m = x.shape[1] if is_local else 0
        if is_local:
            if n_sites is None:
                n_sites = m
            elif m != n_sites:
                raise ValueError(f"local variable {name!r} has {m} sites but another has "
                                 f"{n_sites}: pad to a common number of sites and pass masks")
        event = tuple(x.shape[2:] if is_local else x.shape[1:])
        n_ev = math.prod(event)
        size = (m if is_local else 1) * n_ev
        specs.append(_VarSpec(name, is_local, m, event, offset, size))
        offset += size
        vals.append(x.reshape(bsz, size))
        labs.append(torch.full((size,), labeller(name), dtype=torch.long))
        poss.append(torch.arange(n_ev).repeat(m if is_local else 1))
        sites.append(torch.arange(m).repeat_interleave(n_ev) if is_local
                     else torch.full((size,), -1, dtype=torch.long))
        if name in masks:
            mk = masks[name]
            if not isinstance(mk, Tensor) or mk.shape != x.shape:
                raise ValueError(f"mask of {name!r} must have shape {tuple(x.shape)}")
            pres.append(mk.to(torch.bool).reshape(bsz, size))
        else:
            pres.append(torch.ones(bsz, size, dtype=torch.bool))
        if name in func_inputs:
            f = func_inputs[name]
            if not isinstance(f, Tensor) or f.shape != x.shape:
                raise ValueError(f"func_inputs of {name!r} must have shape {tuple(x.shape)}")
            if not bool(torch.isfinite(f).all()):
                raise ValueError(f"func_inputs of {name!r} contain NaN or inf")
            funcs.append(f.to(x.dtype).reshape(bsz, size))
            fpres.append(torch.ones(bsz, size, dtype=torch.bool))
        else:
            funcs.append(torch.zeros(bsz, size, dtype=x.dtype))
            fpres.append(torch.zeros(bsz, size, dtype=torch.bool))
    n_cond = sum(s.size for s in specs if s.name in condition)
    dtype = vals[0].dtype
    for v in vals[1:]:
        dtype = torch.promote_types(dtype, v.dtype)
    tokens = Tokens(data=torch.cat([v.to(dtype) for v in vals], 1), labels=torch.cat(labs),
                    position=torch.cat(poss), site=torch.cat(sites), present=torch.cat(pres, 1),
                    n_cond=n_cond,
                    func=torch.cat(funcs, 1).to(dtype) if func_inputs else None,
                    func_present=torch.cat(fpres, 1) if func_inputs else None)
    return tokens, Decoder(specs=specs, n_cond=n_cond)


def site_attention_mask(q_site: Tensor, q_label: Tensor, k_site: Tensor, k_label: Tensor) -> Tensor:
    """Which key tokens each query token may attend to, shape (Tq, Tk), bool.

    Allowed when either token is global (site -1), when both belong to the same site, or when
    both belong to the same variable. This is the official code's ``cross_local`` independence
    along the site axis (a local variable at site m sees the other local variables only at site
    m), and it is equivariant: permuting sites permutes rows and columns alike.
    """
    qs, ks = q_site[:, None], k_site[None, :]
    return (qs < 0) | (ks < 0) | (qs == ks) | (q_label[:, None] == k_label[None, :])


def pad_sites(batch: Mapping[str, Tensor], local: Iterable[str], n_sites: int,
              masks: Mapping[str, Tensor] | None = None,
              func_inputs: Mapping[str, Tensor] | None = None
              ) -> tuple[dict[str, Tensor], dict[str, Tensor], dict[str, Tensor]]:
    """Pad every local variable with zero-valued absent sites up to ``n_sites``.

    Returns the padded batch, masks (for every variable) and functional inputs.
    """
    local = set(local)
    out, mk, fi = {}, {}, {}
    masks = dict(masks or {})
    func_inputs = dict(func_inputs or {})
    for name, x in batch.items():
        m = masks.get(name, torch.ones(x.shape, dtype=torch.bool))
        f = func_inputs.get(name)
        if name in local:
            extra = n_sites - x.shape[1]
            if extra < 0:
                raise ValueError(f"{name!r} has {x.shape[1]} sites, more than n_sites={n_sites}")
            if extra:
                shape = (x.shape[0], extra, *x.shape[2:])
                x = torch.cat([x, torch.zeros(shape, dtype=x.dtype)], 1)
                m = torch.cat([m, torch.zeros(shape, dtype=torch.bool)], 1)
                if f is not None:
                    f = torch.cat([f, torch.zeros(shape, dtype=f.dtype)], 1)
        out[name], mk[name] = x, m
        if f is not None:
            fi[name] = f
    return out, mk, fi
