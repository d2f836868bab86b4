"""One-pass C kernel for the ECO-AdamW update of flat FP8 buckets (the optimizer's fast path).

The eager fast path (:meth:`ECOAdamW._flat_update` with ``torch`` ops) makes about a dozen
passes over memory per step: the moments (lerp, mul, addcmul), the denominator (sqrt, div,
add), the decode, the AdamW step, the row absmax, the rounding, the error and the injection.
This kernel does the same arithmetic **in the same order with the same float32 roundings** in
two sweeps over each row (the row's temporaries stay in L1), so it gives the same bits as the
eager path (tested against it, :mod:`tests.papers.eco.test_kernel`): ``lerp`` as ATen's
vectorised ``fmadd(w, end - self, self)``, ``addcmul``/``addcdiv`` as ``self + (s * a) * b`` and
``self + (s * a) / b``, division and square root correctly rounded, no other contraction
(``-ffp-contract=off``). Stochastic rounding reads the random words that the eager path draws
from the optimizer's ``torch.Generator`` (same stream, same chunks).

The kernel is plain C compiled once with the system C compiler (``cc``, ~1 s) into a per-user
cache directory and loaded with ``ctypes``; no torch headers, no build step at install time.
Without a compiler (or with ``ICML26_ECO_KERNEL=0``) :func:`kernel` returns ``None`` and the
optimizer uses the eager path: same results, slower.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from icml26.core.quant import rows as _rows

_SRC = r"""
#include <stdint.h>
#include <string.h>
#include <math.h>

