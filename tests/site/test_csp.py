"""The site's Content-Security-Policy and referrer policy (samedevice/site/csp.py), in every page's
own HTML, and what they do in a browser: the site's scripts and styles run, nothing else does."""

from __future__ import annotations

import re

import pytest

from samedevice.site.csp import REFERRER, add_policies, policy
from tests.site.browser import BROWSER, serve

CSP_META = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">')


def test_every_page_starts_its_head_with_the_policy_and_no_referrer(built_site):
    # the pages the build wrote (other tests add pages of their own to the shared site)
    pages = [(path, html) for path in sorted(built_site.site.rglob("*.html"))
             if '<meta name="generator" content="mkdocs-' in (html := path.read_text(encoding="utf-8"))]
    assert len(pages) > 50 and any(path.name == "404.html" for path, _ in pages)
    for path, html in pages:
        head = html[html.index("<head>") + len("<head>"):]
        m = CSP_META.match(head)
        assert m, path  # first, before any script, style sheet or request
        assert head[m.end():].startswith(REFERRER), path
        assert "'unsafe-inline'" not in m.group(1) and "'unsafe-eval'" not in m.group(1)
        assert re.search(r'\sstyle="', html) is None, path  # the policy runs no style attribute


def test_the_policy_hashes_inline_scripts_and_styles_but_not_data_blocks():
    page = ('<html><head><title>x</title></head><body><script>var a=1</script>'
            '<script type="application/json">{"b": 2}</script><script src="x.js"></script>'
            '<style>.c{color:red}</style></body></html>')
    got = policy(page)
    # echo -n 'var a=1' | openssl dgst -sha256 -binary | base64
    assert "script-src 'self' 'report-sample' 'sha256-WazVQOu5lmXfSreSrMJd1CsaQ4c00fUQpJfBYCuMSIw='" in got.split("; ")
    assert "style-src 'self' 'report-sample' 'sha256-" in got
    assert got.count("sha256-") == 2
    assert add_policies(page).startswith(f'<html><head><meta http-equiv="Content-Security-Policy" content="{got}">{REFERRER}<title>')
    assert add_policies("<p>no head</p>") == "<p>no head</p>"
    # `mkdocs serve` adds a live-reload script to each response: the preview allows inline scripts
    preview = policy(page, preview=True).split("; ")
    assert "script-src 'self' 'unsafe-inline'" in preview and "sha256-" not in preview[1]
    assert [d for d in preview if not d.startswith("script-src")] == [d for d in got.split("; ") if not d.startswith("script-src")]


VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "") + " " + (e.sample || "")));
"""


@pytest.fixture(scope="module")
def base_url(site):
    root, _ = site
    yield from serve(root)


def _needs_browser(test):
    for mark in BROWSER:
        test = mark(test)
    return test


@_needs_browser
@pytest.mark.parametrize("url", ["", "paste/", "cases/lightly-dino-loss-center/", "messages/", "families/f1/", "rules/"])
def test_the_sites_own_pages_run_without_a_violation(browser, base_url, url):
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_viewport_size({"width": 1280, "height": 800})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.add_init_script(VIOLATIONS)
        page.goto(base_url + url)
        page.wait_for_load_state("networkidle")
        # Material's search runs in a worker and fetches the index: both must be allowed
        page.click("input[data-md-component='search-query']")
        # typed before the worker has the index, a query is never run: wait for it to be ready
        page.locator(".md-search-result__meta", has_text="Type to start searching").wait_for(timeout=15000)
        page.type("input[data-md-component='search-query']", "register_buffer", delay=20)  # keys, as a reader types
        page.locator(".md-search-result__item").first.wait_for(state="attached", timeout=15000)
        # an injected inline script matches no hash: it must not run, and is reported
        ran = page.evaluate("""() => { const s = document.createElement('script');
            s.textContent = 'window.__ran = 1'; document.head.appendChild(s); return window.__ran; }""")
        assert ran is None
        page.wait_for_timeout(100)
        seen = page.evaluate("window.__csp")
        assert seen == ["script-src-elem inline window.__ran = 1"], seen
        assert errors == []
        if url.startswith("cases/"):  # a traceback's ANSI colours still show, as classes
            colour = page.evaluate("getComputedStyle(document.querySelector('[class*=sd-fg-]')).color")
            assert colour.startswith("rgb(") and colour != "rgb(0, 0, 0)"
    finally:
        context.close()

