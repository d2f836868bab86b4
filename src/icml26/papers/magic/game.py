"""The asymmetric game on tiny LMs: agents, the attack-pool SFT stage, alternating GRPO, evaluation.

* :class:`Agent` -- a :class:`~icml26.core.lm.model.TinyCausalLM` with its tokenizer and
  lengths. The attacker reads a seed and writes ``<think>..</think><answer>PROGRAM</answer>``;
  the program is executed on the seed to give the attack prompt y_A. The defender reads y_A and
  writes ``<REF>`` or ``<CMP>`` + the topic word.
* :func:`attack_pool` / :func:`sft_attacker` -- Phase 1 (offensive capability initialisation):
  SFT of the attacker on the depth-1 attack pool with a templated CoT (Sec. 3.2.1).
* :func:`defender_grpo_step` / :func:`attacker_grpo_step` -- one GRPO update of one agent with
  the other frozen (Sec. 3.2.2): defender: one attack per seed, a group of G responses;
  attacker: G attacks per seed, one response each. The GRPO math is ``icml26.core.lm.grpo``.
* :class:`AlternatingSchedule` -- which agent trains at each step: blocks of ``switch_every``
  steps, ``update_ratio`` blocks per agent, ``order`` first (Table 6: defender first, 15, 1:1).
* :class:`AlternatingGRPO` -- runs the schedule; ``freeze_attacker=True`` is the frozen-attacker
  control (same defender steps, attacker never updated).
* evaluation: ASR against fixed attacks, held-out compositions and an adaptive search attacker
  with a fixed query budget; refusal on vanilla and adversarial benign prompts; helpfulness.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from icml26.core.lm.generate import generate
from icml26.core.lm.grpo import completion_logprobs, compute_advantages, grpo_loss
from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.lm.sft import SFTConfig, train_sft
from icml26.core.lm.tokenizer import CharTokenizer
from icml26.core.validation import check_positive_int

from .language import (
    ALPHABET,
    COMPLY,
    REFUSE,
    SPECIALS,
    IntentLanguage,
    RuleJudge,
    Seed,
    parse_program,
    program_text,
)
from .rewards import AttackerReward, DefenderReward, attacker_completion, extract_answer

ROLES = ("defender", "attacker")


def build_tokenizer() -> CharTokenizer:
    return CharTokenizer(ALPHABET, specials=SPECIALS)


@dataclass
class Agent:
    """A tiny causal LM policy with its tokenizer and fixed prompt / completion lengths."""

    model: TinyCausalLM
    tok: CharTokenizer
    prompt_length: int
    max_new_tokens: int
    # text -> ids, shared by an agent's copies (same tokenizer): a GRPO step repeats each prompt
    # G times and the evaluation suites repeat across arms, so each text is tokenised once
    _ids: dict[str, tuple[int, ...]] = field(default_factory=dict, repr=False, compare=False)

    def encode(self, text: str) -> list[int]:
        ids = self._ids.get(text)
        if ids is None:
            ids = (self.tok.bos_id, *self.tok.encode(text))
            if len(self._ids) < 500_000:
                self._ids[text] = ids
        return list(ids)

    def decode(self, ids: Sequence[int]) -> str:
        drop = {self.tok.pad_id, self.tok.eos_id}
        return self.tok.decode([i for i in ids if i not in drop])

    def sample(self, prompts: Sequence[str], temperature: float = 1.0,
               generator: torch.Generator | None = None):
        """Generate one completion per prompt; returns (GenerationOutput, completion strings)."""
        self.model.eval()
        gen = generate(self.model, [self.encode(p) for p in prompts], max_new_tokens=self.max_new_tokens,
                       pad_id=self.tok.pad_id, stop_ids=[self.tok.eos_id], temperature=temperature,
                       prompt_length=self.prompt_length, generator=generator)
        return gen, [self.decode(c) for c in gen.completions()]

    def copy(self) -> Agent:
        return Agent(copy.deepcopy(self.model), self.tok, self.prompt_length, self.max_new_tokens, self._ids)


def make_agents(language: IntentLanguage, d_model: int = 48, n_layers: int = 2, n_heads: int = 4,
                seed: int = 0) -> tuple[Agent, Agent]:
    """Fresh (attacker, defender) with random weights, sized for the language."""
    tok = build_tokenizer()
    seed_len = 2 + language.n_content
    att_prompt, att_new = 1 + seed_len, 7 + language.max_depth
    def_prompt, def_new = 1 + seed_len + 3 * language.max_depth, 3
    torch.manual_seed(seed)
    mk = lambda block: TinyCausalLM(LMConfig(vocab_size=tok.vocab_size, block_size=block,  # noqa: E731
                                             n_layer=n_layers, n_head=n_heads, n_embd=d_model))
    attacker = Agent(mk(att_prompt + att_new), tok, att_prompt, att_new)
    defender = Agent(mk(def_prompt + def_new), tok, def_prompt, def_new)
    return attacker, defender


# ----------------------------------------------------------------------------------------------
# Phase 1: SFT stages
# ----------------------------------------------------------------------------------------------


def cot(seed: Seed, program: Sequence[str]) -> str:
    """The templated CoT of the attack pool: the seed's marker and topic (what is asked)."""
    return seed.text[:2]


