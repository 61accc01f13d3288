"""Where the tests find the checkout, and the course's folder beside it (the corpus, the lecture):
every test file takes them from here."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
