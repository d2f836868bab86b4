"""Checks that run before any compute: a run either starts with everything it needs, or stops
at once with one line saying what to fix (the CLI exits 2, the usage-error status).

What is checked, and when (:func:`check_run` is the entry point of ``run`` and ``reproduce``):

* **packages**: each paper's third-party imports beyond the always-installed stack
  (:data:`PAPER_MODULES`; ``sbi`` for tfmpe, a core dependency since README command 1 must run
  all 19 papers), the executor's (``ray``) and the LLM client's (``httpx``). A missing one names
  the ``pip install`` line to type. ``run SLUG`` of one paper stops (exit 2); a run of several
  papers (``reproduce``, ``run all``) skips that paper with a line, records it as a skipped
  error result (so the report says so) and runs the others.
* **the output folder** (``--out``, and ``--llm-cache``): every folder a run writes into must be
  a folder, or creatable, and writable: a file in the way or a read-only folder is found here,
  not after the compute.
* **``--jobs``** >= 1 and **``--seeds``** well formed (:func:`parse_seeds`: non-negative,
  distinct integers).
* **servers, only when named**: ``--llm URL`` gets one ``GET URL/models`` with a 10 s timeout
  (unreachable, refused, a 401/403, or no model to pick: exit 2 with the URL and the error);
  ``--executor ray --address HOST:PORT`` (or ``ray://HOST:PORT``) gets one TCP connection with a
  15 s timeout. Nothing here opens a socket unless the user named a server (``--llm`` or
  ``$ICML26_LLM_BASE_URL``, ``--address``).

:func:`missing_modules` and :func:`pip_line` are also what ``tests/harness/test_preflight.py``
checks against ``pyproject.toml``: every third-party module the package imports is either a core
dependency or listed in :data:`OPT_IN_MODULES` with the feature that needs it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

LLM_TIMEOUT_S = 10.0
RAY_TIMEOUT_S = 15.0

# Third-party modules a paper's experiment imports beyond numpy/scipy/scikit-learn/matplotlib/
# rich/POT/torch. Each must be a core dependency (README command 1 installs no extra).
PAPER_MODULES: dict[str, tuple[str, ...]] = {
    "tfmpe": ("sbi",),  # sbi's FMPE/NPE: the flat baselines of every profile
}

# Modules the package imports only for an opt-in feature, never in a reproduction's default
# path; each import is guarded and names its install line. module -> (distribution, feature).
OPT_IN_MODULES: dict[str, tuple[str, str]] = {
    "httpx": ("httpx", "--llm: the OpenAI-compatible client (icml26[llm])"),
    "ray": ("ray", "--executor ray (icml26[ray])"),
    "neurokit2": ("neurokit2", "ecg_r1.neurokit_heart_rate, a cross-check (icml26[ecg])"),
    "wfdb": ("wfdb", "ecg_r1.read_wfdb: reading your own WFDB records"),
    "torchattacks": ("torchattacks", "nppr: torchattacks' PGD when installed (ours otherwise)"),
    "craftax": ("craftax", "dicode: the real Craftax backend when installed"),
    "jax": ("jax", "dicode: the real Craftax backend when installed"),
}
# the Hugging Face interop: core.lm.hf and each LLM paper's ``hf`` module (icml26[hf])
OPT_IN_MODULES.update({m: (m, "the Hugging Face interop, the papers' hf modules (icml26[hf])")
                       for m in ("transformers", "tokenizers", "trl", "peft", "datasets",
                                 "accelerate", "safetensors")})

# import name -> distribution name, where they differ
DISTRIBUTIONS: dict[str, str] = {"sklearn": "scikit-learn", "ot": "pot"}


class PreflightError(Exception):
    """A run cannot start: the message is one line saying what to fix (CLI exit status 2)."""


@dataclass(frozen=True)
class Skipped:
    """A paper left out of a run of several papers, before any compute, and why."""

    slug: str
    reason: str


@dataclass(frozen=True)
class Checked:
    """What :func:`check_run` found: the papers to skip, and the model a named ``--llm`` server
    will be asked for (None without ``--llm``)."""

    skipped: list[Skipped] = field(default_factory=list)
    llm_model: str | None = None


# -- packages --------------------------------------------------------------------------------
def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken parent package, or a module without a spec
        return False


def missing_modules(slug: str, modules: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """The modules paper ``slug`` needs (:data:`PAPER_MODULES`) that are not installed."""
    table = PAPER_MODULES if modules is None else modules
    return [m for m in table.get(slug, ()) if not _installed(m)]


def requirement(module: str) -> str:
    """The requirement to ``pip install`` for ``module``: icml26's own pin when it declares one
    (e.g. ``sbi>=0.27``), else the distribution name."""
    dist = DISTRIBUTIONS.get(module) or OPT_IN_MODULES.get(module, (module, ""))[0]
    canon = re.sub(r"[-_.]+", "-", dist).lower()
    try:
        requires = metadata.requires("icml26") or []
    except metadata.PackageNotFoundError:
        requires = []
    for req in requires:
        spec = req.split(";")[0].strip()
        name = re.split(r"[\s\[<>=!~;(]", spec, maxsplit=1)[0]
        if re.sub(r"[-_.]+", "-", name).lower() == canon:
            return spec.replace(" ", "")
    return dist


def pip_line(modules: Iterable[str]) -> str:
    """``pip install "sbi>=0.27" ...`` for the given modules."""
    return "pip install " + " ".join(f'"{requirement(m)}"' for m in modules)


def package_problem(slug: str) -> str | None:
    """One line saying which package paper ``slug`` misses and how to install it, or None."""
    missing = missing_modules(slug)
    if not missing:
        return None
    what = ", ".join(missing)
    return (f"{slug} needs the Python package{'s' if len(missing) > 1 else ''} {what}, not "
            f"installed here: {pip_line(missing)}")


def require_modules(modules: Sequence[str], feature: str) -> None:
    """Raise :class:`PreflightError` naming the install line when a module is missing."""
    missing = [m for m in modules if not _installed(m)]
    if missing:
        raise PreflightError(f"{feature} needs {', '.join(missing)}, not installed here: "
                             f"{pip_line(missing)}")


# -- arguments -------------------------------------------------------------------------------
def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``; raise ValueError unless non-negative distinct integers."""
    parts = [s.strip() for s in str(text).split(",")]
    if not any(parts):
        raise ValueError("--seeds needs one or more non-negative integers, e.g. --seeds 0,1,2")
    seeds = []
    for part in parts:
        if not part:
            raise ValueError(f"--seeds {text!r} has an empty entry; write e.g. --seeds 0,1,2")
        try:
            seed = int(part)
        except ValueError:
            raise ValueError(f"--seeds expects comma-separated integers, got {text!r}") from None
        if seed < 0:
            raise ValueError(f"--seeds must be non-negative, got {seed}")
        seeds.append(seed)
    dup = sorted({s for s in seeds if seeds.count(s) > 1})
    if dup:
        raise ValueError(f"--seeds lists {dup} more than once; each seed runs once")
    return seeds


