"""Git: bare mirrors, repository identity across renames, git-ai notes."""
