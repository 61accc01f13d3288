"""The term around the grading engine: everything that only reads scores.

Who is in the class (roster), which file of a notebook counts (collect, collected: every file is
kept, and the engine grades the one chosen), when each notebook was due and what lateness costs
(deadlines: applied once the engine has saved the scores), copies across the class (flagged,
never scored), the reports (the scores table, the class report, the term's log), the grade sheets
for the LMS, feedback bundles and the formgrader for grading by hand. Nothing here is in the
rerun key: editing it, a roster or course.toml's due dates regrades no one.
"""
