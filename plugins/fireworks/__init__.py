"""Consumer profiles for Fireworks fine-tuning datasets: format-only claims.

- :mod:`sediment_fireworks.sft` (``fireworks-sft-v2``): SFT samples as ``{"messages": [...],
  "tools": [...]}`` rows with per-message ``weight`` and the call's declared function tools.
- :mod:`sediment_fireworks.dpo` (``fireworks-dpo-v3``): DPO pairs as ``{"input",
  "preferred_output", "non_preferred_output"}`` rows.

The rows follow Fireworks' documented JSONL contract (as of 2026-09-13); no Fireworks package
exists to load them with, and hosted acceptance is not tested. A row the format cannot carry
stops the export (:mod:`sediment_fireworks.messages`): a dataset silently missing rows would
misrepresent the evidence.
"""
