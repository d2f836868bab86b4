"""The curriculum trainer (DiCode's session loop, ``experiments/training/run_dicode.py``) and the
baselines, all on the same PPO agent and the same number of environment steps.

One *session* = ``updates_per_session`` PPO updates on a batch of levels plus the original game
(``original_share`` of the envs; the rest split evenly among the session's levels). After a
session every level is scored on the episodes that finished in the last ``score_window`` updates.

Arms (:func:`run_arm`):

- ``dicode``: seed levels -> archive; every ``evolution_interval`` sessions, strict lineage-aware
  parent selection picks ``parents_per_evolution`` parents, the :class:`ProgrammaticDreamer` (or
  an :class:`LLMGenerator`) writes one child program each, the batch is compiled in the sandbox,
  the new levels train in the next session next to PLR-sampled active levels, and enter the active
  set by compare-and-swap on learnability.
- ``random_mutation`` (open-loop ablation): the same generator machinery with uniformly random
  operators, uniform parents among all scored levels, no learnability selection (every new level
  enters the active set, oldest evicted; uniform sampling). Same number of generated levels.
- ``dr``: fresh uniformly random levels from the same spec space every session (no scoring).
- ``plr`` / ``plr_robust``: prioritised replay over world seeds of the original game (PVL score,
  jaxued-style :class:`LevelSampler`); robust PLR takes no gradient on exploratory sessions.
- ``accel``: robust PLR whose buffer also grows by small random tile edits of the top replayed
  worlds (ACCEL, :func:`run_accel_arm`); children are scored on play without gradient.
- ``ppo``: the original game only.
- ``oracle_curriculum`` (the positive control of the curriculum claims): the tech tree walked in
  tier order, session by session, each goal scaffolded from scratch with its resources placed near
  the player (:func:`oracle_levels`) -- a curriculum written by someone who knows the game. If it
  cannot beat the strongest baseline at a budget, no curriculum can show its benefit there.

The completion bonus on success is DiCode's dynamic bonus ``max(k R_orig, b_min)`` with ``R_orig``
the running mean return on the original game.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from icml26.core.rl.ppo import PPO, PPOConfig

from .archive import (
    LevelArchive,
    LevelSampler,
    sample_active_levels,
    select_parents,
    try_activate,
)
from .generators import (
    Feedback,
    ProgrammaticDreamer,
    RandomCodeMutator,
    random_level,
    render_level,
    scaffold,
    seed_levels,
    spec_key,
)
from .mutators import append_worlds, bank_world, mutate_world
from .sandbox import compile_levels
from .world import ACHIEVEMENTS, TIER, Bank, MicroCraftEnv, OriginalLevel, make_bank, obs_dim

ARMS = ("dicode", "random_mutation", "dr", "plr", "plr_robust", "accel", "ppo",
        "oracle_curriculum")
TIERS = tuple(sorted(set(TIER.values())))


@dataclass(frozen=True)
class CurriculumConfig:
    size: int = 12
    num_envs: int = 128
    sessions: int = 10
    updates_per_session: int = 8
    score_window: int = 8
    levels_per_session: int = 6
    original_share: float = 0.2
    evolution_interval: int = 2
    parents_per_evolution: int = 4
    active_capacity: int = 16
    staleness_coeff: float = 0.3
    temperature: float = 1.0
    bonus_k: float = 2.0
    bonus_min: float = 5.0
    n_worlds: int = 16
    original_train_worlds: int = 512
    plr_replay_prob: float = 0.5
    plr_buffer: int = 64
    # ACCEL: children per session and tile edits per child. Our placeholders (the official
    # Craftax mutators were not read); the tuned knob is plr_replay_prob, as for PLR.
    accel_children: int = 8
    accel_edits: int = 4
    eval_envs: int = 128
    eval_max_steps: int = 300


@dataclass
class SessionStats:
    per_level: dict[int, dict] = field(default_factory=dict)   # env level index -> stats
    original_returns: list[float] = field(default_factory=list)
    original_unlocked: np.ndarray | None = None
    world_adv: list = field(default_factory=list)  # per update: (world per slot, mean positive adv per slot)


def _allocate(num_envs: int, n_levels: int, share: float) -> np.ndarray:
    """Slot -> env level index: ``share`` of the slots on level 0 (the original), the rest split
    evenly over levels 1..n_levels."""
    if n_levels == 0:
        return np.zeros(num_envs, np.int64)
    n_orig = int(round(share * num_envs))
    rest = np.array_split(np.arange(num_envs - n_orig), n_levels)
    out = np.zeros(num_envs, np.int64)
    for k, part in enumerate(rest):
        out[n_orig + part] = k + 1
    return out


class Runner:
    """Owns the agent and the original game's banks; runs sessions on level batches.

    The game is MicroCraft; :class:`.classic_trainer.ClassicRunner` runs the same sessions on
    Craftax-Classic by overriding the game hooks (``achievements``, ``goal_names``, ``compile``,
    :meth:`_levels`, :meth:`_make_env`, :meth:`evaluate`, :meth:`check_arm`)."""

    # the game's achievements (the env's ``unlocked`` vectors), the goals a level program may
    # name on this game (the oracle's tech tree), and the level compiler
    achievements: tuple[str, ...] = ACHIEVEMENTS
    goal_names: tuple[str, ...] = ACHIEVEMENTS
    compile = staticmethod(compile_levels)

    def __init__(self, cfg: CurriculumConfig, ppo: PPOConfig, seed: int) -> None:
        self._init_session(cfg, ppo, seed, make_bank(OriginalLevel(), cfg.original_train_worlds,
                                                     np.random.SeedSequence([seed, 1]), cfg.size),
                           obs_dim(), 11)

    def _init_session(self, cfg: CurriculumConfig, ppo: PPOConfig, seed: int, original,
                      n_obs: int, n_actions: int) -> None:
        """The state every game's runner starts with: the original game's training worlds, a fresh
        PPO agent over the whole session budget, empty curve and counters."""
        self.cfg, self.ppo_cfg, self.seed = cfg, ppo, seed
        self.rng = np.random.default_rng([seed, 7])
        self.original = original
        total = cfg.sessions * cfg.updates_per_session
        self.agent = PPO(ppo, n_obs, n_actions, seed=seed, total_updates=total)
        self.r_orig: float | None = None
        self.curve: list[float] = []
        self.env_steps = 0
        self.env = None
        self.obs = None

    @property
    def bonus(self) -> float:
        r = 0.0 if self.r_orig is None else self.r_orig
        return max(self.cfg.bonus_k * r, self.cfg.bonus_min)

    def check_arm(self, arm: str) -> None:
        """Refuse an arm this game cannot run (every arm runs on MicroCraft)."""

    def _levels(self, banks: list) -> list:
        """The env's level list: the original game first (env level 0), then ``banks``."""
        return [self.original, *banks]

    def _make_env(self, levels: list, world_sampler: Callable | None):
        return MicroCraftEnv(levels, self.cfg.num_envs, seed=int(self.rng.integers(2**31)),
                             bonus=self.bonus, world_sampler=world_sampler)

    def session(self, banks: list[Bank], slot_levels: np.ndarray | None = None,
                world_sampler: Callable | None = None, train_mask: Callable | None = None,
                record: Callable | None = None) -> SessionStats:
        """``updates_per_session`` PPO updates on ``banks`` plus the original game. The env
        persists across sessions: slots that stay on the original game continue their episodes,
        the others reset onto their new level. ``world_sampler`` (PLR) picks the world of every
        reset; ``train_mask(batch) -> (T, B)`` (reading ``batch["record"]``, filled by
        ``record(env)``) drops transitions from the loss (robust PLR)."""
        cfg = self.cfg
        all_banks = self._levels(banks)
        slots = _allocate(cfg.num_envs, len(banks), cfg.original_share) if slot_levels is None \
            else slot_levels
        if self.env is None:
            self.env = self._make_env(all_banks, world_sampler)
            self.obs = self.env.assign(slots)
        else:
            keep = (slots == 0) & (self.env.slot_level == 0)
            self.obs = self.env.reassign(all_banks, slots, keep)
        env = self.env
        env.bonus = self.bonus
        stats = SessionStats()
        orig_unl = []
        for u in range(cfg.updates_per_session):
            batch = self.agent.rollout(env, self.obs, record=record)
            self.obs = batch["next_obs"]
            self.env_steps += batch["rewards"].size
            self.agent.update(batch, mask=None if train_mask is None else train_mask(batch))
            stats.world_adv.append((env.world.copy(), np.maximum(batch["advantages"], 0).mean(0)))
            scoring = u >= cfg.updates_per_session - cfg.score_window
            for info in batch["infos"]:
                if not info:
                    continue
                for lv, ret, succ, unl in zip(info["level"], info["return"], info["success"],
                                              info["unlocked"], strict=True):
                    if lv == 0:
                        stats.original_returns.append(float(ret))
                        orig_unl.append(unl)
                    if scoring:
                        s = stats.per_level.setdefault(
                            int(lv), {"n": 0, "succ": 0, "unl": np.zeros(len(self.achievements))})
                        s["n"] += 1
                        s["succ"] += int(succ)
                        s["unl"] += unl
            env.bonus = self.bonus
        if stats.original_returns:
            m = float(np.mean(stats.original_returns))
            self.r_orig = m if self.r_orig is None else 0.5 * self.r_orig + 0.5 * m
            stats.original_unlocked = np.mean(orig_unl, axis=0)
        self.curve.append((self.env_steps, float(np.mean(stats.original_returns))
                           if stats.original_returns else float("nan")))
        return stats

    def evaluate(self, n_envs: int | None = None) -> dict[str, float]:
        """One episode per held-out world of the original game (stochastic policy, no bonus)."""
        cfg = self.cfg
        n = n_envs or cfg.eval_envs
        bank = make_bank(OriginalLevel(), n, np.random.SeedSequence([self.seed, 2]), cfg.size)
        env = MicroCraftEnv([bank], n, seed=self.seed, bonus=0.0,
                            world_sampler=lambda idx, rng: (np.zeros(len(idx)), idx))
        obs = env.assign(np.zeros(n, np.int64))
        done_any = np.zeros(n, bool)
        rets = np.zeros(n)
        unl = np.zeros((n, len(ACHIEVEMENTS)))
        for _ in range(cfg.eval_max_steps + 1):
            a, _, _ = self.agent.act(obs)
            obs, _, d, info = env.step(a)
            if info:
                first = ~done_any[info["slot"]]
                sl = info["slot"][first]
                rets[sl], unl[sl] = info["return"][first], info["unlocked"][first]
                done_any[sl] = True
            if done_any.all():
                break
        out = {"return": float(rets.mean())}
        tier_of = np.array([TIER[a] for a in ACHIEVEMENTS])
        for t in TIERS:
            out[f"tier{t}_success"] = float(unl[:, tier_of == t].any(1).mean())
        out["deepest_tier_success"] = out[f"tier{TIERS[-1]}_success"]
        for i, a in enumerate(ACHIEVEMENTS):
            out[f"ach_{a}"] = float(unl[:, i].mean())
        return out


