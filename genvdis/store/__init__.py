"""Result folders on disk: atomic writes, manifests, checkpoints, locks, reading them back."""
