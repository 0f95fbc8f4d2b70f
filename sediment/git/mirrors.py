"""Bare git mirrors, by their former single-module path: the mirror root and its keying
(:mod:`sediment.git.mirror_root`), reading one mirror (:mod:`sediment.git.mirror`) and writing
test and demo history (:mod:`sediment.git.mirror_writer`). Sediment imports those modules; this
one keeps ``from sediment.git.mirrors import …`` working for plugins written against it.
"""

from __future__ import annotations

from sediment.git.mirror import GIT_AI_NOTES_REF, NOTES_REF, CommitInfo, FileChange, Mirror, MirrorReadError, NoteEdge
from sediment.git.mirror_root import (
    FETCH_REFSPECS,
    IDENTIFIED_ROOT,
    NAME_KEY,
    PARTIAL_PREFIX,
    MirrorError,
    MirrorFetchError,
    MirrorLocation,
    MirrorRoot,
    mirror_identity,
)
from sediment.git.mirror_writer import MirrorWriter

__all__ = ["FETCH_REFSPECS", "GIT_AI_NOTES_REF", "IDENTIFIED_ROOT", "NAME_KEY", "NOTES_REF", "PARTIAL_PREFIX",
           "CommitInfo", "FileChange", "Mirror", "MirrorError", "MirrorFetchError", "MirrorLocation",
           "MirrorReadError", "MirrorRoot", "MirrorWriter", "NoteEdge", "mirror_identity"]
