"""`gitswarm experiment`: arms (ways of spending the same budget) run on the same problems and
model, each arm × seed an ordinary run, compared by paired differences (docs/experiments.md)."""