def check_jobs(jobs: int) -> None:
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise PreflightError(f"--jobs must be an integer >= 1 (papers run in parallel), got {jobs!r}")


# -- folders ---------------------------------------------------------------------------------
def check_writable_dir(path: str | os.PathLike[str], flag: str = "--out") -> None:
    """``path`` is (or can be created as) a folder we can write to; else :class:`PreflightError`.

    Nothing is created: the nearest existing ancestor must be a folder in which a file can be
    made (a probe file is created and removed there, so read-only mounts and permission bits
    both count).
    """
    target = Path(path).expanduser()
    probe = target
    while not probe.exists():
        if probe.is_symlink():
            raise PreflightError(f"{flag} {str(target)!r}: {str(probe)!r} is a broken link")
        parent = probe.parent
        if parent == probe:
            break
        probe = parent
    if not probe.is_dir():
        where = "is a file" if probe == target else f"cannot be created: {str(probe)!r} is a file"
        raise PreflightError(f"{flag} {str(target)!r} {where}, not a folder")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".icml26-write-check.", dir=probe)
    except OSError as exc:
        msg = exc.strerror or type(exc).__name__
        where = "" if probe == target else f" (its nearest existing folder {str(probe)!r})"
        raise PreflightError(f"{flag} {str(target)!r}{where} is not writable (cannot create a "
                             f"file there: {msg})") from None
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


