"""What the degenerate-policy gate shares with every environment: the statistics its rules are decided by."""
