from gitswarm.cli.main import app

app(prog_name="gitswarm")