def _level_feedback(stats: SessionStats, env_index: int,
                    names: tuple[str, ...] = ACHIEVEMENTS) -> tuple[float, dict[str, float]]:
    s = stats.per_level.get(env_index)
    if not s or s["n"] == 0:
        return -1.0, {}
    per = {a: float(s["unl"][i] / s["n"]) for i, a in enumerate(names)}
    return s["succ"] / s["n"], per


def _profile(stats: SessionStats, names: tuple[str, ...] = ACHIEVEMENTS) -> dict[str, float]:
    if stats.original_unlocked is None:
        return {}
    return {a: float(v) for a, v in zip(names, stats.original_unlocked, strict=True)}


def run_archive_arm(runner: Runner, closed_loop: bool, generator=None,
                    compile_fn: Callable | None = None) -> dict:
    """DiCode (``closed_loop=True``) or the open-loop random-mutation ablation."""
    cfg = runner.cfg
    compile_fn = compile_fn or runner.compile
    rng = np.random.default_rng([runner.seed, 11])
    gen = generator or (ProgrammaticDreamer(runner.seed) if closed_loop
                        else RandomCodeMutator(runner.seed))
    archive = LevelArchive(cfg.active_capacity)
    banks: dict[int, Bank] = {}
    kw = {"n_worlds": cfg.n_worlds, "size": cfg.size}
    for code, res in zip(seeds := seed_levels(rng), compile_fn(seeds, seed=runner.seed, **kw),
                         strict=True):
        if not res.ok:
            raise RuntimeError(f"a seed level failed to compile: {res.reason}")
        rec = archive.add(code, description="seed", operator="seed")
        banks[rec.id] = res.bank
        rec.active = True
    generated = compiled = activated = rejected = evicted = duplicates = 0
    profile: dict[str, float] = {}
    pending: list[int] = []
    order: list[int] = list(archive.active)  # activation order (FIFO eviction of the ablation)
    for s in range(cfg.sessions):
        if s == 0:
            batch = list(archive.active)  # the seed phase
        else:
            if (s - 1) % cfg.evolution_interval == 0:
                if closed_loop:
                    parents = select_parents(archive, cfg.parents_per_evolution, "strict")
                    if not parents:
                        # No A/B level and no A fallback: the paper's worker would wait; we take
                        # the top-K scored levels by (L, SR) instead (the dreamer then PERSISTs or
                        # SIMPLIFYs), so that both archive arms generate the same number of levels.
                        ranked = sorted((r for r in archive.records.values() if r.scored),
                                        key=lambda r: (-r.score, -r.sr, r.id))
                        top = [r.id for r in ranked[:cfg.parents_per_evolution]]
                        parents = [top[i % len(top)] for i in range(cfg.parents_per_evolution)] \
                            if top else []
                else:
                    parents = select_parents(archive, cfg.parents_per_evolution, "unrestricted", rng)
                children = []
                # every child differs from every level that exists and from its siblings (a
                # replicated parent must not give duplicate children)
                seen = {spec_key(r.code) for r in archive.records.values()}
                for p in parents:
                    rec = archive.records[p]
                    fb = Feedback(rec.sr, rec.per_achievement, profile)
                    code, op = gen.propose(rec.code, fb, avoid=seen)
                    generated += 1
                    if code is not None and spec_key(code) not in seen:
                        seen.add(spec_key(code))
                        children.append((p, code, op))
                    else:
                        duplicates += 1
                results = compile_fn([c for _, c, _ in children], seed=runner.seed * 1000 + s, **kw)
                for (p, code, op), res in zip(children, results, strict=True):
                    if res.ok:
                        rec = archive.add(code, parent=p, session=s, operator=op)
                        banks[rec.id] = res.bank
                        pending.append(rec.id)
                        compiled += 1
            new = pending[:cfg.levels_per_session]
            pending = pending[cfg.levels_per_session:]
            rest = cfg.levels_per_session - len(new)
            batch = new + sample_active_levels(archive, rest, s, rng, cfg.temperature,
                                               cfg.staleness_coeff, uniform=not closed_loop)
        stats = runner.session([banks[i] for i in batch])
        profile = _profile(stats, runner.achievements) or profile
        for k, rid in enumerate(batch):
            sr, per = _level_feedback(stats, k + 1, runner.achievements)
            was_new = not archive.records[rid].scored
            archive.update_score(rid, sr, s, per)
            if was_new and s > 0:
                if closed_loop:
                    evicted += try_activate(archive, rid) is not None
                    rejected += not archive.records[rid].active
                else:  # no learnability selection: always enter, evict the oldest
                    act = [i for i in order if archive.records[i].active]
                    if len(act) >= archive.capacity:
                        archive.records[act[0]].active = False
                    archive.records[rid].active = True
                if archive.records[rid].active:
                    activated += 1
                    order.append(rid)
    depth = max((archive.depth(i) for i in archive.records), default=0)
    scores = [archive.records[i].score for i in archive.active]
    relevant_tiers = [max(TIER[a] for a in _relevant(archive.records[i].code))
                      for i in archive.records if i >= len(seeds)] or [0]
    return {"levels_generated": float(generated), "compile_rate": compiled / max(generated, 1),
            "activated_fraction": activated / max(compiled, 1), "archive_depth": float(depth),
            "active_mean_learnability": float(np.mean(scores)) if scores else 0.0,
            "max_generated_tier": float(max(relevant_tiers)),
            # the learnability gate at work on a full active set: new levels it refused, and
            # active levels it evicted for a more learnable newcomer
            "gate_rejected": float(rejected),
            "gate_evicted": float(evicted),
            "gate_acted": float(rejected + evicted),
            "duplicate_levels": float(len(archive.records)
                                      - len({spec_key(r.code) for r in archive.records.values()})),
            "no_distinct_child": float(duplicates)}


