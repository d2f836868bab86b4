"""Level generators: the offline programmatic dreamer, the random code mutator (open-loop
ablation), domain randomisation, and the LLM designer -> coder loop.

Level programs follow one template (:func:`render_level`): the level's data sit in literal class
attributes (``relevant_achievements``, ``completed_achievements``, ``inventory``, ``placements``,
``mobs``, ``settings``) and ``generate_world`` reads them through the world-builder API. The
dreamer edits a parent *program* at the AST level (:func:`read_spec` / :func:`edit_program`):
it parses the parent, reads the literal attributes, applies one operator and writes the new
literals back into the parent's syntax tree (anything else in the parent, e.g. an LLM-written
``generate_world``, is kept).

Operators (DiCode's design rules, ``prompts/dicode/evolve.py``; one primary change per child):
EXPAND (one new dependency beyond the frontier; mastered prerequisites compressed into the
initial state), PERSIST (same goal, less executional difficulty: resources closer, less damage
and depletion), SIMPLIFY (reduce the goal to a prerequisite), VARY (same goal, new layout).
The :class:`ProgrammaticDreamer` picks the operator from the parent's feedback with DiCode's
decision table; the :class:`RandomCodeMutator` picks it uniformly and ignores feedback.

Honesty note: the dreamer is a heuristic stand-in for the foundation model that reads the tech
tree (a designer prior). It tests the closed-loop, learnability-gated code curriculum, not whether
foundation models are the right designers.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .sandbox import compile_levels
from .world import ACHIEVEMENTS, PREREQS, ancestors

SPEC_FIELDS = ("relevant_achievements", "completed_achievements", "inventory", "placements", "mobs",
               "settings")
OPERATORS = ("expand", "persist", "simplify", "vary")
# what an achievement needs in the world (block or mob to interact with)
RESOURCE = {"collect_wood": ("tree", None), "collect_stone": ("stone", None),
            "collect_coal": ("coal", None), "collect_iron": ("iron", None),
            "collect_diamond": ("diamond", None), "collect_drink": ("water", None),
            "eat_cow": (None, "cow"), "defeat_zombie": (None, "zombie"),
            "defeat_guardian": (None, "guardian"),
            "make_wood_pickaxe": ("tree", None), "make_wood_sword": ("tree", None),
            "place_table": ("tree", None), "make_stone_pickaxe": ("stone", None),
            "make_stone_sword": ("stone", None), "place_furnace": ("stone", None),
            "make_iron_pickaxe": ("iron", None), "make_iron_sword": ("iron", None),
            "make_armour": ("iron", None)}
# the inventory that a completed achievement leaves the player with (compressing prerequisites)
GRANTS = {"collect_wood": {"wood": 3}, "make_wood_pickaxe": {"pickaxe": 1},
          "make_wood_sword": {"sword": 1}, "collect_stone": {"stone": 2},
          "make_stone_pickaxe": {"pickaxe": 2}, "make_stone_sword": {"sword": 2},
          "collect_coal": {"coal": 2}, "collect_iron": {"iron": 2},
          "make_iron_pickaxe": {"pickaxe": 3}, "make_iron_sword": {"sword": 3},
          "make_armour": {"armour": 1}, "collect_diamond": {"diamond": 1}}
STATION = {"place_table": "table", "place_furnace": "furnace"}

TEMPLATE = '''class Level(BaseLevel):
    """{doc}"""

    relevant_achievements = {relevant!r}
    completed_achievements = {completed!r}
    inventory = {inventory!r}
    placements = {placements!r}
    mobs = {mobs!r}
    settings = {settings!r}

    def params(self):
        return LevelParams(**self.settings)

    def generate_world(self, rng, builder):
        builder.set_inventory(self.inventory)
        builder.scatter("tree", 3)
        for block, count, near, far in self.placements:
            builder.place_near(block, count, near, far)
        for mob, count, near, far in self.mobs:
            builder.add_mob_near(mob, count, near, far)
        return builder.build()
'''


def render_level(spec: Mapping, doc: str = "A generated level.") -> str:
    """Python source of a level program from a spec dict (the fields of :data:`SPEC_FIELDS`)."""
    s = {k: spec[k] for k in SPEC_FIELDS}
    return TEMPLATE.format(doc=doc.replace('"""', "'''"),
                           relevant=tuple(s["relevant_achievements"]),
                           completed=tuple(s["completed_achievements"]),
                           inventory=dict(s["inventory"]),
                           placements=tuple(tuple(p) for p in s["placements"]),
                           mobs=tuple(tuple(m) for m in s["mobs"]), settings=dict(s["settings"]))


