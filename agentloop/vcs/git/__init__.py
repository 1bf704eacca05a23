"""The git backend, composed: one runner (run), a repository view on it (repo: where HEAD is, what
an attempt changed, commits of exactly that), the open-attempt record (record, recover), the short
way to commit (quick), the careful one (careful: the agent's commits folded, the repositories it
made inside yours) and the protocol itself (backend.GitVcs); for parallel runs, the main line
(mainline; its copy of a task commit, landing_copy; the record the next run finishes,
landing_record; your edits in its way, in_the_way; your branch renamed, branch_rename; its
objects pruned, pruned), a lane's backend (lane.LaneGit; what it knows between steps,
lane_state; its check of what the agent did, lane_check; its landing beside the next task,
landing_beside) and the lanes' worktrees (worktrees)."""
