"""Test helpers shared across the suite (importable because tests/support is on sys.path)."""
