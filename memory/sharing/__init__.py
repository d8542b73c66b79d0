"""Memory shared through git (DESIGN §16): the git runner, the store's history, the user store's sync."""
