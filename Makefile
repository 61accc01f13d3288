# Transformer Lab. `make help` lists the targets with what each costs.
# Every target sets itself up: the first run creates .venv (a few minutes), later runs reuse it.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# A CPU build is enough for everything here; on a GPU machine set TORCH_SPEC=torch.
TORCH_SPEC ?= torch==2.13.0
MODEL ?= gpt
BUDGET ?= quick
MODE ?= auto
# Empty: the seeds recorded for that mode and device class, measured again.
SEEDS ?=
REPLACE ?=
DEVICE ?= auto
# Grading jobs at a time; empty: the grader's default, one per CPU core.
WORKERS ?=
# pytest-xdist workers for `make test`: auto, one per CPU core.
TEST_WORKERS ?= auto
SUBMISSIONS ?= submissions
# The class list, nbgrader's student CSV (id,first_name,last_name,email[,lms_user_id]).
ROSTER ?= students.csv
# A regular expression with a (?P<student>...) group, for file names of another LMS.
PATTERN ?=
# NO_SANDBOX=1 grades without bubblewrap: for trusted notebooks only; the report says so.
NO_SANDBOX ?=
# PARTIAL=1: export and feedback write the partial score of a notebook whose written answer awaits
# its hand grade, marked so (default: no score until it is graded).
PARTIAL ?=
# A Dask scheduler (tcp://HOST:PORT) to run the grading jobs on; empty: the local pool.
SCHEDULER ?=
# The course folder (gradebook with hand grades, submissions, feedback, reports): back it up.
# Empty: $$TRANSFORMER_LAB_COURSE, else ~/transformer-lab-course, outside the checkout.
COURSE ?=
COURSE_ARG = $(if $(COURSE),--course "$(COURSE)")
# Where COURSE/publish/ is pushed (github.com/ORG/REPO/blob/main): the graded notebooks' Colab
# badge opens that copy. Empty: no badge; COURSE/publish/README.md says how to share them.
PUBLISH_URL ?=
# Grade only these students and/or notebooks (ids, space-separated); the report keeps the rest.
# For collect: whose every file is (STUDENT), what every file was handed in for (NOTEBOOK).
STUDENT ?=
NOTEBOOK ?=
# An emailed fix: the time it was handed in (ISO 8601; the course's zone unless it has an offset).
SUBMITTED_AT ?=
# A release that adds or removes a graded cell of a notebook with submissions: carry (the kit
# rebuilds it in the gradebook, regrades it and puts back each hand grade of an unchanged answer)
# or refuse (one line, nothing changed).
ERRATA ?= carry
# override-keep, override-clear: the check's grade id, as autograde's report names it.
GRADE_ID ?=

.DEFAULT_GOAL := help
.PHONY: help setup train notebooks regenerate-baselines ablations head-costs test test-quick lint format bench core-minutes clean \
	release roster collect autograde feedback export class-report formgrader override-keep override-clear gpu-check

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-22s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install --quiet "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[dev,instructor]"
	touch $@

setup: $(VENV)/.installed ## create .venv and install the package (once; minutes)

regenerate-baselines: setup ## run the solution notebooks, refresh data/: MODE=auto|full|quick|smoke [SEEDS=0,1,2 [REPLACE=1]] (quick on 2 CPU cores: ~6 min a seed)
	$(PY) -m maintainer.pipeline --mode $(MODE) --device $(DEVICE) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(REPLACE),--replace)

ablations: setup ## sweep every variant over 5 rates (80 short runs), then train the ladder at each rung's best rate (7 rungs x SEEDS, quick budget, CPU), with §6's stability grid and §2's premise, into data/baselines.json; resumes where it stopped (2 CPU cores: ~1 h 45 min for 3 seeds)
	$(PY) -m maintainer.ablations --seeds $(or $(SEEDS),0,1,2)

head-costs: setup ## measure the head costs notebook 05 shows on each recorded model that has none, into data/baselines.json: RUN=full/cpu [AGAIN=1] (seconds)
	$(PY) -m maintainer.head_costs $(if $(RUN),--run $(RUN)) $(if $(AGAIN),--again)

train: setup ## train and score one model: MODEL=gpt|lstm|trigram|5gram BUDGET=quick|full|smoke (quick GPT: ~5 min on 2 CPU cores)
	$(PY) -m transformer_lab train --model $(MODEL) --budget $(BUDGET)

notebooks: setup ## build notebooks/ and COURSE/{source,release,publish} from solutions/ (~30 s)
	$(PY) -m maintainer.notebook_build $(COURSE_ARG) $(if $(PUBLISH_URL),--publish-url "$(PUBLISH_URL)")

release: setup ## grading: nbgrader source/, release/ and publish/ (for students: the notebooks and the wheel their setup installs) in COURSE from solutions/, swapped in only once all of it succeeded; says what changed against the gradebook: [NOTEBOOK="01_attention ..."] [ERRATA=carry|refuse] [PUBLISH_URL=github.com/ORG/REPO/blob/main] [NO_SANDBOX=1] (~15 s; an errata regrades its notebook)
	$(PY) -m grader $(COURSE_ARG) release $(if $(PUBLISH_URL),--publish-url "$(PUBLISH_URL)") \
		$(if $(NOTEBOOK),--notebook $(NOTEBOOK)) --errata $(ERRATA) $(if $(NO_SANDBOX),--no-sandbox)

