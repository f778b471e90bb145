"""The documentation site: MkDocs hooks and the pages generated from the case registry.

``mkdocs.yml`` loads ``hooks.py`` from this folder. Everything the site lists -- case pages,
family and message indexes, the verification table, the navigation -- is computed here from
``samedevice.cases`` at build time; nothing generated is committed, so adding a case needs no
edit to the site.

Modules, one job each:

- ``sitedata``: the registry as the site sees it (cases, families, message templates).
- ``generated``: Markdown of the virtual pages.
- ``navigation``: expands the ``Cases`` entry of the configured nav into the case tree.
- ``case_pages``: the files of a case page (notebook, programs) and its page meta.
- ``theme/main.html``: the one theme override (download links on case pages).
- ``notebook_html``: shrinks and cleans mkdocs-jupyter's HTML.
- ``search_fields``: the per-case search fields that make a pasted error find its case.
- ``checks``: checks on the built HTML (page size, references to other hosts, broken links).
"""
