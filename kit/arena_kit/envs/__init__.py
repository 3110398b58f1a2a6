"""Arena's envs in verifiers' plugin shape: `lean` (`LeanEnv`, docker rollouts in a lean box). Nothing is imported here."""