static inline uint32_t fb(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static inline float bf(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* 2^x as a float32 for x in [-149, 127] (ldexpf(1, x) without the call) */
static inline float pow2f(int x) {
    return x >= -126 ? bf((uint32_t)(x + 127) << 23) : bf(1u << (x + 149));
}

/* ceil(log2(ratio)) as frexp gives it: ratio = mm 2^e, mm in [0.5, 1), minus (mm == 0.5) */
static inline int ceil_log2(float ratio) {
    uint32_t u = fb(ratio);
    uint32_t E = (u >> 23) & 0xffu;
    if (E == 0 || E == 0xffu) {  /* subnormal (or not finite): the library's frexpf */
        int e; float mm = frexpf(ratio, &e);
        return e - (mm == 0.5f);
    }
    return (int)E - 126 - ((u & 0x7fffffu) == 0);
}

/* 1 when every value of every segment is finite */
int all_finite(const int64_t *ptrs, const int64_t *sizes, int64_t n_seg) {
    for (int64_t s = 0; s < n_seg; s++) {
        const uint32_t *x = (const uint32_t *)(intptr_t)ptrs[s];
        uint32_t bad = 0;
        for (int64_t i = 0; i < sizes[s]; i++) bad |= ((x[i] & 0x7f800000u) == 0x7f800000u);
        if (bad) return 0;
    }
    return 1;
}

/* torch's CPU generator (mt19937, ATen's core/MT19937RNGEngine.h) on its serialised state
   (CPUGeneratorImpl::get_state: uint64 seed at 0, int32 left at 8, int32 seeded at 12, uint64
   next at 16, 624 uint64-widened state words at 24). mt_random_bits writes the int32 words of
   `torch.empty(n_words / 2, dtype=int64).random_(generator)` (each int64 = (d1 << 32 | d2) mod
   2^63 from two engine outputs d1, d2: words d2, d1 & 0x7fffffff) and advances the state. */
static void mt_twist(uint32_t *st) {
    const uint32_t A = 0x9908b0dfu, U = 0x80000000u, L = 0x7fffffffu;
    int i;
    for (i = 0; i < 624 - 397; i++) {
        uint32_t y = (st[i] & U) | (st[i + 1] & L);
        st[i] = st[i + 397] ^ (y >> 1) ^ ((st[i + 1] & 1u) ? A : 0u);
    }
    for (; i < 623; i++) {
        uint32_t y = (st[i] & U) | (st[i + 1] & L);
        st[i] = st[i + 397 - 624] ^ (y >> 1) ^ ((st[i + 1] & 1u) ? A : 0u);
    }
    uint32_t y = (st[623] & U) | (st[0] & L);
    st[623] = st[396] ^ (y >> 1) ^ ((st[0] & 1u) ? A : 0u);
}

static void mt_load(const uint8_t *gstate, uint32_t *st, int32_t *left, uint64_t *next) {
    memcpy(left, gstate + 8, 4);
    memcpy(next, gstate + 16, 8);
    for (int i = 0; i < 624; i++) { uint64_t w; memcpy(&w, gstate + 24 + 8 * i, 8); st[i] = (uint32_t)w; }
}

static void mt_store(uint8_t *gstate, const uint32_t *st, int32_t left, uint64_t next) {
    memcpy(gstate + 8, &left, 4);
    memcpy(gstate + 16, &next, 8);
    for (int k = 0; k < 624; k++) { uint64_t w = st[k]; memcpy(gstate + 24 + 8 * k, &w, 8); }
}

/* n_words (even) words of int64 random_ draws, see above */
static void mt_words(uint32_t *st, int32_t *left_, uint64_t *next_, uint32_t *out, int64_t n_words) {
    int32_t left = *left_; uint64_t next = *next_;
    int64_t i = 0;
    while (i < n_words) {
        if (left == 1) { mt_twist(st); left = 625; next = 0; }
        int64_t take = left - 1;
        if (take > n_words - i) take = n_words - i;
        for (int64_t j = 0; j < take; j++) {
            uint32_t y = st[next + j];
            y ^= (y >> 11);
            y ^= (y << 7) & 0x9d2c5680u;
            y ^= (y << 15) & 0xefc60000u;
            y ^= (y >> 18);
            out[i + j] = y;
        }
        i += take; left -= (int32_t)take; next += (uint64_t)take;
    }
    for (int64_t p = 0; p + 1 < n_words; p += 2) {
        uint32_t d1 = out[p], d2 = out[p + 1];
        out[p] = d2; out[p + 1] = d1 & 0x7fffffffu;
    }
    *left_ = left; *next_ = next;
}

void mt_random_bits(uint8_t *gstate, uint32_t *out, int64_t n_words) {
    uint32_t st[624]; int32_t left; uint64_t next;
    mt_load(gstate, st, &left, &next);
    mt_words(st, &left, &next, out, n_words);
    mt_store(gstate, st, left, next);
}

/* FP8 code (E4M3FN: mbits 3, bias 7; E5M2: mbits 2, bias 15) of a float32 y with |y| <= max,
   round to nearest even (as torch's cast), subnormals included; branch-free (vectorises).
   Subnormal range: |y| 2^(mbits - emin) < 2^mbits is rounded to an integer by adding 2^23
   (float addition rounds to nearest even) and reading the low mantissa bits. */
static inline uint8_t rne_code(float y, int mbits, int bias, float up, float sub_thr) {
    uint32_t u = fb(y);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t a = u & 0x7fffffffu;
    float ay = bf(a);
    uint32_t qs = fb(ay * up + 8388608.0f) & 0x7fffffu;
    int d = 23 - mbits;
    uint32_t an = a + ((1u << (d - 1)) - 1u) + ((a >> d) & 1u);
    uint32_t qn = (an >> d) - ((uint32_t)(127 - bias) << mbits);
    return (uint8_t)(sign | (ay < sub_thr ? qs : qn));
}

/* The value of an FP8 code as a float32 (never a float32 subnormal: the eager path's
   2^-(127 - bias)-scaled decode is a float32 subnormal for FP8 subnormal codes, and arithmetic
   on those is slow; multiplying the exact value by f gives the same float as multiplying that
   scaled value by 2^(127 - bias) f, the eager path's one rounding). */
static inline float decode(uint8_t c, int mbits, int ebits, int bias, float sub_unit) {
    uint32_t sign = ((uint32_t)c & 0x80u) << 24;
    uint32_t e = ((uint32_t)c >> mbits) & ((1u << ebits) - 1u);
    uint32_t mt = (uint32_t)c & ((1u << mbits) - 1u);
    uint32_t normal = sign | ((e + (uint32_t)(127 - bias)) << 23) | (mt << (23 - mbits));
    uint32_t sub = sign | fb((float)(int32_t)mt * sub_unit);
    return bf(e ? normal : sub);
}

/* Row pointer of a gradient segment table (seg_end: cumulative rows, seg_ptr: data pointers) */
static inline const float *grad_row(const int64_t *seg_end, const int64_t *seg_ptr, int *seg,
                                    int64_t gr, int64_t k) {
    while (seg_end[*seg] <= gr) (*seg)++;
    int64_t start = *seg ? seg_end[*seg - 1] : 0;
    return (const float *)(intptr_t)seg_ptr[*seg] + (gr - start) * k;
}

/* Adam moments of rows [row0, row0 + n_rows): m = lerp(m, g, w) (ATen: fmadd), v = v * beta2
   + (omb2 * g) * g (ATen addcmul: one fused multiply-add) */
void eco_moments(int64_t n_rows, int64_t k, float *restrict m, float *restrict v, const int64_t *seg_end,
                 const int64_t *seg_ptr, int64_t row0, float w, float beta2, float omb2) {
    int seg = 0;
    float wm1 = w - 1.0f;
    int small_w = fabsf(w) < 0.5f;
    for (int64_t r = 0; r < n_rows; r++) {
        const float *g = grad_row(seg_end, seg_ptr, &seg, row0 + r, k);
        float *restrict mr = m + r * k, *restrict vr = v + r * k;
        if (small_w) {
            for (int64_t j = 0; j < k; j++) mr[j] = fmaf(w, g[j] - mr[j], mr[j]);
        } else {
            for (int64_t j = 0; j < k; j++) mr[j] = fmaf(wm1, g[j] - mr[j], g[j]);
        }
        for (int64_t j = 0; j < k; j++) vr[j] = fmaf(omb2 * g[j], g[j], vr[j] * beta2);
    }
}

/* The weight update of n_rows rows: D = sq / sqrt_b2 + eps (sq = torch's sqrt(v), overwritten
   by D), theta = (value * dec) * scale + (stepv * m) / D, E8M0 row scale from the absmax,
   rounding (rbits: stochastic, NULL: nearest), error e, m += (coeff * D) * e (fused, as addcmul) */
void eco_update(int64_t n_rows, int64_t k, uint8_t *restrict codes, uint8_t *restrict scale,
                float *restrict m, float *restrict sq, const uint32_t *restrict rbits, int mbits,
                int ebits, int bias, float max_normal, float sqrt_b2, float eps, float dec,
                float stepv, float coeff, int feedback, float *restrict tmp) {
    int emin = 1 - bias;
    float sub_thr = ldexpf(1.0f, emin);
    float up = ldexpf(1.0f, mbits - emin), down = ldexpf(1.0f, emin - mbits);
    float sub_unit = ldexpf(1.0f, emin - mbits);
    int d = 23 - mbits;
    uint32_t rmask = ((uint32_t)1 << d) - 1u;
    float rscale = ldexpf(1.0f, -d);
    for (int64_t r = 0; r < n_rows; r++) {
        float *restrict mr = m + r * k, *restrict den = sq + r * k;
        uint8_t *restrict cr = codes + r * k;
        float sc = pow2f((int)scale[r] - 127);
        uint32_t amax_bits = 0;  /* max |theta| on the bit patterns (monotone for >= 0) */
        for (int64_t j = 0; j < k; j++) {
            float dj = den[j] / sqrt_b2;
            dj = dj + eps;
            float th = (decode(cr[j], mbits, ebits, bias, sub_unit) * dec) * sc;
            th = th + (stepv * mr[j]) / dj;
            den[j] = dj; tmp[j] = th;
            uint32_t ab = fb(th) & 0x7fffffffu;
            amax_bits = ab > amax_bits ? ab : amax_bits;
        }
        float amax = bf(amax_bits);
        int x;
        if (amax > 0.0f) {
            x = ceil_log2(amax / max_normal);
            if (x < -127) x = -127;
            if (x > 127) x = 127;
        } else {
            x = -127;
        }
        scale[r] = (uint8_t)(x + 127);
        float inv = pow2f(-x), s = pow2f(x);
        if (rbits) {
            const uint32_t *rb = rbits + r * k;
            for (int64_t j = 0; j < k; j++) {
                float y = tmp[j] * inv;
                uint32_t rr = rb[j] & rmask;
                float ay = fabsf(y);
                float q = floorf(ay * up + (float)(int32_t)rr * rscale) * down;
                float tsub = copysignf(q, y);
                float tn = bf((fb(y) + rr) & ~rmask);
                float t = ay < sub_thr ? tsub : tn;
                cr[j] = rne_code(t, mbits, bias, up, sub_thr);  /* exact: t is on the grid */
                float err = (y - t) * s;
                mr[j] = feedback ? fmaf(coeff * den[j], err, mr[j]) : mr[j];
            }
        } else {
            for (int64_t j = 0; j < k; j++) {
                float y = tmp[j] * inv;
                uint8_t c = rne_code(y, mbits, bias, up, sub_thr);
                float t = decode(c, mbits, ebits, bias, sub_unit);
                cr[j] = c;
                float err = (y - t) * s;
                mr[j] = feedback ? fmaf(coeff * den[j], err, mr[j]) : mr[j];
            }
        }
    }
}

typedef void (*sqrt_fn_t)(int n, const float *a, float *r, long long mode);

/* The whole step of a flat bucket in groups of group_rows rows (group_rows * k floats per
   temporary: in L1/L2): moments, sqrt(v) by torch's own routine (sqrt_fn: MKL's vmsSqrt with
   ATen's mode), the random words (gstate: torch's generator state, advanced in place; NULL:
   round to nearest; group_rows * k must be even), the update. */
void eco_step(int64_t n_rows, int64_t k, int64_t group_rows, uint8_t *codes, uint8_t *scale,
              float *m, float *v, const int64_t *seg_end, const int64_t *seg_ptr, uint8_t *gstate,
              void *sqrt_fn, long long sqrt_mode, int mbits, int ebits, int bias, float max_normal,
              float w, float beta2, float omb2, float sqrt_b2, float eps, float dec, float stepv,
              float coeff, int feedback, float *sq, uint32_t *rbuf, float *tmp) {
    uint32_t st[624]; int32_t left = 0; uint64_t next = 0;
    if (gstate) mt_load(gstate, st, &left, &next);
    for (int64_t r0 = 0; r0 < n_rows; r0 += group_rows) {
        int64_t n = n_rows - r0 < group_rows ? n_rows - r0 : group_rows;
        eco_moments(n, k, m + r0 * k, v + r0 * k, seg_end, seg_ptr, r0, w, beta2, omb2);
        ((sqrt_fn_t)sqrt_fn)((int)(n * k), v + r0 * k, sq, sqrt_mode);
        if (gstate) mt_words(st, &left, &next, rbuf, n * k);
        eco_update(n, k, codes + r0 * k, scale + r0, m + r0 * k, sq, gstate ? rbuf : 0, mbits,
                   ebits, bias, max_normal, sqrt_b2, eps, dec, stepv, coeff, feedback, tmp);
    }
    if (gstate) mt_store(gstate, st, left, next);
}

void sqrt_emul(int64_t n, const float *x, float *out, void *fn, long long mode);

/* torch.optim.AdamW's foreach update (as ECOAdamW._batched_float_step) of n_t float32 tensors
   (pointer tables p, g, m, v; sizes; per-tensor sqrt(1 - beta2^t) and -lr / (1 - beta1^t)): the
   moments as eco_moments, D = sqrt(v) / sqrt_b2 + eps with torch's sqrt (the library routine
   on chunks of 4096, or its emulation where emul), p = p * decay (wd), p = p + (stepv * m) / D.
   tmp: 4096 floats. */
void adamw_float(int64_t n_t, const int64_t *pp, const int64_t *gp, const int64_t *mp, const int64_t *vp,
                 const int64_t *sizes, const float *sqb2s, const float *stepvs, float w, float beta2,
                 float omb2, float eps, float decay, int wd, void *sqrt_fn, long long mode, int emul,
                 float *tmp) {
    float wm1 = w - 1.0f;
    int small_w = fabsf(w) < 0.5f;
    for (int64_t t = 0; t < n_t; t++) {
        float *p = (float *)(intptr_t)pp[t], *m = (float *)(intptr_t)mp[t], *v = (float *)(intptr_t)vp[t];
        const float *g = (const float *)(intptr_t)gp[t];
        const float sqb2 = sqb2s[t], stepv = stepvs[t];
        for (int64_t c0 = 0; c0 < sizes[t]; c0 += 4096) {
            int64_t n = sizes[t] - c0 < 4096 ? sizes[t] - c0 : 4096;
            float *restrict pc = p + c0, *restrict mc = m + c0, *restrict vc = v + c0;
            const float *restrict gc = g + c0;
            if (small_w) {
                for (int64_t j = 0; j < n; j++) mc[j] = fmaf(w, gc[j] - mc[j], mc[j]);
            } else {
                for (int64_t j = 0; j < n; j++) mc[j] = fmaf(wm1, gc[j] - mc[j], gc[j]);
            }
            for (int64_t j = 0; j < n; j++) vc[j] = fmaf(omb2 * gc[j], gc[j], vc[j] * beta2);
            if (emul) sqrt_emul(n, vc, tmp, sqrt_fn, mode);
            else ((sqrt_fn_t)sqrt_fn)((int)n, vc, tmp, mode);
            for (int64_t j = 0; j < n; j++) {
                float d = tmp[j] / sqb2;
                d = d + eps;
                float pj = wd ? pc[j] * decay : pc[j];
                pc[j] = pj + (stepv * mc[j]) / d;
            }
        }
    }
}

/* ---- 8-wide path (AVX2 + FMA): the same arithmetic as above, 8 lanes at a time ---------- */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define ECO_SIMD 1
#endif

/* 1 when the 8-wide entry points below are compiled in and the CPU runs them */
int eco_simd(void) {
#ifdef ECO_SIMD
#if defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 1;
#endif
#else
    return 0;
#endif
}

#ifdef ECO_SIMD
typedef __m256 f8; typedef __m256i i8;
#define LDF(p) _mm256_loadu_ps(p)
#define STF(p, x) _mm256_storeu_ps(p, x)
#define LDI(p) _mm256_loadu_si256((const __m256i *)(p))
#define STI(p, x) _mm256_storeu_si256((__m256i *)(p), x)
#define F1(x) _mm256_set1_ps(x)
#define I1(x) _mm256_set1_epi32((int)(x))
#define AS_I(x) _mm256_castps_si256(x)
#define AS_F(x) _mm256_castsi256_ps(x)

/* MKL's vmsSqrt (the routine behind torch.sqrt, HA mode) on 8 lanes: its rsqrtps + two
   Newton-Raphson steps, no FMA (as disassembled from mkl_vml_kernel_sSqrt_EXHAynn). Lanes
   outside [2^-100, 0x7f7ff000] (zero, subnormal, tiny, huge, inf, NaN, negative) get MKL's own
   value: +0 for +0 (in the vector), the library call for the others. Only used after sqrt_emul_mismatch
   found no difference to the library on this machine (self-test at first use). */
static inline f8 sqrt8(f8 x, void *fn, long long mode) {
    const f8 half = F1(0.5f);
    f8 r = _mm256_rsqrt_ps(x);
    f8 s = _mm256_mul_ps(x, r);
    f8 h = _mm256_mul_ps(r, half);
    f8 e = _mm256_sub_ps(half, _mm256_mul_ps(s, h));
    f8 s1 = _mm256_add_ps(_mm256_mul_ps(s, e), s);
    f8 h1 = _mm256_add_ps(_mm256_mul_ps(h, e), h);
    f8 d = _mm256_sub_ps(x, _mm256_mul_ps(s1, s1));
    f8 out = _mm256_add_ps(_mm256_mul_ps(d, h1), s1);
    i8 t = _mm256_sub_epi32(AS_I(x), I1(27u << 23));
    const i8 bound = I1(0x7f7ff000u - (27u << 23) + 1u);
    i8 rare = _mm256_cmpeq_epi32(_mm256_max_epu32(t, bound), t);
    i8 zero = _mm256_cmpeq_epi32(AS_I(x), _mm256_setzero_si256());
    out = AS_F(_mm256_andnot_si256(zero, AS_I(out)));  /* +0 for +0 */
    rare = _mm256_andnot_si256(zero, rare);
    if (__builtin_expect(!_mm256_testz_si256(rare, rare), 0)) {
        float xa[8], ra[8]; STF(xa, x); STF(ra, out);
        uint32_t rm[8]; STI(rm, rare);
        for (int l = 0; l < 8; l++) {
            if (rm[l]) ((sqrt_fn_t)fn)(1, xa + l, ra + l, mode);
        }
        out = LDF(ra);
    }
    return out;
}

/* the emulation over an array (tested against the library by sqrt_emul_mismatch) */
void sqrt_emul(int64_t n, const float *x, float *out, void *fn, long long mode) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) STF(out + i, sqrt8(LDF(x + i), fn, mode));
    if (i < n) {
        float a[8] = {1, 1, 1, 1, 1, 1, 1, 1}, r[8];
        memcpy(a, x + i, 4 * (n - i));
        STF(r, sqrt8(LDF(a), fn, mode));
        memcpy(out + i, r, 4 * (n - i));
    }
}

