"""Pre-run checks (icml26.harness.preflight) and the CLI's messages: every failure a run can
foresee ends before any seed runs, with exit status 2 and one line; `list`, `info` and a failed
run say clearly what happened. Sockets: 127.0.0.1 only."""

from __future__ import annotations

import ast
import json
import os
import re
import socket
import sys
import time
import tomllib
from pathlib import Path

import pytest

from icml26 import cli
from icml26.harness import PAPERS, PaperInfo
from icml26.harness import preflight as pf
from icml26.harness.registry import register

FAKE, FAKE2 = "zz_fake", "zz_fake_two"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fake_papers(monkeypatch):
    """Two registered test-only papers (the coin of tests/harness/fake_paper.py); ``calls``
    records every seed that starts, so a test can assert that nothing was computed."""
    from tests.harness import fake_paper as mod

    for number, slug in ((98, FAKE2), (99, FAKE)):
        register(PaperInfo(number, slug, "A fake paper", "fake", None, None, module="tests.harness"))
    monkeypatch.setitem(sys.modules, "tests.harness.experiment", mod)
    calls: list[int] = []
    real_run = mod.run

    def run(config, seed):
        calls.append(seed)
        return real_run(config, seed)

    monkeypatch.setattr(mod, "run", run)
    yield calls
    PAPERS.pop(FAKE, None)
    PAPERS.pop(FAKE2, None)


def closed_port() -> int:
    """A 127.0.0.1 port with nothing listening (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli(argv, capsys):
    t0 = time.monotonic()
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err, time.monotonic() - t0


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("icml26: error: "), err
    return lines[0]


@pytest.fixture
def read_only_dir(tmp_path):
    """A folder in which no file can be created (permission bits; root ignores them, so then a
    read-only kernel folder), or skip."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        for candidate in (folder, Path("/sys"), Path("/proc")):
            try:
                fd, probe = __import__("tempfile").mkstemp(dir=candidate)
            except OSError:
                yield candidate
                return
            os.close(fd)
            os.unlink(probe)
        pytest.skip("no read-only folder on this machine")
    finally:
        folder.chmod(0o755)


# -- folders, jobs, seeds --------------------------------------------------------------------
@pytest.mark.parametrize("command", ["run", "reproduce"])
def test_out_that_is_a_file_stops_before_any_seed(command, tmp_path, capsys, fake_papers):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in (blocker, blocker / "sub"):
        code, _, err, _ = run_cli([command, FAKE, "--profile", "smoke", "--out", str(out),
                                   "--no-progress"], capsys)
        assert code == 2
        assert "not a folder" in one_line(err) and str(blocker) in err
    assert fake_papers == []


def test_read_only_out_and_report_folder(read_only_dir, capsys, fake_papers):
    code, _, err, _ = run_cli(["run", FAKE, "--profile", "smoke", "--out",
                               str(read_only_dir / "results"), "--no-progress"], capsys)
    assert code == 2 and "not writable" in one_line(err)
    assert fake_papers == []
    code, _, err, _ = run_cli(["report", "--results", str(read_only_dir)], capsys)
    assert code == 2 and "not writable" in one_line(err)


