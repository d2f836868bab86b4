"""The token-transformer velocity field of TFMPE (PyTorch port of the official
``tfmpe/nn/transformer``, github.com/mrc-ide/tfmpe).

Architecture (official HEAD): every token is embedded by one linear map of
``[value, label embedding, Gaussian-Fourier(position), t, Gaussian-Fourier(functional input),
has-functional-input]``; condition tokens pass through ``n_layers`` self-attention encoder blocks;
target tokens pass through the *same* encoder blocks (shared weights, as the official ``encode``
and ``decode`` both scan ``encoder_blocks``) and then ``n_layers`` decoder blocks that
cross-attend to the encoded conditions; a linear head gives one velocity per target token.
Attention is masked by padding and by the site structure (:func:`~.tokens.site_attention_mask`).

Differences from the official code, on purpose: pre-LayerNorm residual blocks (the official
blocks normalise after attention; pre-LN is steadier for the few hundred steps we train); the
flow time enters only the target tokens' embedding (condition tokens get ``t = 0``), so the
encoded conditions do not depend on ``t`` and are computed once per ODE solve
(:meth:`TokenTransformerVelocity.prepare`).

Defaults are the official ``TransformerConfig``: latent_dim=128, n_layers=2 (n_encoder), n_heads=4,
n_ff=2, label_dim=32, pos_dim=8, func_dim=64 (index_out_dim), dropout=0.1, activation relu.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .tokens import Tokens, site_attention_mask

_NEG = -1e9  # additive mask value: finite so that a fully masked (padding) row gives no NaN


class GaussianFourier(nn.Module):
    """``[sin(2 pi s w), cos(2 pi s w)]`` with fixed ``w ~ N(0, scale^2)`` (``dim`` even)."""

    def __init__(self, dim: int, scale: float = 1.0) -> None:
        super().__init__()
        if dim <= 0 or dim % 2:
            raise ValueError(f"Fourier dim must be a positive even int, got {dim}")
        self.register_buffer("w", torch.randn(dim // 2) * scale)

    def forward(self, s: Tensor) -> Tensor:
        a = 2 * math.pi * s[..., None].to(self.w.dtype) * self.w
        return torch.cat([torch.sin(a), torch.cos(a)], dim=-1)


def _softmax(s: Tensor) -> Tensor:
    """Softmax over the last axis. For the few dozen keys here, ``exp`` and a sum are several
    times faster on CPU than ``torch.softmax`` (which vectorises poorly over short rows)."""
    e = (s - s.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


class _Attention(nn.Module):
    def __init__(self, dim: int, heads: int, dropout: float) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"latent_dim {dim} must be divisible by n_heads {heads}")
        self.heads, self.dropout = heads, dropout
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)

    def keys(self, ctx: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values ``(B, heads, T, d/heads)`` of ``ctx`` (cached for fixed conditions)."""
        b, t, d = ctx.shape
        k, v = self.kv(ctx).reshape(b, t, 2, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        return k, v

    def _weights(self, s: Tensor) -> Tensor:
        w = _softmax(s)
        if self.training and self.dropout > 0:
            w = F.dropout(w, self.dropout)
        return w

    def forward(self, x: Tensor, bias: Tensor | None, kv: tuple[Tensor, Tensor] | None = None,
                group: int = 1) -> Tensor:
        """Self-attention (``kv=None``) or cross-attention to cached keys/values ``kv``.

        ``bias`` (B / group, 1, Tq, Tk) and ``kv`` (B / group, ...) are shared by ``group``
        consecutive query rows (the draws of one observation): the cross-attention is then one
        large matrix product per observation instead of ``group`` tiny ones.
        """
        b, tq, d = x.shape
        h, dh = self.heads, d // self.heads
        kk = b // group
        scale = dh ** -0.5
        q = self.q(x).reshape(b, tq, h, dh)
        if kv is None:  # self-attention: per row
            k, v = self.kv(x).reshape(b, tq, 2, h, dh).permute(2, 0, 3, 1, 4)
            s = (q.transpose(1, 2) @ k.transpose(-1, -2)) * scale  # (B, h, Tq, Tq)
            if bias is not None:  # None: nothing masked
                s = (s.reshape(kk, group, h, tq, tq) + bias[:, None]).reshape(b, h, tq, tq)
            y = (self._weights(s) @ v).transpose(1, 2)  # (B, Tq, h, dh)
        else:  # cross-attention: rows of one group share keys
            k, v = kv  # (K, h, Tk, dh)
            tk = k.shape[2]
            q = q.reshape(kk, group * tq, h, dh).transpose(1, 2)  # (K, h, g*Tq, dh)
            s = (q @ k.transpose(-1, -2)) * scale  # (K, h, g*Tq, Tk)
            s = (s.reshape(kk, h, group, tq, tk) + bias[:, :, None]).reshape(kk, h, group * tq, tk)
            y = (self._weights(s) @ v).transpose(1, 2)  # (K, g*Tq, h, dh)
        return self.out(y.reshape(b, tq, d))


def _mlp(dim: int, n_ff: int, dropout: float) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(n_ff):
        layers.append(nn.Linear(dim, dim))
        if i < n_ff - 1:
            layers += [nn.ReLU(), nn.Dropout(dropout)]
    return nn.Sequential(*layers)


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int, n_ff: int, dropout: float, cross: bool) -> None:
        super().__init__()
        self.ln1, self.att = nn.LayerNorm(dim), _Attention(dim, heads, dropout)
        self.cross = cross
        if cross:
            self.ln_c, self.catt = nn.LayerNorm(dim), _Attention(dim, heads, dropout)
        self.ln2, self.mlp = nn.LayerNorm(dim), _mlp(dim, n_ff, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, self_bias: Tensor | None, kv: tuple[Tensor, Tensor] | None = None,
                cross_bias: Tensor | None = None, group: int = 1) -> Tensor:
        x = x + self.drop(self.att(self.ln1(x), self_bias, group=group))
        if self.cross:
            x = x + self.drop(self.catt(self.ln_c(x), cross_bias, kv, group))
        return x + self.drop(self.mlp(self.ln2(x)))