/* bit patterns lo, lo + stride, ... < hi: how many differ between fn and the emulation */
int64_t sqrt_emul_mismatch(void *fn, long long mode, uint64_t lo, uint64_t hi, uint64_t stride) {
    enum { C = 4096 };
    float a[C], r1[C], r2[C];
    int64_t bad = 0;
    uint64_t b = lo;
    while (b < hi) {
        int n = 0;
        for (; n < C && b < hi; n++, b += stride) { uint32_t u = (uint32_t)b; memcpy(a + n, &u, 4); }
        ((sqrt_fn_t)fn)(n, a, r1, mode);
        sqrt_emul(n, a, r2, fn, mode);
        for (int i = 0; i < n; i++) bad += fb(r1[i]) != fb(r2[i]);
    }
    return bad;
}

/* mt_twist with 8 lanes: in the first 227 words st[i + 397] is still old, after that the
   words read (st[i - 227]) are at least 227 >= 8 behind the ones written */
static void mt_twist8(uint32_t *st) {
    const uint32_t A = 0x9908b0dfu, U = 0x80000000u, L = 0x7fffffffu;
    const i8 vU = I1(U), vL = I1(L), vA = I1(A), zero = _mm256_setzero_si256();
    int i = 0;
#define TW(OFF) do { \
        i8 a = LDI(st + i), b = LDI(st + i + 1), c = LDI(st + i + (OFF)); \
        i8 y = _mm256_or_si256(_mm256_and_si256(a, vU), _mm256_and_si256(b, vL)); \
        i8 mag = AS_I(_mm256_blendv_ps(AS_F(zero), AS_F(vA), AS_F(_mm256_slli_epi32(b, 31)))); \
        STI(st + i, _mm256_xor_si256(_mm256_xor_si256(c, _mm256_srli_epi32(y, 1)), mag)); \
    } while (0)
    for (; i + 8 <= 624 - 397; i += 8) TW(397);
    for (; i < 624 - 397; i++) {
        uint32_t y = (st[i] & U) | (st[i + 1] & L);
        st[i] = st[i + 397] ^ (y >> 1) ^ ((st[i + 1] & 1u) ? A : 0u);
    }
    for (; i + 8 <= 623; i += 8) TW(397 - 624);
