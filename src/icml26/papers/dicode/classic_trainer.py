"""The curriculum trainer's session loop on the real Craftax-Classic (the ``full-craftax`` profile).

:class:`ClassicRunner` overrides the game hooks of :class:`.trainer.Runner`, so every arm
(:func:`.trainer.run_arm`) runs the same sessions, PPO, archive, gate and PLR code on Classic:

- the env is :class:`.craftax_backend.ClassicLevelEnv`: env level 0 is the original game (its own
  procedural worlds, its own termination, time limit ``original_max_steps``), levels 1.. are
  level programs whose edits apply to a Classic world at every reset;
- a "bank" is the level program's source (the env builds a fresh world at every reset);
  :func:`compile_classic` runs the sandbox as for MicroCraft (the program executes in a
  subprocess under limits and its worlds step), then builds ``check_worlds`` Classic worlds from
  it in-process (after the sandbox's static check): a program that uses what Classic lacks
  (guardian, armour) fails to compile with the :class:`.craftax_backend.NotInClassicError`
  reason, like any level that does not build;
- PLR and robust PLR replay *world indices* of the original game: world ``w`` is Classic's world
  of ``fold_in(PRNGKey(train_world_seed), w)``, ``w < original_train_worlds``;
- ACCEL is refused (:class:`.craftax_backend.NotInClassicError`): its tile mutators edit
  MicroCraft banks; a Classic ACCEL would need mutators over Classic's ``EnvState``;
- evaluation: one episode on each of ``eval_envs`` held-out worlds of the original Classic game
  (another world seed), stochastic policy, no bonus, the game's own reward (+1 per achievement,
  0.1 x health change) up to its time limit; achievements are Classic's 22, grouped into tiers by
  :data:`CLASSIC_TIER` (MicroCraft's tech-tree depth for the 16 shared achievements, and the
  depth on Classic's tree for its own six), so the claims' rules read the same metric names.

The torch agent stays on the CPU (a small MLP); jax runs the game on whatever device jax has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from icml26.core.rl.ppo import PPOConfig

from .craftax_backend import (
    NOT_IN_CLASSIC,
    ClassicLevelEnv,
    ClassicWorldBuilder,
    NotInClassicError,
    _classic_game,
    classic_achievements,
    classic_goal_indices,
    craftax_available,
    load_level,
)
from .sandbox import CompileResult, compile_levels
from .trainer import TIERS, CurriculumConfig, Runner
from .world import ACHIEVEMENTS, TIER

# Classic's achievements that MicroCraft lacks, with their depth on Classic's tech tree
CLASSIC_ONLY = {"collect_sapling": 1, "wake_up": 1, "place_plant": 2, "eat_plant": 3,
                "place_stone": 3, "defeat_skeleton": 3}
CLASSIC_TIER = {**{a: TIER[a] for a in ACHIEVEMENTS if a not in NOT_IN_CLASSIC}, **CLASSIC_ONLY}
assert tuple(sorted(set(CLASSIC_TIER.values()))) == TIERS  # the same tier metrics as MicroCraft
# the goals a level program may name on Classic (the oracle's tech tree; MicroCraft's names)
CLASSIC_GOALS = tuple(a for a in ACHIEVEMENTS if a not in NOT_IN_CLASSIC)


def compile_classic(sources: list[str], *, n_worlds: int = 16, size: int = 12, seed: int = 0,
                    check_worlds: int = 2, **kwargs) -> list[CompileResult]:
    """Compile level programs for Craftax-Classic: the sandbox (:func:`.sandbox.compile_levels`,
    same limits and checks as MicroCraft), then ``check_worlds`` Classic worlds built from each
    program that passed. ``CompileResult.bank`` is the source (the env builds its worlds)."""
    if not craftax_available():
        raise ImportError("levels on Craftax-Classic need the optional packages craftax and jax "
                          '(pip install "icml26[craftax]")')
    import jax

    game = _classic_game()
    params = game["env"].default_params
    out = []
    for i, (src, res) in enumerate(zip(sources, compile_levels(sources, n_worlds=n_worlds, size=size,
                                                               seed=seed, **kwargs), strict=True)):
        if not res.ok:
            out.append(res)
            continue
        try:
            cls = load_level(src)
            classic_goal_indices(cls.relevant_achievements)
            completed = tuple(a for a in cls.completed_achievements if a not in NOT_IN_CLASSIC)
            rng = np.random.default_rng([seed, i])
            for w in range(int(check_worlds)):
                _, base = game["reset1"](jax.random.fold_in(jax.random.PRNGKey(seed), i * 1000 + w),
                                         params)
                builder = ClassicWorldBuilder(base, rng)
                cls().generate_world(rng, builder)
                builder.build(completed)
        except NotInClassicError as e:
            out.append(CompileResult(False, f"NotInClassicError: {e}"))
            continue
        except Exception as e:  # noqa: BLE001 - any failure to build is a compile failure
            out.append(CompileResult(False, f"does not build on Craftax-Classic: "
                                            f"{type(e).__name__}: {str(e)[:300]}"))
            continue
        out.append(CompileResult(True, "", src))
    return out


@dataclass(frozen=True)
class ClassicWorlds:
    """The original game's training worlds as PLR sees them: ``n`` world indices."""

    n: int