def attack_pool(language: IntentLanguage, seeds: Sequence[Seed]) -> list[dict]:
    """The static attack pool: every depth-1 rewrite of every seed, with its CoT completion."""
    if not seeds:
        raise ValueError("attack_pool needs at least one seed")
    rows = []
    for s in seeds:
        for op in language.operators:
            rows.append({"seed": s, "program": (op,), "attack": language.execute((op,), s.text),
                         "completion": attacker_completion(cot(s, (op,)), op)})
    return rows


def sft_attacker(attacker: Agent, pool: Sequence[dict], steps: int, lr: float = 3e-3,
                 batch_size: int = 64, seed: int = 0) -> list[float]:
    """Phase 1: L_SFT = -E log pi_A(y_A | x) on the attack pool (core ``train_sft``)."""
    data = [{"prompt_ids": attacker.encode(r["seed"].text),
             "completion_ids": [*attacker.tok.encode(r["completion"]), attacker.tok.eos_id]} for r in pool]
    cfg = SFTConfig(learning_rate=lr, per_device_train_batch_size=batch_size, max_steps=steps, seed=seed)
    return train_sft(attacker.model, data, cfg, pad_id=attacker.tok.pad_id, prompt_length=attacker.prompt_length)


def pretrain_attacker(attacker: Agent, language: IntentLanguage, seeds: Sequence[Seed], steps: int,
                      lr: float = 3e-3, batch_size: int = 64, seed: int = 0) -> list[float]:
    """The attacker's "base model": it learns the output syntax on random programs of any depth
    (uniform, unrelated to the seed's intent) -- the stand-in for an LLM's prior ability to write
    rewrites, which MAGIC's Phase 1 then steers with the depth-1 attack pool."""
    rng = np.random.default_rng(seed)
    data = []
    for s in seeds:
        prog = language.random_program(rng)
        data.append({"prompt_ids": attacker.encode(s.text),
                     "completion_ids": [*attacker.tok.encode(attacker_completion(cot(s, prog), program_text(prog))),
                                        attacker.tok.eos_id]})
    cfg = SFTConfig(learning_rate=lr, per_device_train_batch_size=batch_size, max_steps=steps, seed=seed)
    return train_sft(attacker.model, data, cfg, pad_id=attacker.tok.pad_id, prompt_length=attacker.prompt_length)


def prior_rows(language: IntentLanguage, seeds: Sequence[Seed], n: int, seed: int = 0) -> list[dict]:
    """``n`` rows of the attacker's prior (random programs of any depth, as in
    :func:`pretrain_attacker`) in the attack pool's row format, to replay during Phase 1 so that
    the SFT attacker keeps some mass on compositions (the base model's ability is not erased)."""
    if n < 0 or not seeds:
        raise ValueError("prior_rows needs n >= 0 and at least one seed")
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        s = seeds[int(rng.integers(len(seeds)))]
        prog = language.random_program(rng)
        rows.append({"seed": s, "program": prog, "attack": language.execute(prog, s.text),
                     "completion": attacker_completion(cot(s, prog), program_text(prog))})
    return rows


def defender_target(seed: Seed, refuse: bool) -> str:
    return REFUSE if refuse else COMPLY + seed.topic


