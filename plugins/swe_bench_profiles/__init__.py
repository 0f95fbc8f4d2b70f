"""Consumer profiles that make Sediment's SWE-bench tasks gradable: ``swe-bench-tasks-v2``
(swebench 5.x task instances) and ``nemo-gym-swebench-tasks-v1`` (NeMo Gym's ``swebench``
resources server), from the FAIL_TO_PASS / PASS_TO_PASS that recorded per-test CI results give."""
