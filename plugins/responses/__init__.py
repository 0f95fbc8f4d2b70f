"""Consumer profiles for OpenAI-Responses-shaped consumers: NeMo Gym rollouts, verifiers tasks."""