def check_out(out: str | os.PathLike[str], slugs: Sequence[str], profile: str) -> None:
    """Every folder a run of ``slugs`` writes results into (``OUT/SLUG/PROFILE``) is writable."""
    check_writable_dir(out, "--out")
    for slug in slugs:
        folder = Path(out) / slug / profile
        if folder.exists() or (Path(out) / slug).exists():
            check_writable_dir(folder, "--out")


# -- servers (only when named) -------------------------------------------------------------
def check_llm(url: str, model: str | None = None, *, timeout: float = LLM_TIMEOUT_S) -> str:
    """One ``GET URL/models``: the server answers, and the model to use exists (or is the only
    one served when ``model`` is None). Return the model the run will use.

    A server that answers but has no ``/models`` route (some proxies) is accepted when ``model``
    is named. Raise :class:`PreflightError` with the URL and the error otherwise.
    """
    require_modules(["httpx"], "--llm")
    import httpx

    from ..core.llm.openai_compatible import DEFAULT_API_KEY_ENV, OpenAICompatible, _is_loopback

    try:
        client = OpenAICompatible(url, model)  # validates the URL's form; opens no connection
    except ValueError as exc:
        raise PreflightError(f"--llm {url!r}: {exc}") from None
    models_url = f"{client.base_url}/models"
    headers = {}
    key = os.environ.get(DEFAULT_API_KEY_ENV)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    trust_env = not _is_loopback(urlsplit(client.base_url).hostname)
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout), trust_env=trust_env) as http:
            resp = http.get(models_url, headers=headers)
    except httpx.TimeoutException:
        raise PreflightError(f"--llm {client.base_url}: no answer from {models_url} within "
                             f"{timeout:g} s; is the server up and reachable?") from None
    except httpx.HTTPError as exc:
        raise PreflightError(f"--llm {client.base_url}: cannot reach {models_url} "
                             f"({exc or type(exc).__name__}); is the server running? (e.g. "
                             "`llama-server -m model.gguf --port 8080`)") from None
    if resp.status_code in (401, 403):
        raise PreflightError(f"--llm {client.base_url}: the server refused {models_url} (HTTP "
                             f"{resp.status_code}); set its API key in ${DEFAULT_API_KEY_ENV}")
    if resp.status_code != 200:
        if model is not None and resp.status_code < 500:
            return model  # reachable; no model list to check against
        raise PreflightError(f"--llm {client.base_url}: {models_url} answered HTTP "
                             f"{resp.status_code}" + ("" if model else "; name the model with "
                                                      "--llm-model"))
    try:
        ids = [str(m["id"]) for m in resp.json()["data"]]
    except (ValueError, KeyError, TypeError):
        if model is not None:
            return model
        raise PreflightError(f"--llm {client.base_url}: {models_url} did not list models; name "
                             "the model with --llm-model") from None
    if model is None:
        if len(ids) != 1:
            raise PreflightError(f"--llm {client.base_url} serves {len(ids)} models {ids[:10]}; "
                                 "name one with --llm-model")
        return ids[0]
    if ids and model not in ids:  # llama.cpp answers any name; vLLM would refuse it later
        print(f"icml26: warning: --llm-model {model!r} is not among the models "
              f"{client.base_url} lists ({ids[:10]})", file=sys.stderr)
    return model


