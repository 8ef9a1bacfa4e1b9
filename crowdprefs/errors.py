"""User-facing errors.

Every error a user can cause (a bad file, a bad option, a fault of a remote service) is raised
as a :class:`CrowdprefsError` whose message is one self-contained line naming the problem. The
CLI prints that line and exits non-zero; it never shows a traceback for these.
"""


class CrowdprefsError(Exception):
    """Base class: ``str(error)`` is one line a user can act on."""

    exit_code = 1


class InputError(CrowdprefsError):
    """A file or an option given by the user is missing, unreadable or malformed."""

    exit_code = 2


class StateError(CrowdprefsError):
    """The project state does not allow the requested step (e.g. no open batch)."""


class BudgetError(CrowdprefsError):
    """A spending step would cross the configured budget."""


class CrowdError(CrowdprefsError):
    """A crowd backend (MTurk, web, S3) failed in a way retries did not fix."""
