"""The canonical values: Facts, Rollouts and the derivation policy."""
