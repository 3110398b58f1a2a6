"""The rewrite rules: an audit layer over proposed tool calls (what a shell or Python call reaches, the rules, the hook that applies them)."""
