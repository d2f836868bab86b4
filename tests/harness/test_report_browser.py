"""The HTML report in a real headless browser: every paper has a section, every claim a row, no
image is broken, POWERLESS controls are marked; a screenshot is taken. Needs Debian's chromium
(`.ci/run` installs it); skipped with the reason where it is absent."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from icml26.harness import PAPERS, PaperInfo, run_paper
from icml26.harness.registry import register
from icml26.harness.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                "(apt-get install chromium; .ci/run does)")

_CHECK = """<script>window.addEventListener('load', () => {
  const broken = [...document.images].filter(i => !i.complete || i.naturalWidth === 0).length;
  const b = document.body;
  b.setAttribute('data-images', document.images.length);
  b.setAttribute('data-broken', broken);
  b.setAttribute('data-width', window.innerWidth);
  // every claim's verdict inside the viewport, without horizontal scrolling
  const w = document.documentElement.clientWidth;
  const off = [...document.querySelectorAll('article.card .verdict')]
    .filter(v => { const r = v.getBoundingClientRect(); return r.left < 0 || r.right > w; }).length;
  b.setAttribute('data-verdicts', document.querySelectorAll('article.card .verdict').length);
  b.setAttribute('data-verdicts-off', off);
  b.setAttribute('data-hscroll', document.documentElement.scrollWidth > w ? 1 : 0);
  // every internal link resolves
  const links = [...document.querySelectorAll('a[href^="#"]')];
  const dead = links.filter(a => !document.getElementById(a.getAttribute('href').slice(1)));
  b.setAttribute('data-links', links.length);
  b.setAttribute('data-dead-links', dead.map(a => a.getAttribute('href')).join(' ') || 'none');
});</script>"""


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                           "--allow-file-access-from-files", "--virtual-time-budget=3000", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def two_fake_papers():
    from tests.harness import fake_paper as mod

    for number, slug in ((99, "zz_fake"), (98, "zz_weak")):
        register(PaperInfo(number, slug, f"Fake {slug}", "fake", None, None, module="tests.harness"))
    sys.modules["tests.harness.experiment"] = mod
    yield ("zz_fake", "zz_weak")
    for slug in ("zz_fake", "zz_weak"):
        PAPERS.pop(slug, None)
    sys.modules.pop("tests.harness.experiment", None)


def test_report_renders_in_a_real_browser(tmp_path, two_fake_papers):
    out = tmp_path / "res"
    run_paper("zz_fake", "smoke", out=out)
    run_paper("zz_weak", "smoke", out=out, overrides=["control_is_baseline=true"])
    _, html_path = write_report(out)
    check = html_path.with_name("report_check.html")
    check.write_text(html_path.read_text().replace("</body>", _CHECK + "</body>"))
    for width, height in ((1280, 1800), (390, 844)):
        shot = tmp_path / f"report-{width}.png"
        res = _chromium(f"--screenshot={shot}", f"--window-size={width},{height}", check.as_uri())
        assert shot.is_file() and shot.stat().st_size > 10_000, res.stderr[-2000:]
        dom = _chromium(f"--window-size={width},{height}", "--dump-dom", check.as_uri()).stdout
        assert 'id="summary"' in dom and 'name="viewport"' in dom
        for slug in two_fake_papers:
            assert f'id="paper-{slug}"' in dom, slug
        assert len(re.findall(r'<article class="card claim', dom)) == 2  # one claim per paper
        assert len(re.findall(r'<article class="card claim [^"]*powerless', dom)) == 1
        assert 'data-broken="0"' in dom and 'data-images="2"' in dom
        assert 'data-verdicts="2"' in dom and 'data-verdicts-off="0"' in dom, width
        assert 'data-hscroll="0"' in dom, width
        assert 'data-dead-links="none"' in dom
        assert int(re.search(r'data-links="(\d+)"', dom).group(1)) >= 8  # toc, claims, back links
        assert "latest.json" in dom
        assert "http" not in re.sub(r"https?://arxiv", "", dom).split("<body")[0]
