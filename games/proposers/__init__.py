"""The maths proposer/solver games and what they share (proposal format, schedule, curriculum)."""
