"""After the lab: the readings of the record (the lecture's claims against the measured numbers,
the ablation ladder, verdicts with their intervals), the saved run, the figures and the templates
their words live in.

The package's top floor: nothing below imports it and no check needs it, so the rerun key
(grader/engine/rerun_key.py) leaves it out: rewording a reading regrades no one.
"""
