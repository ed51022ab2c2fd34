"""What every agent shares: the Agent facade and its guards, the specs that cross into Rust, saving."""
