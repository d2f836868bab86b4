"""Equilibrium finding in the verbalized game: a proposal loop over sender prompts.

The loop (Verbalized BP, arXiv 2502.01587, Sec. 4; OPRO, Yang et al. 2023) keeps a history of
(prompt, score) pairs. Each iteration a *proposer* chat model reads the history, best first, and
answers ``k`` new prompts as JSON; each is scored by playing the verbalized game through the text
channel against the receiver, on common episodes (the same states and letter seeds for every
prompt, so that scores differ only through the prompts). The receiver best-responds to the
published policy, so a prompt whose recommendation is not obeyed (the verbalized obedience
constraint is violated) scores as if it recommended nothing. The best prompt is the sender's
strategy. Because mixtures of prompts in this family are again prompts of the family, the
commitment meta-solver over the pool reduces to picking the best prompt.

The offline proposer (:func:`local_proposer`) mutates the best prompts with a step that shrinks
over iterations; a real LLM can take its place (``--llm URL``): it sees the same text.
:func:`random_search` scores the same number of randomly drawn prompts (uniform, or with the
loop's own starting knowledge) and :func:`grid_search` a grid on the lie rate: the strongest
alternatives that do not learn from the history. :func:`sender_deviation_gain` and
:func:`receiver_deviation_gain` check an equilibrium with a search the loop does not use.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from icml26.core.llm import ChatModel, ScriptedChat, complete_structured, parse_json

from .classic import binary_threshold_optimum
from .verbal import CLASSES, RESOLUTION, Episodes, Scenario, SenderPrompt, exact_outcome, play

PROPOSER_SYSTEM = (
    "You optimise a sender's persuasion policy. A policy has honesty_good and lie_rate (the "
    "rates of positive letters for good and bad states, in [0, 1]) and obfuscate (true/false)."
    " Given past policies and their scores (higher is better), propose {k} new policies as a "
    'JSON list of objects {{"honesty_good": .., "lie_rate": .., "obfuscate": ..}}.')


def proposer_messages(history: Sequence[tuple[SenderPrompt, float]], *, k: int, iteration: int,
                      allow_obfuscate: bool) -> list[dict]:
    """The proposer's conversation: the task and the history, best first (one JSON per line)."""
    order = sorted(range(len(history)), key=lambda i: (-history[i][1], i))
    lines = [json.dumps({"honesty_good": round(history[i][0].honesty_good, 6),
                         "lie_rate": round(history[i][0].lie_rate, 6),
                         "obfuscate": history[i][0].obfuscate, "score": round(history[i][1], 6)})
             for i in order]
    note = "" if allow_obfuscate else " obfuscate must stay false."
    return [{"role": "system", "content": PROPOSER_SYSTEM.format(k=k) + note},
            {"role": "user", "content": f"Iteration {iteration}. History, best first:\n" + "\n".join(lines)}]


