"""Errors that end a client connection instead of producing a response."""


class CloseConnectionError(Exception):
    """The peer sent something we will not answer; log it and hang up."""
