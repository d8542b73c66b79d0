"""The main model and its wire: the provider (requests, the event stream, retries) and prices."""
