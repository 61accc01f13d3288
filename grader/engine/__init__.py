"""The grading engine: everything that can change a score.

It takes the file collect chose for a student's notebook, repairs or quarantines it (preflight),
puts back the locked cells and hidden tests (nbgrader's sanitizing steps), executes it in a
bubblewrap sandbox (sandbox, job, supervisor), and saves the scores of its checks in the
gradebook (autograde, with nbgrader's preprocessors and ours), keeping each hand grade whose
answer is unchanged (kept_grades), all as one EngineOptions says (options: the limits, the
sandbox, where jobs run); review flags code that touches the checking machinery. Its
code, the checks, the package, the release and the data a graded notebook reads make the rerun
key (rerun_key.digests): a change anywhere else regrades no one. It knows nothing of the term:
due dates, rosters and reports only read what it saved (grader/term/).
"""