def _relevant(code: str) -> tuple:
    from .generators import read_spec

    rel = read_spec(code)["relevant_achievements"]
    return tuple(a for a in rel if a in TIER) or ("collect_wood",)


def run_dr_arm(runner: Runner, compile_fn: Callable | None = None) -> dict:
    cfg = runner.cfg
    compile_fn = compile_fn or runner.compile
    rng = np.random.default_rng([runner.seed, 13])
    codes = [random_level(rng) for _ in range(cfg.sessions * cfg.levels_per_session)]
    res = compile_fn(codes, seed=runner.seed, n_worlds=cfg.n_worlds, size=cfg.size)
    banks = [r.bank for r in res if r.ok]
    for s in range(cfg.sessions):
        runner.session(banks[s * cfg.levels_per_session:(s + 1) * cfg.levels_per_session])
    return {"levels_generated": float(len(codes)), "compile_rate": len(banks) / len(codes)}


def run_plr_arm(runner: Runner, robust: bool = False) -> dict:
    """PLR over world seeds of the original game, episode-granular as in jaxued: every reset
    replays a buffered world with probability ``replay_prob`` (rank + staleness sampling) or
    draws a new one from the training pool. Worlds are scored by positive value loss (the mean
    positive GAE advantage of the slot while it played the world, per update). Robust PLR
    (PLR-perp) takes no gradient on transitions from new (exploratory) worlds."""
    return _plr_loop(runner, robust=robust, accel=False)