def _level_class(tree: ast.Module) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Level":
            return node
    raise ValueError("the program defines no `class Level`")


def read_spec(source: str) -> dict:
    """The literal spec attributes of a level program's ``class Level`` (missing ones empty)."""
    cls = _level_class(ast.parse(source))
    spec: dict = {"relevant_achievements": (), "completed_achievements": (), "inventory": {},
                  "placements": (), "mobs": (), "settings": {}}
    for node in cls.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in SPEC_FIELDS:
            try:
                spec[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass  # not a literal: keep the default, the edit will replace it
    return spec


def edit_program(source: str, new_spec: Mapping, doc: str | None = None) -> str:
    """Write ``new_spec``'s fields into the parent program's ``class Level`` (replacing the
    literal assignments, inserting missing ones) and return the unparsed source."""
    tree = ast.parse(source)
    cls = _level_class(tree)
    seen = set()
    for node in cls.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in new_spec:
            name = node.targets[0].id
            node.value = ast.parse(repr(_freeze(new_spec[name])), mode="eval").body
            seen.add(name)
    start = 1 if cls.body and isinstance(cls.body[0], ast.Expr) else 0
    for name in SPEC_FIELDS:
        if name in new_spec and name not in seen:
            cls.body.insert(start, ast.parse(f"{name} = {_freeze(new_spec[name])!r}").body[0])
    if doc is not None:
        d = ast.Expr(ast.Constant(doc))
        if start:
            cls.body[0] = d
        else:
            cls.body.insert(0, d)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _freeze(v):
    if isinstance(v, list | tuple):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return {k: _freeze(x) for k, x in v.items()}
    return v


def _closure(names: Sequence[str]) -> set[str]:
    out = set(names)
    for a in names:
        out |= ancestors(a)
    return out


def scaffold(relevant: Sequence[str], completed: Sequence[str], rng: np.random.Generator,
             near: int = 3, settings: Mapping | None = None) -> dict:
    """A spec whose initial state compresses away ``completed`` (inventory and stations that
    those achievements leave behind) and places what ``relevant`` needs within ``near`` steps."""
    completed = sorted(_closure(completed) - set(relevant), key=ACHIEVEMENTS.index)
    inv: dict[str, int] = {}
    for a in completed:
        for k, v in GRANTS.get(a, {}).items():
            inv[k] = max(inv.get(k, 0), v)
    placements, mobs = [], []
    for a in completed:
        if a in STATION:
            placements.append((STATION[a], 1, 1, 2))
    need = _closure(relevant) - set(completed)
    for a in sorted(need, key=ACHIEVEMENTS.index):
        blk, mob = RESOURCE.get(a, (None, None))
        if blk and all(p[0] != blk for p in placements):
            placements.append((blk, 2, 1, near))
        if mob and all(m[0] != mob for m in mobs):
            mobs.append((mob, 1, 2, near + 1))
        if a in ("make_iron_pickaxe", "make_iron_sword", "make_armour") and "coal" not in inv:
            placements.append(("coal", 1, 1, near))
    base = {"max_steps": 60.0}
    if "defeat_guardian" in relevant:
        base["guardian_health"] = 12.0
    return {"relevant_achievements": tuple(relevant), "completed_achievements": tuple(completed),
            "inventory": inv, "placements": tuple(placements), "mobs": tuple(mobs),
            "settings": {**base, **(settings or {})}}


SEED_SPECS = (  # DiCode's seed task families: collecting, crafting, survival, combat
    ("collect wood from nearby trees", ("collect_wood",), ()),
    ("place a crafting table", ("place_table",), ()),
    ("drink water and eat a cow", ("collect_drink", "eat_cow"), ()),
    ("make a wooden sword and defeat a zombie", ("defeat_zombie",), ("place_table",)),
)


def seed_levels(rng: np.random.Generator | None = None) -> list[str]:
    rng = rng or np.random.default_rng(0)
    return [render_level(scaffold(rel, comp, rng), doc=doc) for doc, rel, comp in SEED_SPECS]


def frontier(spec: Mapping) -> list[str]:
    """Achievements one dependency beyond the level: not yet relevant or completed, with every
    direct prerequisite relevant or completed."""
    have = set(spec["relevant_achievements"]) | set(spec["completed_achievements"])
    return [a for a in ACHIEVEMENTS if a not in have and set(PREREQS[a]) <= have]


@dataclass
class Feedback:
    """What the designer sees of a parent: its success rate, per-achievement success rates on
    it, and the agent's global per-achievement profile on the original game."""

    sr: float = -1.0
    per_achievement: dict[str, float] = field(default_factory=dict)
    global_profile: dict[str, float] = field(default_factory=dict)


def apply_operator(op: str, spec: Mapping, rng: np.random.Generator) -> tuple[dict, str]:
    """One operator on a spec; returns the child spec and a one-line description."""
    spec = copy.deepcopy(dict(spec))
    rel, comp = list(spec["relevant_achievements"]), list(spec["completed_achievements"])
    settings = dict(spec.get("settings", {}))
    if op == "expand":
        options = frontier(spec)
        if not options:
            return apply_operator("vary", spec, rng)
        target = options[int(rng.integers(len(options)))]
        child = scaffold([target], comp + rel, rng, near=3, settings=settings)
        return child, f"EXPAND: new goal {target}; {', '.join(rel)} compressed into the start state"
    if op == "persist":
        settings = {**settings, "zombie_damage": round(settings.get("zombie_damage", 1.0) * 0.5, 3),
                    "guardian_damage": round(settings.get("guardian_damage", 1.0) * 0.5, 3),
                    "needs_depletion": round(settings.get("needs_depletion", 1.0) * 0.5, 3)}
        spec["placements"] = tuple((b, int(c) + 1, 1, max(int(lo) + 1, int(hi) - 1))
                                   for b, c, lo, hi in spec["placements"])
        spec["mobs"] = tuple((m, c, lo, max(int(lo), int(hi) - 1)) for m, c, lo, hi in spec["mobs"])
        spec["settings"] = settings
        return spec, f"PERSIST: same goal {', '.join(rel)}; resources closer, half damage and needs"
    if op == "simplify":
        pre = [a for r in rel for a in PREREQS[r]]
        if not pre:
            return apply_operator("persist", spec, rng)
        target = pre[int(rng.integers(len(pre)))]
        child = scaffold([target], [a for a in comp if a != target and target not in _closure([a])],
                         rng, settings=settings)
        return child, f"SIMPLIFY: goal reduced to the prerequisite {target}"
    if op == "vary":
        spec["placements"] = tuple((b, max(1, int(c) + int(rng.integers(-1, 2))), int(lo),
                                    int(max(lo, hi + int(rng.integers(-1, 3)))))
                                   for b, c, lo, hi in spec["placements"])
        spec["mobs"] = tuple((m, c, lo, int(max(lo, hi + int(rng.integers(-1, 3)))))
                             for m, c, lo, hi in spec["mobs"])
        return spec, f"VARY: same goal {', '.join(rel)}, new layout distances"
    raise ValueError(f"unknown operator {op!r}; operators are {OPERATORS}")


def choose_operator(spec: Mapping, fb: Feedback) -> str:
    """DiCode's decision table (evolve prompt): EXPAND when the agent succeeds locally, VARY when
    it is strong locally but weak on the same skills in the original game (overfitting),
    PERSIST on partial progress, SIMPLIFY on total failure."""
    rel = list(spec["relevant_achievements"])
    if fb.sr >= 0.5:
        glob = [fb.global_profile.get(a, 0.0) for a in rel]
        if fb.sr >= 0.75 and glob and min(glob) < 0.1 and not set(rel) & {"defeat_guardian"} \
                and fb.per_achievement and min(fb.per_achievement.get(a, 0) for a in rel) > 0.9:
            return "vary"
        return "expand"
    if fb.sr > 0.05:
        return "persist"
    return "simplify"


def spec_key(spec_or_code: Mapping | str) -> str:
    """A canonical string of a level's spec (the literal attributes): two programs with the same
    key build the same distribution of worlds with the same goal."""
    spec = read_spec(spec_or_code) if isinstance(spec_or_code, str) else spec_or_code
    return repr(tuple((k, _freeze(spec.get(k, ()))) for k in SPEC_FIELDS))


# When the chosen operator only reproduces a level that exists, the next ones to try (the
# decision table's neighbours first): a replicated parent yields distinct children, as a
# foundation model sampling several children of one parent does.
FALLBACK = {"expand": ("vary", "persist", "simplify"), "vary": ("expand", "persist", "simplify"),
            "persist": ("vary", "simplify", "expand"), "simplify": ("persist", "vary", "expand")}


def _distinct_child(spec: Mapping, ops: Sequence[str], rng: np.random.Generator,
                    avoid: frozenset[str] | set[str], tries: int) -> tuple[dict, str, str] | None:
    for op in ops:
        for _ in range(tries):
            child, desc = apply_operator(op, spec, rng)
            if spec_key(child) not in avoid:
                return child, desc, op
    return None


class ProgrammaticDreamer:
    """The closed-loop offline designer: feedback -> operator -> AST edit of the parent.

    ``avoid`` (spec keys of levels that exist, :func:`spec_key`) makes the child distinct: the
    chosen operator is redrawn up to ``tries`` times (EXPAND picks another frontier goal, VARY
    another layout), then its neighbours in the decision table are tried; ``(None, op)`` when
    no distinct child exists."""

    name = "programmatic"

    def __init__(self, seed: int = 0, tries: int = 4) -> None:
        self.rng = np.random.default_rng(seed)
        self.tries = int(tries)

    def propose(self, parent_code: str, fb: Feedback,
                avoid: frozenset[str] | set[str] = frozenset()) -> tuple[str | None, str]:
        spec = read_spec(parent_code)
        op = choose_operator(spec, fb)
        found = _distinct_child(spec, (op, *FALLBACK[op]), self.rng, avoid, self.tries)
        if found is None:
            return None, op
        child, desc, op = found
        return edit_program(parent_code, child, doc=desc), op


class RandomCodeMutator:
    """The open-loop ablation: the same operators and AST edits, chosen uniformly, no feedback
    (``avoid`` as for :class:`ProgrammaticDreamer`; the fallbacks are the other operators in a
    random order)."""

    name = "random"

    def __init__(self, seed: int = 0, tries: int = 4) -> None:
        self.rng = np.random.default_rng(seed)
        self.tries = int(tries)

    def propose(self, parent_code: str, fb: Feedback | None = None,
                avoid: frozenset[str] | set[str] = frozenset()) -> tuple[str | None, str]:
        spec = read_spec(parent_code)
        order = [OPERATORS[i] for i in self.rng.permutation(len(OPERATORS))]
        found = _distinct_child(spec, order, self.rng, avoid, self.tries)
        if found is None:
            return None, order[0]
        child, desc, op = found
        return edit_program(parent_code, child, doc=desc), op


def random_level(rng: np.random.Generator) -> str:
    """Domain randomisation over the same spec space: a uniformly random goal, a random subset of
    its ancestors compressed into the start state, random distances and mechanics."""
    target = ACHIEVEMENTS[int(rng.integers(len(ACHIEVEMENTS)))]
    anc = sorted(ancestors(target), key=ACHIEVEMENTS.index)
    comp = [a for a in anc if rng.random() < 0.5]
    settings = {"zombie_damage": float(np.round(rng.uniform(0.25, 1.5), 2)),
                "needs_depletion": float(np.round(rng.uniform(0.25, 1.5), 2))}
    spec = scaffold([target], comp, rng, near=int(rng.integers(2, 7)), settings=settings)
    return render_level(spec, doc=f"DR: goal {target}")


# ----------------------------------------------------------------------------------------------
# The LLM designer -> coder loop
# ----------------------------------------------------------------------------------------------

API_DOC = """World-builder API (MicroCraft). Write one Python module that defines
`class Level(BaseLevel)` with class attributes relevant_achievements (tuple of names; success =
all unlocked, ends the episode), completed_achievements (pre-filled), inventory (dict item->count),
placements ((block, count, min_dist, max_dist), ...), mobs ((mob, count, min_dist, max_dist), ...),
settings (dict for LevelParams: zombie_damage, guardian_damage, guardian_health, needs_depletion,
health_recover, max_steps), `params(self) -> LevelParams(**self.settings)` and
`generate_world(self, rng, builder) -> builder.build()`. builder methods: set_inventory(dict),
set_needs(health, food, drink), set_player(row, col), place_block(block, row, col),
fill_area(block, r0, c0, r1, c1), place_near(block, count, min_dist, max_dist),
scatter(block, count), add_mob_near(mob, count, min_dist, max_dist), build().
No imports, no IO, no dunder names. Blocks: {blocks}. Mobs: cow, zombie, guardian.
Items: {items}. Achievements: {achievements}."""

DESIGN_RULES = """Use the parent as the agent's current capability frontier. Make ONE primary change:
EXPAND (one new dependency beyond the frontier) when the agent succeeds locally; PERSIST (same goal,
less executional difficulty or minimal scaffolding) on partial progress; SIMPLIFY (reduce the goal to
a prerequisite) only on total failure; VARY (same goal, new layout) when the agent is strong locally
but weak on the original game. Compress mastered prerequisites into the initial state."""


def knowledge_base() -> str:
    lines = [f"{a}: needs {', '.join(PREREQS[a]) or 'nothing'}" for a in ACHIEVEMENTS]
    return "Tech tree (achievement: direct prerequisites):\n" + "\n".join(lines)


def _extract_code(text: str) -> str:
    if "```" in text:
        parts = text.split("```")
        if len(parts) >= 3:
            body = parts[1]
            return body[len("python"):].lstrip("\n") if body.startswith("python") else body
    return text


class LLMGenerator:
    """DiCode's two-call designer -> coder chain through :mod:`icml26.core.llm`, with error-driven
    retries: a program that fails the sandbox is sent back to the coder with the error
    (reflection) up to ``max_retries`` times.

    ``chat`` is any :class:`~icml26.core.llm.ChatModel` (``resolve_chat_model`` gives a real
    server with ``--llm URL``; tests use :class:`~icml26.core.llm.ScriptedChat`)."""

    name = "llm"

    def __init__(self, chat, *, max_retries: int = 3, compile_kwargs: Mapping | None = None,
                 max_tokens: int = 4096, temperature: float = 0.6, seed: int = 0) -> None:
        from .world import BLOCKS, ITEMS

        self.chat, self.max_retries = chat, int(max_retries)
        self.compile_kwargs = dict(compile_kwargs or {})
        self.max_tokens, self.temperature, self.seed = max_tokens, temperature, seed
        self.api = API_DOC.format(blocks=", ".join(BLOCKS), items=", ".join(ITEMS),
                                  achievements=", ".join(ACHIEVEMENTS))
        self.log: list[dict] = []

    def _ask(self, messages) -> str:
        return self.chat.complete(messages, max_tokens=self.max_tokens,
                                  temperature=self.temperature, seed=self.seed).text

    def propose(self, parent_code: str, fb: Feedback,
                avoid: frozenset[str] | set[str] = frozenset()) -> tuple[str | None, str]:
        """Designer -> coder -> sandbox (-> reflection ...). Returns ``(code or None, description)``.
        ``avoid`` is accepted for the generator protocol; the model is not told about it (a
        duplicate is dropped by the caller)."""
        profile = ", ".join(f"{k}={v:.2f}" for k, v in sorted(fb.global_profile.items()))
        local = ", ".join(f"{k}={v:.2f}" for k, v in sorted(fb.per_achievement.items()))
        design = self._ask([
            {"role": "system", "content": f"You design training levels.\n{knowledge_base()}\n"
                                          f"{DESIGN_RULES}"},
            {"role": "user", "content": f"DESIGN a child of this parent level.\nParent code:\n"
                                        f"{parent_code}\nParent success rate: {fb.sr:.2f}\n"
                                        f"Parent per-achievement success: {local}\n"
                                        f"Global profile on the original game: {profile}\n"
                                        "Describe the child level in a few sentences."}])
        messages = [
            {"role": "system", "content": f"You write level programs.\n{self.api}"},
            {"role": "user", "content": f"CODE this level description:\n{design}\n"
                                        f"Example (the parent):\n{parent_code}\n"
                                        "Reply with one ```python block."}]
        for attempt in range(self.max_retries + 1):
            code = _extract_code(self._ask(messages))
            res = compile_levels([code], **self.compile_kwargs)[0]
            self.log.append({"attempt": attempt, "ok": res.ok, "reason": res.reason})
            if res.ok:
                return code, design
            messages = [*messages, {"role": "assistant", "content": code},
                        {"role": "user", "content": f"FIX: the program failed validation with the "
                                                    f"error:\n{res.reason}\nReply with the "
                                                    "corrected ```python block."}]
        return None, design
