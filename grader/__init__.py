"""Grading tools for instructors: release, collect, autograde, feedback, export (nbgrader)."""
