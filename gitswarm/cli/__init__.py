"""The `gitswarm` command line: one typer app with a sub-app per noun."""