roster: setup ## grading: load the class into the gradebook; collect then files only students on it: ROSTER=students.csv
	$(PY) -m grader $(COURSE_ARG) roster "$(ROSTER)"

collect: setup ## grading: keep a folder, zip or emailed notebook and sort it into submitted/: SUBMISSIONS=path [NOTEBOOK=NN_topic] [PATTERN=regex] [STUDENT=id SUBMITTED_AT=2026-10-03T14:00] [TIMES=canvas_times.csv]
	$(PY) -m grader $(COURSE_ARG) collect "$(SUBMISSIONS)" $(if $(PATTERN),--pattern '$(PATTERN)') \
		$(if $(STUDENT),--student '$(STUDENT)') $(if $(SUBMITTED_AT),--submitted-at '$(SUBMITTED_AT)') \
		$(if $(TIMES),--times '$(TIMES)') $(if $(NOTEBOOK),--notebook '$(NOTEBOOK)')

autograde: setup ## grading: preflight, execute in parallel sandboxes (bubblewrap), score, then lateness: [WORKERS=N] [SCHEDULER=tcp://host:8786] [STUDENT=id] [NOTEBOOK=NN_topic] (one student: ~40 s on 2 cores)
	$(PY) -m grader $(COURSE_ARG) autograde $(if $(WORKERS),--workers $(WORKERS)) $(if $(NO_SANDBOX),--no-sandbox) $(if $(SCHEDULER),--scheduler $(SCHEDULER)) \
		$(if $(STUDENT),--student $(STUDENT)) $(if $(NOTEBOOK),--notebook $(NOTEBOOK))

feedback: setup ## grading: HTML feedback per student in COURSE/feedback/, hidden tests left out; a zip per notebook (a page per student) in reports/feedback_bundles/; no score while a written answer awaits its hand grade: [PARTIAL=1]
	$(PY) -m grader $(COURSE_ARG) feedback $(if $(PARTIAL),--partial)

export: setup ## grading: the gradebook as CSV, COURSE/reports/grades.csv; gradesheet.csv and canvas_import.csv for the LMS; a notebook whose written answer awaits its hand grade (make formgrader first) is left empty, its students named: [PARTIAL=1]
	$(PY) -m grader $(COURSE_ARG) export $(if $(PARTIAL),--partial)

formgrader: setup ## grading: nbgrader's formgrader on the course (127.0.0.1, token printed): grade the written answer by hand
	$(PY) -m grader $(COURSE_ARG) formgrader

override-keep: setup ## grading: an override set aside (its answer changed) counts again: STUDENT=id NOTEBOOK=NN_topic GRADE_ID=ex1_check
	$(PY) -m grader $(COURSE_ARG) override keep "$(STUDENT)" "$(NOTEBOOK)" "$(GRADE_ID)"

override-clear: setup ## grading: an override is dropped, the autograde standing (kept on record): STUDENT=id NOTEBOOK=NN_topic GRADE_ID=ex1_check
	$(PY) -m grader $(COURSE_ARG) override clear "$(STUDENT)" "$(NOTEBOOK)" "$(GRADE_ID)"

class-report: setup ## grading: pass rates and common mistakes per exercise, reports/class.{md,csv,png} (seconds)
	$(PY) -m grader $(COURSE_ARG) class-report

test: setup ## run the tests, files spread over the CPU cores (4-11 minutes on 2): TEST_WORKERS=auto|N
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=20

test-quick: setup ## the tests that execute no notebook, start no sandbox and train nothing (the inner loop)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not heavy and not slow"

lint: setup ## ruff: lint and format check (seconds)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup ## ruff: fix what can be fixed and format (seconds)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: setup ## tokens/s, chars/s, peak memory: ours vs a plain loop, CPU (+GPU); notebook 04 at quick: ms a step, fused vs a student's attention, wall time projected; writes docs/bench/ (a few minutes)
	$(PY) -m maintainer.bench --device $(DEVICE)

gpu-check: setup ## on a lent GPU, one run of at most 10 min: Exercises 1-3's checks in its fp16, the full-budget baselines, the disputed rungs' seeds, the bench, as many as fit, recorded; prints what did not fit: [BUDGET_SECONDS=540] [DRY_RUN=1: the plan and each item's cost, on any machine, seconds]
	$(PY) -m maintainer.gpu_check $(if $(DRY_RUN),--dry-run) $(if $(BUDGET_SECONDS),--budget-seconds $(BUDGET_SECONDS))

core-minutes: setup ## minutes of each exercise's core path on the T4 and CPU paths beside the lecture's: times a fresh runtime's start online (docs/fresh_runtime.json), records what each cell shows (docs/shown_outputs.json), writes docs/core_path.md (~5 min); ONE_CORE=1 first times each notebook on one CPU core, as Colab's CPU runtime (docs/one_core_compute.json; a quiet machine, ~15 min)
	$(if $(ONE_CORE),$(PY) -m maintainer.core_measurements one-core)
	$(PY) -m maintainer.fresh_runtime
	$(PY) -m maintainer.core_measurements shown
	$(PY) -m maintainer.core_minutes --write

clean: ## remove caches and build leftovers (keeps .venv)
	rm -rf .pytest_cache .ruff_cache build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
