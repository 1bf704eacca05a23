"""Sphinx configuration of agent-loop's documentation site (built by scripts/docs.sh).

Markdown pages (MyST), the Furo theme, and one local extension that writes the reference pages
read off the code (_ext/agentloop_reference.py)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # agentloop itself, for a build from a plain checkout

from agentloop import __version__  # noqa: E402

project = "agent-loop"
author = "the agent-loop contributors"
copyright = "the agent-loop contributors"
release = version = __version__

extensions = ["myst_parser", "agentloop_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
# Options are written `--task`: two hyphens stay two hyphens, never a dash.
smartquotes = False

html_theme = "furo"
html_title = f"agent-loop {release}"
html_copy_source = False
# The pages link to files of the repository (scripts, examples) by their paths as text; a link
# that goes nowhere is a warning, and the build takes warnings as errors.
nitpicky = True
