"""The run's ideas, one type each: the vocabulary of commits and verdicts (`kinds`), what an
episode contributes (`contribution`), reviews (`review`), a candidate's standing
(`candidate`), grades (`grade`), the index of main (`index`), the selection rule and its
standings, verification, settling, leader and selection (`rule`, `selection`), and the
ledger's episode records and totals (`episode`).

What belongs here: pure types and pure functions of them. No I/O, no git, no engine: this
package imports nothing of gitswarm but the base layer (`core`, `usage`), so the engine,
the remote, the referee, the read model and the views all speak it
(`tests/test_layers.py`). Code that reads or writes these records in git lives in `memory/`
(or with its owner in the engine); code that acts on them lives with its owner.
"""
