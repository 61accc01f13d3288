"""Copies across the class: how much of each student's own code is found in the course's
published solutions, in the package's references, or in a classmate's notebook, and how much of
that source the student's code holds.

The method is the field's (MOSS, Dolos): each piece of code becomes a sequence of normalised
tokens, every run of K tokens is hashed, and winnowing (Schleimer, Wilkerson and Aiken, SIGMOD
2003) keeps the smallest hash of every window of W hashes, so that any run of K + W - 1 tokens
that two pieces share gives them a fingerprint in common. A match is measured from both sides,
as MOSS and JPlag report it: the share of the student's own tokens that the source covers, the
share of the source's own tokens that the student's code holds, and the longest run of tokens
the two share. Padding a paste with lines of one's own lowers the first and leaves the second
whole; a copy of part of a long reference is seen from the student's side.

Tokens are the student's syntax tree in preorder, as Dolos reads code: node types, operators,
numbers, attribute and keyword names, and the modules the code imports (`F.softmax` and
`torch.nn.functional.softmax` both name torch.nn.functional); every other name (arguments,
locals, functions, classes) is one token `<name>`, every string `<str>`; comments, docstrings,
annotations and layout are gone. A renamed, reformatted, uncommented copy gives the tokens of its
original, and reordered statements keep the fingerprints inside each statement. copydetect
(PyPI, 0.5.0) was weighed and not used: its pygments filter turns every identifier into `V`,
library names included, so `torch.softmax(x, dim=-1)` and `math.exp(x)` tokenise alike and the
short, converging answers of a lab exercise collide; its hashes are Python's salted `hash()`;
and it reads files, not cells. The winnowing here is its algorithm, tested on the property
above (tests/test_copies.py). The written prediction (a Markdown answer) is read the same way
with lowercased words for tokens.

Code the course hands the student is given, never anyone's own, on either side of a match (the
base code of MOSS and JPlag): the release's cells (the stubs, the provided lines, the demos), the
code its Markdown spells out (the hints' `Q @ K.transpose(-2, -1)`), and the listings of the
lecture texts the course ships (lecture_listings.py). Any statement or expression of the
student's that is, token for token, one of the handed-out ones (or a part of one) of at least
`handout` tokens is given; no match runs through given code, so the glue an honest student puts
between the hint's pieces is too short to count. The student's own code is what is left of the
exercise cells (nbgrader `"solution": true`, the release's lines taken out) and of the code cells
they added. The sources are the solution regions of solutions/ (published: the workshop
notebooks fold them under every stub), each function of the package's attention.py and model.py,
and every classmate; a classmate is compared on what the published sources do not already
explain, so two students who both copied the solution are each named against it.

Converging honest answers are not accused. Against a classmate, a fingerprint held by more than
a tenth of the class weighs less (COMMON); against a published source every fingerprint counts
alike (where half the class copied the solution, its code is common because it was copied). A
match is flagged when the source covers enough of the student's code, or the student's code
holds enough of the source, with enough tokens alike and a long enough run among them (a `Bar`
per kind of source): the one- and two-line exercises (the causal mask, the embedding, the block) are
answered the same way by honest students, so a copy of them cannot be told apart. The thresholds
and parameters are measured on a corpus of honest answers and copies (`python -m
maintainer.copy_corpus` prints the false positives and negatives per exercise and the time for a
class of 200). A flag never changes a score: it names the source and both shares for the
instructor, and `make class-report` ranks the pairs and shows them side by side.
"""

from ...cells import parse_cell
from .fingerprints import Passage, fingerprints, winnow
from .kinds import ADDED, CODE, NOTEBOOK, PUBLISHED, TEXT, Bar, Kind
from .matching import Match, class_matches, class_parts, compare, flagged, matches, size
from .own_code import Given, code_piece, given, own_lines, own_parts, text_piece
from .reports import (
    class_report_matches,
    describe,
    flag,
    pairs_report,
    read_notebooks,
    review_cell,
    with_copies,
)
from .sources import published, references, solutions
from .tokens import code_tokens, imports, text_tokens

__all__ = [
    "ADDED",
    "CODE",
    "NOTEBOOK",
    "PUBLISHED",
    "TEXT",
    "Bar",
    "Given",
    "Kind",
    "Match",
    "Passage",
    "class_matches",
    "class_parts",
    "class_report_matches",
    "code_piece",
    "code_tokens",
    "compare",
    "describe",
    "fingerprints",
    "flag",
    "flagged",
    "given",
    "imports",
    "matches",
    "own_lines",
    "own_parts",
    "pairs_report",
    "parse_cell",
    "published",
    "read_notebooks",
    "references",
    "review_cell",
    "size",
    "solutions",
    "text_piece",
    "text_tokens",
    "winnow",
    "with_copies",
]
