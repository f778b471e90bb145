"""How long the "Paste your error" page blocks when it opens a ``#q=`` link (issue 29: at most 1 s).

    mkdocs build -d /tmp/site && python benchmarks/paste_link_blocking.py /tmp/site

Serves the built site on 127.0.0.1 and opens ``paste/#q=<input>`` in headless Chromium for every
adversarial input of ``explain_adversarial.py``, cut to the longest link the page reads (100,000
characters, percent-encoded), and for a 400 KB link past that bound. Prints the page's longest
main-thread task (PerformanceObserver "longtask") for each: the time the page could not respond.
Needs playwright and Debian's chromium (as the browser tests do).
"""

from __future__ import annotations

import argparse
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from tests.site.browser import CHROMIUM, serve  # noqa: E402

from explain_adversarial import sized  # noqa: E402

MAX_LINK_READ = 100_000  # docs/javascripts/explain.js
GOAL_MS = 1000
_LONGEST_TASK = (
    "window.__long = 0; new PerformanceObserver((list) => { for (const e of list.getEntries())"
    " window.__long = Math.max(window.__long, e.duration); }).observe({type: 'longtask', buffered: true});"
)


def links() -> dict[str, str]:
    out = {}
    for name, text in sized(40_000).items():
        q = urllib.parse.quote(text)
        while len(q) > MAX_LINK_READ:  # the longest link the page still reads
            text = text[: len(text) * 9 // 10]
            q = urllib.parse.quote(text)
        out[name] = q
    out["past the bound (400 KB)"] = urllib.parse.quote("same device " + "a" * 400_000)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="a built site (mkdocs build -d DIR)")
    args = parser.parse_args(argv)
    if not (args.site / "paste" / "index.html").is_file():
        print(f"paste_link_blocking: {args.site} holds no built site (paste/index.html)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    server = serve(args.site)
    base = next(server)
    worst = 0.0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        for name, q in links().items():
            page = browser.new_page()
            page.add_init_script(_LONGEST_TASK)
            page.goto(base + "paste/#q=" + q)
            page.wait_for_selector(".sd-explain__result > *", timeout=60_000)
            page.wait_for_timeout(300)
            longest = page.evaluate("window.__long")
            worst = max(worst, longest)
            print(f"{name:<34} link {len(q):>7,} chars  longest task {longest:6.0f} ms", flush=True)
            page.close()
        browser.close()
    server.close()
    print(f"\nlongest: {worst:.0f} ms (goal {GOAL_MS} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
