"""DiCode (Dreaming in Code, arXiv 2602.08194): environment-code curricula on MicroCraft.

Public API: the world (:class:`MicroCraftEnv`, :class:`BaseLevel`, :class:`LevelParams`,
:class:`WorldBuilder`, :class:`OriginalLevel`, :func:`make_bank`), the sandbox
(:func:`static_check`, :func:`compile_levels`, :func:`validate_level_code`), scores and the archive
(:func:`learnability`, :func:`status_from_sr`, :func:`pvl_score`, :func:`maxmc_score`,
:class:`LevelArchive`, :func:`select_parents`, :func:`try_activate`,
:func:`sample_active_levels`, :func:`rank_staleness_weights`, :class:`LevelSampler`), generators
(:class:`ProgrammaticDreamer`, :class:`RandomCodeMutator`, :func:`random_level`,
:class:`LLMGenerator`, :func:`read_spec`, :func:`edit_program`, :func:`render_level`) and the
trainer (:class:`CurriculumConfig`, :func:`run_arm`). Importing this package does not import torch
(the trainer does, lazily).
"""

from .archive import (
    LevelArchive,
    LevelRecord,
    LevelSampler,
    learnability,
    maxmc_score,
    pvl_score,
    rank_staleness_weights,
    sample_active_levels,
    select_parents,
    status_from_sr,
    try_activate,
)
from .generators import (
    Feedback,
    LLMGenerator,
    ProgrammaticDreamer,
    RandomCodeMutator,
    apply_operator,
    choose_operator,
    edit_program,
    random_level,
    read_spec,
    render_level,
    scaffold,
    seed_levels,
)
from .sandbox import CompileResult, compile_levels, static_check, validate_level_code
from .world import (
    ACHIEVEMENTS,
    TIER,
    Bank,
    BaseLevel,
    LevelParams,
    MicroCraftEnv,
    OriginalLevel,
    WorldBuilder,
    WorldState,
    make_bank,
)

_TRAINER = ("CurriculumConfig", "run_arm", "Runner", "ARMS")


def __getattr__(name):
    if name in _TRAINER:
        from . import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ACHIEVEMENTS", "TIER", "Bank", "BaseLevel", "CompileResult", "Feedback", "LLMGenerator",
    "LevelArchive", "LevelParams", "LevelRecord", "LevelSampler", "MicroCraftEnv",
    "OriginalLevel", "ProgrammaticDreamer", "RandomCodeMutator", "WorldBuilder", "WorldState",
    "apply_operator", "choose_operator", "compile_levels", "edit_program", "learnability",
    "make_bank", "maxmc_score", "pvl_score", "random_level", "rank_staleness_weights",
    "read_spec", "render_level", "sample_active_levels", "scaffold", "seed_levels",
    "select_parents", "static_check", "status_from_sr", "try_activate", "validate_level_code",
    *_TRAINER,
]