def classic_obs_dim() -> int:
    """Classic's symbolic observation plus the 22-way goal multi-hot."""
    game = _classic_game()
    env = game["env"]
    return int(env.observation_space(env.default_params).shape[0]) + len(classic_achievements())


class ClassicRunner(Runner):
    """:class:`.trainer.Runner` on Craftax-Classic (module docstring)."""

    goal_names = CLASSIC_GOALS
    compile = staticmethod(compile_classic)

    def __init__(self, cfg: CurriculumConfig, ppo: PPOConfig, seed: int,
                 original_max_steps: int = 10_000) -> None:
        if not craftax_available():
            raise ImportError("the full-craftax profile needs the optional packages craftax and "
                              'jax (pip install "icml26[craftax]")')
        self._init_session(cfg, ppo, seed, ClassicWorlds(cfg.original_train_worlds),
                           classic_obs_dim(), 17)
        self.achievements = classic_achievements()
        self.max_steps = int(original_max_steps)
        self.train_world_seed = int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])
        self.eval_world_seed = int(np.random.SeedSequence([seed, 2]).generate_state(1)[0])
        self.last_eval: dict[str, np.ndarray] = {}

    def check_arm(self, arm: str) -> None:
        if arm == "accel":
            raise NotInClassicError("ACCEL's tile mutators edit MicroCraft worlds; no Classic "
                                    "ACCEL (it would need mutators over Classic's EnvState)")

    def _levels(self, banks: list) -> list:
        return [None, *banks]

    def _make_env(self, levels: list, world_sampler: Callable | None):
        return ClassicLevelEnv(levels, self.cfg.num_envs, seed=int(self.rng.integers(2**31)),
                               bonus=self.bonus, original_max_steps=self.max_steps,
                               world_sampler=world_sampler, world_seed=self.train_world_seed)

    def evaluate(self, n_envs: int | None = None) -> dict[str, float]:
        """One episode on each of ``n`` held-out worlds of the original Classic game (world ``i``
        of the eval world seed), stochastic policy, no bonus, up to the game's time limit. The
        per-episode returns, achievements and final health are kept in ``last_eval``."""
        n = n_envs or self.cfg.eval_envs
        env = ClassicLevelEnv([None], n, seed=self.seed, bonus=0.0,
                              original_max_steps=self.max_steps, world_seed=self.eval_world_seed,
                              world_sampler=lambda idx, rng: (np.zeros(len(idx)), idx))
        obs = env._observe()
        done_any = np.zeros(n, bool)
        rets, health = np.zeros(n), np.zeros(n)
        unl = np.zeros((n, len(self.achievements)))
        for _ in range(self.max_steps + 1):
            a, _, _ = self.agent.act(obs)
            obs, _, _, info = env.step(a)
            if info:
                first = ~done_any[info["slot"]]
                sl = info["slot"][first]
                rets[sl], unl[sl] = info["return"][first], info["unlocked"][first]
                health[sl] = info["health"][first]
                done_any[sl] = True
            if done_any.all():
                break
        self.last_eval = {"return": rets, "unlocked": unl, "health": health, "done": done_any}
        out = {"return": float(rets.mean())}
        tier_of = np.array([CLASSIC_TIER[a] for a in self.achievements])
        for t in TIERS:
            out[f"tier{t}_success"] = float(unl[:, tier_of == t].any(1).mean())
        out["deepest_tier_success"] = out[f"tier{TIERS[-1]}_success"]
        for i, a in enumerate(self.achievements):
            out[f"ach_{a}"] = float(unl[:, i].mean())
        return out