@dataclass
class Prepared:
    """Encoded condition tokens plus the target tokens' metadata (what one ODE solve reuses).

    ``ctx``, ``cross_kv``, the biases and ``t_const`` have one row per observation; each serves
    ``group`` consecutive rows of the target batch (the posterior draws of that observation), so
    the conditions are encoded, and their keys/values projected, once per solve and per
    observation, not once per draw and step.
    """

    ctx: Tensor  # (K, Tc, L)
    cross_kv: list  # per decoder block: (keys, values), each (K, heads, Tc, L / heads)
    cross_bias: Tensor  # (K, 1, Tt, Tc)
    self_bias: Tensor | None  # (K, 1, Tt, Tt); None when no target pair is masked
    t_const: Tensor  # (K, Tt, L): the embedding of the targets' label/position/functional input
    t_present: Tensor  # (K * group, Tt)
    group: int = 1

    def repeat(self, n: int) -> Prepared:
        """Each batch row repeated ``n`` times (row-major: row k -> rows k*n .. k*n+n-1)."""
        return replace(self, t_present=self.t_present.repeat_interleave(n, dim=0),
                       group=self.group * n)


def _bias(allowed: Tensor, key_present: Tensor) -> Tensor:
    """Additive attention bias (B, 1, Tq, Tk) from a structural (Tq, Tk) and a padding (B, Tk) mask."""
    ok = allowed[None, :, :] & key_present[:, None, :]
    zero = torch.zeros((), dtype=torch.float32)
    return torch.where(ok, zero, torch.full((), _NEG))[:, None]


