"""The bug zoo: each usual mistake, injected into its exercise, fails the exercise's checkpoint
with its mistake code and a message that holds its diagnosis; each right variant keeps full marks;
each solution passes and each stub is "not done yet".

The cases are data, one table per notebook and one of delegated answers (maintainer/zoo/nb0*.py,
maintainer/zoo/integrity.py; their vocabulary is maintainer/zoo/__init__.py); this file is the one
harness that runs them. Checks called directly, not through an exercise, are in
test_checks_direct.py."""

import pytest
from notebook_harness import run

from checkpoints import CheckFailed, NotDoneYet
from maintainer.zoo import fragments, integrity, nb01, nb02, nb03, nb04, nb05, nb06

TABLES = {
    "nb01": nb01,
    "nb02": nb02,
    "nb03": nb03,
    "nb04": nb04,
    "nb05": nb05,
    "nb06": nb06,
    "integrity": integrity,
}
MISTAKES = {f"{t}: {name}": m for t, table in TABLES.items() for name, m in table.MISTAKES.items()}
RIGHT = {f"{t}: {name}": r for t, table in TABLES.items() for name, r in table.RIGHT.items()}
EXERCISES = {f"{ex.notebook}: {ex.cell}": ex for table in TABLES.values() for ex in table.EXERCISES}
NOT_DONE = 'raise NotImplementedError("not done yet")'


@pytest.mark.parametrize("name", MISTAKES)
def test_mistake_gets_its_code_and_diagnosis(name, capsys):
    mistake = MISTAKES[name]
    with pytest.raises(CheckFailed) as failure:
        run(mistake.exercise, mistake.body)
    assert not isinstance(failure.value, NotDoneYet), str(failure.value)
    assert failure.value.code == mistake.code, str(failure.value)
    assert failure.value.code.startswith(mistake.exercise.name + "."), str(failure.value)
    for fragment in fragments(mistake):
        assert fragment in failure.value.message, str(failure.value)


@pytest.mark.parametrize("name", RIGHT)
def test_right_variant_keeps_full_marks(name, capsys):
    right = RIGHT[name]
    run(right.exercise, right.body)
    assert capsys.readouterr().out.count("✅") == right.exercise.ticks


@pytest.mark.parametrize("name", EXERCISES)
def test_solution_passes_and_stub_is_not_done(name, capsys):
    exercise = EXERCISES[name]
    run(exercise)
    assert capsys.readouterr().out.count("✅") == exercise.ticks
    with pytest.raises(NotDoneYet, match="not done yet") as failure:
        run(exercise, NOT_DONE)
    assert failure.value.code == f"{exercise.name}.not_done", str(failure.value)
