"""Small file helpers everything above may use: JSON as agent-loop writes it, files that an
agent deleting `.agent-loop/` cannot take away, and reading a file only when it is a regular
one (regular), whether a live process holds a file open (opened), a file's stamp: is it
still the same, unchanged (stamp), a folder's entries read without a glob (listing), a new
scratch file beside the one it will replace (scratch).

Owns: nothing of a run. May import: nothing of agentloop.
"""