def run_accel_arm(runner: Runner) -> dict:
    """ACCEL (Parker-Holder et al. 2022): robust PLR over a growing bank of worlds (the original
    training worlds, then mutated children appended after them). After every session the
    ``accel_children`` highest-scored worlds among those replayed in the session (by their
    current buffer score) each get one child with ``accel_edits`` random tile edits
    (:func:`.mutators.mutate_world`). Children are queued as the next *new* worlds: a reset that
    does not replay takes the oldest queued child, else a fresh training world. Like any new
    world, a child is played without gradient (robust PLR), scored by positive value loss and
    inserted into the buffer (replacing the lowest score if higher). Same env steps as every arm.
    """
    return _plr_loop(runner, robust=True, accel=True)


def _plr_loop(runner: Runner, robust: bool, accel: bool) -> dict:
    cfg = runner.cfg
    rng = np.random.default_rng([runner.seed, 17])
    mut_rng = np.random.default_rng([runner.seed, 19])
    sampler = LevelSampler(cfg.plr_buffer, replay_prob=cfg.plr_replay_prob,
                           staleness_coeff=cfg.staleness_coeff, minimum_fill_ratio=0.5)
    pool = runner.original.n  # fresh worlds come from the original training worlds only
    replayed = np.zeros(cfg.num_envs, bool)
    counts = {"replays": 0, "resets": 0, "children": 0, "children_played": 0}
    pending: list[int] = []       # ACCEL: children waiting for their first (scoring) play
    replayed_now: set[int] = set()  # ACCEL: worlds replayed in the current session

    def sampler_fn(idx, r):
        worlds = np.empty(len(idx), np.int64)
        for j, i in enumerate(idx):
            counts["resets"] += 1
            if sampler.sample_replay_decision(rng):
                worlds[j] = sampler.levels[sampler.sample_replay_levels(rng, 1)[0]]
                replayed[i] = True
                counts["replays"] += 1
                replayed_now.add(int(worlds[j]))
            elif pending:
                worlds[j] = pending.pop(0)
                replayed[i] = False
                counts["children_played"] += 1
            else:
                worlds[j] = int(rng.integers(pool))
                replayed[i] = False
        return np.zeros(len(idx), np.int64), worlds

    for _s in range(runner.cfg.sessions):
        if runner.env is not None:
            runner.env.world_sampler = sampler_fn
        replayed_now.clear()
        stats = runner.session([], slot_levels=np.zeros(cfg.num_envs, np.int64),
                               world_sampler=sampler_fn,
                               record=(lambda e: replayed.copy()) if robust else None,
                               train_mask=(lambda b: b["record"].astype(np.float32)) if robust
                               else None)
        for worlds, adv in stats.world_adv:
            for w, sc in zip(worlds, adv, strict=True):
                hit = [i for i, lv in enumerate(sampler.levels) if lv == w]
                if hit:
                    sampler.update(hit[0], float(sc))
                else:
                    sampler.insert(int(w), float(sc))
        if accel:
            score = {int(lv): sc for lv, sc in zip(sampler.levels, sampler.scores, strict=True)}
            top = sorted((w for w in replayed_now if w in score), key=lambda w: (-score[w], w))
            parents = top[:cfg.accel_children]
            children = [mutate_world(bank_world(runner.original, w), mut_rng, cfg.accel_edits)
                        for w in parents]
            first = runner.original.n
            runner.original = append_worlds(runner.original, children)
            pending.extend(range(first, runner.original.n))
            counts["children"] += len(children)
    out = {"replay_fraction": counts["replays"] / max(counts["resets"], 1),
           "buffer_size": float(len(sampler))}
    if accel:
        out.update({"children": float(counts["children"]),
                    "children_played": float(counts["children_played"]),
                    "buffer_child_fraction": float(np.mean([lv >= pool for lv in sampler.levels]))
                    if len(sampler) else 0.0})
    return out


