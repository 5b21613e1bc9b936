"""How results look in a terminal: a run once it is done (`display`: the summary, the ranked table, the notes),
the tables of `compare`, `runs list` and `judge check` (`tables`), and how numbers are worded (`format`, the
same on the page: `vx_eval.html` reads it)."""
