"""LATMiX library: invertibility and folding exactness, quantizers-off identity, the objective,
outlier injection, the error bound and bad inputs."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch.nn import functional as F

from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.quant.mx import mx_fake_quant
from icml26.papers.latmix import (
    InvertibleAffine,
    LatmixConfig,
    MXLinear,
    block_hadamard_matrix,
    distillation_loss,
    hadamard_matrix,
    inject_outliers,
    make_probes,
    mx_bound_terms,
    probe_accuracy,
    probe_scores,
    quantize_,
    volume_regularizer,
)


def _perturb(t: InvertibleAffine, scale: float = 0.1, seed: int = 0) -> InvertibleAffine:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in t.parameters():
            p.add_(torch.randn(p.shape, generator=g) * scale)
    return t


def _model(seed: int = 0, d: int = 64) -> TinyCausalLM:
    torch.manual_seed(seed)
    m = TinyCausalLM(LMConfig(vocab_size=20, block_size=16, n_layer=2, n_head=2, n_embd=d, norm="rmsnorm"))
    with torch.no_grad():  # non-trivial norm gains and biases
        for n, p in m.named_parameters():
            if n.endswith("ln1.weight") or n.endswith("ln2.weight") or n.endswith(".bias"):
                p.add_(torch.randn(p.shape) * 0.3)
    return m.eval()


def _ids(n: int = 4, t: int = 16, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 20, (n, t), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------------------------
# transforms
# ---------------------------------------------------------------------------------------------


def test_hadamard_is_orthogonal_and_block_hadamard_is_block_diagonal():
    h = hadamard_matrix(64, seed=3, dtype=torch.float64)
    torch.testing.assert_close(h @ h.T, torch.eye(64, dtype=torch.float64), atol=1e-12, rtol=0)
    assert torch.allclose(h.abs(), torch.full((64, 64), 1 / 8, dtype=torch.float64))
    b = block_hadamard_matrix(64, 32, dtype=torch.float64)
    assert b[:32, 32:].abs().max() == 0 and b[32:, :32].abs().max() == 0
    torch.testing.assert_close(b @ b.T, torch.eye(64, dtype=torch.float64), atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="power of two"):
        hadamard_matrix(48)
    with pytest.raises(ValueError, match="multiple"):
        block_hadamard_matrix(48, 32)


@pytest.mark.parametrize("param", ["lu", "qr", "rotation", "fixed"])
def test_init_equals_a0_and_inverse_and_logdet_are_exact(param):
    a0 = hadamard_matrix(32, seed=1)
    t = InvertibleAffine(32, param, a0, bias=param in ("lu", "qr"))
    torch.testing.assert_close(t.matrix(), a0, atol=1e-5, rtol=0)
    if param != "fixed":
        _perturb(t, 0.2)
    A, Ainv = t.matrix().double(), t.inverse_matrix().double()
    torch.testing.assert_close(A @ Ainv, torch.eye(32, dtype=torch.float64), atol=1e-4, rtol=0)
    torch.testing.assert_close(float(t.logabsdet()), float(torch.linalg.slogdet(A)[1]), atol=1e-4, rtol=0)
    x = torch.randn(5, 32)
    torch.testing.assert_close(t.inverse(t(x)), x, atol=1e-4, rtol=1e-4)
    if param == "rotation":
        torch.testing.assert_close(A @ A.T, torch.eye(32, dtype=torch.float64), atol=1e-5, rtol=0)


def test_lu_and_qr_stay_invertible_under_large_random_parameters():
    for param in ("lu", "qr"):
        t = _perturb(InvertibleAffine(32, param, hadamard_matrix(32)), 0.3, seed=5)
        sv = torch.linalg.svdvals(t.matrix().double())
        assert float(sv.min()) > 0
        assert abs(float(t.logabsdet()) - float(torch.log(sv).sum())) < 1e-2


@pytest.mark.parametrize("param", ["lu", "qr"])
def test_fold_weight_is_exact(param):
    t = _perturb(InvertibleAffine(64, param, hadamard_matrix(64)), 0.1).double()
    w, c = torch.randn(48, 64, dtype=torch.float64), torch.randn(48, dtype=torch.float64)
    x = torch.randn(10, 64, dtype=torch.float64)
    w2, c2 = t.fold_weight(w, c)
    torch.testing.assert_close(F.linear(t(x), w2, c2), F.linear(x, w, c), atol=1e-9, rtol=1e-9)


def test_singular_or_bad_initial_matrix_is_refused():
    a = torch.eye(32)
    a[3] = a[4]
    with pytest.raises(ValueError, match="singular"):
        InvertibleAffine(32, "lu", a)
    with pytest.raises(ValueError, match="orthogonal"):
        InvertibleAffine(32, "qr", torch.eye(32) * 2)
    with pytest.raises(ValueError, match="NaN"):
        InvertibleAffine(32, "lu", torch.full((32, 32), float("nan")))
    with pytest.raises(ValueError, match="param"):
        InvertibleAffine(32, "svd")


# ---------------------------------------------------------------------------------------------
# folding into the model; quantizers off == FP (the with-quantizers-off control)
# ---------------------------------------------------------------------------------------------


def test_mxlinear_unfolded_and_folded_equal_the_linear_with_quantizers_off():
    lin = torch.nn.Linear(64, 40)
    t = _perturb(InvertibleAffine(64, "lu", hadamard_matrix(64)), 0.1)
    m = MXLinear(lin, t, None, None)
    x = torch.randn(6, 64)
    torch.testing.assert_close(m(x), lin(x), atol=1e-4, rtol=1e-4)
    m.fold()
    torch.testing.assert_close(m(x), lin(x), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kind", ["identity", "hadamard", "block_hadamard", "smoothquant", "rotation", "latmix"])
def test_quantizers_off_every_transform_leaves_the_function_unchanged(kind):
    model = _model()
    ref = model(_ids())[0]
    q = copy.deepcopy(model)
    cfg = LatmixConfig(weight_fmt=None, act_fmt=None, transform=kind, steps=3, batch_size=2)
    rep = quantize_(q, cfg, _ids(8, seed=1))
    torch.testing.assert_close(q(_ids())[0], ref, atol=1e-4, rtol=1e-4)
    if kind in ("rotation", "latmix"):
        # without quantizers the distillation loss is 0: no gain to find (only the regulariser)
        assert max(rep.losses) < 1e-6


def test_folded_model_with_perturbed_learned_transforms_equals_fp():
    model = _model()
    ref = model(_ids())[0]
    q = copy.deepcopy(model)
    # train with MXFP4 in the loop (transforms move), then evaluate the same folds without quantizers
    rep = quantize_(q, LatmixConfig(transform="latmix", steps=5, lr=1e-2, batch_size=2), _ids(8, seed=1))
    assert any(abs(v) > 0 for v in rep.logabsdet.values()) or rep.losses[0] != rep.losses[-1]
    for mod in q.modules():
        if isinstance(mod, MXLinear):
            mod._qa = None
            w, c = mod.w_fp, mod.c_fp
            if mod.a_buf is not None:
                w = w @ torch.linalg.inv(mod.a_buf.double()).T.float()
                c = c - w @ mod.b_buf
            mod.wq, mod.cq = w, c
    torch.testing.assert_close(q(_ids())[0], ref, atol=1e-4, rtol=1e-4)


def test_smoothquant_scales_follow_the_formula_and_flatten_outliers():
    model = _model()
    inject_outliers(model, 0.05, 32.0, seed=0)
    calib = _ids(8, seed=3)
    q = copy.deepcopy(model)
    rep = quantize_(q, LatmixConfig(transform="smoothquant", smooth_alpha=0.5), calib)
    # reference for the o-projection of layer 0 (a site with its own transform)
    acts = {}
    h = model.blocks[0].attn.proj.register_forward_hook(lambda m, i, o: acts.setdefault("x", i[0]))
    model(calib)
    h.remove()
    ax = acts["x"].abs().reshape(-1, 64).amax(0)
    aw = model.blocks[0].attn.proj.weight.abs().amax(0)
    s_ref = (ax ** 0.5 / aw ** 0.5)
    torch.testing.assert_close(torch.diagonal(rep.transforms["T2_0_o"].matrix()), 1 / s_ref, rtol=1e-4, atol=0)
    assert float(rep.transforms["T2_0_o"].logabsdet()) == pytest.approx(-float(torch.log(s_ref).sum()), rel=1e-4)
    with pytest.raises(ValueError, match="calib"):
        quantize_(copy.deepcopy(model), LatmixConfig(transform="smoothquant"))


def test_every_targeted_activation_and_weight_is_quantized():
    model = _model()
    q = copy.deepcopy(model)
    quantize_(q, LatmixConfig(transform="hadamard"))
    seen = []
    for name, mod in q.named_modules():
        if isinstance(mod, MXLinear):
            assert mod.act_fmt == "mxfp4" and mod.weight_fmt == "mxfp4" and mod.folded
            torch.testing.assert_close(mod.wq, mx_fake_quant(mod.wq, "mxfp4"), atol=0, rtol=0)
            seen.append(name)
    assert len(seen) == 8  # 2 layers x (qkv, up, o, down)
    assert not any(isinstance(q.head, MXLinear) for _ in [0])


def test_shared_t1_is_one_transform_and_online_cost_is_reported():
    q = copy.deepcopy(_model())
    rep = quantize_(q, LatmixConfig(transform="latmix", steps=0))
    assert set(rep.transforms) == {"T1", "T2_0_o", "T2_0_down", "T2_1_o", "T2_1_down"}
    assert rep.online_flops_per_token == 2 * (6 * 64 ** 2 + 2 * 256 ** 2)


# ---------------------------------------------------------------------------------------------
# objective and training
# ---------------------------------------------------------------------------------------------


def test_distillation_loss_is_the_kl_divergence():
    t = torch.randn(3, 5, 7)
    s = torch.randn(3, 5, 7)
    lt = F.log_softmax(t, -1)
    ref = F.kl_div(F.log_softmax(s, -1), lt, log_target=True, reduction="none").sum(-1).mean()
    torch.testing.assert_close(distillation_loss(s, lt), ref)
    assert float(distillation_loss(t, lt)) == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError):
        distillation_loss(s[:, :2], lt)


def test_volume_regularizer_is_zero_at_orthogonal_and_grows_with_scaling():
    t = InvertibleAffine(32, "lu", hadamard_matrix(32))
    assert float(volume_regularizer({"a": t})) == pytest.approx(0.0, abs=1e-8)
    with torch.no_grad():
        t.log_s.add_(0.1)
    assert float(volume_regularizer({"a": t})) == pytest.approx((32 * 0.1) ** 2, rel=1e-4)


def test_calibration_reduces_the_distillation_loss_and_gradients_reach_the_transform():
    torch.manual_seed(0)
    model = _model(d=64)
    inject_outliers(model, 0.05, 32.0)
    q = copy.deepcopy(model)
    calib = _ids(16, seed=2)
    rep = quantize_(q, LatmixConfig(transform="latmix", steps=40, lr=3e-3, batch_size=16), calib)
    first, last = sum(rep.losses[:3]) / 3, sum(rep.losses[-3:]) / 3
    assert last < first
    for t in rep.transforms.values():  # still invertible, log-det from the parameters still exact
        A, Ainv = t.matrix().detach().double(), t.inverse_matrix().detach().double()
        torch.testing.assert_close(A @ Ainv, torch.eye(len(A), dtype=torch.float64), atol=1e-4, rtol=0)
        assert abs(float(t.logabsdet()) - float(torch.linalg.slogdet(A)[1])) < 1e-3
        assert t.condition_number() < 1e3


def test_mx_unaware_training_uses_its_own_quantizer_but_evaluates_under_mx():
    q = copy.deepcopy(_model())
    rep = quantize_(q, LatmixConfig(transform="latmix", steps=2, batch_size=2, train_act_fmt="int4_tensor",
                                    train_weight_fmt="int4_tensor"), _ids(4))
    q2 = copy.deepcopy(_model())
    rep2 = quantize_(q2, LatmixConfig(transform="latmix", steps=2, batch_size=2), _ids(4))
    assert rep.losses[0] != rep2.losses[0]
    assert all(m.act_fmt == "mxfp4" for m in q.modules() if isinstance(m, MXLinear))


# ---------------------------------------------------------------------------------------------
# outliers, probes, bound
# ---------------------------------------------------------------------------------------------


def test_outlier_injection_preserves_the_fp_function_and_creates_outliers():
    model = _model()
    ref = model(_ids())[0]
    before = model.blocks[0].ln1(model.tok_emb(_ids())).abs().amax(-1).mean()
    idx = inject_outliers(model, 0.05, 32.0, seed=1)
    torch.testing.assert_close(model(_ids())[0], ref, atol=1e-5, rtol=1e-5)
    after = model.blocks[0].ln1(model.tok_emb(_ids())).abs().amax(-1).mean()
    assert after > 5 * before
    assert len(idx["0.ln1"]) == round(0.05 * 64)


def test_probes_place_the_true_continuation_at_the_answer():
    tokens = torch.arange(1000) % 97
    seqs, ans = make_probes(tokens, 30, 8, 4, n_choices=4, seed=0)
    for i in range(30):
        s = seqs[i, ans[i]]
        assert torch.equal(s[8:], (s[7] + 1 + torch.arange(4)) % 97)  # true text continues the ramp

    class Oracle(torch.nn.Module):  # predicts the ramp: must score 100 %
        def forward(self, x, past=None):
            return F.one_hot((x + 1) % 97, 97).float() * 50, [(x[:, None, :, None].float(),) * 2]

    assert probe_accuracy(Oracle(), seqs, ans, 4) == 1.0


def test_cached_probe_scores_equal_full_sequence_scores():
    model = _model()
    q = copy.deepcopy(model)
    quantize_(q, LatmixConfig(transform="hadamard"))
    tokens = torch.randint(0, 20, (500,), generator=torch.Generator().manual_seed(0))
    seqs, _ = make_probes(tokens, 6, 10, 5, seed=1)
    for m in (model, q):
        s = probe_scores(m, seqs, 5)
        flat = seqs.reshape(-1, 15)
        lp = F.log_softmax(m(flat[:, :-1])[0][:, -5:], -1).gather(-1, flat[:, -5:, None])[..., 0].sum(-1)
        torch.testing.assert_close(s, lp.reshape(6, 4), atol=1e-4, rtol=1e-4)


def test_bound_holds_and_block_maxima_are_tighter_than_the_tensor_max():
    torch.manual_seed(0)
    for trial in range(5):
        x = torch.randn(64, 64)
        x[:, 3] *= 50  # an outlier channel
        w = torch.randn(32, 64) / 8
        t = _perturb(InvertibleAffine(64, "lu", hadamard_matrix(64, seed=trial)), 0.05, seed=trial)
        for fmt in ("mxfp4", "mxint4", "mxfp8_e4m3"):
            r = mx_bound_terms(x, t.matrix().detach(), t.bias_vector().detach(), w, fmt, fmt)
            assert r["measured"] <= r["bound"] <= r["bound_tensor"] * (1 + 1e-12)
    r = mx_bound_terms(x, None, None, w, "mxfp4", "mxfp4")
    assert r["sigma_max_inv"] == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


def test_bad_inputs_give_clear_errors():
    with pytest.raises(ValueError, match="multiple of the MX block"):
        MXLinear(torch.nn.Linear(40, 8), None, "mxfp4", "mxfp4")
    bad = torch.nn.Linear(32, 8)
    with torch.no_grad():
        bad.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        MXLinear(bad, None, "mxfp4", "mxfp4")
    model = _model()
    with torch.no_grad():
        model.blocks[0].attn.qkv.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        quantize_(model, LatmixConfig(transform="identity"))
    with pytest.raises(ValueError, match="calib"):
        quantize_(_model(), LatmixConfig(transform="latmix", steps=3))
    with pytest.raises(ValueError, match="unknown quantizer"):
        LatmixConfig(weight_fmt="mxfp3")
    with pytest.raises(ValueError, match="targets"):
        LatmixConfig(targets=("mlp",))
    with pytest.raises(TypeError):
        quantize_(_model(), {"transform": "latmix"})
    with pytest.raises(ValueError, match="frac"):
        inject_outliers(_model(), 0.0)


# ---------------------------------------------------------------------------------------------
# issue 46: condition-number guard, finite checks on by default, likelihood-based accuracy
# ---------------------------------------------------------------------------------------------


def _ill_conditioned(dim: int = 64, cond: float = 1e6) -> InvertibleAffine:
    """An LU transform whose ``A`` = H diag(s) has condition number ``cond`` exactly."""
    t = InvertibleAffine(dim, "lu", hadamard_matrix(dim))
    with torch.no_grad():
        t.log_s.copy_(torch.linspace(0.0, float(torch.log(torch.tensor(cond))), dim))
    return t


def test_fold_refuses_an_ill_conditioned_transform_and_says_why():
    from icml26.papers.latmix.api import MAX_CONDITION

    t = _ill_conditioned(cond=1e6)
    assert t.condition_number() == pytest.approx(1e6, rel=1e-3)
    m = MXLinear(torch.nn.Linear(64, 40), t, "mxfp4", "mxfp4")
    with pytest.raises(ValueError, match="condition number .* exceeds max_condition"):
        m.fold()
    assert not m.folded
    m.fold(max_condition=float("inf"))  # the opt-out folds it (knowingly)
    assert m.folded
    # below the threshold: folds
    ok = MXLinear(torch.nn.Linear(64, 40), _ill_conditioned(cond=0.5 * MAX_CONDITION), "mxfp4", "mxfp4")
    ok.fold()
    assert ok.folded


def test_fold_guard_lets_a_diagonal_transform_of_any_condition_pass():
    """A diagonal A (SmoothQuant) scales and unscales each channel with one rounding each: its fold
    is exact to float32 whatever cond(A), so the guard does not refuse it."""
    from icml26.papers.latmix.api import MAX_CONDITION

    d = torch.logspace(-3, 3, 64)
    t = InvertibleAffine(64, "fixed", torch.diag(d), bias=False)
    assert t.condition_number() > 10 * MAX_CONDITION
    lin = torch.nn.Linear(64, 40)
    m = MXLinear(lin, t, None, None)
    m.fold()
    x = torch.randn(6, 64)
    torch.testing.assert_close(m(x), lin(x), atol=1e-4, rtol=1e-4)


def test_quantize_refuses_before_folding_any_layer():
    model = _model()
    cfg = LatmixConfig(transform="hadamard", max_condition=1e4)
    quantize_(model, cfg, _ids(8))  # orthogonal: cond 1, folds
    with pytest.raises(ValueError, match="max_condition"):
        LatmixConfig(max_condition=0.5)


def test_mx_quantizers_check_finite_by_default_and_opt_out_skips_it():
    from icml26.papers.latmix.api import make_quantizer

    x = torch.randn(4, 64)
    x[1, 7] = float("inf")
    with pytest.raises(ValueError):
        mx_fake_quant(x, "mxfp4")  # the core default is on now
    with pytest.raises(ValueError):
        make_quantizer("mxfp4")(x)
    out = make_quantizer("mxfp4", check_finite=False)(x)  # opt-out: no check, garbage block
    assert out.shape == x.shape
    torch.testing.assert_close(out[0], mx_fake_quant(x[0], "mxfp4"))  # other blocks unaffected
    lin = MXLinear(torch.nn.Linear(64, 8), None, "mxfp4", "mxfp4")
    with pytest.raises(ValueError):
        lin(x)
    with pytest.raises(TypeError):
        LatmixConfig(check_finite=1)


def test_soft_probe_accuracy_is_the_mean_softmax_probability_of_the_answer(monkeypatch):
    from icml26.papers.latmix import evaluate

    scores = torch.tensor([[0.0, -1.0, -2.0, -3.0], [-5.0, 0.0, -1.0, -1.0], [-1.0, -1.0, -1.0, -1.0]])
    answer = torch.tensor([0, 2, 3])
    monkeypatch.setattr(evaluate, "probe_scores", lambda model, seqs, cont, bs=64: scores)
    acc, soft = evaluate.probe_metrics(torch.nn.Linear(1, 1), None, answer, 4)
    p = torch.softmax(scores.double(), 1)
    expected = float((p[0, 0] + p[1, 2] + p[2, 3]) / 3)
    assert acc == pytest.approx(1 / 3)  # item 0 right, item 1 wrong, item 2 a tie -> argmax 0
    assert soft == pytest.approx(expected, abs=1e-12)
    assert soft == pytest.approx((0.6439142598879724 + 0.2111220146726849 + 0.25) / 3, abs=1e-9)


def test_refused_fold_is_a_typed_error_with_the_condition():
    from icml26.papers.latmix import IllConditionedTransform

    m = MXLinear(torch.nn.Linear(64, 40), _ill_conditioned(cond=1e6), "mxfp4", "mxfp4")
    with pytest.raises(IllConditionedTransform) as info:
        m.fold()
    assert isinstance(info.value, ValueError)
    assert info.value.condition == pytest.approx(1e6, rel=1e-3)


def test_experiment_scores_a_refused_grid_point_inf_and_never_picks_it(monkeypatch):
    """A grid point whose transform the library refuses to fold is unusable: the tuner sees +inf,
    picks a point that folds (the "off" setting always does), and the refusal is recorded; the
    other formats fall back to the start (lr 0) when the chosen setting is refused there."""
    from icml26.papers.latmix import IllConditionedTransform
    from icml26.papers.latmix import experiment as E

    real = E._quantized

    def refusing(base, arm, fmt, lr, config, seed, calib, alpha=0.5, steps=None):
        if arm == "latmix" and lr > 0:
            raise IllConditionedTransform("refused (test)", 3e8, "T2_0_down")
        return real(base, arm, fmt, lr, config, seed, calib, alpha=alpha, steps=steps)

    monkeypatch.setattr(E, "_quantized", refusing)
    out = E.run(E.Config.smoke(), 0)
    assert out.tuning["latmix"].chosen["lr"] == 0.0
    assert math.isinf(out.tuning["latmix"].scores[1])
    refused = out.extras["refused_folds"]["injected"]
    assert {r["arm"] for r in refused} == {"latmix"}
    assert all(r["condition"] == 3e8 and r["transform"] == "T2_0_down" for r in refused)
    assert all(math.isfinite(v) for v in out.metrics["latmix"].values())
