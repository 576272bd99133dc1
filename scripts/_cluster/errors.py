"""The one exception type the launcher reports to the operator."""


class ClusterError(Exception):
    """A failure to show on stderr as-is (no traceback), exiting non-zero."""


class NeedsRoot(ClusterError):
    """A command that needs root run by another user (`main` exits 2 before doing anything)."""
