"""The "Paste your error" page in headless Chromium (Debian's chromium, driven by Playwright).

The page is served over HTTP on 127.0.0.1 from a built site: ``$SAMEDEVICE_SITE_DIR`` if set,
else the session's one real ``mkdocs build --strict`` (shared with the site tests).
"""

from __future__ import annotations

import urllib.parse

import pytest
from tests.site.browser import BROWSER, serve

from conftest import SEED

pytestmark = BROWSER

LLMS = (SEED / "rasbt__LLMs-from-scratch.txt").read_text(encoding="utf-8")
T2 = (
    "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, "
    "different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)"
)
PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
ATTACK = (
    "Traceback (most recent call last):\n"
    '  File "/w/model.py", line 3, in forward\n'
    f"    y = torch.zeros(3) + '{PAYLOAD}'\n"
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
)
BOX_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>box</title></head><body>
<div data-samedevice-explain="box"></div>
<script src="../javascripts/explain.js"></script>
</body></html>
"""


@pytest.fixture(scope="module")
def base_url(site):
    root, _ = site
    (root / "box-test").mkdir(exist_ok=True)
    (root / "box-test" / "index.html").write_text(BOX_PAGE, encoding="utf-8")
    yield from serve(root)


@pytest.fixture
def page(browser, base_url):
    context = browser.new_context()
    pg = context.new_page()
    pg.requests = []
    pg.sent = []  # (url, referer header, post data) of every request the page made
    pg.on("request", lambda req: pg.requests.append(req.url))
    pg.on("request", lambda req: pg.sent.append((req.url, req.headers.get("referer", ""), req.post_data or "")))
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    context.close()


def _result(pg):
    pg.wait_for_selector(".sd-explain__result .sd-explain__template, .sd-explain__result .sd-explain__error", timeout=15000)
    return pg.locator(".sd-explain__result")


def test_paste_a_traceback(page, base_url):
    page.goto(base_url + "paste/")
    page.fill(".sd-explain__input", LLMS)
    page.click(".sd-explain__go")
    result = _result(page)
    assert result.locator(".sd-explain__template").inner_text().startswith("T1: Expected all tensors")
    assert "op addmm · argument mat1 on cuda:0 · other tensors on cpu" in result.locator(".sd-explain__facts").inner_text()
    first_cause = result.locator(".sd-explain__causes > li").first
    assert first_cause.locator("strong").inner_text() == "F1 Moved, then modified"
    case = result.locator(".sd-explain__cases a").first
    assert case.get_attribute("href").endswith("/cases/llms-from-scratch-out-head/")
    assert "`" not in case.inner_text()  # the title's Markdown code span is shown as code
    assert case.locator("code").first.inner_text() == "model.to(device)"
    assert "#q=" in page.url and "?q=" not in page.url  # shareable, in the fragment only
    assert page.errors == []
    assert all(url.startswith(base_url) for url in page.requests), page.requests
    # follow a link out of the result: neither that request nor any before carries the paste,
    # and the paste page is named in no Referer
    before = len(page.sent)
    case.click()
    page.wait_for_url("**/cases/llms-from-scratch-out-head/**")
    page.wait_for_load_state("networkidle")
    _assert_paste_never_sent(page, LLMS)
    nav = [(url, ref) for url, ref, _ in page.sent[before:] if url.endswith("/cases/llms-from-scratch-out-head/")]
    assert nav == [(base_url + "cases/llms-from-scratch-out-head/", "")]  # no Referer from the paste page
    assert [url for url, ref, _ in page.sent[before:] if "/paste/" in ref] == []


def _assert_paste_never_sent(pg, paste: str) -> None:
    """No request's URL, Referer or body holds a distinctive piece of the paste (raw or encoded)."""
    pieces = [line.strip() for line in paste.splitlines() if len(line.strip()) > 20][:5]
    assert pieces
    needles = set()
    for piece in pieces:
        needles |= {piece, urllib.parse.quote(piece), urllib.parse.quote_plus(piece), urllib.parse.quote(piece, safe="")}
    assert len(pg.sent) >= 2
    leaks = [(url, ref) for url, ref, body in pg.sent for n in needles if n in url or n in ref or n in body]
    assert leaks == []
    assert not any("q=" in ref for _, ref, _ in pg.sent), pg.sent


@pytest.mark.parametrize("how", ["#q=", "old ?q="])
def test_deep_link(page, base_url, how):
    page.goto(base_url + "paste/" + how[-3:] + urllib.parse.quote(T2))
    result = _result(page)
    # an old ?q= link is rewritten: the paste stays in the fragment from then on
    assert "?q=" not in page.url and urllib.parse.unquote(page.url.split("#q=", 1)[1]) == T2
    assert result.locator(".sd-explain__template").inner_text().startswith("T2: ")
    assert page.input_value(".sd-explain__input") == T2
    toggle = page.locator('input[data-md-toggle="search"]')
    if toggle.count():  # the Material theme: its search must not open with the traceback
        assert not toggle.is_checked()
    assert page.errors == []


