"""Arena's rollout-side kit: what environments and toolsets import inside rollouts (policy types,
scripted policies, the serialising toolset base, isolation defaults, rewrite rules and their audit
records). It imports nothing of Arena's host side."""
