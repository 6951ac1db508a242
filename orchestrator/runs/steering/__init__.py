"""What a run does with guidance: receipts in its record, the ladder climbed, `nudge` (orchestrator/guidance has the hand-over)."""