@pytest.mark.parametrize("how", ["paste", "deep link"])
def test_html_payload_is_shown_as_text(page, base_url, how):
    if how == "paste":
        page.goto(base_url + "paste/")
        page.fill(".sd-explain__input", ATTACK)
        page.click(".sd-explain__go")
    else:
        page.goto(base_url + "paste/#q=" + urllib.parse.quote(ATTACK))
    result = _result(page)
    page.wait_for_timeout(300)  # an injected onerror handler would have fired by now
    assert page.evaluate("window.__pwned") is None
    assert result.locator("img").count() == 0 and result.locator("script").count() == 0
    assert PAYLOAD in result.inner_text()  # the evidence quotes the source line, as text
    assert page.input_value(".sd-explain__input") == ATTACK


def test_bad_input_message(page, base_url):
    page.goto(base_url + "paste/")
    page.fill(".sd-explain__input", "   ")
    page.click(".sd-explain__go")
    result = _result(page)
    assert result.locator(".sd-explain__error").inner_text() == "the input is empty; paste the error message or the whole traceback"


def test_no_device_error(page, base_url):
    page.goto(base_url + "paste/")
    page.fill(".sd-explain__input", "RuntimeError: CUDA out of memory.")
    page.click(".sd-explain__go")
    page.wait_for_selector(".sd-explain__none", timeout=15000)


def test_home_page_box(page, base_url):
    page.goto(base_url + "box-test/")
    page.fill(".sd-explain__input", "RuntimeError: No backend type associated with device type cpu")
    page.click(".sd-explain__go")
    result = _result(page)
    assert result.locator(".sd-explain__template").inner_text().startswith("T7: ")
    more = result.locator(".sd-explain__more a")
    assert more.get_attribute("href").endswith("/paste/#q=RuntimeError%3A%20No%20backend%20type%20associated%20with%20device%20type%20cpu")
    more.click()
    page.wait_for_url("**/paste/**")
    assert _result(page).locator(".sd-explain__template").inner_text().startswith("T7: ")
    _assert_paste_never_sent(page, "RuntimeError: No backend type associated with device type cpu")


def test_page_source(site):
    root, kind = site
    assert (root / "javascripts" / "explain-data.js").is_file()
    assert (root / "javascripts" / "explain-data.json").is_file()
    assert kind in {"given", "mkdocs"}


def test_a_pasted_error_in_the_site_search_gets_the_paste_pages_answer_first(page, base_url):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(base_url + "families/f4/")
    page.click("input[data-md-component='search-query']")
    page.fill("input[data-md-component='search-query']", T2)
    box = page.locator(".md-search-result > .sd-search-paste")
    box.wait_for(state="visible", timeout=15000)
    # above Material's own results, in the same panel
    assert page.evaluate("document.querySelector('.md-search-result').firstElementChild.className") == "sd-search-paste"
    head = box.locator(".sd-search-paste__head")
    from samedevice.explain import explain

    expected = explain(T2)
    assert head.inner_text() == f"Explain this error — {expected['template']}: {expected['title']}"
    explain_link = head.locator("a").get_attribute("href")
    assert explain_link == base_url + "paste/#q=" + urllib.parse.quote(T2, safe="-_.!~*'()")
    case = box.locator(".sd-search-paste__case a")
    assert case.get_attribute("href").startswith(base_url + "cases/")
    # a query of words stays Material's alone
    page.fill("input[data-md-component='search-query']", "register_buffer")
    page.wait_for_timeout(400)
    assert box.is_hidden()
    assert page.errors == []


def test_a_link_too_long_to_read_is_refused_in_one_line(page, base_url):
    # issue 29: a 400 KB #q= link held the page up for 13 s; a link is now read up to 100,000
    # characters, and a longer one says so instead of filling the box
    text = "same device " + "a" * 400_000
    page.goto(base_url + "paste/#q=" + urllib.parse.quote(text))
    result = _result(page)
    assert result.locator(".sd-explain__error").inner_text() == (
        "this link holds 400016 characters; a link is read up to 100000: paste the error or "
        "traceback into the box instead")
    assert page.input_value(".sd-explain__input") == ""
    # a link the page itself writes (MAX_LINK characters, percent-encoded) is well inside the bound
    page.goto("about:blank")  # a new load: a change of fragment alone reads nothing
    page.goto(base_url + "paste/#q=" + urllib.parse.quote(T2 + " " + "é" * 3900))
    assert _result(page).locator(".sd-explain__template").inner_text().startswith("T2: ")
    assert page.errors == []
