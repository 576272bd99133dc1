"""ZooKeeper's rules for a znode path (the server's PathUtils.validatePath), checked before a
request leaves: names that clients send (topics, users, ACL resources) become znode names, and
kazoo raises a bare ValueError, or the server BadArguments, for a path that breaks them."""

from __future__ import annotations

import re

# Control characters and the ranges ZooKeeper refuses (surrogates, private use, specials).
_ILLEGAL_CHARACTER = re.compile("[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff]")
_RELATIVE_NAMES = (".", "..")


def path_error(path: str, sequence: bool = False) -> str | None:
    """Why `path` cannot name a znode, or None if it can. A sequential create may end in "/":
    ZooKeeper appends the sequence number before it checks."""
    if not path.startswith("/"):
        return "a znode path must start with /"
    if sequence:
        path += "0"
    if len(path) > 1 and path.endswith("/"):
        return "a znode path must not end with /"
    if "//" in path:
        return "a znode path must not have an empty name"
    if "/." in path and any(name in _RELATIVE_NAMES for name in path.split("/")):
        return "a znode path must not have a . or .. name"
    if _ILLEGAL_CHARACTER.search(path):
        return "a znode path must not have control or reserved characters"
    return None