#undef TW
    for (; i < 623; i++) {
        uint32_t y = (st[i] & U) | (st[i + 1] & L);
        st[i] = st[i + 397 - 624] ^ (y >> 1) ^ ((st[i + 1] & 1u) ? A : 0u);
    }
    uint32_t y = (st[623] & U) | (st[0] & L);
    st[623] = st[396] ^ (y >> 1) ^ ((st[0] & 1u) ? A : 0u);
}

static inline uint32_t temper(uint32_t y) {
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
}

/* mt_words with 8 lanes (same words; swap 0: each pair of words left as the engine gives it, d1
   then d2 without the mask, for a reader that swaps them itself) */
static void mt_words8(uint32_t *st, int32_t *left_, uint64_t *next_, uint32_t *out, int64_t n_words, int swap) {
    int32_t left = *left_; uint64_t next = *next_;
    int64_t i = 0;
    const i8 m1 = I1(0x9d2c5680u), m2 = I1(0xefc60000u);
    while (i < n_words) {
        if (left == 1) { mt_twist8(st); left = 625; next = 0; }
        int64_t take = left - 1;
        if (take > n_words - i) take = n_words - i;
        const uint32_t *src = st + next;
        uint32_t *dst = out + i;
        int64_t j = 0;
        for (; j + 8 <= take; j += 8) {
            i8 y = LDI(src + j);
            y = _mm256_xor_si256(y, _mm256_srli_epi32(y, 11));
            y = _mm256_xor_si256(y, _mm256_and_si256(_mm256_slli_epi32(y, 7), m1));
            y = _mm256_xor_si256(y, _mm256_and_si256(_mm256_slli_epi32(y, 15), m2));
            y = _mm256_xor_si256(y, _mm256_srli_epi32(y, 18));
            STI(dst + j, y);
        }
        for (; j < take; j++) dst[j] = temper(src[j]);
        i += take; left -= (int32_t)take; next += (uint64_t)take;
    }
    *left_ = left; *next_ = next;
    if (!swap) return;
    const i8 keep = _mm256_setr_epi32(-1, 0x7fffffff, -1, 0x7fffffff, -1, 0x7fffffff, -1, 0x7fffffff);
    int64_t p = 0;
    for (; p + 8 <= n_words; p += 8)
        STI(out + p, _mm256_and_si256(_mm256_shuffle_epi32(LDI(out + p), 0xb1), keep));
    for (; p + 1 < n_words; p += 2) {
        uint32_t d1 = out[p], d2 = out[p + 1];
        out[p] = d2; out[p + 1] = d1 & 0x7fffffffu;
    }
}

void mt_random_bits8(uint8_t *gstate, uint32_t *out, int64_t n_words) {
    uint32_t st[624]; int32_t left; uint64_t next;
    mt_load(gstate, st, &left, &next);
    mt_words8(st, &left, &next, out, n_words, 1);
    mt_store(gstate, st, left, next);
}

/* FP8 constants of a format (as in eco_update) */
typedef struct {
    int mbits, ebits, bias, d;
    f8 up, down, sub_thr, sub_unit, rscale;
    i8 rmask, nrmask, emask, mmask, ebias, ebias23, sub_code, half_m1, qoff, lo8;
    __m128i sh_m, sh_d, sh_mant;
} fp8c;

