"""Where the agent meets the memory core: the memory model, the manager, recall and the worker child."""
