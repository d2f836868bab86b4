"""Validating and compiling level programs without running them in the trainer's process.

Two layers (cf. DiCode's ``check_compilation``: exec the module, reset and step it once):

1. :func:`static_check` (in-process, no execution): the source parses, defines ``class Level``,
   and uses no imports, no dunder names or attributes and none of the forbidden builtins
   (``open``, ``exec``, ``eval``, ``__import__``, ``getattr``, ...).
2. :func:`compile_levels` runs a *batch* of sources in one fresh subprocess (one interpreter start
   per batch keeps the overhead small) under an address-space limit (``RLIMIT_AS``), a CPU-time
   limit and a per-level wall-clock alarm. The child executes each source in a namespace that
   exposes only the level API and a safe subset of builtins, generates ``n_worlds`` worlds into a
   bank, steps them ``check_steps`` times with random actions, and returns the banks as JSON (not
   pickle: the parent parses and shape-checks plain numbers, :meth:`Bank.from_json`).

Every rejection carries a clear reason: ``"import is not allowed"``, ``"timeout ..."``,
``"memory limit ..."``, the exception of a crashing ``generate_world``, etc.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass

from .world import Bank

FORBIDDEN_NAMES = frozenset({
    "open", "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "getattr",
    "setattr", "delattr", "input", "breakpoint", "help", "memoryview", "object", "type",
    "classmethod", "staticmethod", "property", "super", "exit", "quit", "print", "os", "sys",
    "subprocess", "builtins", "importlib", "np", "numpy"})
SAFE_BUILTINS = ("abs", "all", "any", "bool", "dict", "enumerate", "float", "int", "isinstance",
                 "len", "list", "max", "min", "range", "reversed", "round", "set", "sorted", "str",
                 "sum", "tuple", "zip", "ValueError", "Exception", "True", "False", "None")


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    reason: str = ""
    bank: Bank | None = None


def static_check(source: str) -> tuple[bool, str]:
    """Reject sources that cannot be valid level programs, without executing anything."""
    if not isinstance(source, str):
        return False, f"source must be a str, got {type(source).__name__}"
    if len(source) > 50_000:
        return False, f"source too long ({len(source)} chars > 50000)"
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return False, f"syntax error: {e.msg} (line {e.lineno})"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            return False, f"import is not allowed (line {node.lineno})"
        if isinstance(node, ast.Global | ast.Nonlocal):
            return False, f"global/nonlocal is not allowed (line {node.lineno})"
        if isinstance(node, ast.Name) and (node.id in FORBIDDEN_NAMES or node.id.startswith("__")):
            return False, f"name {node.id!r} is not allowed (line {node.lineno})"
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return False, f"private attribute {node.attr!r} is not allowed (line {node.lineno})"
        if isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.Lambda | ast.Yield | ast.YieldFrom):
            return False, f"{type(node).__name__} is not allowed (line {node.lineno})"
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Level"]
    if not classes:
        return False, "the program must define `class Level(BaseLevel)` at top level"
    for n in tree.body:
        if not isinstance(n, ast.ClassDef | ast.FunctionDef | ast.Assign | ast.Expr):
            return False, f"top-level {type(n).__name__} is not allowed (line {n.lineno})"
    return True, ""


# The child program. It imports only numpy and the world module (not torch).
_CHILD = r"""
import json, resource, signal, sys
import numpy as np
from icml26.papers.dicode import world as W
from icml26.papers.dicode.sandbox import SAFE_BUILTINS
import builtins as _b

req = json.loads(sys.stdin.read())
soft = int(req["memory_mb"]) * 2**20
resource.setrlimit(resource.RLIMIT_AS, (soft, soft))
cpu = int(req["cpu_s"])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))

class Timeout(BaseException):
    pass

def on_alarm(signum, frame):
    raise Timeout()

signal.signal(signal.SIGALRM, on_alarm)
safe = {k: getattr(_b, k) for k in SAFE_BUILTINS}
safe["__build_class__"] = _b.__build_class__
api = {"BaseLevel": W.BaseLevel, "LevelParams": W.LevelParams, "ACHIEVEMENTS": W.ACHIEVEMENTS,
       "BLOCKS": W.BLOCKS, "MOBS": W.MOBS, "ITEMS": W.ITEMS}