def local_proposer(*, step0: float = 0.25, decay: float = 0.75, name: str = "local_proposer") -> ScriptedChat:
    """The offline proposer as a chat model (it reads the same text an LLM proposer reads).

    Of the ``k`` proposals, most refine the best policy of the history (the lie rate moves by
    a normal step of s.d. ``step0 * decay**iteration``, the honesty rate by half that with
    probability 1/4; clipped to [0, 1]); once the history holds both styles, one refines the
    best policy of the other style (``obfuscate`` flipped); the last switches style (the best
    policy with ``obfuscate`` flipped and a uniform lie rate; when obfuscation is not allowed,
    the best policy with a uniform lie rate). Seeded by the request
    seed. Defaults are our choice (not given by the paper).
    """

    def reply(messages, params):
        system, user = messages[0]["content"], messages[-1]["content"]
        k = int(system.split("propose ")[1].split(" ")[0])
        allow_obf = "obfuscate must stay false" not in system
        head, _, body = user.partition("\n")
        iteration = int(head.split()[1].rstrip("."))
        history = [json.loads(line) for line in body.splitlines() if line.strip()]
        rng = np.random.default_rng(params.seed)
        sd = step0 * decay ** iteration
        best = {key: history[0][key] for key in ("honesty_good", "lie_rate", "obfuscate")}

        def refine(parent):
            child = dict(parent)
            child["lie_rate"] = float(np.clip(child["lie_rate"] + rng.normal(0, sd), 0.0, 1.0))
            if rng.random() < 0.25:
                child["honesty_good"] = float(np.clip(child["honesty_good"] + rng.normal(0, sd / 2), 0.0, 1.0))
            return child

        other = [h for h in history if bool(h["obfuscate"]) != bool(best["obfuscate"])]
        n_refine = max(k - 2, 1) if (allow_obf and other) else max(k - 1, 1)
        out = [refine(best) for _ in range(n_refine)]
        if allow_obf and other and k >= 3:  # refine the best of the other style
            out.append(refine({key: other[0][key] for key in best}))
        if k >= 2:
            if allow_obf:  # switch style: the best policy, style flipped, a fresh lie rate
                out.append({**best, "obfuscate": not best["obfuscate"], "lie_rate": float(rng.random())})
            else:
                out.append({**best, "lie_rate": float(rng.random())})
        for child in out:
            child["obfuscate"] = bool(child["obfuscate"]) and allow_obf
        return json.dumps(out[:k])

    return ScriptedChat(reply, with_params=True, name=name)


def _parse_proposals(k: int, commit: bool, allow_obfuscate: bool) -> Callable[[str], list[SenderPrompt]]:
    def parse(text: str) -> list[SenderPrompt]:
        items = parse_json(text)
        if not isinstance(items, list) or not items:
            raise ValueError("the reply must be a non-empty JSON list of policies")
        out = []
        for it in items[:k]:
            if not isinstance(it, dict):
                raise ValueError("each policy must be a JSON object")
            try:
                out.append(SenderPrompt(float(it["honesty_good"]), float(it["lie_rate"]),
                                        obfuscate=bool(it.get("obfuscate", False)) and allow_obfuscate,
                                        commit=commit))
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"bad policy {it!r}: {exc}") from None
        return out
    return parse


@dataclass
class SearchResult:
    """The outcome of a search over sender prompts.

    best : the chosen prompt; best_score : its training score; history : every (prompt, score)
    in the order scored; n_proposals : prompts scored besides the start; episodes : episodes played
    """

    best: SenderPrompt
    best_score: float
    history: list[tuple[SenderPrompt, float]] = field(default_factory=list)
    n_proposals: int = 0
    episodes: int = 0


