"""crowdprefs: crowdsourced partially ordered ground truths for music similarity.

The library is usable without the CLI: every command is a call to a documented function of
one of the modules below, taking and returning plain Python, numpy or pandas objects.
"""

__version__ = "0.1.0"
