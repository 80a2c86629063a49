"""The studio (docs/studio.md, extra ``studio``): ``host-sim studio`` serves the host to a browser.

The page (``static/``: plain HTML, CSS and an ES module, no build step, nothing fetched from
the network) talks to `StudioApp`, an ASGI app in the host's process; runs go through the
AG-UI app of section 21. Nothing here is imported by ``import host_sim``.
"""
