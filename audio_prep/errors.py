"""audio_prep's errors: ``str(error)`` is one line a user can act on.

The package stands alone; a program that wraps it (the crowdprefs CLI) maps these to its own.
"""


class AudioError(Exception):
    """An argument or option is out of range, or the sources cannot be found."""


class ClipError(AudioError):
    """One source file cannot be probed or prepared; ``str(error)`` is the reason."""
