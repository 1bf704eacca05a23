"""The jj backend, composed: one runner (run), the protocol (backend.JjVcs); for parallel runs,
the main line (mainline), a lane's backend (lane.LaneJj) and the lanes' workspaces (workspaces)."""