static inline fp8c fp8_consts(int mbits, int ebits, int bias) {
    fp8c c;
    int emin = 1 - bias;
    c.mbits = mbits; c.ebits = ebits; c.bias = bias; c.d = 23 - mbits;
    c.up = F1(ldexpf(1.0f, mbits - emin)); c.down = F1(ldexpf(1.0f, emin - mbits));
    c.sub_thr = F1(ldexpf(1.0f, emin)); c.sub_unit = F1(ldexpf(1.0f, emin - mbits));
    c.rscale = F1(ldexpf(1.0f, -c.d));
    uint32_t rmask = ((uint32_t)1 << c.d) - 1u;
    c.rmask = I1(rmask); c.nrmask = I1(~rmask);
    c.emask = I1((1u << ebits) - 1u); c.mmask = I1((1u << mbits) - 1u);
    c.ebias = I1((uint32_t)(127 - bias));
    c.ebias23 = I1((uint32_t)(127 - bias) << 23);
    c.sub_code = I1(1u << mbits);
    c.half_m1 = I1((1u << (c.d - 1)) - 1u);
    c.qoff = I1((uint32_t)(127 - bias) << mbits);
    c.lo8 = I1(0xffu);
    c.sh_m = _mm_cvtsi32_si128(mbits); c.sh_d = _mm_cvtsi32_si128(c.d);
    c.sh_mant = _mm_cvtsi32_si128(23 - mbits);
    return c;
}

/* decode() on 8 codes (int32 lanes holding 0..255): a normal code's exponent-mantissa bits
   shifted into place plus the exponent bias; the subnormal formula only for blocks that have a
   code with exponent field 0 */
static inline f8 decode8(i8 cd, const fp8c *c) {
    i8 mag = _mm256_and_si256(cd, I1(0x7fu));
    i8 sign = _mm256_slli_epi32(_mm256_and_si256(cd, I1(0x80u)), 24);
    i8 normal = _mm256_add_epi32(_mm256_sll_epi32(mag, c->sh_mant), c->ebias23);
    i8 is_sub = _mm256_cmpgt_epi32(c->sub_code, mag);  /* exponent field 0: mag < 2^mbits */
    if (_mm256_testz_si256(is_sub, is_sub)) return AS_F(_mm256_or_si256(normal, sign));
    i8 sub = AS_I(_mm256_mul_ps(_mm256_cvtepi32_ps(mag), c->sub_unit));  /* mag = mantissa here */
    return AS_F(_mm256_or_si256(_mm256_blendv_epi8(normal, sub, is_sub), sign));
}

/* rne_code() on 8 floats: the code in the low byte of each int32 lane (as the uint8 cast) */
static inline i8 rne8(f8 y, const fp8c *c) {
    i8 u = AS_I(y);
    i8 sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), I1(0x80u));
    i8 a = _mm256_and_si256(u, I1(0x7fffffffu));
    f8 ay = AS_F(a);
    i8 qs = _mm256_and_si256(AS_I(_mm256_add_ps(_mm256_mul_ps(ay, c->up), F1(8388608.0f))), I1(0x7fffffu));
    i8 an = _mm256_add_epi32(_mm256_add_epi32(a, c->half_m1),
                             _mm256_and_si256(_mm256_srl_epi32(a, c->sh_d), I1(1)));
    i8 qn = _mm256_sub_epi32(_mm256_srl_epi32(an, c->sh_d), c->qoff);
    i8 is_sub = AS_I(_mm256_cmp_ps(ay, c->sub_thr, _CMP_LT_OQ));
    return _mm256_and_si256(_mm256_or_si256(sign, _mm256_blendv_epi8(qn, qs, is_sub)), c->lo8);
}

static inline i8 load_codes(const uint8_t *p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

static inline void store_codes(uint8_t *p, i8 cd) {
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(cd), _mm256_extracti128_si256(cd, 1));
    _mm_storel_epi64((__m128i *)p, _mm_packus_epi16(w, w));
}

/* pass 1a of a row on 8 lanes: the moments and D (into den) */
static inline void pass1a(const float *g, float *m, float *v, float *den, int small_w, f8 W, f8 WM1,
                          f8 B2, f8 OMB2, f8 SQB2, f8 EPS, void *fn, long long mode) {
    f8 gv = LDF(g), mv = LDF(m), vv = LDF(v);
    f8 diff = _mm256_sub_ps(gv, mv);
    mv = small_w ? _mm256_fmadd_ps(W, diff, mv) : _mm256_fmadd_ps(WM1, diff, gv);
    vv = _mm256_fmadd_ps(_mm256_mul_ps(OMB2, gv), gv, _mm256_mul_ps(vv, B2));
    STF(m, mv); STF(v, vv);
    STF(den, _mm256_add_ps(_mm256_div_ps(sqrt8(vv, fn, mode), SQB2), EPS));
}

/* pass 1b of a row on 8 lanes: theta (into th); returns |theta| bits */
static inline i8 pass1b(const float *m, const uint8_t *cd, const float *den, float *th, f8 DEC, f8 SC,
                        f8 STEPV, const fp8c *c) {
    f8 t = _mm256_mul_ps(_mm256_mul_ps(decode8(load_codes(cd), c), DEC), SC);
    t = _mm256_add_ps(t, _mm256_div_ps(_mm256_mul_ps(STEPV, LDF(m)), LDF(den)));
    STF(th, t);
    return _mm256_and_si256(AS_I(t), I1(0x7fffffffu));
}

/* pass 2 of a row on 8 lanes: rounding (rb: random words, each pair as the engine gives it, or
   NULL), codes, m += coeff D e.
   The code and the rounded value come from the same integer steps as rne_code: under SR the
   value t is on the grid, so rne_code(t) is its exponent-mantissa bits (normal) or the integer
   floor(...) (subnormal); under RTN the rounded bits an (normal) or the integer q (subnormal) are
   the value decode(code) (exact_t: the row has no value beyond the format's range, no NaN). */
