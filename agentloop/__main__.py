"""`python -m agentloop`."""

from agentloop.cli import main

main()
