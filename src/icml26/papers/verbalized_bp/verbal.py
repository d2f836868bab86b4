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
import numbers
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
        object.__setattr__(self, "memo", {})  # per-scenario memo of pure functions (read_letter, ...)

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


RESOLUTION = 1_000_000  # rates are stated in the policy text to 1e-6 (percent with 4 decimals)


def quantize_rate(v: float) -> float:
    """The rate as the policy text states it: the nearest multiple of 1 / RESOLUTION. Both the
    prompt's constructor and :func:`parse_policy` go through it, so a rate, its text and the
    parsed text are one float (the committed policy is the played policy by construction)."""
    return round(v * RESOLUTION) / RESOLUTION


def check_leak(leak) -> float:
    """``leak`` (the tell rate of non-obfuscated lies) as a float in [0, 1], else an error."""
    if isinstance(leak, bool | np.bool_) or not isinstance(leak, numbers.Real):
        raise TypeError(f"leak must be a real number in [0, 1], got {leak!r}")
    if math.isnan(float(leak)) or not 0.0 <= float(leak) <= 1.0:
        raise ValueError(f"leak must be in [0, 1], got {leak!r}")
    return float(leak)


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
            if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Real):
                raise TypeError(f"{name} must be a real number in [0, 1], got {v!r}")
            if math.isnan(float(v)) or not 0.0 <= float(v) <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}")
            # one representation: the rate is the stated one (RESOLUTION, what the policy text
            # says), so the committed policy and the played policy are the same number
            object.__setattr__(self, name, quantize_rate(float(v)))
        for name in ("obfuscate", "commit"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise TypeError(f"{name} must be True or False")
            object.__setattr__(self, name, bool(getattr(self, name)))

    def scheme(self, leak: float) -> np.ndarray:
        """The induced signalling scheme over :data:`CLASSES`, shape (2, 3): rows good, bad."""
        h, q = self.honesty_good, self.lie_rate
        tell = 0.0 if self.obfuscate else check_leak(leak)
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


def _percent(text: str) -> float:
    """A stated percentage (4 decimals) as the rate it states, exactly as :func:`quantize_rate`."""
    return round(float(text) * (RESOLUTION / 100)) / RESOLUTION


def parse_policy(text: str, sc: Scenario) -> SenderPrompt | None:
    """The policy stated in ``text`` (a prompt or a commitment), or None when none is stated."""
    m = _POLICY.search(text)
    if m is None:
        return None
    if m.group(2) != sc.good or m.group(4) != sc.bad:
        raise ValueError(f"the policy names states {m.group(2)!r}/{m.group(4)!r}, expected "
                         f"{sc.good!r}/{sc.bad!r}")
    return SenderPrompt(_percent(m.group(1)), _percent(m.group(3)),
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
    leak = check_leak(leak)
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
    memo = sc.memo.setdefault("read_letter", {})
    if text in memo:
        return memo[text]
    low = text.lower()
    if any(m in low for m in sc.markers("hedges")):
        cls = "hedged"
    else:
        pos = sum(m in low for m in sc.markers("positive"))
        neg = sum(m in low for m in sc.markers("negative"))
        cls = "positive" if pos > neg else "negative"
    memo[text] = cls
    return cls


READER_SYSTEM = ("You classify a {doc} about a {subject} written by a {sender}. Answer JSON only: "
                 '{{"class": "positive"}} if it recommends that the {receiver} {target}, '
                 '{{"class": "hedged"}} if it recommends it but with hedges or signs that the writer '
                 'argues against the facts, {{"class": "negative"}} otherwise.')


def llm_reader(chat: ChatModel):
    """A letter reader for free text: the chat model itself classifies each letter (declared in
    the result as the reader of an LLM-written game). Returns ``reader(letter, sc) -> class``;
    replies are cached by letter, and a reply that does not parse gets repair turns."""
    cache: dict[tuple[str, str], str] = {}

    def parse(text: str) -> str:
        obj = parse_json(text)
        if not isinstance(obj, dict) or obj.get("class") not in CLASSES:
            raise ValueError(f'reply must be a JSON object with "class" one of {list(CLASSES)}')
        return obj["class"]

    def reader(letter: str, sc: Scenario) -> str:
        key = (sc.name, letter)
        if key not in cache:
            msgs = [{"role": "system", "content": READER_SYSTEM.format(
                        doc=sc.document, subject=sc.subject, sender=sc.sender_role,
                        receiver=sc.receiver_role, target=sc.target)},
                    {"role": "user", "content": letter}]
            cache[key] = complete_structured(chat, msgs, parse, max_tokens=32, temperature=0.0).value
        return cache[key]

    return reader


def class_posterior(sc: Scenario, belief: SenderPrompt | None, cls: str, *, leak: float) -> float:
    """P(good | letter class) by Bayes' rule under a believed policy (exact).

    ``belief`` None (no commitment) is the sceptic's worst case: praise for every state, in one
    style (the receiver cannot tell lies from praise).
    """
    if cls not in CLASSES:
        raise ValueError(f"class must be one of {CLASSES}, got {cls!r}")
    leak = check_leak(leak)
    if belief is None:
        belief = _WORST_CASE
    if isinstance(belief, Record):
        like_good, like_bad = belief.likelihood()[:, CLASSES.index(cls)]
    else:
        like_good, like_bad = belief.scheme(leak)[:, CLASSES.index(cls)]
    j_good, j_bad = sc.prior_good * like_good, (1 - sc.prior_good) * like_bad
    if j_good + j_bad <= 0:  # a class the believed policy never sends: read it as the worst case
        return 0.0
    return j_good / (j_good + j_bad)


_WORST_CASE = SenderPrompt(1.0, 1.0, obfuscate=True)


@dataclass(frozen=True)
class Record:
    """The receiver's record of a sender's past letters when no policy is published: how many
    letters of each class (:data:`CLASSES`) went with each revealed state. ``counts`` has shape
    (2, 3): rows good, bad.

    A receiver without a commitment infers the policy from it (:meth:`likelihood`: the class
    frequencies per state with a Jeffreys prior, 1/2 per class), so a sender that keeps one
    policy builds a reputation that can stand in for the commitment."""

    counts: np.ndarray

    def __post_init__(self) -> None:
        c = np.asarray(self.counts)
        if c.shape != (2, len(CLASSES)) or not np.issubdtype(c.dtype, np.number) or np.any(c < 0) \
                or np.any(c != np.round(c)):
            raise ValueError(f"a record's counts must be non-negative integers of shape (2, 3), got {c!r}")
        object.__setattr__(self, "counts", c.astype(np.int64))

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def likelihood(self) -> np.ndarray:
        """(2, 3) estimated P(class | state), Jeffreys prior (1/2 per class)."""
        c = self.counts + 0.5
        return c / c.sum(axis=1, keepdims=True)

    def text(self, sc: Scenario) -> str:
        """The record as the receiver reads it (a line of words and numbers)."""
        parts = []
        for row, state in zip(self.counts, (sc.good, sc.bad), strict=True):
            parts.append(f"of {int(row.sum())} {state} {sc.subject}s, " + ", ".join(
                f"{int(n)} got a {cls} {sc.document}" for cls, n in zip(CLASSES, row, strict=True)))
        return f"No policy is published. Record of past {sc.document}s: " + "; ".join(parts) + "."


_RECORD = re.compile(r"of (\d+) (\w+) \w+, (\d+) got a positive [^,;]+, (\d+) got a negative [^,;]+, "
                     r"(\d+) got a hedged [^,;.]+")


def parse_record(text: str, sc: Scenario) -> Record | None:
    """The record stated in ``text`` (see :meth:`Record.text`), or None when none is stated."""
    if "Record of past" not in text:
        return None
    rows = {}
    for m in _RECORD.finditer(text):
        total, state, pos, neg, hed = m.groups()
        if int(total) != int(pos) + int(neg) + int(hed):
            raise ValueError(f"inconsistent record line: {m.group(0)!r}")
        rows[state] = [int(pos), int(neg), int(hed)]
    if set(rows) != {sc.good, sc.bad}:
        raise ValueError(f"the record must give the states {sc.good!r} and {sc.bad!r}, got {sorted(rows)}")
    return Record(np.array([rows[sc.good], rows[sc.bad]]))


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

    leak = check_leak(leak)
    policies: dict[str, SenderPrompt | None] = {}
    # memo (identical letters, less work): a letter depends on the prompt only through whether it
    # praises and whether it carries a tell, and those follow the seed's first two uniforms
    draws: dict[int | None, tuple[float, float]] = {}
    letters: dict[tuple, str] = {}

    def reply(messages, params):
        system = messages[0]["content"]
        if system not in policies:
            policies[system] = parse_policy(system, sc)
        prompt = policies[system]
        if prompt is None:
            raise ValueError("the sender's system prompt states no policy")
        profile, seed = messages[-1]["content"], params.seed
        if seed is None:
            return write_letter(sc, prompt, profile, leak=leak, seed=seed)
        if seed not in draws:
            u = np.random.default_rng(seed).random(2)
            draws[seed] = (float(u[0]), float(u[1]))
        u_praise, u_tell = draws[seed]
        good = profile.endswith(f"Private assessment: {sc.good}.")
        praise = u_praise < (prompt.honesty_good if good else prompt.lie_rate)
        tell = praise and not good and not prompt.obfuscate and u_tell < leak
        key = (profile, seed, praise, tell)
        if key not in letters:
            letters[key] = write_letter(sc, prompt, profile, leak=leak, seed=seed)
        return letters[key]

    return ScriptedChat(reply, with_params=True, name=f"{name}:{sc.name}")


def bayesian_receiver(sc: Scenario, *, leak: float, name: str = "bayes_receiver",
                      reader=None) -> ScriptedChat:
    """The offline receiver: reads the commitment and the letter, updates the prior exactly
    (:func:`class_posterior`) and best-responds. ``leak`` is its knowledge of how often a
    non-obfuscating writer's lies show tells (learned from past letters). Without a published
    policy it infers one from the sender's record of past letters when the message carries one
    (:class:`Record`), else it takes the sceptic's worst case. ``reader(letter, sc) -> class``
    reads a letter (default :func:`read_letter`, the phrase reader)."""

    leak = check_leak(leak)
    reader = read_letter if reader is None else reader
    beliefs: dict[str, SenderPrompt | Record | None] = {}
    replies: dict[tuple[str, str], str] = {}  # memo: the reply is a function of (belief, class)

    def reply(messages):
        commitment, letter = _split_receiver_message(messages[-1]["content"])
        if commitment not in beliefs:
            beliefs[commitment] = ((parse_policy(commitment, sc) or parse_record(commitment, sc))
                                   if commitment else None)
        cls = reader(letter, sc)
        key = (commitment, cls)
        if key not in replies:
            post = class_posterior(sc, beliefs[commitment], cls, leak=leak)
            replies[key] = json.dumps({"posterior": round(post, 12), "action": decide(sc, post)})
        return replies[key]

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


def write_letters(sc: Scenario, prompt: SenderPrompt, sender: ChatModel, good: np.ndarray,
                  seeds: Sequence[int], *, max_tokens: int = 256, offset: int = 0) -> list[str]:
    """The sender's letters for the states ``good`` (letter ``i`` seeded by ``seeds[i]``)."""
    system = prompt.render(sc)
    return [c.text for c in sender.complete_many(
        [[{"role": "system", "content": system},
          {"role": "user", "content": profile_text(sc, bool(g), offset + i)}]
         for i, g in enumerate(good)], seed=[int(s) for s in seeds], max_tokens=max_tokens)]


def _past_letters(sc: Scenario, prompt: SenderPrompt, sender: ChatModel, n: int, seed: int, *,
                  reader, max_tokens: int) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng([seed, 7])
    good = rng.random(n) < sc.prior_good
    letters = write_letters(sc, prompt, sender, good, rng.integers(0, 2**31 - 1, size=n),
                            max_tokens=max_tokens, offset=10_000)
    return good, [reader(t, sc) for t in letters]


def _tally(good: np.ndarray, classes: Sequence[str]) -> np.ndarray:
    """(n, 2, 3) one-hot (state, class) per letter."""
    out = np.zeros((len(classes), 2, len(CLASSES)), dtype=np.int64)
    for i, (g, c) in enumerate(zip(good, classes, strict=True)):
        out[i, 0 if g else 1, CLASSES.index(c)] = 1
    return out


def track_record(sc: Scenario, prompt: SenderPrompt, sender: ChatModel, n: int, seed: int, *,
                 reader=None, max_tokens: int = 256) -> Record:
    """The record of ``n`` past letters of ``sender`` under ``prompt`` (states from the prior,
    revealed afterwards), each read by ``reader`` (default :func:`read_letter`)."""
    reader = read_letter if reader is None else reader
    good, classes = _past_letters(sc, prompt, sender, n, seed, reader=reader, max_tokens=max_tokens)
    return Record(_tally(good, classes).sum(axis=0))


def play(sc: Scenario, prompt: SenderPrompt, sender: ChatModel, receiver: ChatModel,
         good: np.ndarray, seeds: Sequence[int], *, max_tokens: int = 256, n_record: int = 0,
         record_seed: int = 0, reader=None) -> Episodes:
    """Play one episode per state in ``good`` (shape (n,), bool), letter ``i`` seeded by ``seeds[i]``.

    The sender sees ``prompt.render`` and the profile; the receiver sees the commitment (if any)
    and the letter, and answers JSON; a reply that does not parse gets up to two repair turns.
    Without a commitment and with ``n_record`` > 0, the receiver of episode ``i`` sees instead
    the record of the sender's last ``n_record`` letters before it (a rolling record: ``n_record``
    past letters seeded by ``record_seed``, common to every prompt, then the played episodes
    ``0 .. i-1``). ``reader(letter, sc) -> class`` classifies the
    played letters (default :func:`read_letter`; a free-text reader for an LLM sender).
    """
    good = np.asarray(good, dtype=bool)
    if good.ndim != 1 or len(seeds) != good.size:
        raise ValueError("good must be 1-d with one seed per episode")
    if isinstance(n_record, bool) or not isinstance(n_record, numbers.Integral) or n_record < 0:
        raise ValueError(f"n_record must be an integer >= 0, got {n_record!r}")
    reader = read_letter if reader is None else reader
    letters = write_letters(sc, prompt, sender, good, seeds, max_tokens=max_tokens)
    classes = [reader(t, sc) for t in letters]
    if prompt.commit or n_record == 0:
        commitments = [prompt.commitment_text(sc)] * len(letters)
    else:
        n_rec = int(n_record)
        past_good, past_classes = _past_letters(sc, prompt, sender, n_rec, record_seed, reader=reader,
                                                max_tokens=max_tokens)
        stream = np.concatenate([_tally(past_good, past_classes), _tally(good, classes)])
        cum = np.concatenate([np.zeros((1, 2, len(CLASSES)), np.int64), np.cumsum(stream, axis=0)])
        texts: dict[bytes, str] = {}
        commitments = []
        for i in range(len(letters)):
            counts = cum[i + n_rec] - cum[i]
            key = counts.tobytes()
            if key not in texts:
                texts[key] = Record(counts).text(sc)
            commitments.append(texts[key])
    convs = [receiver_messages(sc, c, letter) for c, letter in zip(commitments, letters, strict=True)]
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
    return Episodes(good=good, letters=letters, classes=classes, actions=act,
                    sender_payoff=inst.u_sender[state, col], receiver_payoff=inst.u_receiver[state, col])


def exact_outcome(sc: Scenario, prompt: SenderPrompt, *, leak: float, receiver: str = "bayes") -> dict[str, float]:
    """Expected payoffs of a prompt, exactly, for a receiver kind: ``"bayes"`` (reads the
    commitment if the prompt publishes one, else the sceptic's worst case), ``"record"`` (infers
    an unpublished policy from an unbounded record of past letters, i.e. knows it) or
    ``"credulous"``.

    Returns ``value`` (sender), ``receiver_value`` and ``best_receiver_value`` (the receiver's
    value when best-responding to the *true* policy).
    """
    if receiver not in ("bayes", "record", "credulous"):
        raise ValueError(f"receiver must be 'bayes', 'record' or 'credulous', got {receiver!r}")
    pi = prompt.scheme(leak)
    prior = np.array([sc.prior_good, 1 - sc.prior_good])
    inst = sc.instance
    value = rv = best_rv = 0.0
    for k, cls in enumerate(CLASSES):
        joint = prior * pi[:, k]
        if joint.sum() <= 0:
            continue
        if receiver in ("bayes", "record"):
            belief = prompt if (prompt.commit or receiver == "record") else None
            act = decide(sc, class_posterior(sc, belief, cls, leak=leak)) == sc.target
        elif receiver == "credulous":
            act = cls != "negative"
        else:
            raise ValueError(f"receiver must be 'bayes', 'record' or 'credulous', got {receiver!r}")
        a = 0 if act else 1
        value += float(joint @ inst.u_sender[:, a])
        rv += float(joint @ inst.u_receiver[:, a])
        best_rv += max(float(joint @ inst.u_receiver[:, 0]), float(joint @ inst.u_receiver[:, 1]))
    return {"value": value, "receiver_value": rv, "best_receiver_value": best_rv}