static inline void pass2(const float *th, const float *den, const uint32_t *rb, uint8_t *cd, float *m,
                         f8 INV, f8 S, f8 COEFF, int feedback, int exact_t, const fp8c *c) {
    f8 y = _mm256_mul_ps(LDF(th), INV);
    f8 ay = AS_F(_mm256_and_si256(AS_I(y), I1(0x7fffffffu)));
    f8 is_sub = _mm256_cmp_ps(ay, c->sub_thr, _CMP_LT_OQ);
    const int any_sub = _mm256_movemask_ps(is_sub);  /* lanes in the subnormal range: rare */
    f8 t; i8 code;
    if (rb) {
        i8 rr = _mm256_and_si256(_mm256_shuffle_epi32(LDI(rb), 0xb1), c->rmask);  /* d2, d1 of each pair */
        f8 tn = AS_F(_mm256_and_si256(_mm256_add_epi32(AS_I(y), rr), c->nrmask));
        i8 mag;
        if (!any_sub) {
            t = tn;
            mag = _mm256_sub_epi32(_mm256_srl_epi32(_mm256_and_si256(AS_I(t), I1(0x7fffffffu)), c->sh_d), c->qoff);
        } else {
            f8 qf = _mm256_floor_ps(_mm256_add_ps(_mm256_mul_ps(ay, c->up),
                                                  _mm256_mul_ps(_mm256_cvtepi32_ps(rr), c->rscale)));
            f8 tsub = AS_F(_mm256_or_si256(AS_I(_mm256_mul_ps(qf, c->down)),
                                           _mm256_and_si256(AS_I(y), I1(0x80000000u))));
            t = _mm256_blendv_ps(tn, tsub, is_sub);
            i8 qn = _mm256_sub_epi32(_mm256_srl_epi32(_mm256_and_si256(AS_I(t), I1(0x7fffffffu)), c->sh_d), c->qoff);
            mag = _mm256_blendv_epi8(qn, _mm256_cvttps_epi32(qf), AS_I(is_sub));
        }
        code = _mm256_and_si256(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(AS_I(t), 24), I1(0x80u)), mag),
                                c->lo8);
    } else if (exact_t) {
        i8 u = AS_I(y), a = AS_I(ay);
        i8 sign = _mm256_and_si256(u, I1(0x80000000u));
        i8 an = _mm256_add_epi32(_mm256_add_epi32(a, c->half_m1),
                                 _mm256_and_si256(_mm256_srl_epi32(a, c->sh_d), I1(1)));
        i8 qn = _mm256_sub_epi32(_mm256_srl_epi32(an, c->sh_d), c->qoff);
        i8 tn = _mm256_and_si256(an, c->nrmask);
        if (!any_sub) {
            code = _mm256_and_si256(_mm256_or_si256(_mm256_srli_epi32(sign, 24), qn), c->lo8);
            t = AS_F(_mm256_or_si256(tn, sign));
        } else {
            f8 qsf = _mm256_add_ps(_mm256_mul_ps(ay, c->up), F1(8388608.0f));
            i8 qs = _mm256_and_si256(AS_I(qsf), I1(0x7fffffu));
            code = _mm256_and_si256(_mm256_or_si256(_mm256_srli_epi32(sign, 24),
                                                    _mm256_blendv_epi8(qn, qs, AS_I(is_sub))), c->lo8);
            f8 tsub = _mm256_mul_ps(_mm256_sub_ps(qsf, F1(8388608.0f)), c->down);
            t = AS_F(_mm256_or_si256(_mm256_blendv_epi8(tn, AS_I(tsub), AS_I(is_sub)), sign));
        }
    } else {
        code = rne8(y, c);
        t = decode8(code, c);
    }
    store_codes(cd, code);
    if (feedback) {
        f8 err = _mm256_mul_ps(_mm256_sub_ps(y, t), S);
        STF(m, _mm256_fmadd_ps(_mm256_mul_ps(COEFF, LDF(den)), err, LDF(m)));
    }
}

/* eco_step with 8 lanes and the sqrt emulated in the first pass (sqrt8: only after the
   self-test passed); same results. buf: 2 k + 16 floats; rbuf: group_rows k + 8 words. */