class TokenTransformerVelocity(nn.Module):
    """Velocity field ``v(x_targets, t; condition tokens)`` on tokens.

    Follows the flow core's protocol ``model(x, t, cond) -> v``: ``x`` (B, T_targets) are the
    target token values, ``t`` (B,), ``cond`` a :class:`~.tokens.Tokens` batch (its target values
    are ignored; its labels/positions/sites/padding are used) or a :class:`Prepared` one.
    Padded target tokens get velocity 0.

    Parameters
    ----------
    n_labels : int
        Number of variable labels (``len(labeller)``).
    latent_dim, n_layers, n_heads, n_ff, label_dim, pos_dim, func_dim, dropout
        See the module docstring (official defaults).
    """

    def __init__(self, n_labels: int, latent_dim: int = 128, n_layers: int = 2, n_heads: int = 4,
                 n_ff: int = 2, label_dim: int = 32, pos_dim: int = 8, func_dim: int = 64,
                 dropout: float = 0.1) -> None:
        super().__init__()
        if n_labels <= 0 or latent_dim <= 0 or n_layers <= 0 or n_ff <= 0:
            raise ValueError("n_labels, latent_dim, n_layers and n_ff must be positive")
        self.label = nn.Embedding(n_labels, label_dim)
        self.pos = GaussianFourier(pos_dim)
        self.func = GaussianFourier(func_dim)
        self.embed = nn.Linear(1 + label_dim + pos_dim + 1 + func_dim + 1, latent_dim)
        self.encoder = nn.ModuleList(_Block(latent_dim, n_heads, n_ff, dropout, False)
                                     for _ in range(n_layers))
        self.decoder = nn.ModuleList(_Block(latent_dim, n_heads, n_ff, dropout, True)
                                     for _ in range(n_layers))
        self.norm = nn.LayerNorm(latent_dim)
        self.head = nn.Linear(latent_dim, 1)
        self.n_labels = n_labels

    def _embed(self, value: Tensor, labels: Tensor, position: Tensor, t: Tensor,
               func: Tensor | None, func_present: Tensor | None) -> Tensor:
        b, n = value.shape
        dt = self.embed.weight.dtype
        parts = [value[..., None].to(dt), self.label(labels).expand(b, n, -1),
                 self.pos(position.to(dt)).expand(b, n, -1), t.to(dt)[:, None, None].expand(b, n, 1)]
        if func is None:
            parts += [torch.zeros(b, n, self.func.w.numel() * 2, dtype=dt),
                      torch.zeros(b, n, 1, dtype=dt)]
        else:
            fp = func_present.to(dt)[..., None]
            parts += [self.func(func) * fp, fp]
        return self.embed(torch.cat(parts, dim=-1))

    def prepare(self, tokens: Tokens) -> Prepared:
        """Encode the condition tokens once (they do not depend on ``t``), project their
        keys/values for every decoder block, and embed the targets' constant features."""
        if not isinstance(tokens, Tokens):
            raise TypeError(f"cond must be Tokens or Prepared, got {type(tokens).__name__}")
        if int(tokens.labels.max()) >= self.n_labels:
            raise ValueError(f"token label {int(tokens.labels.max())} >= n_labels={self.n_labels}")
        c = tokens.n_cond
        b = tokens.batch_size
        lab, pos, site = tokens.labels, tokens.position, tokens.site
        fn = (lambda x, s: None if x is None else x[:, s])
        c_sl, t_sl = slice(0, c), slice(c, None)
        zero_t = torch.zeros(b, dtype=tokens.data.dtype)
        if c > 0:
            h = self._embed(tokens.data[:, c_sl], lab[c_sl], pos[c_sl], zero_t,
                            fn(tokens.func, c_sl), fn(tokens.func_present, c_sl))
            cbias = _bias(site_attention_mask(site[c_sl], lab[c_sl], site[c_sl], lab[c_sl]),
                          tokens.present[:, c_sl])
            for blk in self.encoder:
                h = blk(h, cbias)
            cross = _bias(site_attention_mask(site[t_sl], lab[t_sl], site[c_sl], lab[c_sl]),
                          tokens.present[:, c_sl])
        else:  # unconditional: one dummy all-masked key
            h = torch.zeros(b, 1, self.embed.out_features, dtype=self.embed.weight.dtype)
            cross = torch.full((b, 1, tokens.n_target, 1), _NEG)
        sbias = _bias(site_attention_mask(site[t_sl], lab[t_sl], site[t_sl], lab[t_sl]),
                      tokens.present[:, t_sl])
        if not bool(sbias.any()):
            sbias = None  # skip adding a zero bias in every self-attention of the solve
        nt = tokens.n_target
        # value and t enter the embedding linearly: the rest is a per-token constant
        const = self._embed(torch.zeros(b, nt, dtype=tokens.data.dtype), lab[t_sl], pos[t_sl],
                            zero_t, fn(tokens.func, t_sl), fn(tokens.func_present, t_sl))
        return Prepared(ctx=h, cross_kv=[blk.catt.keys(h) for blk in self.decoder],
                        cross_bias=cross, self_bias=sbias, t_const=const,
                        t_present=tokens.present[:, t_sl])

    def forward(self, x: Tensor, t: Tensor, cond: Tokens | Prepared) -> Tensor:
        p = cond if isinstance(cond, Prepared) else self.prepare(cond)
        if x.dim() != 2 or x.shape != p.t_present.shape:
            raise ValueError(f"x must have shape {tuple(p.t_present.shape)} (batch, target "
                             f"tokens), got {tuple(x.shape)}")
        if t.dim() == 0:
            t = t.expand(x.shape[0])
        g, (b, nt) = p.group, x.shape
        w = self.embed.weight  # columns: [value, label, position, t, functional, has-functional]
        t_col = 1 + self.label.embedding_dim + self.pos.w.numel() * 2
        dt = w.dtype
        h = (p.t_const[:, None] + x.to(dt).reshape(-1, g, nt, 1) * w[:, 0]
             + t.to(dt).reshape(-1, g, 1, 1) * w[:, t_col]).reshape(b, nt, -1)
        for blk in self.encoder:
            h = blk(h, p.self_bias, group=g)
        for blk, kv in zip(self.decoder, p.cross_kv, strict=True):
            h = blk(h, p.self_bias, kv, p.cross_bias, group=g)
        v = self.head(self.norm(h))[..., 0].to(x.dtype)
        return v * p.t_present.to(x.dtype)


