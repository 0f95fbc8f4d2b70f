"""What a plugin is handed about one Rollout: its evidence, tasks, turns and trainer messages."""