void eco_step8(int64_t n_rows, int64_t k, int64_t group_rows, uint8_t *codes, uint8_t *scale,
               float *m, float *v, const int64_t *seg_end, const int64_t *seg_ptr, uint8_t *gstate,
               void *sqrt_fn, long long sqrt_mode, int mbits, int ebits, int bias, float max_normal,
               float w, float beta2, float omb2, float sqrt_b2, float eps, float dec, float stepv,
               float coeff, int feedback, uint32_t *rbuf, float *buf) {
    uint32_t st[624]; int32_t left = 0; uint64_t next = 0;
    if (gstate) mt_load(gstate, st, &left, &next);
    fp8c c = fp8_consts(mbits, ebits, bias);
    const int small_w = fabsf(w) < 0.5f;
    const f8 W = F1(w), WM1 = F1(w - 1.0f), B2 = F1(beta2), OMB2 = F1(omb2), SQB2 = F1(sqrt_b2),
             EPS = F1(eps), DEC = F1(dec), STEPV = F1(stepv), COEFF = F1(coeff);
    float *den = buf, *th = buf + k + 8;
    const int64_t k8 = k & ~(int64_t)7, kt = k - k8;
    const i8 lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), tail_mask = _mm256_cmpgt_epi32(I1(kt), lane);
    int seg = 0;
    for (int64_t r0 = 0; r0 < n_rows; r0 += group_rows) {
        int64_t n = n_rows - r0 < group_rows ? n_rows - r0 : group_rows;
        if (gstate) mt_words8(st, &left, &next, rbuf, n * k, 0);  /* pairs swapped in pass2 */
        for (int64_t r = 0; r < n; r++) {
            int64_t row = r0 + r;
            const float *g = grad_row(seg_end, seg_ptr, &seg, row, k);
            float *mr = m + row * k, *vr = v + row * k;
            uint8_t *cr = codes + row * k;
            const f8 SC = F1(pow2f((int)scale[row] - 127));
            i8 amax = _mm256_setzero_si256();
            int64_t j = 0;
            for (; j < k8; j += 8)
                pass1a(g + j, mr + j, vr + j, den + j, small_w, W, WM1, B2, OMB2, SQB2, EPS, sqrt_fn, sqrt_mode);
            if (kt) {
                float gt[8] = {0}, mt_[8] = {0}, vt[8] = {1, 1, 1, 1, 1, 1, 1, 1};
                memcpy(gt, g + j, 4 * kt); memcpy(mt_, mr + j, 4 * kt); memcpy(vt, vr + j, 4 * kt);
                pass1a(gt, mt_, vt, den + j, small_w, W, WM1, B2, OMB2, SQB2, EPS, sqrt_fn, sqrt_mode);
                memcpy(mr + j, mt_, 4 * kt); memcpy(vr + j, vt, 4 * kt);
            }
            for (j = 0; j < k8; j += 8)
                amax = _mm256_max_epu32(amax, pass1b(mr + j, cr + j, den + j, th + j, DEC, SC, STEPV, &c));
            if (kt) {
                float mt_[8] = {0};
                uint8_t ct[8] = {0};
                memcpy(mt_, mr + j, 4 * kt); memcpy(ct, cr + j, kt);
                amax = _mm256_max_epu32(amax, _mm256_and_si256(pass1b(mt_, ct, den + j, th + j, DEC, SC, STEPV, &c),
                                                               tail_mask));
            }
            uint32_t ab8[8]; STI(ab8, amax);
            uint32_t amax_bits = 0;
            for (int l = 0; l < 8; l++) amax_bits = ab8[l] > amax_bits ? ab8[l] : amax_bits;
            float amx = bf(amax_bits);
            int x;
            if (amx > 0.0f) {
                x = ceil_log2(amx / max_normal);
                if (x < -127) x = -127;
                if (x > 127) x = 127;
            } else {
                x = -127;
            }
            scale[row] = (uint8_t)(x + 127);
            const f8 INV = F1(pow2f(-x)), S = F1(pow2f(x));
            const uint32_t *rb = gstate ? rbuf + r * k : 0;
            const int exact_t = amax_bits < 0x7f800000u && x < 127;  /* else decode the codes */
            for (j = 0; j < k8; j += 8)
                pass2(th + j, den + j, rb ? rb + j : 0, cr + j, mr + j, INV, S, COEFF, feedback, exact_t, &c);
            if (kt) {
                float mt_[8] = {0};
                uint32_t rt[8] = {0};
                uint8_t ct[8];
                memcpy(mt_, mr + j, 4 * kt);
                if (rb) memcpy(rt, rb + j, 4 * kt);
                pass2(th + j, den + j, rb ? rt : 0, ct, mt_, INV, S, COEFF, feedback, exact_t, &c);
                memcpy(cr + j, ct, kt); memcpy(mr + j, mt_, 4 * kt);
            }
        }
    }
    if (gstate) mt_store(gstate, st, left, next);
}
#else
void sqrt_emul(int64_t n, const float *x, float *out, void *fn, long long mode) {
    (void)n; (void)x; (void)out; (void)fn; (void)mode;
}
int64_t sqrt_emul_mismatch(void *fn, long long mode, uint64_t lo, uint64_t hi, uint64_t stride) {
    (void)fn; (void)mode; (void)lo; (void)hi; (void)stride;
    return -1;
}
void mt_random_bits8(uint8_t *gstate, uint32_t *out, int64_t n_words) { mt_random_bits(gstate, out, n_words); }
void eco_step8(void) {}
#endif
"""

_FLAGS = ["-O3", "-march=native", "-ffp-contract=off", "-fno-fast-math", "-fno-trapping-math",
          "-fno-math-errno", "-fPIC", "-shared"]
"""No flag that changes a result: no contraction into FMA (only the explicit ``fmaf`` where ATen
fuses), no fast-math; not trapping and no errno only let the compiler vectorise."""
_LIB: ctypes.CDLL | None | bool = False  # False: not tried yet


def _build() -> ctypes.CDLL | None:
    if os.environ.get("ICML26_ECO_KERNEL", "1") == "0" or sys.platform == "win32":
        return None
    key = hashlib.sha256((_SRC + " ".join(_FLAGS) + platform.machine() + platform.node()).encode())
    d = Path(os.environ.get("ICML26_CACHE", Path(tempfile.gettempdir()) / f"icml26-{os.getuid()}"))
    so = d / f"eco_kernel_{key.hexdigest()[:16]}.so"
    try:
        if not so.exists():
            d.mkdir(parents=True, exist_ok=True)
            src = d / f"eco_kernel_{key.hexdigest()[:16]}.c"
            src.write_text(_SRC, encoding="utf-8")
            tmp = so.with_suffix(f".{os.getpid()}.tmp")
            subprocess.run([os.environ.get("CC", "cc"), *_FLAGS, str(src), "-o", str(tmp), "-lm"],
                           check=True, capture_output=True, timeout=120)
            os.replace(tmp, so)
        lib = ctypes.CDLL(str(so))
    except (OSError, subprocess.SubprocessError):
        return None
    i64, vp, f32, i32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_float, ctypes.c_int
    lib.all_finite.argtypes = [vp, vp, i64]
    lib.all_finite.restype = i32
    lib.mt_random_bits.argtypes = [vp, vp, i64]
    lib.mt_random_bits.restype = None
    lib.eco_moments.argtypes = [i64, i64, vp, vp, vp, vp, i64, f32, f32, f32]
    lib.eco_moments.restype = None
    lib.eco_update.argtypes = [i64, i64, vp, vp, vp, vp, vp, i32, i32, i32, f32, f32, f32, f32, f32,
                               f32, i32, vp]
    lib.eco_update.restype = None
    lib.eco_step.argtypes = [i64, i64, i64, vp, vp, vp, vp, vp, vp, vp, vp, ctypes.c_longlong, i32,
                             i32, i32, f32, f32, f32, f32, f32, f32, f32, f32, f32, i32, vp, vp, vp]
    lib.eco_step.restype = None
    lib.eco_simd.argtypes = []
    lib.eco_simd.restype = i32
    lib.sqrt_emul.argtypes = [i64, vp, vp, vp, ctypes.c_longlong]
    lib.sqrt_emul.restype = None
    lib.sqrt_emul_mismatch.argtypes = [vp, ctypes.c_longlong, ctypes.c_uint64, ctypes.c_uint64,
                                       ctypes.c_uint64]
    lib.sqrt_emul_mismatch.restype = i64
    lib.mt_random_bits8.argtypes = [vp, vp, i64]
    lib.mt_random_bits8.restype = None
    lib.eco_step8.argtypes = [i64, i64, i64, vp, vp, vp, vp, vp, vp, vp, vp, ctypes.c_longlong, i32,
                              i32, i32, f32, f32, f32, f32, f32, f32, f32, f32, f32, i32, vp, vp]
    lib.eco_step8.restype = None
    lib.adamw_float.argtypes = [i64, vp, vp, vp, vp, vp, vp, vp, f32, f32, f32, f32, f32, i32, vp,
                                ctypes.c_longlong, i32, vp]
    lib.adamw_float.restype = None
    return lib


_VML_MODE = 0x2 | 0x140000 | 0x100
"""ATen's mode for MKL VML calls (at::vml: VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE)."""
_SQRT: int | None | bool = False


VML_MODE = _VML_MODE


def sqrt_function() -> int | None:
    """Address of the routine behind ``torch.sqrt`` on float32 CPU tensors (MKL's ``vmsSqrt``
    in torch's own library, called with ATen's mode) when it is exported and gives torch's bits
    on a self-test (random, tiny, huge, subnormal, zero values; odd lengths and offsets); else
    ``None`` (the kernel then calls ``torch.sqrt`` between its two passes)."""
    global _SQRT
    if _SQRT is False:
        _SQRT = None
        try:
            lib_dir = Path(torch.__file__).parent / "lib"
            cands = sorted(lib_dir.glob("libtorch_cpu*"))
            if cands:
                fn = ctypes.CDLL(str(cands[0])).vmsSqrt
                gen = torch.Generator().manual_seed(0)
                x = torch.cat([torch.rand(4099, generator=gen), torch.rand(999, generator=gen) * 1e-30,
                               torch.rand(777, generator=gen) * 1e30, torch.tensor([0.0, 1e-45, 1e-40, 3e38]),
                               torch.randn(5000, generator=gen).abs() * 1e-4])
                ok = True
                for lo, hi in ((0, x.numel()), (1, 4098), (5, 6), (3001, x.numel() - 3)):
                    out = torch.empty(hi - lo)
                    fn(ctypes.c_int(hi - lo), ctypes.c_void_p(x[lo:hi].data_ptr()),
                       ctypes.c_void_p(out.data_ptr()), ctypes.c_longlong(_VML_MODE))
                    ok &= torch.equal(out.view(torch.int32), torch.sqrt(x[lo:hi]).view(torch.int32))
                if ok:
                    _SQRT = ctypes.cast(fn, ctypes.c_void_p).value
        except (OSError, AttributeError):
            _SQRT = None
    return _SQRT


