"""Small file helpers everything above may use: JSON as agent-loop writes it, and files that an
agent deleting `.agent-loop/` cannot take away.

Owns: nothing of a run. May import: nothing of agentloop.
"""