def sft_defender(defender: Agent, seeds: Sequence[Seed], steps: int, label_noise: float = 0.15,
                 lr: float = 3e-3, batch_size: int = 64, seed: int = 0,
                 language: IntentLanguage | None = None, uncertain_share: float = 0.0,
                 uncertain_max_depth: int = 1, rewrite_labels: str = "coin") -> list[float]:
    """The "instruct" defender: SFT on vanilla seeds, refusing harmful ones, with label noise.

    With ``language`` and ``uncertain_share > 0``, that share of the examples are random depth-1
    rewrites answered by a fair coin: the base model has seen obfuscated prompts but knows
    nothing about them, so it is *uncertain* on them (as an instruct LLM's sampled answers vary)
    rather than confidently arbitrary. The labels carry no information about intent. With
    ``uncertain_max_depth > 1`` the rewrites are random programs of depth 1..that (compositions
    too), so the base policy is not collapsed on compositions either.

    ``rewrite_labels="truth"`` answers the rewrites with the seed's true label instead (refuse
    iff harmful, no label noise): a defender *told* the intent behind every rewrite, the
    supervised positive control of what this model size can learn to decode.
    """
    if rewrite_labels not in ("coin", "truth"):
        raise ValueError(f"rewrite_labels must be 'coin' or 'truth', got {rewrite_labels!r}")
    if not 0.0 <= label_noise < 0.5:
        raise ValueError(f"label_noise must be in [0, 0.5), got {label_noise!r}")
    if not 0.0 <= uncertain_share < 1.0 or (uncertain_share > 0 and language is None):
        raise ValueError("uncertain_share must be in [0, 1) and needs a language when > 0")
    rng = np.random.default_rng(seed)
    data = []
    for s in seeds:
        text, refuse = s.text, s.harmful != bool(rng.random() < label_noise)
        if uncertain_share and rng.random() < uncertain_share:
            if uncertain_max_depth > 1:
                prog = language.random_program(rng, 1, min(uncertain_max_depth, language.max_depth))
            else:
                prog = (language.operators[int(rng.integers(len(language.operators)))],)
            text = language.execute(prog, s.text)
            coin = bool(rng.random() < 0.5)  # drawn either way: both label modes see the same texts
            refuse = coin if rewrite_labels == "coin" else s.harmful
        data.append({"prompt_ids": defender.encode(text),
                     "completion_ids": [*defender.tok.encode(defender_target(s, refuse)), defender.tok.eos_id]})
    cfg = SFTConfig(learning_rate=lr, per_device_train_batch_size=batch_size, max_steps=steps, seed=seed)
    return train_sft(defender.model, data, cfg, pad_id=defender.tok.pad_id, prompt_length=defender.prompt_length)


# ----------------------------------------------------------------------------------------------
# Phase 2: GRPO steps and the alternating schedule
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GameConfig:
    """Phase-2 hyperparameters (Table 6 where the paper gives them; sizes ours).

    group_size G = 4, clip_eps = 0.2, beta = 0 (no KL), switch_every = 15, update_ratio = (1, 1)
    (defender, attacker), order = ("defender", "attacker"), temperature 1.0 (Table 6).
    batch_size (seeds per step) and lr are ours (the paper: 64 and 1e-6 for 7B models).
    num_iterations (TRL's mu): policy updates per sampled batch; with mu > 1 the ratio
    pi_theta / pi_old departs from 1 after the first update and the clip at 1 +- clip_eps acts
    (pi_old = the sampling policy, fixed for all mu updates, as TRL). Default 1 (verl's and the
    paper's one update per batch, where the clip is inactive).
    """

    group_size: int = 4
    clip_eps: float = 0.2
    beta: float = 0.0
    switch_every: int = 15
    update_ratio: tuple[int, int] = (1, 1)
    order: tuple[str, str] = ("defender", "attacker")
    batch_size: int = 32
    lr_defender: float = 1e-3
    lr_attacker: float = 1e-3
    temperature: float = 1.0
    max_grad_norm: float = 1.0
    num_iterations: int = 1

    def __post_init__(self) -> None:
        check_positive_int(self.group_size, "group_size", minimum=2)
        check_positive_int(self.num_iterations, "num_iterations")
        check_positive_int(self.switch_every, "switch_every")
        check_positive_int(self.batch_size, "batch_size")
        if len(self.update_ratio) != 2 or any(int(r) != r or r < 1 for r in self.update_ratio):
            raise ValueError(f"update_ratio must be two positive ints, got {self.update_ratio!r}")
        if sorted(self.order) != sorted(ROLES):
            raise ValueError(f"order must be a permutation of {ROLES}, got {self.order!r}")
        if not 0 <= self.clip_eps < 1 or self.beta != 0.0:
            raise ValueError("clip_eps must be in [0, 1); beta must be 0 (Table 6: no KL term)")
        if not (self.lr_defender > 0 and self.lr_attacker > 0 and self.temperature > 0):
            raise ValueError("learning rates and temperature must be > 0")


