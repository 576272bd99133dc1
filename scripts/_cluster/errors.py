"""The one exception type the launcher reports to the operator."""


class ClusterError(Exception):
    """A failure to show on stderr as-is (no traceback), exiting non-zero."""
