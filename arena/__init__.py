"""Arena's agentic tier: the platform pieces shared by every environment."""

__version__ = "0.1.0"
