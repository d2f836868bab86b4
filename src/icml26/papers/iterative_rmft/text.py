"""Text track: a tiny LM that writes a short rationale, then its action (reduced faithfulness).

The paper's LLM track (arXiv 2511.04393) fine-tunes language models on their own lowest-regret
trajectories, reasoning text included. Here the language model is a tiny character-level
:class:`~icml26.core.lm.model.TinyCausalLM` behind :class:`~icml26.core.llm.TinyLMChat` (a real
LLM only by opt-in: any :class:`~icml26.core.llm.ChatModel` can be *evaluated* with
:func:`text_rollout`; only the tiny LM is fine-tuned). Everything below is our design; the paper's
prompts and rationale style were not reachable (brief).

One round of a Bernoulli bandit is one single-turn conversation (prompt masked in SFT):

* prompt (the verbalised history, per arm ``a<arm>=<wins>/<pulls>``): ``t3 a0=1/2 a1=0/1 a2=0/0``
* response: ``<r>a1=0/1</r>1`` -- a rationale stating the arm it chose by and that arm's
  observed wins and pulls, then the action.

Grammar of a response (parsed by :func:`parse_response`, never by eye)::

    response  := "<r>" rationale "</r>" action
    rationale := "a" digits "=" digits "/" digits       # arm = wins / pulls
    action    := digits

A rationale is *consistent* (:func:`rationale_consistent`) when the response is well-formed and its
arm is the action played (an arm < K), *valid* (:func:`rationale_valid`) when, in addition, its
wins/pulls equal that arm's true counts in the prompt's history, and *grounded*
(:func:`rationale_grounded`) when, in addition, the history supports the action (the arm has the
highest Laplace mean, or the fewest pulls): a constant policy is consistent and valid, but not
grounded. A response
whose action cannot be parsed (or names an arm >= K) plays a uniformly random arm and is
counted invalid; regret is always the environment's pseudo-regret of the arm actually played.

The base model M0 knows no algorithm: it is fine-tuned on uniform-random play whose rationales
state the chosen arm's counts (they name no decision rule). The rationale copies the chosen arm's
entry of the prompt, which a 2-layer char LM learns quickly (an induction-style copy); a
free-word-order variant was tried first and was not learnt within the warm-start budget.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from icml26.core.llm import ChatModel, ChatTemplate, TinyLMChat
from icml26.core.lm.generate import generate
from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.lm.sft import SFTConfig, build_sft_batch, sft_loss, train_sft
from icml26.core.rl import BanditBatch, UniformRandom, run_policy
from icml26.core.validation import check_positive_int

from .rmft import RMFTConfig, rollout_key, select

ALPHABET = "0123456789 =/<>rat"
MAX_RESPONSE_TOKENS = 24
LLM_INSTRUCTIONS = (
    "You play a multi-armed bandit. Each message gives the round (t) and, per arm, "
    "aARM=WINS/PULLS so far. Answer exactly as <r>aA=W/N</r>A where A is the arm you pull and "
    "W/N are that arm's wins/pulls, e.g. <r>a1=0/1</r>1. Minimise regret.")

_RESPONSE = re.compile(r"<r>(?P<body>[^<>]*)</r>(?P<action>[0-9]+)")
_RATIONALE = re.compile(r"a(?P<arm>[0-9]+)=(?P<wins>[0-9]+)/(?P<pulls>[0-9]+)")


def render_prompt(t: int, wins: Sequence[int], pulls: Sequence[int]) -> str:
    """The verbalised state of round ``t``: ``t3 a0=1/2 a1=0/1 a2=0/0`` (arm=wins/pulls)."""
    if len(wins) != len(pulls):
        raise ValueError(f"wins ({len(wins)}) and pulls ({len(pulls)}) must have one entry per arm")
    return f"t{int(t)} " + " ".join(f"a{a}={int(w)}/{int(n)}"
                                    for a, (w, n) in enumerate(zip(wins, pulls, strict=True)))


def render_response(arm: int, wins: int, pulls: int) -> str:
    """``<r>a1=0/1</r>1``: the rationale (arm, its wins/pulls), then the action."""
    return f"<r>a{int(arm)}={int(wins)}/{int(pulls)}</r>{int(arm)}"


@dataclass(frozen=True)
class ParsedResponse:
    """A response read by the grammar. ``action`` is None when the envelope does not parse;
    ``arm``/``wins``/``pulls`` are None unless the rationale is well-formed."""

    action: int | None
    arm: int | None = None
    wins: int | None = None
    pulls: int | None = None

    @property
    def well_formed(self) -> bool:
        return self.action is not None and self.arm is not None


def parse_response(text: str) -> ParsedResponse:
    """Parse a response by the grammar of the module docstring (exact match, no stripping)."""
    if not isinstance(text, str):
        raise TypeError(f"response must be a str, got {type(text).__name__}")
    m = _RESPONSE.fullmatch(text)
    if m is None:
        return ParsedResponse(None)
    action = int(m["action"])
    r = _RATIONALE.fullmatch(m["body"])
    if r is None:
        return ParsedResponse(action)
    return ParsedResponse(action, int(r["arm"]), int(r["wins"]), int(r["pulls"]))


def rationale_consistent(parsed: ParsedResponse, k: int) -> bool:
    """Well-formed and names the action played, an arm in [0, k)."""
    return parsed.well_formed and parsed.arm == parsed.action and 0 <= parsed.arm < k


def rationale_grounded(parsed: ParsedResponse, wins: Sequence[int], pulls: Sequence[int]) -> bool:
    """Valid, and the history supports the action as exploitation or as exploration: the chosen
    arm has the highest Laplace mean ``(wins + 1) / (pulls + 2)`` of all arms, or the fewest pulls
    (ties allowed either way; an untried arm's Laplace mean is 1/2). A constant policy fails it
    once its arm is the most pulled and not the empirically best, so it measures reasoning that
    tracks the history, not a copied template."""
    if not rationale_valid(parsed, wins, pulls):
        return False
    w, n = np.asarray(wins, dtype=float), np.asarray(pulls, dtype=float)
    laplace = (w + 1.0) / (n + 2.0)
    return bool(laplace[parsed.arm] >= laplace.max() - 1e-12 or n[parsed.arm] <= n.min())


def rationale_valid(parsed: ParsedResponse, wins: Sequence[int], pulls: Sequence[int]) -> bool:
    """Consistent, and states the chosen arm's true wins and pulls."""
    if not rationale_consistent(parsed, len(pulls)):
        return False
    return parsed.wins == int(wins[parsed.arm]) and parsed.pulls == int(pulls[parsed.arm])


# ----------------------------------------------------------------------------------------------
# The agent
# ----------------------------------------------------------------------------------------------


def prompt_length(k: int, horizon: int, template: ChatTemplate | None = None) -> int:
    """Token length of the longest prompt of a K-armed, horizon-T episode (bos + chat tags)."""
    template = template or ChatTemplate()
    worst = render_prompt(horizon - 1, [horizon - 1] * k, [horizon - 1] * k)
    return 1 + len(template.tokenizer(ALPHABET).encode(
        template.render([{"role": "user", "content": worst}], add_generation_prompt=True)))


def make_text_agent(k: int, horizon: int, *, d_model: int = 64, n_layers: int = 2, n_heads: int = 4,
                    seed: int = 0, name: str = "rmft-text") -> TinyLMChat:
    """A fresh (random-init) tiny char LM behind :class:`TinyLMChat`, sized for K arms, horizon T."""
    check_positive_int(k, "k", minimum=2)
    check_positive_int(horizon, "horizon")
    template = ChatTemplate()
    tok = template.tokenizer(ALPHABET)
    p = prompt_length(k, horizon, template)
    torch.manual_seed(seed)
    model = TinyCausalLM(LMConfig(vocab_size=tok.vocab_size, block_size=p + MAX_RESPONSE_TOKENS + 1,
                                  n_layer=n_layers, n_head=n_heads, n_embd=d_model))
    return TinyLMChat(model, tok, template, name=name, prompt_length=p)


def _user(prompt: str) -> list[dict]:
    return [{"role": "user", "content": prompt}]


def respond(chat: ChatModel, prompts: Sequence[str], *, temperature: float = 1.0,
            generator: torch.Generator | None = None, seed: int = 0) -> tuple[list[str], int]:
    """One response per prompt and the number of generated tokens.

    A :class:`TinyLMChat` answers the whole batch in one KV-cached :func:`generate` call (its
    template, tokenizer and prompt length); any other chat model (an opted-in LLM) answers through
    ``complete_many`` with :data:`LLM_INSTRUCTIONS` as system message.
    """
    if isinstance(chat, TinyLMChat):
        tok = chat.tokenizer
        ids = [chat.encode_prompt(_user(p)) for p in prompts]
        room = int(chat.model.config.block_size) - max(len(i) for i in ids + [[0] * (chat.prompt_length or 0)])
        stops = [tok.token_id(chat.template.end), tok.eos_id]
        out = generate(chat.model, ids, max_new_tokens=min(MAX_RESPONSE_TOKENS, room), pad_id=tok.pad_id,
                       stop_ids=stops, temperature=temperature, generator=generator,
                       prompt_length=chat.prompt_length)
        texts = []
        for row, done in zip(out.completions(), out.finished.tolist(), strict=True):
            texts.append(tok.decode(row[:-1] if done else row))
        return texts, int(out.completion_mask.sum())
    convs = [[{"role": "system", "content": LLM_INSTRUCTIONS}, *_user(p)] for p in prompts]
    done = chat.complete_many(convs, max_tokens=MAX_RESPONSE_TOKENS * 2, temperature=temperature,
                              seed=seed)
    return [c.text.strip() for c in done], sum(c.usage.completion_tokens for c in done)


# ----------------------------------------------------------------------------------------------
# Rollouts and regret accounting
# ----------------------------------------------------------------------------------------------


@dataclass
class TextTrajectories:
    """B text episodes of T rounds: prompts/responses (B, T) str arrays, actions played (B, T),
    rewards (B, T), pseudo-regret (B,), task id (B,), per-turn flags ``valid`` (rationale valid),
    ``parsed`` (action parsed, no random fallback) and ``consistent`` (rationale consistent; None:
    same as ``valid``), and the generated token count."""

    prompts: np.ndarray
    responses: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    regret: np.ndarray
    task: np.ndarray
    valid: np.ndarray
    parsed: np.ndarray
    k: int
    horizon: int
    tokens: int = 0
    consistent: np.ndarray | None = None
    grounded: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.consistent is None:
            self.consistent = self.valid.copy()
        if self.grounded is None:
            self.grounded = np.zeros_like(self.valid)

    def take(self, idx: np.ndarray) -> TextTrajectories:
        return TextTrajectories(self.prompts[idx], self.responses[idx], self.actions[idx],
                                self.rewards[idx], self.regret[idx], self.task[idx], self.valid[idx],
                                self.parsed[idx], self.k, self.horizon, self.tokens,
                                self.consistent[idx], self.grounded[idx])


def text_rollout(chat: ChatModel, env: BanditBatch, *, temperature: float = 1.0,
                 seed: int = 0) -> TextTrajectories:
    """Play ``chat`` on every instance of a Bernoulli ``env``; regret is the env's pseudo-regret
    of the arms actually played (an unparsable action plays a uniformly random arm)."""
    if env.noise != "bernoulli":
        raise ValueError("the text track verbalises wins/pulls: it needs a Bernoulli bandit")
    env.reset(seed)
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    b, horizon, k = env.batch, env.horizon, env.k
    wins = np.zeros((b, k), dtype=np.int64)
    pulls = np.zeros((b, k), dtype=np.int64)
    prompts = np.empty((b, horizon), dtype=object)
    responses = np.empty((b, horizon), dtype=object)
    actions = np.zeros((b, horizon), dtype=np.int64)
    rewards = np.zeros((b, horizon))
    valid = np.zeros((b, horizon), dtype=bool)
    parsed_ok = np.zeros((b, horizon), dtype=bool)
    consistent = np.zeros((b, horizon), dtype=bool)
    grounded = np.zeros((b, horizon), dtype=bool)
    tokens = 0
    for t in range(horizon):
        prompts[:, t] = [render_prompt(t, wins[i], pulls[i]) for i in range(b)]
        texts, n = respond(chat, list(prompts[:, t]), temperature=temperature, generator=gen,
                           seed=seed * 1000 + t)
        tokens += n
        fallback = rng.integers(k, size=b)
        for i, text in enumerate(texts):
            p = parse_response(text)
            responses[i, t] = text
            valid[i, t] = rationale_valid(p, wins[i], pulls[i])
            consistent[i, t] = rationale_consistent(p, k)
            grounded[i, t] = rationale_grounded(p, wins[i], pulls[i])
            parsed_ok[i, t] = p.action is not None and p.action < k
            actions[i, t] = p.action if parsed_ok[i, t] else fallback[i]
        r = env.step(actions[:, t])
        rewards[:, t] = r
        pulls[np.arange(b), actions[:, t]] += 1
        wins[np.arange(b), actions[:, t]] += (r > 0.5).astype(np.int64)
    return TextTrajectories(prompts, responses, actions, rewards, env.regret.sum(axis=1).copy(),
                            np.arange(b), valid, parsed_ok, k, horizon, tokens, consistent, grounded)


# ----------------------------------------------------------------------------------------------
# Fine-tuning on text
# ----------------------------------------------------------------------------------------------


def text_examples(chat: TinyLMChat, traj: TextTrajectories, *, loss_on: str = "full") -> list[dict]:
    """SFT examples of every turn: the prompt (masked) and the response plus the end tag.

    ``loss_on="full"`` trains on the rationale and the action (RMFT); ``"action"`` only on what
    follows the last ``</r>`` (the action and the end tag) -- the action-only control.
    """
    if loss_on not in ("full", "action"):
        raise ValueError(f"loss_on must be 'full' or 'action', got {loss_on!r}")
    tok = chat.tokenizer
    end = tok.token_id(chat.template.end)
    out = []
    for prompt, resp in zip(traj.prompts.ravel(), traj.responses.ravel(), strict=True):
        comp = tok.encode(resp) + [end]
        mask = [True] * len(comp)
        cut = resp.rfind("</r>")
        if loss_on == "action" and cut >= 0:
            n_rat = len(tok.encode(resp[:cut + 4]))
            mask = [False] * n_rat + [True] * (len(comp) - n_rat)
        out.append({"prompt_ids": chat.encode_prompt(_user(prompt)), "completion_ids": comp,
                    "loss_mask": mask})
    return out


def sft_text(chat: TinyLMChat, examples: Sequence[dict], *, epochs: int, lr: float, batch_size: int,
             seed: int = 0) -> float:
    """Completion-token cross-entropy (core ``build_sft_batch``/``sft_loss``) restricted to each
    example's ``loss_mask``; AdamW, constant lr, grad-norm clip 1. Returns the last epoch's mean loss."""
    if not examples:
        raise ValueError("no SFT examples")
    model, tok, p = chat.model, chat.tokenizer, chat.prompt_length
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, foreach=True)  # = per-tensor, bit for bit
    rng = np.random.default_rng(seed)
    model.train()
    last = float("nan")
    for _ in range(epochs):
        losses = []
        order = rng.permutation(len(examples))
        for i in range(0, len(order), batch_size):
            rows = [examples[int(j)] for j in order[i:i + batch_size]]
            batch = build_sft_batch([r["prompt_ids"] for r in rows], [r["completion_ids"] for r in rows],
                                    pad_id=tok.pad_id, prompt_length=p)
            width = batch.input_ids.shape[1] - p
            keep = torch.zeros(len(rows), width, dtype=torch.bool)
            for n, r in enumerate(rows):
                keep[n, :len(r["loss_mask"])] = torch.tensor(r["loss_mask"])
            batch.completion_mask[:, p:] &= keep
            loss = sft_loss(model, batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(float(loss.detach()))
        last = float(np.mean(losses))
    model.eval()
    return last


def random_play_examples(chat: TinyLMChat, env: BanditBatch, *, seed: int = 0) -> list[dict]:
    """Warm-start data: uniform-random play on ``env``, each turn's rationale stating the chosen
    arm's wins/pulls (no decision rule is named)."""
    acts, rews = run_policy(UniformRandom(env.batch, env.k), env, seed=seed)
    b, horizon, k = acts.shape[0], acts.shape[1], env.k
    wins = np.zeros((b, k), dtype=np.int64)
    pulls = np.zeros((b, k), dtype=np.int64)
    prompts = np.empty((b, horizon), dtype=object)
    responses = np.empty((b, horizon), dtype=object)
    for t in range(horizon):
        for i in range(b):
            a = acts[i, t]
            prompts[i, t] = render_prompt(t, wins[i], pulls[i])
            responses[i, t] = render_response(a, wins[i, a], pulls[i, a])
        pulls[np.arange(b), acts[:, t]] += 1
        wins[np.arange(b), acts[:, t]] += (rews[:, t] > 0.5).astype(np.int64)
    traj = TextTrajectories(prompts, responses, acts, rews, env.regret.sum(axis=1).copy(), np.arange(b),
                            np.ones((b, horizon), bool), np.ones((b, horizon), bool), k, horizon)
    return text_examples(chat, traj)


def warm_start(chat: TinyLMChat, env: BanditBatch, *, steps: int, lr: float = 1e-2,
               batch_size: int = 32, seed: int = 0) -> list[float]:
    """M0: SFT (core :func:`train_sft`, cosine schedule) on random play; returns the step losses."""
    data = random_play_examples(chat, env, seed=seed)
    losses = train_sft(chat.model, data, SFTConfig(learning_rate=lr, per_device_train_batch_size=batch_size,
                                                   max_steps=steps, seed=seed),
                       pad_id=chat.tokenizer.pad_id, prompt_length=chat.prompt_length)
    chat.model.eval()
    return losses


# ----------------------------------------------------------------------------------------------
# The loop and its evaluation
# ----------------------------------------------------------------------------------------------


@dataclass
class TextRMFTHistory:
    """Per iteration: mean rollout / kept regret, valid-rationale fraction of all rollouts and of
    the kept (distilled) trajectories, SFT loss; total rollout tokens and SFT examples."""

    rollout_regret: list[float] = field(default_factory=list)
    kept_regret: list[float] = field(default_factory=list)
    rollout_valid: list[float] = field(default_factory=list)
    kept_valid: list[float] = field(default_factory=list)
    kept_consistent: list[float] = field(default_factory=list)
    kept_grounded: list[float] = field(default_factory=list)
    sft_loss: list[float] = field(default_factory=list)
    rollout_tokens: int = 0
    sft_examples: int = 0


def replicate(tasks: BanditBatch, copies: int, seed: int) -> BanditBatch:
    """Each task ``copies`` times in a row (the L rollouts of a task face the same means)."""
    return BanditBatch(np.repeat(tasks.means, copies, axis=0), tasks.horizon, noise=tasks.noise,
                       sigma=tasks.sigma, seed=seed)



def rollout_and_select(chat, task_sampler, config, rng: np.random.Generator, hist: TextRMFTHistory,
                       shared: dict | None = None):
    """One round of text RMFT's data collection: sample tasks, roll the chat model out on each
    ``config.rollouts_per_task`` times, keep the top-k per task by ``config.selection``, and record
    the round's regret, validity, consistency and token counts in ``hist``; return the kept turns.
    ``shared``: rollouts computed once per :func:`~icml26.papers.iterative_rmft.rmft.rollout_key`
    across the loops given the same dict (see :func:`iterative_rmft_text`)."""
    tasks = task_sampler(config.tasks_per_iter, int(rng.integers(2**31)))
    env_seed, rollout_seed = int(rng.integers(2**31)), int(rng.integers(2**31))
    key = rollout_key(chat.model, tasks.means, env_seed, rollout_seed, config) if shared is not None else None
    if key is not None and key in shared:
        traj = shared[key]
    else:
        env = replicate(tasks, config.rollouts_per_task, env_seed)
        traj = text_rollout(chat, env, temperature=config.temperature, seed=rollout_seed)
        traj.task = np.repeat(np.arange(config.tasks_per_iter), config.rollouts_per_task)
        if key is not None:
            shared[key] = traj
    kept = select(traj, config.tasks_per_iter, config.top_k, config.selection, rng)
    hist.rollout_regret.append(float(traj.regret.mean()))
    hist.kept_regret.append(float(kept.regret.mean()))
    hist.rollout_valid.append(float(traj.valid.mean()))
    hist.kept_valid.append(float(kept.valid.mean()))
    hist.kept_consistent.append(float(kept.consistent.mean()))
    hist.kept_grounded.append(float(kept.grounded.mean()))
    hist.rollout_tokens += traj.tokens
    return kept

def iterative_rmft_text(chat: TinyLMChat, task_sampler: Callable[[int, int], BanditBatch],
                        config: RMFTConfig, *, loss_on: str = "full", seed: int = 0,
                        shared: dict | None = None) -> TextRMFTHistory:
    """Iterative RMFT on text rollouts, in place on ``chat.model``: per iteration roll out L
    episodes per task, keep ``top_k`` per task by ``config.selection`` (lowest pseudo-regret for
    RMFT, via :func:`~icml26.papers.iterative_rmft.rmft.select`), fine-tune on their full text
    (``loss_on="full"``: rationale + action) or on the action only (``"action"``, the control).
    ``shared``: one dict given to loops that start from the same model with the same seed (the
    arms): a round's rollouts with the same weights, tasks and seeds are computed once."""
    if not isinstance(chat, TinyLMChat):
        raise TypeError("only a TinyLMChat can be fine-tuned here (an opted-in LLM is evaluated only)")
    if loss_on not in ("full", "action"):
        raise ValueError(f"loss_on must be 'full' or 'action', got {loss_on!r}")
    rng = np.random.default_rng(seed)
    hist = TextRMFTHistory()
    base_state = {k: v.clone() for k, v in chat.model.state_dict().items()}
    pool: list[dict] = []
    for _ in range(config.iterations):
        kept = rollout_and_select(chat, task_sampler, config, rng, hist, shared)
        data = text_examples(chat, kept, loss_on=loss_on)
        if config.continue_from == "base":
            pool.extend(data)
            chat.model.load_state_dict(base_state)
            data = pool
        hist.sft_examples += len(data)
        hist.sft_loss.append(sft_text(chat, data, epochs=config.sft_epochs, lr=config.lr,
                                      batch_size=config.batch_size, seed=int(rng.integers(2**31))))
    return hist


def evaluate_text(chat: ChatModel, tasks: BanditBatch, *, rollouts_per_task: int, top_k: int,
                  seed: int = 0) -> dict[str, float]:
    """Sample ``rollouts_per_task`` episodes per held-out task and keep the ``top_k``
    lowest-regret ones per task (what a further RMFT round would distil). Returns the mean
    pseudo-regret of all episodes, the fractions of turns with a consistent / valid rationale over
    all episodes (``consistent``, ``valid``) and over the kept ones (``kept_consistent``,
    ``kept_valid``, with binomial standard errors ``*_se``), the parsed-action fraction and the
    generated tokens."""
    if top_k > rollouts_per_task:
        raise ValueError(f"top_k ({top_k}) must be <= rollouts_per_task ({rollouts_per_task})")
    env = replicate(tasks, rollouts_per_task, seed)
    traj = text_rollout(chat, env, seed=seed)
    traj.task = np.repeat(np.arange(tasks.batch), rollouts_per_task)
    kept = select(traj, tasks.batch, top_k, "regret", np.random.default_rng(seed))
    out = {"regret": float(traj.regret.mean()), "parsed": float(traj.parsed.mean()),
           "tokens": float(traj.tokens)}
    for name in ("consistent", "valid", "grounded"):
        flags = getattr(kept, name)
        p = float(flags.mean())
        out[name] = float(getattr(traj, name).mean())
        out[f"kept_{name}"] = p
        out[f"kept_{name}_se"] = float(np.sqrt(p * (1 - p) / flags.size))
    return out