def _ln_fold(ln: nn.LayerNorm, lin_w: Tensor, lin_b: Tensor) -> tuple[Tensor, Tensor]:
    """``linear(layer_norm(x))`` = ``linear'(normalise(x))``: the LayerNorm's affine folded into
    the linear map that follows it (``W diag(gamma)``, ``b + W beta``)."""
    return lin_w * ln.weight, lin_b + lin_w @ ln.bias


def _allowed(bias: Tensor) -> Tensor:
    """0/1 float weights of the keys an additive mask ``bias`` (..., Tq, Tk) lets through. A row
    with no allowed key gets all ones: the reference's softmax over ``s - 1e9`` is uniform there
    (float32 cannot hold ``s`` next to 1e9), so it stays uniform (and finite) here."""
    ok = (bias > _NEG / 2).to(torch.float32)
    return torch.where(ok.sum(-1, keepdim=True) > 0, ok, torch.ones((), dtype=ok.dtype))


def _softmax_(s: Tensor, allowed: Tensor | None = None, bias: Tensor | None = None,
              shift_free: bool = True) -> Tensor:
    """In-place softmax over the last axis of the scores ``s`` (overwritten), for
    :class:`FastVelocity`.

    ``allowed`` (broadcastable 0/1 float) zeroes the masked keys after the exponential; ``bias``
    is the reference's additive mask (0 / -1e9). Softmax is shift invariant: when every score
    lies in [-80, 80] (one global min/max, not a per-row max) and no row is fully masked
    (``shift_free``), ``exp(s)`` neither overflows nor underflows and the row maximum is not
    subtracted. Otherwise the reference's route is taken: add ``bias``, subtract the row maximum,
    and clamp the exponent at -87 (``exp`` of an argument that underflows float32 takes a slow
    path on CPU, 8-10x slower; masked weights are then zeroed by ``allowed``; an unmasked key
    more than 87 below its row's maximum weighs ``e^-87`` ~ 1.6e-38 instead of less, far below
    the float precision of the row sum, >= 1).
    """
    lo, hi = torch.aminmax(s)
    if shift_free and float(lo) > -80.0 and float(hi) < 80.0:
        s.exp_()
    else:
        if bias is not None:
            s.add_(bias)
        s.sub_(s.amax(-1, keepdim=True)).clamp_min_(-87.0).exp_()
    if allowed is not None:
        s.mul_(allowed)
    return s.div_(s @ torch.ones(s.shape[-1], 1, dtype=s.dtype))


