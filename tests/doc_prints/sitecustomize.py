"""Loaded at the start of each doc block's Python by tests/test_readme.py (this folder leads its
PYTHONPATH): records what each print call of the block's script prints and from which line,
for the check of printed values against the comments beside them (tests/doc_comments.py).

Active only where SIMKIT_DOC_PRINTS names the file to append the records to and
SIMKIT_DOC_SCRIPT the block's script; prints from any other file are not recorded.
"""

import builtins
import json
import os
import sys

_RECORDS = os.environ.get("SIMKIT_DOC_PRINTS")
_SCRIPT = os.environ.get("SIMKIT_DOC_SCRIPT")

if _RECORDS and _SCRIPT:
    _print = builtins.print

    def _recording_print(*args, sep=" ", end="\n", file=None, flush=False):
        _print(*args, sep=sep, end=end, file=file, flush=flush)
        frame = sys._getframe(1)
        if frame.f_code.co_filename == _SCRIPT and (file is None or file is sys.stdout):
            text = (" " if sep is None else sep).join(str(a) for a in args)
            with open(_RECORDS, "a") as f:
                f.write(json.dumps({"line": frame.f_lineno, "text": text}) + "\n")

    builtins.print = _recording_print
