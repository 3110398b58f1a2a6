"""Arena's runtimes in verifiers' plugin shape: `lean_docker` (verifiers' docker runtime over the Engine API)."""
