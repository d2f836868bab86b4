"""SyVLA (arXiv 2606.09009) at laptop scale: a think-before-act VLA (TinyVLM + query tokens + flow-matching
action expert), Intention Decoupling (ID-P / ID-T, with KI as reference), similar-sample guided RL, and the
``Tabletop2D`` image + instruction environment. Mechanisms are reconstructed from public summaries."""

from .data import DemoData, VQAData, make_demo_dataset, make_vl_dataset, vqa_for_scene
from .decoupling import (
    IntentionDecoupler,
    importance_update,
    masked_combine,
    protect_masks,
    token_grad_mask,
)
from .env import SPLITS, ScriptedExpert, Tabletop2DEnv, reasoning_string, sample_scene
from .model import FlowActionExpert, PixelGrounding, SyVLAPolicy, TinyVLM, Vocab, object_tokens
from .rl import (
    EXPERT_ADVANTAGE,
    SimilarSampleBuffer,
    SSGRLConfig,
    SSGRLTrainer,
    advantage_weighted_fm_loss,
    advantage_weights,
    group_advantages,
    rollout,
)
from .train import (
    PRETRAINED_VLM,
    UniformRandomPolicy,
    evaluate_success,
    evaluate_vqa,
    load_pretrained_vlm,
    make_pretrained_vlm,
    pretrain_vl,
    sft_vla,
)

__all__ = [
    "EXPERT_ADVANTAGE", "PRETRAINED_VLM", "SPLITS", "DemoData", "FlowActionExpert", "PixelGrounding", "IntentionDecoupler", "SSGRLConfig",
    "SSGRLTrainer", "ScriptedExpert", "SimilarSampleBuffer", "SyVLAPolicy", "Tabletop2DEnv", "TinyVLM",
    "UniformRandomPolicy",
    "VQAData", "Vocab", "advantage_weighted_fm_loss", "advantage_weights", "evaluate_success", "evaluate_vqa",
    "group_advantages", "importance_update", "load_pretrained_vlm", "make_demo_dataset", "make_pretrained_vlm", "make_vl_dataset", "masked_combine",
    "object_tokens", "pretrain_vl", "protect_masks", "reasoning_string", "rollout", "sample_scene", "sft_vla",
    "token_grad_mask", "vqa_for_scene",
]