def _training_episodes(sc: Scenario, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    good = rng.random(n) < sc.prior_good
    return good, rng.integers(0, 2**31 - 1, size=n)


def _scorer(sc: Scenario, sender: ChatModel, receiver: ChatModel, n_episodes: int,
            rng: np.random.Generator, n_record: int, reader) -> Callable[[SenderPrompt], float]:
    """The training score of a prompt: its sender value on common episodes (and, without a
    commitment, a common record seed)."""
    good, seeds = _training_episodes(sc, n_episodes, rng)
    record_seed = int(seeds[0]) if n_episodes else 0

    def score(p: SenderPrompt) -> float:
        return play(sc, p, sender, receiver, good, seeds, n_record=n_record, record_seed=record_seed,
                    reader=reader).sender_value
    return score


def find_equilibrium(sc: Scenario, sender: ChatModel, receiver: ChatModel, proposer: ChatModel, *,
                     start: SenderPrompt, n_iters: int, n_candidates: int, n_episodes: int,
                     allow_obfuscate: bool = True, shuffle_feedback: bool = False,
                     seed: int = 0, n_record: int = 0, reader=None) -> SearchResult:
    """The proposal loop (module docstring): ``n_iters`` rounds of ``n_candidates`` proposals.

    ``shuffle_feedback`` shows the proposer the history with its scores permuted (a control
    that keeps the proposal distribution and removes the feedback). The start prompt's
    ``commit`` is kept for every proposal (it is a property of the game, not a choice).
    ``n_record`` and ``reader`` go to :func:`~.verbal.play`.
    """
    if min(n_iters, n_candidates, n_episodes) < 1:
        raise ValueError("n_iters, n_candidates and n_episodes must be >= 1")
    rng = np.random.default_rng(seed)
    score = _scorer(sc, sender, receiver, n_episodes, rng, n_record, reader)

    history = [(start, score(start))]
    parse = _parse_proposals(n_candidates, start.commit, allow_obfuscate)
    for it in range(n_iters):
        shown = history
        if shuffle_feedback:
            perm = rng.permutation(len(history))
            shown = [(history[i][0], history[perm[i]][1]) for i in range(len(history))]
        msgs = proposer_messages(shown, k=n_candidates, iteration=it, allow_obfuscate=allow_obfuscate)
        props = complete_structured(proposer, msgs, parse, seed=int(rng.integers(2**31 - 1)),
                                    temperature=1.0, max_tokens=1024).value
        history.extend((p, score(p)) for p in props)
    return _best_of(history, len(history) - 1, n_episodes)


def _best_of(history: list[tuple[SenderPrompt, float]], n_proposals: int, n_episodes: int) -> SearchResult:
    best = max(range(len(history)), key=lambda i: (history[i][1], -i))
    return SearchResult(history[best][0], history[best][1], history, n_proposals,
                        len(history) * n_episodes)


def random_search(sc: Scenario, sender: ChatModel, receiver: ChatModel, *, start: SenderPrompt,
                  n_proposals: int, n_episodes: int, allow_obfuscate: bool = True,
                  seed: int = 0, prior: str = "uniform", n_record: int = 0, reader=None) -> SearchResult:
    """Score ``n_proposals`` randomly drawn prompts (and the start) on the same common episodes
    as :func:`find_equilibrium` with the same seed; return the best. No feedback is used.

    ``prior="uniform"``: honesty, lie rate uniform, obfuscation a fair coin. ``prior="loop"``:
    the knowledge the loop starts from (the start's honesty rate, obfuscation on when allowed,
    the lie rate uniform), the strongest random search a sceptic would run (CLAIMS.md rule 9).
    """
    if prior not in ("uniform", "loop"):
        raise ValueError(f"prior must be 'uniform' or 'loop', got {prior!r}")
    if n_proposals < 0 or n_episodes < 1:
        raise ValueError("n_proposals must be >= 0 and n_episodes >= 1")
    score = _scorer(sc, sender, receiver, n_episodes, np.random.default_rng(seed), n_record, reader)
    draw = np.random.default_rng([seed, 1])
    history = [(start, score(start))]
    for _ in range(n_proposals):
        if prior == "uniform":
            p = SenderPrompt(float(draw.random()), float(draw.random()),
                             obfuscate=bool(draw.random() < 0.5) and allow_obfuscate, commit=start.commit)
        else:
            p = SenderPrompt(start.honesty_good, float(draw.random()), obfuscate=allow_obfuscate,
                             commit=start.commit)
        history.append((p, score(p)))
    return _best_of(history, n_proposals, n_episodes)


def grid_search(sc: Scenario, sender: ChatModel, receiver: ChatModel, *, start: SenderPrompt,
                n_proposals: int, n_episodes: int, allow_obfuscate: bool = True, seed: int = 0,
                n_record: int = 0, reader=None) -> SearchResult:
    """A grid on the lie rate with no feedback at all: ``n_proposals`` evenly spaced lie rates in
    [0, 1] at the start's honesty rate, obfuscation on when allowed, scored (with the start) on
    the same common episodes as :func:`find_equilibrium`; return the best."""
    if n_proposals < 2 or n_episodes < 1:
        raise ValueError("a grid needs n_proposals >= 2 and n_episodes >= 1")
    score = _scorer(sc, sender, receiver, n_episodes, np.random.default_rng(seed), n_record, reader)
    history = [(start, score(start))]
    for q in np.linspace(0.0, 1.0, n_proposals):
        p = SenderPrompt(start.honesty_good, float(q), obfuscate=allow_obfuscate, commit=start.commit)
        history.append((p, score(p)))
    return _best_of(history, n_proposals, n_episodes)


def sender_deviation_gain(sc: Scenario, found: SenderPrompt, *, leak: float, receiver: str = "bayes",
                          allow_obfuscate: bool = True, n_grid: int = 101) -> tuple[float, SenderPrompt]:
    """The sender's best gain from deviating to another prompt, by exact evaluation on a grid
    (``n_grid`` lie rates plus the closed-form optimum, honesty in {0, 0.25, .., 1}, both styles),
    against the receiver's best response. Returns (gain, best deviation)."""
    base = exact_outcome(sc, found, leak=leak, receiver=receiver)["value"]
    key = ("sender_deviation", float(leak), receiver, bool(allow_obfuscate), found.commit, int(n_grid))
    memo = sc.memo.get(key)  # the best deviation does not depend on `found`: computed once
    if memo is not None:
        return float(memo[0] - base), memo[1]
    _, q_star = binary_threshold_optimum(sc.prior_good, sc.threshold)
    # the optimum's lie rate as a stated rate (the largest multiple of 1e-6 not above it)
    q_floor = math.floor(q_star * RESOLUTION) / RESOLUTION
    qs = sorted(set(np.linspace(0, 1, n_grid).tolist()) | {float(q_star), q_floor})
    best, arg = -np.inf, found
    for obf in ((False, True) if allow_obfuscate else (False,)):
        for h in np.linspace(0, 1, 5):
            for q in qs:
                p = SenderPrompt(float(h), float(q), obfuscate=obf, commit=found.commit)
                v = exact_outcome(sc, p, leak=leak, receiver=receiver)["value"]
                if v > best:
                    best, arg = v, p
    sc.memo[key] = (best, arg)
    return float(best - base), arg


def receiver_deviation_gain(sc: Scenario, prompt: SenderPrompt, episodes: Episodes, *, leak: float) -> float:
    """The receiver's best gain from deviating, exactly: its observed per-class policy (majority
    action on the played letters of each class) against the best action per class under the true
    policy. 0 when the text receiver best-responds to every class it saw."""
    pi = prompt.scheme(leak)
    prior = np.array([sc.prior_good, 1 - sc.prior_good])
    u = sc.instance.u_receiver
    gain = 0.0
    for k, cls in enumerate(CLASSES):
        joint = prior * pi[:, k]
        if joint.sum() <= 0:
            continue
        seen = [a for c, a in zip(episodes.classes, episodes.actions, strict=True) if c == cls]
        if not seen:
            continue
        a = 0 if np.mean(seen) >= 0.5 else 1
        gain += max(float(joint @ u[:, 0]), float(joint @ u[:, 1])) - float(joint @ u[:, a])
    return float(gain)


def played_deviation_gain(sc: Scenario, found: SenderPrompt, sender: ChatModel, receiver: ChatModel,
                          good: np.ndarray, seeds: Sequence[int], *, allow_obfuscate: bool = True,
                          n_grid: int = 11, reader=None, n_record: int = 0,
                          record_seed: int = 0) -> tuple[float, SenderPrompt]:
    """The sender's best gain from deviating, *played* against ``receiver`` (e.g. an LLM) on the
    episodes ``good``/``seeds``: ``n_grid`` lie rates plus the closed-form optimum at honesty 1,
    both styles, each scored through the text channel against the found prompt on the same
    episodes. The deviation check of a game whose receiver is not the exact-Bayes reader."""
    kw = {"n_record": n_record, "record_seed": record_seed, "reader": reader}
    base = play(sc, found, sender, receiver, good, seeds, **kw).sender_value
    _, q_star = binary_threshold_optimum(sc.prior_good, sc.threshold)
    qs = sorted(set(np.linspace(0, 1, n_grid).tolist()) | {math.floor(q_star * RESOLUTION) / RESOLUTION})
    best, arg = -np.inf, found
    for obf in ((False, True) if allow_obfuscate else (False,)):
        for q in qs:
            p = SenderPrompt(1.0, float(q), obfuscate=obf, commit=found.commit)
            v = play(sc, p, sender, receiver, good, seeds, **kw).sender_value
            if v > best:
                best, arg = v, p
    return float(max(best - base, 0.0)), arg
