"""Core commands: init, status, next, publish, collect, aggregate, run, export, demo."""
