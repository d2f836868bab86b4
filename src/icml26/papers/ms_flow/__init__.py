"""MS-Flow: multiple shooting (trajectory stitching) for inverse problems with a flow prior.

Denker, Eliasof, Kereta, Schoenlieb. "Trajectory Stitching for Solving Inverse Problems with
Flow-Based Models", ICML 2026, arXiv:2602.08538. No official code was found.

>>> from icml26.papers.ms_flow import make_operator, ms_flow, MSFlowConfig
>>> # op = make_operator("inpaint_random", sigma=0.05); y = op.measure(x)
>>> # res = ms_flow(velocity_model, op, y, MSFlowConfig(K=4, n_steps=20, nfe_budget=400))
>>> # res.x, res.x_on_manifold, res.stitch_residual
"""

from .metrics import psnr, ssim
from .operators import (
    TASKS,
    AveragePooling,
    GaussianBlur,
    Inpainting,
    LinearOperator,
    Tomography,
    make_blur,
    make_ct,
    make_downsample,
    make_inpainting,
    make_operator,
)
from .solvers import (
    METHODS,
    DFlowConfig,
    FlowDPSConfig,
    MSFlowConfig,
    MSFlowResult,
    OTODEConfig,
    PnPFlowConfig,
    ReconResult,
    TikhonovConfig,
    blend_init,
    d_flow,
    d_flow_objective,
    flow_dps,
    flow_map,
    ms_flow,
    ms_flow_objective,
    ot_ode,
    pnp_flow,
    radial_gaussian_reg,
    radial_gaussian_reg_grad,
    segment_map,
    shooting_grid,
    tikhonov,
    with_budget,
)

PAPER = {
    "title": "Trajectory Stitching for Solving Inverse Problems with Flow-Based Models",
    "arxiv": "2602.08538",
    "code": None,
}

__all__ = [
    "METHODS", "PAPER", "TASKS", "AveragePooling", "DFlowConfig", "FlowDPSConfig", "GaussianBlur",
    "Inpainting", "LinearOperator", "Tomography", "make_ct", "MSFlowConfig", "MSFlowResult", "OTODEConfig", "PnPFlowConfig",
    "ReconResult", "TikhonovConfig", "blend_init", "d_flow", "d_flow_objective", "flow_dps", "flow_map",
    "make_blur", "make_downsample", "make_inpainting", "make_operator", "ms_flow", "ms_flow_objective",
    "ot_ode", "pnp_flow", "psnr", "radial_gaussian_reg", "radial_gaussian_reg_grad", "segment_map",
    "shooting_grid", "ssim", "tikhonov", "with_budget",
]
