"""The embedded simulated endpoint: an OpenAI-compatible server on loopback, no GPU needed."""
