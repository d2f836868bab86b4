"""The verbalized persuasion game: a sender writes letters, a receiver reads them and acts.

Text is the only channel. The sender's *prompt* (:class:`SenderPrompt`) sets its policy -- the
rate of positive letters for good and for bad states, whether lies are written in the same style
as honest praise (*information obfuscation*) and whether the policy is published
(*verbalized commitment*). A chat model (:mod:`icml26.core.llm`) writes each letter from the
rendered prompt and a text profile; another reads the commitment and the letter and replies with
a JSON decision. Offline, :func:`template_sender` (a seeded phrase-bank writer) and
:func:`bayesian_receiver` (reads the letter's evidence and the stated commitment, updates the
prior exactly) stand behind the same :class:`~icml26.core.llm.ChatModel` interface as a real LLM.

Signal classes of a letter (:func:`read_letter`): ``"positive"`` (praise), ``"negative"``,
``"hedged"`` (praise with the stylistic tells of a writer arguing against the facts). Without
obfuscation a lying letter carries the tells with probability ``leak``; with obfuscation never.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml26.core.llm import ChatModel, ScriptedChat, parse_json
from icml26.core.llm.structured import complete_structured

from .classic import (
    TIE_TOL,
    BPInstance,
    binary_threshold,
    courtroom,
    law_enforcement,
    recommendation_letter,
)

CLASSES = ("positive", "negative", "hedged")


@dataclass(frozen=True)
class Scenario:
    """A binary persuasion game with its words: the BP instance and the text around it.

    State 0 is the "good" state (the one in which the receiver wants the target action 0).
    """

    instance: BPInstance
    sender_role: str
    receiver_role: str
    subject: str
    document: str
    positive: tuple[str, ...]
    negative: tuple[str, ...]
    hedges: tuple[str, ...]
    openers: tuple[str, ...]
    names: tuple[str, ...]
    details: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.instance.name

    @property
    def good(self) -> str:
        return self.instance.state_names[0]

    @property
    def bad(self) -> str:
        return self.instance.state_names[1]

    @property
    def target(self) -> str:
        return self.instance.action_names[0]

    @property
    def other(self) -> str:
        return self.instance.action_names[1]

    @property
    def prior_good(self) -> float:
        return float(self.instance.prior[0])

    @property
    def threshold(self) -> float:
        return self._threshold

    def __post_init__(self) -> None:
        for bank in ("positive", "negative", "hedges", "openers", "names", "details"):
            if not getattr(self, bank):
                raise ValueError(f"scenario {self.instance.name!r}: the {bank} bank is empty")
        if self.instance.n_states != 2 or self.instance.n_actions != 2:
            raise ValueError("a verbalized scenario needs 2 states and 2 actions")
        object.__setattr__(self, "_threshold", binary_threshold(self.instance))
        object.__setattr__(self, "_markers", {b: tuple(_marker(p) for p in getattr(self, b))
                                              for b in ("positive", "negative", "hedges")})

    def markers(self, bank: str) -> tuple[str, ...]:
        """The literal fragments that identify the phrases of ``bank`` (see :func:`read_letter`)."""
        return self._markers[bank]


def _scenario_letter(inst: BPInstance) -> Scenario:
    return Scenario(
        inst, "professor", "HR manager", "candidate", "recommendation letter",
        positive=("{name} is among the very best students I have taught",
                  "I recommend {name} for the position without reservation",
                  "{name}'s work on {detail} was outstanding",
                  "{name} showed exceptional independence and rigour",
                  "I am confident {name} will excel in your team",
                  "{name} consistently delivered excellent results"),
        negative=("{name}'s work on {detail} was below expectations",
                  "I cannot recommend {name} for this position",
                  "{name} struggled to complete assignments on time",
                  "{name} would need close supervision",
                  "I have reservations about {name}'s preparation",
                  "{name}'s results were weak compared with peers"),
        hedges=("as far as I can tell from limited contact",
                "I have been told that {name} is capable",
                "in fairness I did not follow the work closely",
                "by some accounts"),
        openers=("To whom it may concern,", "Dear hiring committee,", "Dear colleague,"),
        names=("Alex Kim", "Sam Rivera", "Jordan Lee", "Taylor Chen", "Morgan Diaz", "Casey Ahmed"),
        details=("the compiler project", "the data pipeline", "the thesis", "the robotics lab",
                 "the statistics course", "the web service"))


def _scenario_courtroom(inst: BPInstance) -> Scenario:
    return Scenario(
        inst, "prosecutor", "judge", "defendant", "closing argument",
        positive=("the evidence shows {name} committed the offence",
                  "{name}'s alibi collapses under scrutiny",
                  "the forensic report on {detail} points directly to {name}",
                  "witnesses place {name} at the scene",
                  "I ask the court to convict {name}",
                  "{name}'s own statements confirm guilt"),
        negative=("the evidence against {name} is thin",
                  "the report on {detail} does not implicate {name}",
                  "{name}'s alibi is corroborated",
                  "the prosecution cannot prove {name}'s guilt",
                  "I do not ask the court to convict {name}",
                  "no witness places {name} at the scene"),
        hedges=("arguably", "it could be said that {name} had a motive",
                "on one reading of the file", "some would say"),
        openers=("Your Honour,", "May it please the court,", "Members of the court,"),
        names=("Mr Novak", "Ms Okafor", "Mr Silva", "Ms Brandt", "Mr Haddad", "Ms Ito"),
        details=("the fingerprints", "the phone records", "the camera footage", "the receipts",
                 "the fibres", "the bank transfers"))


def _scenario_law(inst: BPInstance) -> Scenario:
    return Scenario(
        inst, "police department", "driver", "road", "traffic bulletin",
        positive=("officers are on duty along {name} today",
                  "radar checks are active on {name}",
                  "expect enforcement near {detail} on {name}",
                  "{name} is a priority patrol route this week",
                  "speeding on {name} will be fined",
                  "patrol cars are stationed on {name}"),
        negative=("no enforcement is planned on {name} today",
                  "{name} is not on this week's patrol list",
                  "radar checks on {name} are suspended",
                  "officers are not assigned near {detail} on {name}",
                  "{name} is unpatrolled today",
                  "there is no speed check on {name}"),
        hedges=("possibly", "we may or may not be around {detail}",
                "patrols are said to happen", "reportedly"),
        openers=("Traffic update:", "Notice to drivers:", "Road bulletin:"),
        names=("Route 9", "Harbour Road", "the ring road", "Mill Lane", "the coast highway", "Station Street"),
        details=("the school", "the bridge", "the junction", "the tunnel", "the market", "the depot"))


def scenario(name: str, **params: float) -> Scenario:
    """One of ``"letter"``, ``"courtroom"``, ``"law"``; ``params`` go to the instance builder."""
    builders = {"letter": (recommendation_letter, _scenario_letter),
                "courtroom": (courtroom, _scenario_courtroom),
                "law": (law_enforcement, _scenario_law)}
    if name not in builders:
        raise ValueError(f"unknown scenario {name!r}; choose one of {sorted(builders)}")
    inst_fn, text_fn = builders[name]
    return text_fn(inst_fn(**params))


@dataclass(frozen=True)
class SenderPrompt:
    """The sender's strategy as a prompt: a policy over letters, stated in words.

    Attributes
    ----------
    honesty_good : float in [0, 1] -- P(positive letter | good state)
    lie_rate : float in [0, 1] -- P(positive letter | bad state)
    obfuscate : bool -- write lies in the same style as honest praise (no tells)
    commit : bool -- publish the policy to the receiver (verbalized commitment)
    """

    honesty_good: float = 1.0
    lie_rate: float = 0.0
    obfuscate: bool = False
    commit: bool = True

    def __post_init__(self) -> None:
        for name in ("honesty_good", "lie_rate"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= v <= 1.0 or math.isnan(v):
                raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}")
            object.__setattr__(self, name, float(v))
        for name in ("obfuscate", "commit"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise TypeError(f"{name} must be True or False")
            object.__setattr__(self, name, bool(getattr(self, name)))

    def scheme(self, leak: float) -> np.ndarray:
        """The induced signalling scheme over :data:`CLASSES`, shape (2, 3): rows good, bad."""
        h, q = self.honesty_good, self.lie_rate
        tell = 0.0 if self.obfuscate else float(leak)
        return np.array([[h, 1 - h, 0.0], [q * (1 - tell), 1 - q, q * tell]])

    def policy_text(self, sc: Scenario) -> str:
        """The policy sentence (shared by the prompt and the commitment)."""
        style = ("Every positive {doc} is written in the same style, whatever the facts."
                 if self.obfuscate else "Positive {doc}s are written naturally.")
        return (f"Policy: a positive {sc.document} for {100 * self.honesty_good:.4f}% of {sc.good} "
                f"{sc.subject}s and for {100 * self.lie_rate:.4f}% of {sc.bad} {sc.subject}s. "
                + style.format(doc=sc.document))

    def render(self, sc: Scenario) -> str:
        """The sender's system prompt."""
        publish = "This policy is published to the {r}." if self.commit else "This policy is private."
        return (f"You are the {sc.sender_role} writing a {sc.document} about a {sc.subject} to the "
                f"{sc.receiver_role}. You want the {sc.receiver_role} to {sc.target}. "
                + self.policy_text(sc) + " " + publish.format(r=sc.receiver_role))

    def commitment_text(self, sc: Scenario) -> str:
        """What the receiver is shown: the published policy, or nothing."""
        return f"The {sc.sender_role} commits to this policy. " + self.policy_text(sc) if self.commit else ""

    def to_dict(self) -> dict:
        return {"honesty_good": self.honesty_good, "lie_rate": self.lie_rate,
                "obfuscate": self.obfuscate, "commit": self.commit}


