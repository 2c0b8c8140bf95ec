"""roofcheck: does my runtime make sense? Roofline expectations for deep-learning work."""
