"""``python -m crowdprefs``: the command line, as the installed ``crowdprefs`` script runs it."""

from crowdprefs.cli import main

main()