def ray_endpoint(address: str) -> tuple[str, int] | None:
    """``(host, port)`` to probe for a Ray ``--address``, or None for ``auto``/``local``
    (which Ray resolves itself on this machine)."""
    text = address.strip()
    if text in ("auto", "local", ""):
        return None
    default_port = 6379
    if text.startswith("ray://"):
        text, default_port = text[len("ray://"):], 10001
    elif "://" in text:
        raise PreflightError(f"--address {address!r}: use auto, HOST:PORT or ray://HOST:PORT")
    parts = urlsplit(f"//{text}")
    try:
        port = parts.port or default_port
    except ValueError:
        raise PreflightError(f"--address {address!r}: the port is not a number") from None
    if not parts.hostname:
        raise PreflightError(f"--address {address!r}: no host; use auto, HOST:PORT or "
                             "ray://HOST:PORT")
    return parts.hostname, port


def check_ray(address: str | None, *, timeout: float = RAY_TIMEOUT_S) -> None:
    """Ray is installed and, for ``HOST:PORT``/``ray://HOST:PORT``, the address accepts a TCP
    connection within ``timeout`` seconds."""
    require_modules(["ray"], "--executor ray")
    if address is None:
        return
    endpoint = ray_endpoint(address)
    if endpoint is None:
        return
    host, port = endpoint
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except TimeoutError:
        raise PreflightError(f"--address {address}: no answer from {host}:{port} within "
                             f"{timeout:g} s; is the Ray head running there?") from None
    except OSError as exc:
        raise PreflightError(f"--address {address}: cannot connect to {host}:{port} "
                             f"({exc.strerror or exc}); is the Ray head running there? (`ray "
                             "start --head`)") from None


# -- the entry point ---------------------------------------------------------------------------
def check_run(slugs: Sequence[str], *, profile: str, out: str | os.PathLike[str], jobs: int = 1,
              executor: str = "local", address: str | None = None, llm: str | None = None,
              llm_model: str | None = None, llm_cache: str | None = None,
              skip_missing: bool = False) -> Checked:
    """Everything a run of ``slugs`` needs, checked before it computes.

    Local checks first (jobs, folders, packages), servers last. With ``skip_missing`` (a run of
    several papers) a paper whose package is missing is returned as :class:`Skipped` instead of
    raising; when every paper would be skipped it raises.
    """
    check_jobs(jobs)
    if address is not None and executor != "ray":
        raise PreflightError("--address names a Ray cluster: use it with --executor ray")
    check_out(out, slugs, profile)
    if llm_cache is not None:
        check_writable_dir(llm_cache, "--llm-cache")
    skipped: list[Skipped] = []
    for slug in slugs:
        problem = package_problem(slug)
        if problem is None:
            continue
        if not skip_missing:
            raise PreflightError(problem)
        skipped.append(Skipped(slug, problem))
    if skipped and len(skipped) == len(slugs):
        raise PreflightError("; ".join(s.reason for s in skipped))
    if executor == "ray":
        check_ray(address)
    model = check_llm(llm, llm_model) if llm is not None else None
    return Checked(skipped, model)


def check_report_dir(results: str | os.PathLike[str]) -> None:
    """``icml26 report`` writes REPORT.md and report.html into the results folder."""
    path = Path(results)
    if not path.is_dir():
        raise PreflightError(f"no results folder {str(path)!r}; run `icml26 reproduce` first")
    check_writable_dir(path, "--results")


def record_skipped(skipped: Sequence[Skipped], out: str | os.PathLike[str], profile: str) -> None:
    """Write each skipped paper as an error result (``skipped: true``) under ``OUT/SLUG/PROFILE``:
    the report then shows it next to the paper's last completed run, and ``latest.json`` is left
    as it was."""
    from .runner import _new_result, write_result

    for s in skipped:
        result = _new_result(s.slug, profile, [], {})
        result.update(status="error", skipped=True,
                      error=f"skipped before any compute: {s.reason}\n")
        write_result(result, Path(out) / s.slug / profile)
