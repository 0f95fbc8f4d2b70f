"""Consumer profiles for Hugging Face ``datasets`` and TRL, over the ``sediment`` target.

- :mod:`sediment_hf_chat.messages` (``hf-chat-messages-v1``): rollout segments as
  conversational SFT rows (``messages`` + ``tools``).
- :mod:`sediment_hf_chat.prompts` (``hf-chat-prompts-v1``): tasks as prompt-only rows.

Each writes a ``README.md`` dataset card beside its rows (:mod:`sediment_hf_chat.card`), so
``datasets.load_dataset(<export dir>)`` reads exactly the published splits and values.
"""