_SIMD: bool | None = None


def simd() -> bool:
    """Whether the 8-wide step (``eco_step8``: AVX2 + FMA, MKL's sqrt sequence emulated in the
    kernel) is used: compiled in, the CPU runs it, ``ICML26_ECO_SIMD`` is not ``0``, torch's sqrt
    routine is found, and the emulation gives that routine's bits on the self-test
    (:func:`sqrt_self_test`). Otherwise the portable kernel (one library sqrt call per row
    group) runs: same results."""
    global _SIMD
    if _SIMD is None:
        lib = kernel()
        _SIMD = bool(lib is not None and os.environ.get("ICML26_ECO_SIMD", "1") != "0"
                     and lib.eco_simd() and sqrt_function() is not None and sqrt_self_test() == 0)
    return _SIMD


SQRT_TEST_RANGES = (
    (0x3F800000, 0x40800000, 1),  # [1, 4): every float of two binades (the sequence is 4^k-invariant)
    (0x0D800000, 0x0E800000, 1),  # [2^-100, 2^-98): the smallest inputs the sequence handles itself
    (0x7E800000, 0x7F800000, 1),  # [2^126, 2^128): the largest, up to the rare-lane bound 0x7f7ff000
    (0x00000000, 0x7F800001, 997),  # samples of every exponent: zero, subnormals, tiny ones, +inf
    (0x00000000, 0x00000400, 1), (0x7F7FEF00, 0x7F7FF100, 1),  # around the rare-lane bounds
    (0x0D7FFF00, 0x0D800100, 1), (0x7F800000, 0x80000400, 1 << 12),  # NaNs, -0
    (0x80000000, 0xFFFFFFFF, 1 << 20),  # negatives
)
"""Bit-pattern ranges ``(lo, hi, stride)`` on which :func:`sqrt_self_test` compares the kernel's
emulated sqrt with the library routine."""
_SQRT_TEST: int | None = None


def sqrt_self_test() -> int:
    """How many inputs of :data:`SQRT_TEST_RANGES` (about 50M) the kernel's emulation of MKL's
    sqrt gets wrong compared to the library routine itself (0: the emulation is used; -1: no
    routine or no 8-wide kernel). Run once per process (about 0.1 s)."""
    global _SQRT_TEST
    if _SQRT_TEST is None:
        lib, fn = kernel(), sqrt_function()
        if lib is None or fn is None or not lib.eco_simd():
            _SQRT_TEST = -1
        else:
            _SQRT_TEST = sum(lib.sqrt_emul_mismatch(fn, _VML_MODE, lo, hi, st) for lo, hi, st in SQRT_TEST_RANGES)
    return _SQRT_TEST


def set_simd(flag: bool) -> None:
    """Force the portable kernel (``False``) or let :func:`simd` decide again (``True``)."""
    global _SIMD
    _SIMD = None if flag else False


_MT_OK: bool | None = None


def random_bits(n: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """:func:`icml26.core.quant.rows.random_bits` on the CPU, the same words from the same
    generator stream (and the generator left in the same state), drawn by the C engine: torch's
    ``random_`` draws one element at a time through a serial kernel. Falls back to torch where
    the kernel is missing or its self-test against torch (on first use) fails."""
    global _MT_OK
    lib = kernel()
    gen = generator if generator is not None else torch.default_generator
    if lib is not None and _MT_OK is None:
        _MT_OK = _mt_self_test(lib)
    if lib is None or not _MT_OK or gen.device.type != "cpu":
        return _rows.random_bits(n, generator)
    words = 2 * ((n + 1) // 2)
    out = torch.empty(words, dtype=torch.int32)
    state = gen.get_state()
    if state.numel() != _STATE_BYTES:
        return _rows.random_bits(n, generator)
    _mt_fn(lib)(state.data_ptr(), out.data_ptr(), words)
    gen.set_state(state)
    return out[:n]


_STATE_BYTES = 5056
STATE_BYTES = _STATE_BYTES


def mt_ok() -> bool:
    """Whether the C engine reproduces torch's generator (self-test on first use)."""
    global _MT_OK
    lib = kernel()
    if lib is None:
        return False
    if _MT_OK is None:
        _MT_OK = _mt_self_test(lib)
    return bool(_MT_OK)


def _mt_fn(lib):
    """The engine's entry point: 8-wide where the CPU runs it (same words)."""
    return lib.mt_random_bits8 if lib.eco_simd() else lib.mt_random_bits


def _mt_self_test(lib) -> bool:
    """The C engine gives torch's words (several twists, odd and even counts) and state."""
    try:
        for seed, n in ((0, 1), (7, 1249), (123, 5000), (2**40 + 3, 2)):
            a, b = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
            a.get_state()
            if a.get_state().numel() != _STATE_BYTES:
                return False
            for _ in range(2):
                ref = _rows.random_bits(n, a)
                words = 2 * ((n + 1) // 2)
                out = torch.empty(words, dtype=torch.int32)
                st = b.get_state()
                _mt_fn(lib)(st.data_ptr(), out.data_ptr(), words)
                b.set_state(st)
                if not torch.equal(ref, out[:n]) or not torch.equal(a.get_state(), b.get_state()):
                    return False
        return True
    except (RuntimeError, ValueError, TypeError):
        return False


def kernel() -> ctypes.CDLL | None:
    """The compiled kernel library, or ``None`` where it cannot be built (eager path then)."""
    global _LIB
    if _LIB is False:
        _LIB = _build()
    return _LIB


def set_enabled(flag: bool) -> None:
    """Force the kernel off (``False``: the eager path, e.g. as the reference in tests) or
    re-enable it (``True``: build on next use)."""
    global _LIB, _MT_OK, _SQRT, _SIMD, _SQRT_TEST
    _LIB = None if not flag else False
    _MT_OK = None
    _SQRT = False
    _SIMD = None
    _SQRT_TEST = None


__all__ = ["kernel", "random_bits", "set_enabled", "set_simd", "simd", "sqrt_function", "sqrt_self_test"]