def test_report_and_llm_cache_folders(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err, _ = run_cli(["run", FAKE, "--profile", "smoke", "--out", str(tmp_path / "r"),
                               "--llm-cache", str(blocker), "--no-progress"], capsys)
    assert code == 2 and "--llm-cache" in one_line(err)
    code, _, err, _ = run_cli(["report", "--results", str(blocker)], capsys)
    assert code == 2 and one_line(err)


@pytest.mark.parametrize("flags, text", [
    (["--jobs", "0"], "--jobs must be an integer >= 1"),
    (["--jobs", "-3"], "--jobs must be an integer >= 1"),
    (["--seeds", "0,0"], "more than once"),
    (["--seeds", "a,b"], "comma-separated integers"),
    (["--seeds", "1,,2"], "empty entry"),
    (["--seeds", ","], "one or more"),
    (["--seeds=-1"], "non-negative"),
    (["--address", "127.0.0.1:1"], "with --executor ray"),
])
def test_bad_flags_are_usage_errors(flags, text, tmp_path, capsys, fake_papers):
    for command in ("run", "reproduce"):
        code, _, err, _ = run_cli([command, FAKE, "--profile", "smoke", "--out", str(tmp_path),
                                   "--no-progress", *flags], capsys)
        assert code == 2 and text in one_line(err)
    assert fake_papers == [] and not list(tmp_path.iterdir())


def test_parse_seeds():
    assert pf.parse_seeds("0, 1,2") == [0, 1, 2]
    assert pf.parse_seeds("7") == [7]
    for bad in ("", "1,1", "-1", "x", "1,", "1.5"):
        with pytest.raises(ValueError):
            pf.parse_seeds(bad)


def test_check_writable_dir_creates_nothing(tmp_path):
    target = tmp_path / "a" / "b" / "c"
    pf.check_writable_dir(target)
    assert list(tmp_path.iterdir()) == []


# -- servers ---------------------------------------------------------------------------------
def test_dead_llm_server_stops_the_run_at_once(tmp_path, capsys, fake_papers):
    pytest.importorskip("httpx")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    for command in ("run", "reproduce"):
        code, _, err, elapsed = run_cli([command, FAKE, "--profile", "smoke", "--out",
                                         str(tmp_path), "--no-progress", "--llm", url], capsys)
        assert code == 2 and elapsed < 15
        line = one_line(err)
        assert url in line and "cannot reach" in line
    assert fake_papers == []


def test_llm_check_against_a_fake_server(tmp_path, capsys, monkeypatch):
    pytest.importorskip("httpx")
    from icml26.core.llm import ENV_BASE_URL, ENV_CACHE, ENV_MODEL
    from tests.core.llm.fake_server import FakeServer

    for var in (ENV_BASE_URL, ENV_MODEL, ENV_CACHE):
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    with FakeServer(models=("one",)) as server:
        assert pf.check_llm(server.base_url) == "one"
        assert pf.check_llm(server.base_url, "one") == "one"
        before = len(server.requests)
        code, out, _, _ = run_cli(["run", FAKE, "--profile", "smoke", "--out", str(tmp_path),
                                   "--llm", server.base_url, "--check"], capsys)
        assert code == 0 and "pre-run checks passed" in out
        assert server.n_chat_requests == 0 and len(server.requests) == before + 1  # one GET
        # the model found is what the papers' clients will ask for (no discovery per client)
        code, _, _, _ = run_cli(["run", FAKE, "--profile", "smoke", "--out", str(tmp_path),
                                 "--llm", server.base_url, "--no-progress"], capsys)
        assert code == 0 and os.environ[ENV_MODEL] == "one"
    with FakeServer(models=("a", "b")) as server:
        with pytest.raises(pf.PreflightError, match="serves 2 models.*--llm-model"):
            pf.check_llm(server.base_url)
        assert pf.check_llm(server.base_url, "b") == "b"


def test_llm_check_of_a_server_that_refuses_the_key(monkeypatch):
    pytest.importorskip("httpx")
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Refuse(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        with pytest.raises(pf.PreflightError, match="HTTP 401.*ICML26_LLM_API_KEY"):
            pf.check_llm(url, "m")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_llm_check_times_out_on_a_silent_server():
    pytest.importorskip("httpx")
    with socket.socket() as listener:  # accepts the connection (backlog), never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        t0 = time.monotonic()
        with pytest.raises(pf.PreflightError, match=r"no answer .* within 0\.5 s"):
            pf.check_llm(url, timeout=0.5)
        assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("address", ["127.0.0.1:{port}", "ray://127.0.0.1:{port}"])
def test_dead_ray_address_stops_the_run_at_once(address, tmp_path, capsys, fake_papers):
    address = address.format(port=closed_port())
    code, _, err, elapsed = run_cli(["run", FAKE, "--profile", "smoke", "--out", str(tmp_path),
                                     "--no-progress", "--executor", "ray", "--address", address],
                                    capsys)
    assert code == 2 and elapsed < 15 and fake_papers == []
    line = one_line(err)
    assert ("cannot connect to 127.0.0.1" in line) or ("pip install" in line)  # ray missing


def test_ray_endpoint_parsing():
    assert pf.ray_endpoint("auto") is None
    assert pf.ray_endpoint("10.0.0.1:6380") == ("10.0.0.1", 6380)
    assert pf.ray_endpoint("ray://head.example") == ("head.example", 10001)
    assert pf.ray_endpoint("head") == ("head", 6379)
    for bad in ("http://x:1", "ray://:1", "x:port"):
        with pytest.raises(pf.PreflightError):
            pf.ray_endpoint(bad)


def test_no_socket_unless_a_server_is_named(tmp_path, monkeypatch):
    def refuse(self, address, *args, **kwargs):
        raise AssertionError(f"preflight opened a socket to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    checked = pf.check_run([FAKE], profile="smoke", out=tmp_path, jobs=2)
    assert checked.skipped == [] and checked.llm_model is None


# -- packages --------------------------------------------------------------------------------
def test_missing_package_of_one_paper_is_a_usage_error(tmp_path, capsys, monkeypatch,
                                                       fake_papers):
    monkeypatch.setitem(pf.PAPER_MODULES, FAKE, ("icml26_no_such_module",))
    code, _, err, _ = run_cli(["run", FAKE, "--profile", "smoke", "--out", str(tmp_path),
                               "--no-progress"], capsys)
    line = one_line(err)
    assert code == 2 and 'pip install "icml26_no_such_module"' in line and FAKE in line
    assert fake_papers == [] and not list(tmp_path.iterdir())


def test_reproduce_skips_a_paper_whose_package_is_missing(tmp_path, capsys, monkeypatch,
                                                          fake_papers):
    monkeypatch.setitem(pf.PAPER_MODULES, FAKE2, ("icml26_no_such_module",))
    out = tmp_path / "res"
    code, stdout, err, _ = run_cli(["reproduce", FAKE, FAKE2, "--profile", "smoke", "--out",
                                    str(out), "--no-progress"], capsys)
    assert code == 1  # not everything ran
    assert f"{FAKE2}: SKIPPED before any compute" in err and "pip install" in err
    assert f"{FAKE} [smoke]" in stdout and fake_papers == [0, 1, 2]  # the other paper ran
    skipped = json.loads((out / FAKE2 / "smoke" / "latest-error.json").read_text())
    assert skipped["skipped"] is True and "icml26_no_such_module" in skipped["error"]
    assert not (out / FAKE2 / "smoke" / "latest.json").exists()
    (row,) = [ln for ln in (out / "REPORT.md").read_text().splitlines()
              if ln.startswith(f"| 98 | {FAKE2} |")]
    assert "skipped before any compute" in row and "pip install" in row  # the report says why
    # --check says the same without running anything
    code, stdout, err, _ = run_cli(["reproduce", FAKE, FAKE2, "--profile", "smoke", "--out",
                                    str(out), "--check"], capsys)
    assert code == 1 and "1 of 2 papers ready" in stdout and "would be skipped" in err
    assert fake_papers == [0, 1, 2]
    # when every paper would be skipped, nothing can run: a usage error
    monkeypatch.setitem(pf.PAPER_MODULES, FAKE, ("icml26_no_such_module",))
    code, _, err, _ = run_cli(["reproduce", FAKE, FAKE2, "--profile", "smoke", "--out",
                               str(out), "--no-progress"], capsys)
    assert code == 2 and "pip install" in err


def test_every_paper_can_run_with_the_core_dependencies(tmp_path):
    """README command 1 installs no extra: each paper's modules are core dependencies, and
    installed here."""
    core = _core_distributions()
    for slug, modules in pf.PAPER_MODULES.items():
        assert slug in PAPERS, slug
        for module in modules:
            assert _canon(pf.DISTRIBUTIONS.get(module, module)) in core, (slug, module)
            assert pf.missing_modules(slug) == [], slug
    checked = pf.check_run([p.slug for p in PAPERS.values() if p.implemented
                            and p.module is None], profile="quick", out=tmp_path, jobs=1)
    assert checked.skipped == []


def test_pip_line_names_the_declared_requirement():
    assert pf.requirement("sbi").startswith("sbi")
    assert pf.pip_line(["sklearn"]).startswith('pip install "scikit-learn')
    assert pf.pip_line(["nosuchmod"]) == 'pip install "nosuchmod"'


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _core_distributions() -> set[str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {_canon(re.split(r"[\s\[<>=!~;(]", d, maxsplit=1)[0]) for d in deps}


def _imports(path: Path):
    """(top-level module, guarded) for each absolute import in a file; guarded: inside a
    function or a try block (so a missing opt-in package cannot break ``import icml26...``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        guarded, up = False, parents.get(node)
        while up is not None:
            if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef | ast.Try):
                guarded = True
                break
            up = parents.get(up)
        for name in names:
            yield name.split(".")[0], guarded


def test_every_third_party_import_is_declared():
    """A paper's new dependency cannot slip in unnoticed: every third-party module the package
    imports is a core dependency or an opt-in one (listed with its feature, imported lazily)."""
    core = _core_distributions() | {"threadpoolctl"}  # threadpoolctl: scikit-learn's own
    problems = []
    for path in sorted((ROOT / "src" / "icml26").rglob("*.py")):
        for module, guarded in _imports(path):
            if module in sys.stdlib_module_names or module == "icml26" or module == "__future__":
                continue
            if _canon(pf.DISTRIBUTIONS.get(module, module)) in core:
                continue
            if module not in pf.OPT_IN_MODULES:
                problems.append(f"{path.relative_to(ROOT)}: {module} is neither a core "
                                "dependency nor in preflight.OPT_IN_MODULES")
            elif not guarded:
                problems.append(f"{path.relative_to(ROOT)}: opt-in {module} imported at the "
                                "top level")
    assert problems == []


def test_readme_command_one_and_ci_install_the_same():
    readme = (ROOT / "README.md").read_text()
    assert 'pip install "torch==2.13.0" -e . && icml26 reproduce --profile quick' in readme
    assert 'pip install "torch==2.13.0" -e ".[dev]" && pytest' in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r'pip install (--quiet )?"torch==2\.13\.0" -e \.\s*$', ci, re.M), ci
    assert re.search(r'pip install (--quiet )?"torch==2\.13\.0" -e "\.\[dev\]"', ci), ci
    assert "icml26 reproduce --profile quick --check" in ci


# -- list, info, a failed run ----------------------------------------------------------------
@pytest.fixture
def wide_terminal(monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "get_terminal_size",
                        lambda fallback=(80, 24): os.terminal_size((400, 24)))


def test_list_falls_back_on_the_checked_in_verdicts(tmp_path, capsys, wide_terminal):
    summary = cli.checked_in_summary("quick")
    if summary is None:
        pytest.skip("no docs/results/quick.json (not a source checkout)")
    code, out, _, _ = run_cli(["list", "--results", str(tmp_path / "none")], capsys)
    assert code == 0
    flat = " ".join(out.split())
    assert "(checked in)" in out and "quick.json" in flat
    slug = next(iter(summary[1]["papers"]))
    assert re.search(rf"{slug}\b.*quick: \d+ ", out)


def test_list_shows_a_newer_error_next_to_the_last_verdicts(tmp_path, capsys, wide_terminal):
    out = str(tmp_path / "res")
    assert cli.main(["run", FAKE, "--profile", "smoke", "--out", out, "--no-progress"]) == 0
    assert cli.main(["run", FAKE, "--profile", "smoke", "--out", out, "--set", "fail=1",
                     "--no-progress"]) == 1
    capsys.readouterr()
    code, text, _, _ = run_cli(["list", "--results", out], capsys)
    (row,) = [line for line in text.splitlines() if f" {FAKE} " in line]
    assert code == 0 and "smoke: 1 reproduced" in row
    assert "newer smoke run: error (RuntimeError: the fake paper was told to fail)" in row


def test_failed_run_names_only_kept_seeds(tmp_path, capsys):
    out = str(tmp_path / "res")
    code, _, err, _ = run_cli(["run", FAKE, "--profile", "smoke", "--out", out, "--set",
                               "fail_at_seed=0", "--no-progress"], capsys)
    assert code == 1 and "seeds []" not in err and "completed and kept" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 2, err
    assert lines[0] == f"{FAKE}: ERROR in seed 0: RuntimeError: the fake paper was told to fail"
    assert "latest-error.json" in lines[1] and "Traceback" not in err
    code, _, err, _ = run_cli(["run", FAKE, "--profile", "smoke", "--out", out, "--set",
                               "fail_at_seed=2", "--no-progress"], capsys)
    assert code == 1 and "seeds [0, 1] completed and kept" in err


def test_info_wraps_to_the_terminal_width(capsys, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=(80, 24): os.terminal_size((64, 24)))
    slug = next(p.slug for p in PAPERS.values() if p.implemented and p.module is None)
    assert cli.main(["info", slug]) == 0
    for line in capsys.readouterr().out.splitlines():
        assert len(line) <= 64 or " " not in line.strip(), line
