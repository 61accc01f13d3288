"""The term around the grading engine: everything that only reads scores.

Who is in the class (roster), which file of a notebook counts (collect, collected: every file is
kept, and the engine grades the one chosen), when each notebook was due and what lateness costs
(rules, deadlines: applied once the engine has saved the scores), copies across the class
(flagged, never scored), the reports (the scores table, the class report, the term's log), the
grade sheets for the LMS (export, gradesheet, canvas), feedback bundles, the formgrader for
grading by hand and the overrides set aside (overrides), nbgrader's own release, feedback and
gradebook (nbgrader_apps), and a release's errata (errata). Each command opens the course once
(course_open.Course: its Layout and its Term) and hands it to every function here. Nothing here
is in the rerun key: editing it, a roster or course.toml's due dates regrades no one.
"""