def oracle_levels(sessions: int, per_session: int,
                  goals: tuple[str, ...] = ACHIEVEMENTS) -> list[list[str]]:
    """The oracle curriculum's level programs, per session: the achievements (``goals``, default
    all of MicroCraft's) sorted by tier (ties in the game's order), a window of ``per_session``
    consecutive goals that slides from the first tier (session 0) to the last (the final
    session), each goal scaffolded from scratch (nothing compressed into the start state,
    resources within 3 steps)."""
    order = sorted(goals, key=lambda a: (TIER[a], ACHIEVEMENTS.index(a)))
    k = min(per_session, len(order))
    last = len(order) - k
    out = []
    for s in range(sessions):
        start = round(s * last / max(sessions - 1, 1))
        goals = order[start:start + k]
        out.append([render_level(scaffold([g], (), np.random.default_rng(0)), doc=f"oracle: {g}")
                    for g in goals])
    return out


def run_oracle_arm(runner: Runner, compile_fn: Callable | None = None) -> dict:
    cfg = runner.cfg
    compile_fn = compile_fn or runner.compile
    plan = oracle_levels(cfg.sessions, cfg.levels_per_session, runner.goal_names)
    codes = [c for session in plan for c in session]
    res = compile_fn(codes, seed=runner.seed, n_worlds=cfg.n_worlds, size=cfg.size)
    bad = [r.reason for r in res if not r.ok]
    if bad:
        raise RuntimeError(f"an oracle level failed to compile: {bad[0]}")
    banks = [r.bank for r in res]
    k = 0
    for session in plan:
        runner.session(banks[k:k + len(session)])
        k += len(session)
    return {"levels_generated": float(len(codes)), "compile_rate": 1.0}


