"""Derivation: Facts become Rollouts and attributed completions."""
