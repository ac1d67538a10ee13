"""A model behind an OpenAI-compatible HTTP API: the policy that asks it (policy.py) and its
policy table read from the prompt's log-probabilities (table.py)."""