def run_arm(arm: str, cfg: CurriculumConfig, ppo: PPOConfig, seed: int, generator=None,
            runner_cls: type[Runner] = Runner) -> dict:
    """Train one arm from scratch; returns eval metrics, the learning curve and diagnostics.
    ``runner_cls``: the game (:class:`Runner`: MicroCraft; :class:`.classic_trainer.ClassicRunner`:
    Craftax-Classic)."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; arms are {ARMS}")
    runner = runner_cls(cfg, ppo, seed)
    runner.check_arm(arm)
    if arm == "dicode":
        diag = run_archive_arm(runner, True, generator)
    elif arm == "random_mutation":
        diag = run_archive_arm(runner, False)
    elif arm == "dr":
        diag = run_dr_arm(runner)
    elif arm in ("plr", "plr_robust"):
        diag = run_plr_arm(runner, robust=arm == "plr_robust")
    elif arm == "accel":
        diag = run_accel_arm(runner)
    elif arm == "oracle_curriculum":
        diag = run_oracle_arm(runner)
    else:
        for _ in range(cfg.sessions):
            runner.session([])
        diag = {}
    metrics = runner.evaluate()
    metrics["env_steps"] = float(runner.env_steps)
    return {"metrics": metrics, "curve": runner.curve, "diagnostics": diag}
