"""Reading and checking what a user asks for: YAML configs, their sections and defaults."""
