"""One contract per store kind, run over every backend (memory, SQLite, Redis, Redis Cluster)."""