_POLICY = re.compile(r"Policy: a positive .+? for ([0-9.]+)% of (\w+) \w+ and for ([0-9.]+)% of (\w+) \w+\. "
                     r"(Every positive|Positive)")


def parse_policy(text: str, sc: Scenario) -> SenderPrompt | None:
    """The policy stated in ``text`` (a prompt or a commitment), or None when none is stated."""
    m = _POLICY.search(text)
    if m is None:
        return None
    if m.group(2) != sc.good or m.group(4) != sc.bad:
        raise ValueError(f"the policy names states {m.group(2)!r}/{m.group(4)!r}, expected "
                         f"{sc.good!r}/{sc.bad!r}")
    return SenderPrompt(float(m.group(1)) / 100, float(m.group(3)) / 100,
                        obfuscate=m.group(5) == "Every positive",
                        commit="published" in text or "commits" in text)


def profile_text(sc: Scenario, good: bool, index: int) -> str:
    """The sender's private view of one episode (the state is known to the sender only)."""
    name = sc.names[index % len(sc.names)]
    detail = sc.details[(index // len(sc.names)) % len(sc.details)]
    return (f"{sc.subject.capitalize()}: {name}. Detail: {detail}. "
            f"Private assessment: {sc.good if good else sc.bad}.")


_PROFILE = re.compile(r": (.+?)\. Detail: (.+?)\. Private assessment: (\w+)\.")


def write_letter(sc: Scenario, prompt: SenderPrompt, profile: str, *, leak: float,
                 seed: int | None) -> str:
    """The template writer: one letter from the policy, the profile and a seed.

    Draw order (fixed, so that equal seeds give common random numbers across prompts): the
    uniform deciding praise, the uniform deciding a tell, then the phrases.
    """
    m = _PROFILE.search(profile)
    if m is None:
        raise ValueError(f"not a profile: {profile[:120]!r}")
    name, detail, state = m.groups()
    if state not in (sc.good, sc.bad):
        raise ValueError(f"unknown state {state!r} in the profile")
    rng = np.random.default_rng(seed)
    u_praise, u_tell = rng.random(2)
    good = state == sc.good
    praise = u_praise < (prompt.honesty_good if good else prompt.lie_rate)
    tell = praise and not good and not prompt.obfuscate and u_tell < leak
    bank = sc.positive if praise else sc.negative
    i, j = int(rng.integers(len(bank))), int(rng.integers(len(bank) - 1))
    body = [bank[i], bank[j + (j >= i)]]  # two distinct phrases
    if tell:
        body[1] = sc.hedges[int(rng.integers(len(sc.hedges)))] + ", " + body[1]
    opener = sc.openers[int(rng.integers(len(sc.openers)))]
    text = opener + " " + ". ".join(s[0].upper() + s[1:] for s in body) + "."
    return text.format(name=name, detail=detail)


def _marker(phrase: str) -> str:
    """The longest literal fragment of a phrase template (lower case): what identifies it."""
    parts = re.split(r"\{name\}|\{detail\}", phrase)
    return max(parts, key=len).lower()


def read_letter(text: str, sc: Scenario) -> str:
    """The signal class of a letter, read from its text: ``"hedged"`` when it carries a tell,
    else ``"positive"`` or ``"negative"`` by which phrase bank it quotes more (ties and
    unreadable letters: ``"negative"``, i.e. no recommendation). Phrases are recognised by their
    longest literal fragment (:func:`_marker`)."""
    low = text.lower()
    if any(m in low for m in sc.markers("hedges")):
        return "hedged"
    pos = sum(m in low for m in sc.markers("positive"))
    neg = sum(m in low for m in sc.markers("negative"))
    return "positive" if pos > neg else "negative"


def class_posterior(sc: Scenario, belief: SenderPrompt | None, cls: str, *, leak: float) -> float:
    """P(good | letter class) by Bayes' rule under a believed policy (exact).

    ``belief`` None (no commitment) is the sceptic's worst case: praise for every state, in one
    style (the receiver cannot tell lies from praise).
    """
    if cls not in CLASSES:
        raise ValueError(f"class must be one of {CLASSES}, got {cls!r}")
    if belief is None:
        belief = _WORST_CASE
    h, q = belief.honesty_good, belief.lie_rate
    tell = 0.0 if belief.obfuscate else float(leak)
    like_good, like_bad = {"positive": (h, q * (1 - tell)), "negative": (1 - h, 1 - q),
                           "hedged": (0.0, q * tell)}[cls]
    j_good, j_bad = sc.prior_good * like_good, (1 - sc.prior_good) * like_bad
    if j_good + j_bad <= 0:  # a class the believed policy never sends: read it as the worst case
        return 0.0
    return j_good / (j_good + j_bad)


_WORST_CASE = SenderPrompt(1.0, 1.0, obfuscate=True)


def decide(sc: Scenario, posterior: float) -> str:
    """The receiver's best response: the target action iff P(good) >= mu* (ties: target)."""
    return sc.target if posterior >= sc.threshold - TIE_TOL else sc.other


def receiver_messages(sc: Scenario, commitment: str, letter: str) -> list[dict]:
    return [{"role": "system", "content": (
                f"You are the {sc.receiver_role}. Read the {sc.document} and decide whether to "
                f"{sc.target} or {sc.other}. Reply with JSON only: "
                f'{{"posterior": <P({sc.good})>, "action": "{sc.target}" or "{sc.other}"}}.')},
            {"role": "user", "content": f"Commitment: {commitment or 'none stated'}\n"
                                        f"{sc.document.capitalize()}:\n{letter}"}]


def _split_receiver_message(text: str) -> tuple[str, str]:
    head, _, letter = text.partition("\n")
    letter = letter.partition("\n")[2]
    commitment = head.removeprefix("Commitment: ")
    return ("" if commitment == "none stated" else commitment), letter


def template_sender(sc: Scenario, *, leak: float, name: str = "template_sender") -> ScriptedChat:
    """The offline sender as a chat model: reads its system prompt (the policy) and the profile,
    writes a letter with :func:`write_letter` (seeded by the request's seed)."""
    if not 0.0 <= leak <= 1.0:
        raise ValueError(f"leak must be in [0, 1], got {leak}")

    policies: dict[str, SenderPrompt | None] = {}

    def reply(messages, params):
        system = messages[0]["content"]
        if system not in policies:
            policies[system] = parse_policy(system, sc)
        prompt = policies[system]
        if prompt is None:
            raise ValueError("the sender's system prompt states no policy")
        return write_letter(sc, prompt, messages[-1]["content"], leak=leak, seed=params.seed)

    return ScriptedChat(reply, with_params=True, name=f"{name}:{sc.name}")


def bayesian_receiver(sc: Scenario, *, leak: float, name: str = "bayes_receiver") -> ScriptedChat:
    """The offline receiver: reads the commitment and the letter, updates the prior exactly
    (:func:`class_posterior`) and best-responds. ``leak`` is its knowledge of how often a
    non-obfuscating writer's lies show tells (learned from past letters)."""

    beliefs: dict[str, SenderPrompt | None] = {}

    def reply(messages):
        commitment, letter = _split_receiver_message(messages[-1]["content"])
        if commitment not in beliefs:
            beliefs[commitment] = parse_policy(commitment, sc) if commitment else None
        belief = beliefs[commitment]
        post = class_posterior(sc, belief, read_letter(letter, sc), leak=leak)
        return json.dumps({"posterior": round(post, 12), "action": decide(sc, post)})

    return ScriptedChat(reply, name=f"{name}:{sc.name}")


def credulous_receiver(sc: Scenario, *, name: str = "credulous_receiver") -> ScriptedChat:
    """A receiver that takes every praising letter at face value (ignores the commitment)."""

    def reply(messages):
        _, letter = _split_receiver_message(messages[-1]["content"])
        act = read_letter(letter, sc) != "negative"
        return json.dumps({"posterior": 1.0 if act else 0.0, "action": sc.target if act else sc.other})

    return ScriptedChat(reply, name=f"{name}:{sc.name}")


@dataclass(frozen=True)
class Episodes:
    """A batch of played episodes (n = number of episodes).

    good : (n,) bool; letters : list of str; classes : list of str; actions : (n,) bool (target
    taken); sender_payoff, receiver_payoff : (n,) float
    """

    good: np.ndarray
    letters: list[str]
    classes: list[str]
    actions: np.ndarray
    sender_payoff: np.ndarray
    receiver_payoff: np.ndarray

    @property
    def sender_value(self) -> float:
        return float(self.sender_payoff.mean())

    @property
    def receiver_value(self) -> float:
        return float(self.receiver_payoff.mean())

    def praise_rate(self, good: bool) -> float:
        """Share of letters that praise (positive or hedged) among good (bad) states."""
        mask = self.good == good
        if not mask.any():
            return float("nan")
        return float(np.mean([c != "negative" for c, m in zip(self.classes, mask, strict=True) if m]))


def _parse_action(sc: Scenario):
    def parse(text: str) -> str:
        obj = parse_json(text)
        if not isinstance(obj, dict) or obj.get("action") not in (sc.target, sc.other):
            raise ValueError(f'reply must be a JSON object with "action": "{sc.target}" or "{sc.other}"')
        return obj["action"]
    return parse


def play(sc: Scenario, prompt: SenderPrompt, sender: ChatModel, receiver: ChatModel,
         good: np.ndarray, seeds: Sequence[int], *, max_tokens: int = 256) -> Episodes:
    """Play one episode per state in ``good`` (shape (n,), bool), letter ``i`` seeded by ``seeds[i]``.

    The sender sees ``prompt.render`` and the profile; the receiver sees the commitment (if any)
    and the letter, and answers JSON; a reply that does not parse gets up to two repair turns.
    """
    good = np.asarray(good, dtype=bool)
    if good.ndim != 1 or len(seeds) != good.size:
        raise ValueError("good must be 1-d with one seed per episode")
    system = prompt.render(sc)
    letters = [c.text for c in sender.complete_many(
        [[{"role": "system", "content": system}, {"role": "user", "content": profile_text(sc, bool(g), i)}]
         for i, g in enumerate(good)], seed=[int(s) for s in seeds], max_tokens=max_tokens)]
    commitment = prompt.commitment_text(sc)
    convs = [receiver_messages(sc, commitment, letter) for letter in letters]
    parse = _parse_action(sc)
    actions = []
    for conv, reply in zip(convs, receiver.complete_many(convs, max_tokens=64), strict=True):
        try:
            actions.append(parse(reply.text))
        except ValueError:
            actions.append(complete_structured(receiver, conv, parse, max_tokens=64).value)
    act = np.array([a == sc.target for a in actions])
    inst = sc.instance
    state = np.where(good, 0, 1)
    col = np.where(act, 0, 1)
    return Episodes(good=good, letters=letters, classes=[read_letter(t, sc) for t in letters], actions=act,
                    sender_payoff=inst.u_sender[state, col], receiver_payoff=inst.u_receiver[state, col])


def exact_outcome(sc: Scenario, prompt: SenderPrompt, *, leak: float, receiver: str = "bayes") -> dict[str, float]:
    """Expected payoffs of a prompt, exactly, for a receiver kind: ``"bayes"`` (reads the
    commitment if the prompt publishes one, else the sceptic's worst case) or ``"credulous"``.

    Returns ``value`` (sender), ``receiver_value`` and ``best_receiver_value`` (the receiver's
    value when best-responding to the *true* policy).
    """
    pi = prompt.scheme(leak)
    prior = np.array([sc.prior_good, 1 - sc.prior_good])
    inst = sc.instance
    value = rv = best_rv = 0.0
    for k, cls in enumerate(CLASSES):
        joint = prior * pi[:, k]
        if joint.sum() <= 0:
            continue
        if receiver == "bayes":
            belief = prompt if prompt.commit else None
            act = decide(sc, class_posterior(sc, belief, cls, leak=leak)) == sc.target
        elif receiver == "credulous":
            act = cls != "negative"
        else:
            raise ValueError(f"receiver must be 'bayes' or 'credulous', got {receiver!r}")
        a = 0 if act else 1
        value += float(joint @ inst.u_sender[:, a])
        rv += float(joint @ inst.u_receiver[:, a])
        best_rv += max(float(joint @ inst.u_receiver[:, 0]), float(joint @ inst.u_receiver[:, 1]))
    return {"value": value, "receiver_value": rv, "best_receiver_value": best_rv}