out = []
for i, src in enumerate(req["sources"]):
    signal.setitimer(signal.ITIMER_REAL, float(req["timeout_s"]))
    try:
        ns = {"__builtins__": dict(safe), "__name__": "level_%d" % i, **api}
        exec(compile(src, "<level %d>" % i, "exec"), ns)
        cls = ns.get("Level")
        if not (isinstance(cls, type) and issubclass(cls, W.BaseLevel)):
            raise TypeError("`Level` must be a subclass of BaseLevel")
        bank = W.make_bank(cls(), int(req["n_worlds"]), [int(req["seed"]), i], int(req["size"]))
        env = W.MicroCraftEnv([bank], num_envs=4, seed=0)
        env.assign(np.zeros(4, dtype=np.int64))
        rng = np.random.default_rng(0)
        for _ in range(int(req["check_steps"])):
            env.step(rng.integers(W.N_ACTIONS, size=4))
        signal.setitimer(signal.ITIMER_REAL, 0)
        out.append({"ok": True, "bank": bank.to_json()})
    except Timeout:
        out.append({"ok": False, "reason": "timeout: the level ran longer than %gs (infinite loop?)"
                    % float(req["timeout_s"])})
    except MemoryError:
        signal.setitimer(signal.ITIMER_REAL, 0)
        out.append({"ok": False, "reason": "memory limit exceeded (%d MB)" % int(req["memory_mb"])})
    except BaseException as e:
        signal.setitimer(signal.ITIMER_REAL, 0)
        out.append({"ok": False, "reason": "%s: %s" % (type(e).__name__, str(e)[:300])})
sys.stdout.write("\n@@RESULT@@" + json.dumps(out))
"""


def compile_levels(sources: list[str], *, n_worlds: int = 16, size: int = 12, seed: int = 0,
                   timeout_s: float = 2.0, memory_mb: int = 1024, check_steps: int = 5
                   ) -> list[CompileResult]:
    """Compile a batch of level programs in one sandboxed subprocess; one result per source.

    Sources failing :func:`static_check` are rejected without being sent. The whole batch gets a
    wall-clock budget of ``timeout_s`` per source plus the interpreter start; a crash of the child
    (killed by a limit) rejects every source of the batch that has no result, with the reason."""
    results: list[CompileResult | None] = []
    send: list[tuple[int, str]] = []
    for i, src in enumerate(sources):
        ok, why = static_check(src)
        results.append(None if ok else CompileResult(False, f"rejected: {why}"))
        if ok:
            send.append((i, src))
    if not send:
        return [r for r in results if r is not None]
    req = {"sources": [s for _, s in send], "n_worlds": n_worlds, "size": size, "seed": seed,
           "timeout_s": timeout_s, "memory_mb": memory_mb, "check_steps": check_steps,
           "cpu_s": int(timeout_s * len(send) + 10)}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(req),
                              capture_output=True, text=True, env=env,
                              timeout=timeout_s * len(send) + 20)
        text = proc.stdout.rsplit("@@RESULT@@", 1)
        child = json.loads(text[1]) if len(text) == 2 else None
        crash = f"sandbox process failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"
    except subprocess.TimeoutExpired:
        child, crash = None, "timeout: the sandbox process was killed"
    for k, (i, _) in enumerate(send):
        if child is None or k >= len(child):
            results[i] = CompileResult(False, crash)
            continue
        r = child[k]
        if not r.get("ok"):
            results[i] = CompileResult(False, str(r.get("reason", "unknown error")))
            continue
        try:
            results[i] = CompileResult(True, "", Bank.from_json(r["bank"], size))
        except (ValueError, KeyError, TypeError) as e:
            results[i] = CompileResult(False, f"invalid world from generate_world: {e}")
    return [r for r in results if r is not None]


def validate_level_code(source: str, **kwargs) -> tuple[bool, str]:
    """``(ok, reason)`` for one source (a batch of one through :func:`compile_levels`)."""
    r = compile_levels([source], **kwargs)[0]
    return r.ok, r.reason
