"""The jj backend, composed: one runner (run), the protocol (backend.JjVcs) with what it leans
on (ownfiles: the tool's files kept out of task changes; carried: the empty change finish hands
the next begin; moved_off: an agent that moved @ off its task's change; resume: a task going on
in an earlier run's attempt; leftovers, cutshort, basemark: what a killed run left; aside: a
rolled-back attempt kept); for parallel runs, the main line (mainline), a lane's backend
(lane.LaneJj) and the lanes' workspaces (workspaces)."""
