"""Memory shared through git: the git runner, the store's history, the user store's sync."""
