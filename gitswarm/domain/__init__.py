"""The run's ideas, one type each: the vocabulary of commits and verdicts (`kinds`), reviews
(`review`), the index of main (`index`), the selection rule and its standings, verification,
settling and leader (`rule`, `selection`), the ledger's episode records and totals (`episode`)
and grades (`grade`).

What belongs here: pure types and pure functions of them. No I/O, no git, no engine: this
package imports nothing of gitswarm but the base layer (`core`, `usage`), so the engine,
the remote, the referee, the read model and the views all speak it
(`tests/test_layers.py`). Code that reads or writes these records in git lives in `memory/`
(or with its owner in the engine); code that acts on them lives with its owner.
"""