class AlternatingSchedule:
    """Which role trains at each step: blocks of ``switch_every`` steps, ``ratio`` blocks each.

    With order (defender, attacker), switch 15 and ratio (1, 1): steps 0-14 defender, 15-29
    attacker, 30-44 defender, ...  (``algorithm.switch_agent.mode=ratio`` of the released code).
    ``ratio`` is given in ``order``'s role order.
    """

    def __init__(self, switch_every: int = 15, ratio: tuple[int, int] = (1, 1),
                 order: tuple[str, str] = ("defender", "attacker")) -> None:
        self.switch_every = check_positive_int(switch_every, "switch_every")
        if len(ratio) != 2 or any(isinstance(r, bool) or int(r) != r or r < 1 for r in ratio):
            raise ValueError(f"ratio must be two positive ints, got {ratio!r}")
        if sorted(order) != sorted(ROLES):
            raise ValueError(f"order must be a permutation of {ROLES}, got {order!r}")
        self.ratio = (int(ratio[0]), int(ratio[1]))
        self.order = tuple(order)
        self.cycle = [self.order[0]] * self.ratio[0] + [self.order[1]] * self.ratio[1]

    def role(self, step: int) -> str:
        if isinstance(step, bool) or not isinstance(step, int | np.integer) or step < 0:
            raise ValueError(f"step must be a non-negative int, got {step!r}")
        return self.cycle[(int(step) // self.switch_every) % len(self.cycle)]

    def steps_for(self, role: str, n_updates: int) -> int:
        """Total steps until ``role`` has had ``n_updates`` updates and its block ends."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        count, step = 0, 0
        while count < n_updates:
            count += self.role(step) == role
            step += 1
        return step


def _grpo_update(agent: Agent, optimizer: torch.optim.Optimizer, gen, rewards: torch.Tensor,
                 G: int, cfg: GameConfig) -> dict[str, float]:
    """``cfg.num_iterations`` GRPO updates from one sampled group (core math: advantages, clipped
    surrogate). pi_old is the sampling policy for every iteration (TRL's ``num_iterations``), so
    from the second iteration on the ratio differs from 1 and the clip is active. The log holds
    the last iteration's loss and clip ratio, and ``clip_ratio_max`` over the iterations."""
    adv = compute_advantages(rewards, G, "group")
    agent.model.train()
    old = None
    clip_max = 0.0
    for _ in range(cfg.num_iterations):
        lp = completion_logprobs(agent.model, gen)
        if old is None:
            old = lp.detach()  # pi_old = the sampling policy (the weights that generated ``gen``)
        loss, m = grpo_loss(lp, old, adv, gen.completion_mask, beta=0.0, epsilon=cfg.clip_eps, loss_type="grpo")
        clip_max = max(clip_max, m["clip_ratio"])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(agent.model.parameters(), cfg.max_grad_norm)
        optimizer.step()
    return {"loss": float(loss.detach()), "reward": float(rewards.mean()), "clip_ratio": m["clip_ratio"],
            "clip_ratio_max": clip_max, "zero_adv_share": zero_advantage_share(rewards, G)}


def zero_advantage_share(rewards: torch.Tensor, G: int) -> float:
    """Share of the step's groups of ``G`` whose rewards are all equal: their group advantages are
    zero, so they contribute no gradient (a collapsed policy's groups tie and the step does nothing)."""
    r = rewards.detach().reshape(-1, G)
    return float((r.max(dim=1).values == r.min(dim=1).values).float().mean())


def execute_completion(language: IntentLanguage, completion: str, seed: Seed) -> tuple[str, tuple[str, ...] | None]:
    """The attack prompt of an attacker completion: its program applied to the seed, or the
    vanilla seed when the completion has no valid program (a malformed rewrite)."""
    ans = extract_answer(completion)
    program = parse_program(ans, language) if ans is not None else None
    return (language.execute(program, seed.text) if program else seed.text), program


AttackSource = Callable[[Sequence[Seed]], list[str]]


def attacker_source(attacker: Agent, language: IntentLanguage, generator: torch.Generator,
                    temperature: float = 1.0) -> AttackSource:
    """Attacks from an attacker policy: one sampled rewrite per seed."""
    def source(seeds: Sequence[Seed]) -> list[str]:
        with torch.no_grad():
            _, comps = attacker.sample([s.text for s in seeds], temperature, generator)
        return [execute_completion(language, c, s)[0] for c, s in zip(comps, seeds, strict=True)]
    return source


def vanilla_source(seeds: Sequence[Seed]) -> list[str]:
    """No attacker: the vanilla seed itself (the paper's No-Game defender training)."""
    return [s.text for s in seeds]


def pool_source(language: IntentLanguage, rng: np.random.Generator) -> AttackSource:
    """Attacks from the static attack pool: a uniformly drawn depth-1 rewrite per seed."""
    def source(seeds: Sequence[Seed]) -> list[str]:
        return [language.execute((language.operators[int(rng.integers(len(language.operators)))],), s.text)
                for s in seeds]
    return source


def defender_grpo_step(defender: Agent, optimizer, reward: DefenderReward, seeds: Sequence[Seed],
                       attacks: AttackSource, cfg: GameConfig, generator: torch.Generator) -> dict[str, float]:
    """Defender step (attacker frozen): one attack per seed, a group of G responses, R_D."""
    G = cfg.group_size
    prompts = attacks(seeds)
    rep = [p for p in prompts for _ in range(G)]
    with torch.no_grad():
        gen, responses = defender.sample(rep, cfg.temperature, generator)
    r = reward(rep, responses, seed_unsafe=[s.harmful for s in seeds for _ in range(G)])
    return _grpo_update(defender, optimizer, gen, torch.tensor(r, dtype=torch.float32), G, cfg)


def attacker_grpo_step(attacker: Agent, defender: Agent, optimizer, reward: AttackerReward,
                       language: IntentLanguage, seeds: Sequence[Seed], cfg: GameConfig,
                       generator: torch.Generator) -> dict[str, float]:
    """Attacker step (defender frozen): G attacks per seed, one defender response each, R_A."""
    G = cfg.group_size
    rep = [s for s in seeds for _ in range(G)]
    with torch.no_grad():
        gen, comps = attacker.sample([s.text for s in rep], cfg.temperature, generator)
        attacks = [execute_completion(language, c, s)[0] for c, s in zip(comps, rep, strict=True)]
        _, responses = defender.sample(attacks, cfg.temperature, generator)
    r = reward([s.text for s in rep], comps, attack_prompts=attacks, responses=responses,
               seed_unsafe=[s.harmful for s in rep])
    out = _grpo_update(attacker, optimizer, gen, torch.tensor(r, dtype=torch.float32), G, cfg)
    out["depth2_share"] = float(np.mean([(execute_completion(language, c, s)[1] or ()).__len__() >= 2
                                         for c, s in zip(comps, rep, strict=True)]))
    return out


@dataclass
class GameHistory:
    roles: list[str] = field(default_factory=list)
    logs: list[dict[str, float]] = field(default_factory=list)
    attacker_checkpoints: list[Agent] = field(default_factory=list)
    defender_checkpoints: list[Agent] = field(default_factory=list)

    @property
    def defender_updates(self) -> int:
        return self.roles.count("defender")

    @property
    def attacker_updates(self) -> int:
        return self.roles.count("attacker")


class AlternatingGRPO:
    """MAGIC Phase 2: alternating best-response GRPO of two separate policies.

    Parameters
    ----------
    attacker, defender : Agent -- trained in place
    attacker_reward, defender_reward : the reward callables (R_A, R_D)
    language : IntentLanguage -- executes the attacker's programs
    config : GameConfig
    freeze_attacker : bool -- the frozen-attacker control: attacker blocks are skipped, so
        the defender gets the same number of updates against the initial attacker
    """

    def __init__(self, attacker: Agent, defender: Agent, attacker_reward: AttackerReward,
                 defender_reward: DefenderReward, language: IntentLanguage, config: GameConfig,
                 freeze_attacker: bool = False, seed: int = 0) -> None:
        self.attacker, self.defender = attacker, defender
        self.r_att, self.r_def = attacker_reward, defender_reward
        self.language, self.cfg = language, config
        self.freeze_attacker = freeze_attacker
        ratio = config.update_ratio if config.order[0] == "defender" else config.update_ratio[::-1]
        self.schedule = AlternatingSchedule(config.switch_every, ratio, config.order)
        self.opt_d = torch.optim.AdamW(defender.model.parameters(), lr=config.lr_defender, weight_decay=0.0)
        self.opt_a = torch.optim.AdamW(attacker.model.parameters(), lr=config.lr_attacker, weight_decay=0.0)
        self.gen = torch.Generator().manual_seed(seed)
        self.rng = np.random.default_rng(seed)

    def fit(self, seeds: Sequence[Seed], defender_updates: int, checkpoints: bool = True) -> GameHistory:
        """Run the schedule until the defender has had ``defender_updates`` updates (its last
        block completed); attacker checkpoints after each attacker block, defender checkpoints
        after each defender block (index 0 = the initial policies)."""
        check_positive_int(defender_updates, "defender_updates")
        if len(seeds) < self.cfg.batch_size:
            raise ValueError(f"need at least batch_size={self.cfg.batch_size} seeds, got {len(seeds)}")
        h = GameHistory()
        if checkpoints:
            h.attacker_checkpoints.append(self.attacker.copy())
            h.defender_checkpoints.append(self.defender.copy())
        source = attacker_source(self.attacker, self.language, self.gen, self.cfg.temperature)
        step = 0
        while h.defender_updates < defender_updates:
            role = self.schedule.role(step)
            batch = [seeds[int(i)] for i in self.rng.choice(len(seeds), self.cfg.batch_size, replace=False)]
            if role == "defender":
                log = defender_grpo_step(self.defender, self.opt_d, self.r_def, batch, source, self.cfg, self.gen)
            elif self.freeze_attacker:
                step += 1
                continue
            else:
                log = attacker_grpo_step(self.attacker, self.defender, self.opt_a, self.r_att, self.language,
                                         batch, self.cfg, self.gen)
            h.roles.append(role)
            h.logs.append(log)
            step += 1
            block_end = self.schedule.role(step) != role
            if checkpoints and block_end:
                (h.defender_checkpoints if role == "defender" else h.attacker_checkpoints).append(
                    (self.defender if role == "defender" else self.attacker).copy())
        return h


def train_defender_on(defender: Agent, reward: DefenderReward, seeds: Sequence[Seed], attacks: AttackSource,
                      cfg: GameConfig, updates: int, seed: int = 0) -> list[dict[str, float]]:
    """Defender-only GRPO against a fixed attack source (static pool or a frozen attacker)."""
    check_positive_int(updates, "updates")
    opt = torch.optim.AdamW(defender.model.parameters(), lr=cfg.lr_defender, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    return [defender_grpo_step(defender, opt, reward, [seeds[int(i)] for i in
                                                       rng.choice(len(seeds), cfg.batch_size, replace=False)],
                               attacks, cfg, gen) for _ in range(updates)]


def train_attacker_against(attacker: Agent, defender: Agent, reward: AttackerReward, language: IntentLanguage,
                           seeds: Sequence[Seed], cfg: GameConfig, updates: int, seed: int = 0) -> list[dict]:
    """Attacker-only GRPO against a frozen defender."""
    check_positive_int(updates, "updates")
    opt = torch.optim.AdamW(attacker.model.parameters(), lr=cfg.lr_attacker, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    return [attacker_grpo_step(attacker, defender, opt, reward, language,
                               [seeds[int(i)] for i in rng.choice(len(seeds), cfg.batch_size, replace=False)],
                               cfg, gen) for _ in range(updates)]


# ----------------------------------------------------------------------------------------------
# Evaluation
# ----------------------------------------------------------------------------------------------


def greedy_responses(defender: Agent, prompts: Sequence[str], chunk: int = 512) -> list[str]:
    """Temperature-0 responses (the paper's evaluation decoding)."""
    out: list[str] = []
    with torch.no_grad():
        for i in range(0, len(prompts), chunk):
            out += defender.sample(prompts[i:i + chunk], temperature=0.0)[1]
    return out


def asr(defender: Agent, judge: RuleJudge, prompts: Sequence[str]) -> float:
    """Attack success rate: share of (harmful) prompts whose greedy response is judged unsafe."""
    if not prompts:
        raise ValueError("asr needs at least one prompt")
    res = greedy_responses(defender, prompts)
    return float(np.mean([judge.judge(p, r)["response_unsafe"] for p, r in zip(prompts, res, strict=True)]))


def refusal_rate(defender: Agent, prompts: Sequence[str]) -> float:
    if not prompts:
        raise ValueError("refusal_rate needs at least one prompt")
    return float(np.mean([r.startswith(REFUSE) for r in greedy_responses(defender, prompts)]))


def helpfulness(defender: Agent, seeds: Sequence[Seed]) -> float:
    """Share of benign seeds answered with ``<CMP>`` and the right topic word."""
    benign = [s for s in seeds if not s.harmful]
    if not benign:
        raise ValueError("helpfulness needs benign seeds")
    res = greedy_responses(defender, [s.text for s in benign])
    return float(np.mean([r == COMPLY + s.topic for r, s in zip(res, benign, strict=True)]))


def adaptive_asr_curve(defender: Agent, judge: RuleJudge, language: IntentLanguage, seeds: Sequence[Seed],
                       budgets: Sequence[int], seed: int = 0, memory: int = 4, chunk: int = 8) -> dict[int, float]:
    """A black-box search attacker (PAIR/TAP analogue) with up to ``max(budgets)`` queries per
    harmful seed; returns the ASR at every budget in ``budgets`` (a seed is broken within budget
    b if one of its first b queries gets an unsafe response).

    Seeds are attacked in chunks; each seed's queries are first the ``memory`` programs that
    broke the defender most often so far, then random programs (depth uniform in
    1..max_depth). Every defender faces the same budgets and the same random stream.
    """
    budgets = sorted({check_positive_int(int(b), "budget") for b in budgets})
    if not budgets:
        raise ValueError("adaptive_asr_curve needs at least one budget")
    budget = budgets[-1]
    harmful = [s for s in seeds if s.harmful]
    if not harmful:
        raise ValueError("adaptive_asr needs harmful seeds")
    rng = np.random.default_rng(seed)
    wins: Counter = Counter()
    first_hit: list[int] = []
    for i in range(0, len(harmful), chunk):
        part = harmful[i:i + chunk]
        known = [p for p, _ in wins.most_common(min(memory, budget))]
        progs = [known + [language.random_program(rng) for _ in range(budget - len(known))] for _ in part]
        prompts = [language.execute(p, s.text) for s, ps in zip(part, progs, strict=True) for p in ps]
        res = greedy_responses(defender, prompts)
        for j, ps in enumerate(progs):
            hit = budget
            for k, p in enumerate(ps):
                if judge.judge(prompts[j * budget + k], res[j * budget + k])["response_unsafe"]:
                    wins[p] += 1
                    hit = min(hit, k)
            first_hit.append(hit)
    fh = np.asarray(first_hit)
    return {b: float(np.mean(fh < b)) for b in budgets}


def adaptive_asr(defender: Agent, judge: RuleJudge, language: IntentLanguage, seeds: Sequence[Seed],
                 budget: int, seed: int = 0, memory: int = 4, chunk: int = 8) -> float:
    """The adaptive attacker's ASR at one query budget (:func:`adaptive_asr_curve`)."""
    check_positive_int(budget, "budget")
    return adaptive_asr_curve(defender, judge, language, seeds, (budget,), seed, memory, chunk)[budget]


def attacker_programs(attacker: Agent, language: IntentLanguage, seeds: Sequence[Seed],
                      seed: int = 0, temperature: float = 1.0) -> tuple[list[str], list[tuple[str, ...] | None], float]:
    """Sample one attack per seed: (attack prompts, programs (None = invalid), format validity)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        _, comps = attacker.sample([s.text for s in seeds], temperature, gen)
    pairs = [execute_completion(language, c, s) for c, s in zip(comps, seeds, strict=True)]
    fmt = float(np.mean([extract_answer(c) is not None for c in comps]))
    return [a for a, _ in pairs], [p for _, p in pairs], fmt


def novelty(programs: Sequence[tuple[str, ...] | None]) -> dict[str, float]:
    """Composition statistics counted by the grammar: share of valid programs of depth >= 2,
    number of distinct depth>=2 programs, entropy (nats) over operator families of first ops."""
    valid = [p for p in programs if p]
    n = max(len(programs), 1)
    comps = [p for p in valid if len(p) >= 2]
    return {"valid_share": len(valid) / n, "composition_share": len(comps) / n,
            "distinct_compositions": float(len(set(comps)))}
