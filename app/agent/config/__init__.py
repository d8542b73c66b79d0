"""Settings and the layered configuration (user, project, local) with the project's trust."""
