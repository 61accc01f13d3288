"""Where the tests find the checkout, and the course's folder beside it (the corpus, the lecture):
every test file takes them from here."""

from grader.course import ROOT

SHARED = ROOT.parent / "shared"
