"""The one failure a read inside an existing mirror raises (:class:`MirrorReadError`).

Kept apart from :mod:`sediment.git.mirror` so that plugins and evidence code can name it in an
``except`` clause without importing pygit2: a bundle-only export never opens a mirror.
"""


class MirrorReadError(Exception):
    """A git read (ancestry, parent, diff) failed inside an existing mirror."""
