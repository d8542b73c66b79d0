"""The memory screens with their actions: each screen of widgets/ (the card browser, the card
editor, the pending screen) gets a subclass here that handles its own messages, reaching the
runtime through the controller ``memory.MemoryScreens`` (the App holds one)."""
