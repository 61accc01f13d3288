"""One notebook's grading, as the engine leaves it and the term completes it: the engine fills
the status and the scores, the term the lateness (grader/term/scores.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

GRADED = ("graded", "unchanged")  # statuses with scores in the gradebook


@dataclass
class Outcome:
    student: str
    assignment: str  # the notebook: in this course one assignment is one notebook
    status: str  # graded | unchanged | quarantined | failed
    score: float = 0.0
    max_score: float = 0.0
    needs_manual: int = 0
    seconds: float = 0.0
    repairs: list[str] = field(default_factory=list)
    reason: str = ""
    flags: list[str] = field(default_factory=list)  # for review; never change a score
    seconds_late: float = 0.0  # past the due date (extension included): the term's, after scoring
    late_penalty: float = 0.0  # points nbgrader's late penalty takes off `score`: the term's too