class FastVelocity:
    """Inference-only velocity field of one prepared ODE solve: the same function as
    :meth:`TokenTransformerVelocity.forward` on a :class:`Prepared` batch, evaluated with fewer
    passes over memory (issue 48: sampling speed). Called as ``field(x, t)`` (the flow core's
    protocol without ``cond``).

    Exact algebraic rewrites (equal up to float rounding, tested against ``forward``):

    - every LayerNorm's affine (gamma, beta) is folded into the linear map that reads it, and the
      attention scale into the query weights;
    - each self-attention's query/key/value projections are one matrix product;
    - cross-attention to the cached (fixed) condition keys/values is folded per observation:
      ``softmax(LN(h) Wq K^T / sqrt(d) + bias) V Wo`` is ``softmax(n(h) A + c) (V Wo)`` with
      ``A = diag(gamma) Wq_h^T K_h^T / sqrt(d)`` (latent x heads*Tc) and ``V Wo`` (heads*Tc x
      latent) computed once per solve; the output bias is carried by ``V Wo`` (each head's
      weights sum to 1), and the residual is added inside the same batched product;
    - the draws are evaluated in chunks of about ``chunk_rows`` token rows, so that the
      activations of a chunk stay in cache (each draw's velocity depends only on its own row).

    Dropout is off (the model must be in eval mode).
    """

    def __init__(self, model: TokenTransformerVelocity, p: Prepared, chunk_rows: int = 12288) -> None:
        if model.training:
            raise RuntimeError("FastVelocity needs the model in eval mode (no dropout)")
        with torch.no_grad():
            self._build(model, p)
        self.chunk_rows = int(chunk_rows)

    def _build(self, model: TokenTransformerVelocity, p: Prepared) -> None:
        w = model.embed.weight
        t_col = 1 + model.label.embedding_dim + model.pos.w.numel() * 2
        self.w_x, self.w_t = w[:, 0].clone(), w[:, t_col].clone()
        self.t_const, self.group, self.present = p.t_const, p.group, p.t_present
        self.k, self.nt, self.dim = p.t_const.shape
        self.eps = model.norm.eps
        sb = p.self_bias
        self.self_bias = None if sb is None else sb[:, 0]  # (K, Tt, Tt)
        self.self_allowed = None if sb is None else _allowed(sb[:, 0])
        self.self_shift_free = sb is None or bool((self.self_allowed == (sb[:, 0] == 0)).all())
        self.inv_d = torch.full((self.dim,), 1.0 / self.dim, dtype=w.dtype)

        def self_att(blk: _Block) -> tuple:
            att = blk.att
            h, d = att.heads, self.dim
            dh = d // h
            wq, wkv = att.q.weight, att.kv.weight  # kv rows: [k (h, dh), v (h, dh)]
            bq, bkv = att.q.bias, att.kv.bias
            wk, wv, bk, bv = wkv[:d], wkv[d:], bkv[:d], bkv[d:]
            scale = dh ** -0.5
            rows, bias = [], []
            for i in range(h):  # rows ordered [head][q, k, v][dh]
                sl = slice(i * dh, (i + 1) * dh)
                rows += [wq[sl] * scale, wk[sl], wv[sl]]
                bias += [bq[sl] * scale, bk[sl], bv[sl]]
            wqkv, bqkv = _ln_fold(blk.ln1, torch.cat(rows), torch.cat(bias))
            return wqkv, bqkv, att.out.weight.t().contiguous(), att.out.bias, h, dh

        def mlp(blk: _Block) -> list:
            lins = [m for m in blk.mlp if isinstance(m, nn.Linear)]
            w1, b1 = _ln_fold(blk.ln2, lins[0].weight, lins[0].bias)
            return [(w1, b1)] + [(m.weight, m.bias) for m in lins[1:]]

        self.enc = [(self_att(b), mlp(b)) for b in model.encoder]
        self.dec = []
        cross_allowed = _allowed(p.cross_bias[:, 0])  # (K, Tt, Tc)
        for blk, (keys, vals) in zip(model.decoder, p.cross_kv, strict=True):
            catt = blk.catt
            h, dh = catt.heads, self.dim // catt.heads
            wq, bq = _ln_fold(blk.ln_c, catt.q.weight, catt.q.bias)
            wo = catt.out.weight  # (d, d)
            tc = keys.shape[2]
            a, c, vw = [], [], []
            for i in range(h):
                sl = slice(i * dh, (i + 1) * dh)
                kh, vh = keys[:, i], vals[:, i]  # (K, Tc, dh)
                a.append(torch.einsum("qd,ktq->kdt", wq[sl], kh) * dh ** -0.5)  # (K, d, Tc)
                c.append((kh @ bq[sl]) * dh ** -0.5)  # (K, Tc)
                vw.append(vh @ wo[:, sl].t() + catt.out.bias / h)  # (K, Tc, d)
            a = torch.cat(a, -1)  # (K, d, h*Tc)
            c = torch.cat(c, -1)[:, None, :].expand(self.k, self.nt, h * tc).contiguous()
            mask = p.cross_bias[:, 0].repeat(1, 1, h).reshape(self.k, self.nt, h, tc)
            allowed = cross_allowed.repeat(1, 1, h).reshape(self.k, self.nt, h, tc)
            shift_free = bool((allowed == (mask == 0)).all())  # no fully masked row
            self.dec.append((self_att(blk), mlp(blk), a, c.reshape(self.k, self.nt, h, tc),
                             mask, torch.cat(vw, 1), allowed, shift_free, h, tc))
        wh = model.head.weight[0]
        self.head_w = (wh * model.norm.weight).contiguous()
        self.head_b = model.head.bias[0] + wh @ model.norm.bias

    # ---------------------------------------------------------------- evaluation
    def _norm(self, x: Tensor) -> Tensor:
        """LayerNorm without affine of rows ``x`` (R, L) (the affine is folded into the next
        linear map); the row means are matrix-vector products, several times faster on CPU
        than ``layer_norm``'s per-row reductions over a few dozen features."""
        xc = x - (x @ self.inv_d)[:, None]
        var = (xc * xc) @ self.inv_d
        return xc.mul_(var.add_(self.eps).rsqrt_()[:, None])

    def _self_attention(self, x: Tensor, params: tuple, kk: Tensor, g: int) -> Tensor:
        """``x`` (R, L) token rows of ``R / Tt`` draws (g per observation); adds the attention."""
        wqkv, bqkv, wo_t, bo, h, dh = params
        nt = self.nt
        b = x.shape[0] // nt
        qkv = F.linear(self._norm(x), wqkv, bqkv).view(b, nt, h, 3, dh)
        ys = []
        for i in range(h):
            s = torch.bmm(qkv[:, :, i, 0], qkv[:, :, i, 1].transpose(1, 2))  # (b, Tt, Tt)
            allowed = bias = None
            if self.self_allowed is not None:
                s = s.view(-1, g, nt, nt)
                allowed, bias = self.self_allowed[kk][:, None], self.self_bias[kk][:, None]
            s = _softmax_(s, allowed, bias, self.self_shift_free).view(b, nt, nt)
            ys.append(torch.bmm(s, qkv[:, :, i, 2]))
        y = torch.cat(ys, -1).view(-1, self.dim)
        return torch.addmm(x, y, wo_t).add_(bo)

    def _mlp(self, x: Tensor, layers: list) -> Tensor:
        y = self._norm(x)
        for j, (w, b) in enumerate(layers):
            if j < len(layers) - 1:
                y = F.linear(y, w, b).relu_()
            else:
                return torch.addmm(x, y, w.t()).add_(b)
        return x  # pragma: no cover - an MLP has at least one layer

    def _eval(self, x: Tensor, t: Tensor, kk: slice) -> Tensor:
        """Velocity of ``x`` (k, g, Tt) at times ``t`` (k, g) for observations ``kk``."""
        k, g, nt = x.shape
        d = self.dim
        h = (self.t_const[kk][:, None] + t[..., None, None] * self.w_t)
        h = h.addcmul_(x[..., None], self.w_x).view(-1, d)
        for att, mlp in self.enc:
            h = self._mlp(self._self_attention(h, att, kk, g), mlp)
        for att, mlp, a, c, mask, vw, allowed, shift_free, nh, tc in self.dec:
            h = self._self_attention(h, att, kk, g)
            s = torch.bmm(self._norm(h).view(k, g * nt, d), a[kk])  # (k, g*Tt, h*Tc)
            s = s.view(k, g, nt, nh, tc).add_(c[kk][:, None])
            s = _softmax_(s, allowed[kk][:, None], mask[kk][:, None], shift_free)
            h = torch.baddbmm(h.view(k, g * nt, d), s.view(k, g * nt, nh * tc), vw[kk]).view(-1, d)
            h = self._mlp(h, mlp)
        return torch.addmv(self.head_b, self._norm(h), self.head_w).view(k, g, nt)

    def __call__(self, x: Tensor, t: Tensor) -> Tensor:
        kn, g, nt = self.k, self.group, self.nt
        if x.dim() != 2 or x.shape != (kn * g, nt):
            raise ValueError(f"x must have shape {(kn * g, nt)} (batch, target tokens), got "
                             f"{tuple(x.shape)}")
        if t.dim() == 0:
            t = t.expand(x.shape[0])
        dt = self.w_x.dtype
        xv, tv = x.to(dt).view(kn, g, nt), t.to(dt).view(kn, g)
        out = torch.empty(kn, g, nt, dtype=dt)
        per = max(1, self.chunk_rows // nt)  # draws per chunk
        if g >= per:  # many draws per observation: chunks of draws
            for i in range(kn):
                for j in range(0, g, per):
                    ks, gs = slice(i, i + 1), slice(j, j + per)
                    out[ks, gs] = self._eval(xv[ks, gs], tv[ks, gs], ks)
        else:  # few draws per observation: chunks of observations
            step = max(1, per // g)
            for i in range(0, kn, step):
                ks = slice(i, i + step)
                out[ks] = self._eval(xv[ks], tv[ks], ks)
        return out.view(kn * g, nt).to(x.dtype) * self.present.to(x.dtype)
