"""The box every rollout runs in: its limits and confinement, its image, its baked scripts, its typed faults, the warm pool."""
